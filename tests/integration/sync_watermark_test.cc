// Completeness watermarks with the real program: a real Mosquitto per side,
// `edgesync region` (SQLite, or PostgreSQL under EDGESYNC_TEST_HUB_STORE),
// `edgesync gateway` fed by a publishing process, its region link through
// a TcpProxy that the test cuts. Every (high water, watermark) pair the hub
// reports is checked against the gateway's own store afterwards: every
// reading the gateway committed before the watermark has an LSN at or
// below the mark the hub held with it (sync/PROTOCOL.md, "Completeness
// watermarks"). A second gateway (no sensors of its own) reads the region
// feed: `edgesync query` there says how complete each origin's answer is,
// and an answer for a window older than the watermark never changes
// through later traffic, a kill -9 of the writing gateway, a hub restart
// and retention passes (their horizons far from the window).
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/clock.h"
#include "tests/support/broker.h"
#include "tests/support/cli_run.h"
#include "tests/support/gateway_program.h"
#include "tests/support/http_get.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/status_text_lines.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

struct Seen {
  uint64_t high_water = 0;
  int64_t complete_ms = 0;
};

class SyncWatermarkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(eu_.Start("", "\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(hub_port_) + "\""))
        << eu_.hub_log();
    ASSERT_TRUE(local_.Start());
    ASSERT_TRUE(reader_local_.Start());
    proxy_ = std::make_unique<TcpProxy>(eu_.broker().port());
    WriteConfig("gw1", dir_, local_.uri(), proxy_->uri());
    WriteConfig("gw2", reader_dir_, reader_local_.uri(), eu_.broker().uri(),
                "\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(reader_port_) + "\"\n");
  }
  void TearDown() override {
    sensors_.Stop(5000);
    gateway_.Stop(10000);
    reader_.Stop(10000);
  }
  // The floor source: the test machine's kernel may never say it is
  // synchronised, and an untrusted clock never advances a watermark.
  static void WriteConfig(const std::string& id, const std::string& dir, const std::string& local,
                          const std::string& region, const std::string& extra = "") {
    RegionSite::MakeDir(dir);
    std::ofstream(dir + "/gateway.toml")
        << "[gateway]\nid = " << Q(id) << "\ndata_dir = " << Q(dir) << "\n\n"
        // Retention runs every second; its horizons (days) reach no reading here.
        << "[store]\nretention_interval_s = 1\n\n"
        << "[ingest]\nbroker_uri = " << Q(local) << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n"
        << "clock_trust = \"floor\"\nepoch_floor = \"2020-01-01T00:00:00Z\"\n\n"
        << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\n"
        << "backoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
        << "[[region]]\nname = \"eu\"\nuri = " << Q(region) << "\npreference = 0\n" << extra;
  }

  std::string config() const { return dir_ + "/gateway.toml"; }
  static bool Start(Process* p, const std::string& dir) {
    if (!p->Start({EDGESYNC_BINARY, "gateway", "--config", dir + "/gateway.toml"}, dir + "/gateway.log")) return false;
    return WaitFor(
        [&] { return StatusField(ReadStatusFile(dir + "/status.json"), metrics::kIngestMqttConnected) == 1; },
                   60000);
  }
  bool StartGateway() { return Start(&gateway_, dir_); }
  // `edgesync query` on the reading gateway, JSON rows (of device wm-d0).
  std::vector<nlohmann::json> Query(const std::vector<std::string>& window, std::string* text = nullptr) {
    std::vector<std::string> args = {"query", "-c", reader_dir_ + "/gateway.toml", "--device", "wm-d0", "--limit",
                                      "100000", "--format", text ? "table" : "json"};
    args.insert(args.end(), window.begin(), window.end());
    std::string out;
    // A log of its own: the program's log is appended to.
    EXPECT_EQ(RunEdgesync(args, tmp_.File("query" + std::to_string(++queries_) + ".log"), &out), 0) << out;
    if (text) *text = out;
    return JsonLines(out);
  }
  // A query's rows as (timestamp, value, origin LSN), comparable.
  static std::vector<std::tuple<int64_t, double, uint64_t>> Answer(const std::vector<nlohmann::json>& rows) {
    std::vector<std::tuple<int64_t, double, uint64_t>> out;
    for (const auto& r : rows) out.emplace_back(r.value("ts", int64_t{0}), r.value("value", 0.0), r.value("lsn", uint64_t{0}));
    return out;
  }
  nlohmann::json GatewayStatus() const { return ReadStatusFile(dir_ + "/status.json"); }
  // The hub's view of gw1 (high water, watermark), from its status file;
  // every pair read is kept for the check against the gateway's store.
  Seen Hub() {
    Seen s;
    nlohmann::json j = ReadStatusFile(tmp_.path() + "/eu/hub/status.json");
    if (!j.contains("hub")) return s;
    for (const auto& o : j["hub"].value("origins", nlohmann::json::array())) {
      if (o.value("origin", "").rfind("gw1/", 0) != 0) continue;
      s.high_water = o.value("high_water", uint64_t{0});
      s.complete_ms = o.value("complete_through_ms", int64_t{0});
    }
    if (s.complete_ms > 0) seen_.push_back(s);
    return s;
  }
  int64_t GatewayWatermark() const {
    nlohmann::json j = GatewayStatus();
    return StatusField(j, metrics::kUplinkCompleteThroughMs);
  }
  // The highest LSN of a reading the gateway committed before `before_ms`
  // (its chunks' written_at), read from its store file.
  uint64_t CommittedBefore(int64_t before_ms) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2((dir_ + "/store.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT ifnull(max(last_lsn), 0) FROM chunks WHERE written_at < ?", -1, &s,
                                 nullptr),
              SQLITE_OK);
    sqlite3_bind_int64(s, 1, before_ms);
    uint64_t lsn = 0;
    if (sqlite3_step(s) == SQLITE_ROW) lsn = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return lsn;
  }

  TempDir tmp_;
  RegionSite eu_{tmp_.path(), "eu"};
  Broker local_{tmp_.File("local")};
  Broker reader_local_{tmp_.File("reader_local")};
  std::unique_ptr<TcpProxy> proxy_;
  std::string dir_ = tmp_.File("gw1");
  std::string reader_dir_ = tmp_.File("gw2");
  Process gateway_;
  Process reader_;
  int queries_ = 0;
  int hub_port_ = FreePort();
  int reader_port_ = FreePort();
  Process sensors_;
  std::vector<Seen> seen_;
};

TEST_F(SyncWatermarkTest, AWatermarkStallsWhileTheLinkIsCutAdvancesAfterTheHealAndNeverClaimsTooMuch) {
  ASSERT_TRUE(StartGateway()) << ReadAll(dir_ + "/gateway.log");
  ASSERT_TRUE(Start(&reader_, reader_dir_)) << ReadAll(reader_dir_ + "/gateway.log");
  SleepMs(500);
  // 4 sensors at 40 readings/s in all, for longer than the test runs. Bare
  // numbers: the gateway stamps its receive time, just before the commit.
  ASSERT_TRUE(sensors_.Start({EDGESYNC_PUBLISHER, local_.uri(), "sensors", "4", "100000", "wm-d", "0", "40", "bare"}));
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > 0; }, 60000)) << eu_.hub_log();
  const int64_t first = Hub().complete_ms;
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > first; }, 60000)) << "it advances with the traffic";
  ASSERT_TRUE(WaitFor([&] { return GatewayWatermark() > 0; }, 30000)) << GatewayStatus().dump(2);

  // The reading gateway learns gw1's watermark from the feed; a window
  // ending before it is answered whole. The margin covers a reading's
  // wait between its receive time and its group's commit.
  int64_t view_mark = 0;
  ASSERT_TRUE(WaitFor([&] {
    std::vector<nlohmann::json> rows = Query({});
    view_mark = rows.empty() ? 0 : rows[0].value("complete_through_ms", int64_t{0});
    // Far enough past the first reading that the window below holds some.
    return view_mark > 0 && view_mark - rows.back().value("ts", int64_t{0}) > 5000;
  }, 60000)) << ReadAll(reader_dir_ + "/gateway.log");
  const std::string window_end = std::to_string(view_mark - 2000);
  const std::vector<nlohmann::json> before = Query({"--from", "0", "--to", window_end});
  ASSERT_FALSE(before.empty());
  const int64_t retention_passes = StatusField(ReadStatusFile(reader_dir_ + "/status.json"), metrics::kRetentionPasses);
  for (const auto& r : before) {
    EXPECT_EQ(r.value("origin", "").rfind("gw1/", 0), 0u);
    EXPECT_FALSE(r.value("may_grow", true)) << r.dump();
    EXPECT_GE(r.value("complete_through_ms", int64_t{0}), view_mark);
  }
  std::string table;
  Query({"--from", "0", "--to", window_end}, &table);
  EXPECT_NE(table.find("# origin gw1/"), std::string::npos) << table;
  EXPECT_NE(table.find(": complete through 20"), std::string::npos) << table;
  EXPECT_EQ(table.find("may still grow"), std::string::npos) << table;
  Query({}, &table);  // an open window reaches past it
  EXPECT_NE(table.find("the window reaches past it: the answer may still grow"), std::string::npos) << table;
  // The reading gateway's status, `edgesync devices` and both /metrics name it.
  ASSERT_TRUE(WaitFor([&] {
    nlohmann::json s = ReadStatusFile(reader_dir_ + "/status.json");
    return s.contains("read_view") && s["read_view"].value("watermarks", nlohmann::json::array()).size() == 1 &&
           s["read_view"]["watermarks"][0].value("complete_through_ms", int64_t{0}) >= view_mark;
  }, 30000)) << ReadStatusFile(reader_dir_ + "/status.json").dump(2);
  std::string out;
  ASSERT_EQ(RunEdgesync({"status", "-c", reader_dir_ + "/gateway.toml"}, tmp_.File("status.log"), &out), 0) << out;
  bool view_line = false;
  for (const test::StatusTextLine& l : test::StatusTextLines(out)) {
    if (l.group == "read view" && l.name.rfind("view gw1/", 0) == 0) {
      view_line = true;
      EXPECT_EQ(l.value.rfind("complete through 20", 0), 0u) << out;
    }
  }
  EXPECT_TRUE(view_line) << out;
  ASSERT_EQ(RunEdgesync({"devices", "-c", reader_dir_ + "/gateway.toml", "--format", "json"}, tmp_.File("devices.log"),
                        &out),
            0)
      << out;
  std::vector<nlohmann::json> devices = JsonLines(out);
  ASSERT_FALSE(devices.empty()) << out;
  for (const auto& d : devices) EXPECT_GE(d.value("complete_through_ms", int64_t{0}), view_mark) << d.dump();
  for (const auto& [port, name] : {std::pair<int, std::string>{reader_port_, "edgesync_read_view_origin_complete_age_seconds"},
                                   std::pair<int, std::string>{hub_port_, "edgesync_hub_origin_complete_age_seconds"}}) {
    std::string metrics, check;
    ASSERT_TRUE(WaitFor([&] {
      metrics = HttpGet(port, "/metrics");
      return metrics.find(name + "{origin=\"gw1/") != std::string::npos;
    }, 30000)) << metrics;
    EXPECT_EQ(PromtoolCheck(metrics, tmp_.File("metrics" + std::to_string(port) + ".txt"), &check), 0) << check;
  }

  // Cut: readings go on being committed, none reaches the hub.
  proxy_->Cut();
  const int64_t cut_ms = SystemClock()->WallMillis();
  ASSERT_TRUE(WaitFor([&] { return StatusField(GatewayStatus(), metrics::kBacklogReadings) > 200; }, 60000))
      << GatewayStatus().dump(2);
  const Seen stalled = Hub();
  EXPECT_LE(stalled.complete_ms, cut_ms) << "nothing committed after the cut is held";
  // Later snapshots of the hub and of the gateway say the same.
  SleepMs(2500);
  EXPECT_EQ(Hub().complete_ms, stalled.complete_ms);
  EXPECT_LE(GatewayWatermark(), cut_ms);

  // A hub restart keeps it (in its store beside the mark).
  eu_.KillHub();
  ASSERT_TRUE(eu_.StartHub()) << eu_.hub_log();

  proxy_->Restore();
  const int64_t healed_ms = SystemClock()->WallMillis();
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > healed_ms; }, 120000))
      << "the watermark passes the outage once the backlog drained\n" << GatewayStatus().dump(2);
  // Its status file is written once a second: waited for, not read once.
  EXPECT_TRUE(WaitFor([&] { return GatewayWatermark() > cut_ms; }, 30000)) << GatewayStatus().dump(2);

  // A gateway killed mid-stream comes back; its watermark goes on from
  // where the hub holds it, never back.
  gateway_.Kill9();
  const int64_t before_restart = Hub().complete_ms;
  ASSERT_TRUE(StartGateway()) << ReadAll(dir_ + "/gateway.log");
  const int64_t restarted_ms = SystemClock()->WallMillis();
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > restarted_ms; }, 120000)) << GatewayStatus().dump(2);
  EXPECT_GE(Hub().complete_ms, before_restart);

  // Retention passes of the reading gateway ran meanwhile too.
  ASSERT_TRUE(WaitFor([&] {
    return StatusField(ReadStatusFile(reader_dir_ + "/status.json"), metrics::kRetentionPasses) > retention_passes + 1;
  }, 30000)) << ReadStatusFile(reader_dir_ + "/status.json").dump(2);
  // Through all of it, the answer for the window older than the watermark
  // stayed as it was, while the open window grew.
  EXPECT_EQ(Answer(Query({"--from", "0", "--to", window_end})), Answer(before));
  EXPECT_GT(Query({}).size(), before.size());

  // Readings stamped on arrival are never counted as arriving late.
  EXPECT_EQ(StatusField(ReadStatusFile(tmp_.path() + "/eu/hub/status.json"), metrics::kHubLateReadings), 0);

  sensors_.Stop(5000);
  gateway_.Stop(10000);
  // Never back, and never past what the hub held with it.
  ASSERT_GT(seen_.size(), 10u);
  int64_t previous = 0;
  for (const Seen& s : seen_) {
    EXPECT_GE(s.complete_ms, previous) << "the watermark moved back";
    previous = s.complete_ms;
    EXPECT_LE(CommittedBefore(s.complete_ms), s.high_water)
        << "readings committed before " << s.complete_ms << " were not all held at mark " << s.high_water;
  }
}

}  // namespace
}  // namespace edgesync::test

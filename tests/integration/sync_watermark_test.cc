// Completeness watermarks with the real program: a real Mosquitto per side,
// `edgesync region` (SQLite, or PostgreSQL under EDGESYNC_TEST_HUB_STORE),
// `edgesync gateway` fed by a publishing process, its region link through
// a TcpProxy that the test cuts. Every (high water, watermark) pair the hub
// reports is checked against the gateway's own store afterwards: every
// reading the gateway committed before the watermark has an LSN at or
// below the mark the hub held with it (sync/PROTOCOL.md, "Completeness
// watermarks").
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/clock.h"
#include "tests/integration/gateway_program.h"
#include "tests/integration/sync_sites.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_file.h"
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
    ASSERT_TRUE(eu_.Start()) << eu_.hub_log();
    ASSERT_TRUE(local_.Start());
    proxy_ = std::make_unique<TcpProxy>(eu_.broker().port());
    RegionSite::MakeDir(dir_);
    // The floor source: the test machine's kernel may never say it is
    // synchronised, and an untrusted clock never advances a watermark.
    std::ofstream(config()) << "[gateway]\nid = \"gw1\"\ndata_dir = " << Q(dir_) << "\n\n"
                            << "[ingest]\nbroker_uri = " << Q(local_.uri())
                            << "\ndevice_rate = 100000.0\ndevice_burst = 100000\nclock_trust = \"floor\"\n"
                            << "epoch_floor = \"2020-01-01T00:00:00Z\"\n\n"
                            << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\n"
                            << "backoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
                            << "[[region]]\nname = \"eu\"\nuri = " << Q(proxy_->uri()) << "\npreference = 0\n";
  }
  void TearDown() override {
    sensors_.Stop(5000);
    gateway_.Stop(10000);
  }

  std::string config() const { return dir_ + "/gateway.toml"; }
  bool StartGateway() {
    if (!gateway_.Start({EDGESYNC_BINARY, "gateway", "--config", config()}, dir_ + "/gateway.log")) return false;
    return WaitFor([&] { return StatusField(ReadStatusFile(dir_ + "/status.json"), "ingest_mqtt", "connected") == 1; },
                   60000);
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
    return j.contains("uplink") ? j["uplink"].value("complete_through_ms", int64_t{0}) : 0;
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
  std::unique_ptr<TcpProxy> proxy_;
  std::string dir_ = tmp_.File("gw1");
  Process gateway_;
  Process sensors_;
  std::vector<Seen> seen_;
};

TEST_F(SyncWatermarkTest, AWatermarkStallsWhileTheLinkIsCutAdvancesAfterTheHealAndNeverClaimsTooMuch) {
  ASSERT_TRUE(StartGateway()) << ReadAll(dir_ + "/gateway.log");
  SleepMs(500);
  // 4 sensors at 40 readings/s in all, for longer than the test runs.
  ASSERT_TRUE(sensors_.Start({EDGESYNC_PUBLISHER, local_.uri(), "sensors", "4", "100000", "wm-d", "1800000000000",
                              "40"}));
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > 0; }, 60000)) << eu_.hub_log();
  const int64_t first = Hub().complete_ms;
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > first; }, 60000)) << "it advances with the traffic";
  ASSERT_TRUE(WaitFor([&] { return GatewayWatermark() > 0; }, 30000)) << GatewayStatus().dump(2);

  // Cut: readings go on being committed, none reaches the hub.
  proxy_->Cut();
  const int64_t cut_ms = SystemClock()->WallMillis();
  ASSERT_TRUE(WaitFor([&] { return StatusField(GatewayStatus(), "backlog", "readings") > 200; }, 60000))
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
  EXPECT_GT(GatewayWatermark(), cut_ms);

  // A gateway killed mid-stream comes back; its watermark goes on from
  // where the hub holds it, never back.
  gateway_.Kill9();
  const int64_t before_restart = Hub().complete_ms;
  ASSERT_TRUE(StartGateway()) << ReadAll(dir_ + "/gateway.log");
  const int64_t restarted_ms = SystemClock()->WallMillis();
  ASSERT_TRUE(WaitFor([&] { return Hub().complete_ms > restarted_ms; }, 120000)) << GatewayStatus().dump(2);
  EXPECT_GE(Hub().complete_ms, before_restart);

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

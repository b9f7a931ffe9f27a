// Time corrections through the change log with the real programs: a real
// Mosquitto per side, `edgesync region` (SQLite, or PostgreSQL under
// EDGESYNC_TEST_HUB_STORE), `edgesync gateway` gw1 under libfaketime with
// its wall clock three days behind and its region link cut (a TcpProxy),
// bare numbers published by a real MQTT client; then its clock stepped to
// the true time, the synchronisation file written, the link restored.
// `edgesync query` on gw1, on the hub and on a second gateway's read view
// must each show every reading once, at its true time within a second, the
// ones stamped while untrusted flagged corrected; also after gw1 and the
// hub were killed -9 and the reading gateway restarted (the correction is
// kept where each applied it, and applying it again changes nothing).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/broker.h"
#include "tests/support/cli_run.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SyncTimeCorrectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = FakeTimeLibrary();
    ASSERT_FALSE(lib_.empty()) << "libfaketime not found: install the faketime package (firmware-config/deps.sh test)";
    ASSERT_TRUE(eu_.Start()) << eu_.hub_log();
    ASSERT_TRUE(local_.Start());
    ASSERT_TRUE(reader_local_.Start());
    proxy_ = std::make_unique<TcpProxy>(eu_.broker().port());
    proxy_->Cut();  // booted offline: no link
    WriteConfig("gw1", dir_, local_.uri(), proxy_->uri(), "clock_trust = " + Q("file:" + synced_) + "\n");
    // The reader's clock is the machine's; the floor trusts it.
    WriteConfig("gw2", reader_dir_, reader_local_.uri(), eu_.broker().uri(),
                "clock_trust = \"floor\"\nepoch_floor = \"2020-01-01T00:00:00Z\"\n");
    WriteAll(clock_, "-3d\n");
  }
  void TearDown() override {
    gateway_.Stop(10000);
    reader_.Stop(10000);
  }
  static void WriteConfig(const std::string& id, const std::string& dir, const std::string& local,
                          const std::string& region, const std::string& trust) {
    RegionSite::MakeDir(dir);
    std::ofstream(dir + "/gateway.toml")
        << "[gateway]\nid = " << Q(id) << "\ndata_dir = " << Q(dir) << "\n\n"
        << "[metrics]\nlisten = \"\"\n\n"
        << "[ingest]\nbroker_uri = " << Q(local) << "\n" << trust << "\n"
        << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\n"
        << "backoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
        << "[[region]]\nname = \"eu\"\nuri = " << Q(region) << "\npreference = 0\n";
  }
  bool StartGateway() {
    return Start(&gateway_, dir_,
                 FakeTimeEnv(clock_));
  }
  bool StartReader() { return Start(&reader_, reader_dir_, {}); }
  static bool Start(Process* p, const std::string& dir, const std::vector<std::string>& env) {
    std::remove((dir + "/status.json").c_str());
    if (!p->Start({EDGESYNC_BINARY, "gateway", "--config", dir + "/gateway.toml"}, dir + "/gateway.log", env)) {
      return false;
    }
    return WaitFor(
        [&] { return StatusField(ReadStatusFile(dir + "/status.json"), metrics::kIngestMqttConnected) == 1; },
                   60000);
  }
  nlohmann::json GatewayStatus() const { return ReadStatusFile(dir_ + "/status.json"); }
  int64_t Periods(const char* key) const {
    nlohmann::json j = GatewayStatus();
    if (!j.contains("clock") || !j["clock"].contains("periods")) return -1;
    return j["clock"]["periods"].value(key, int64_t{-1});
  }
  // Bare numbers from `first` on, their true publish times kept; waits
  // until gw1 committed `total` since it started.
  void PublishBare(int first, int n, int64_t total) {
    TestMqttClient client(local_.uri(), "sensor-tc", true);
    ASSERT_TRUE(client.Connect());
    for (int i = first; i < first + n; ++i) {
      sent_at_.push_back(NowMs());
      ASSERT_TRUE(client.Publish("sensors/tc-d1/temp", std::to_string(i), 1));
      SleepMs(20);
    }
    ASSERT_TRUE(
        WaitFor([&] { return StatusField(GatewayStatus(), metrics::kIngestReadingsCommitted) >= total; }, 20000))
        << ReadAll(dir_ + "/gateway.log");
  }
  // `edgesync query` with a config, JSON rows of tc-d1.
  std::vector<nlohmann::json> Query(const std::string& config) {
    std::string out;
    EXPECT_EQ(RunEdgesync({"query", "-c", config, "--device", "tc-d1", "--from", "0", "--oldest-first", "--limit",
                           "1000", "--format", "json"},
                          tmp_.File("query" + std::to_string(++queries_) + ".log"), &out),
              0)
        << out;
    last_out_ = out;
    return JsonLines(out);
  }
  // Every value published, once, within a second of its true time; the
  // first `untrusted` flagged corrected, the rest stamped by a trusted clock.
  bool ShowsTrueTimes(const std::vector<nlohmann::json>& rows, size_t untrusted, std::string* why) {
    if (rows.size() != sent_at_.size()) {
      *why = std::to_string(rows.size()) + " rows for " + std::to_string(sent_at_.size()) + " readings";
      return false;
    }
    std::vector<bool> seen(sent_at_.size(), false);
    for (const nlohmann::json& r : rows) {
      const size_t i = static_cast<size_t>(r.value("value", -1.0));
      const int64_t ts = r.value("ts", int64_t{0});
      if (i >= sent_at_.size() || seen[i]) {
        *why = "unknown or twice: " + r.dump();
        return false;
      }
      seen[i] = true;
      const std::string clock = i < untrusted ? "corrected" : "gateway";
      const int quality = i < untrusted ? 2 + 8 : 2;
      if (r.value("clock", "") != clock || r.value("quality", 0) != quality || r.value("origin", "").rfind("gw1/", 0) != 0 ||
          ts < sent_at_[i] - 1000 || ts > sent_at_[i] + 1000) {
        *why = "sent at " + std::to_string(sent_at_[i]) + ", shown as " + r.dump();
        return false;
      }
    }
    return true;
  }
  // The three places a user asks: gw1's own store, the hub's, gw2's read view.
  void ExpectEverywhere(size_t untrusted) {
    for (const std::string& config : {dir_ + "/gateway.toml", eu_.config(), reader_dir_ + "/gateway.toml"}) {
      std::string why;
      EXPECT_TRUE(WaitFor([&] { return ShowsTrueTimes(Query(config), untrusted, &why); }, 60000))
          << config << ": " << why << "\n" << last_out_;
    }
  }

  TempDir tmp_;
  RegionSite eu_{tmp_.path(), "eu"};
  Broker local_{tmp_.File("local")};
  Broker reader_local_{tmp_.File("reader_local")};
  std::unique_ptr<TcpProxy> proxy_;
  std::string dir_ = tmp_.File("gw1");
  std::string reader_dir_ = tmp_.File("gw2");
  std::string synced_ = tmp_.File("synchronized");
  std::string clock_ = tmp_.File("faketime");
  std::string lib_;
  Process gateway_;
  Process reader_;
  int queries_ = 0;
  std::string last_out_;
  std::vector<int64_t> sent_at_;
};

TEST_F(SyncTimeCorrectionTest, ReadingsStampedOfflineShowAtTheirTrueTimesOnTheHubAndAnotherGatewaysReadView) {
  ASSERT_TRUE(StartGateway()) << ReadAll(dir_ + "/gateway.log");
  ASSERT_TRUE(StartReader()) << ReadAll(reader_dir_ + "/gateway.log");
  PublishBare(0, 20, 20);
  EXPECT_EQ(Periods("readings_open"), 20) << GatewayStatus().dump(2);

  // NTP steps the clock to the true time and the time daemon says so,
  // the link still down.
  WriteAll(clock_, "+0\n");
  WriteAll(synced_, "");
  ASSERT_TRUE(WaitFor([&] { return Periods("corrected") == 1; }, 20000)) << GatewayStatus().dump(2);
  PublishBare(20, 5, 25);  // trusted: stamped as they arrive

  // The link returns: the readings and the correction reach the hub, and
  // through its feed the other gateway's read view.
  proxy_->Restore();
  ExpectEverywhere(20);

  // Killed -9 and started again, each side keeps what it applied; the
  // gateway sends nothing twice, and a correction applied again would
  // change nothing.
  gateway_.Kill9();
  eu_.KillHub();
  reader_.Kill9();
  ASSERT_TRUE(eu_.StartHub()) << eu_.hub_log();
  ASSERT_TRUE(StartGateway()) << ReadAll(dir_ + "/gateway.log");
  ASSERT_TRUE(StartReader()) << ReadAll(reader_dir_ + "/gateway.log");
  PublishBare(25, 5, 5);
  ExpectEverywhere(20);
}

}  // namespace
}  // namespace edgesync::test

// Times stamped before the clock is trusted, with the real program: a real
// Mosquitto, `edgesync gateway` under libfaketime with its wall clock three
// days behind (its monotonic clock untouched, as fake-hwclock leaves it),
// bare numbers published by a real MQTT client; then the clock stepped to
// the true time and the synchronisation file written (the stand-in for
// /run/systemd/timesync/synchronized). `edgesync query` (the real CLI, on
// the real store) must show every reading once, at its true time within a
// second, flagged corrected; also when the gateway was killed -9 before it
// could correct and the clock was trusted while it was down.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/broker.h"
#include "tests/support/cli_run.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/status_text_lines.h"

namespace edgesync {
namespace {

using test::WaitFor;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class TimeCorrectionGateway : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = test::FakeTimeLibrary();
    ASSERT_FALSE(lib_.empty()) << "libfaketime not found: install the faketime package (firmware-config/deps.sh test)";
    ASSERT_TRUE(broker_.Start());
    test::WriteAll(config_, "[gateway]\nid = \"gw1\"\ndata_dir = \"" + dir_.File("data") +
                                "\"\n\n[metrics]\nlisten = \"\"\n\n[ingest]\nbroker_uri = \"" + broker_.uri() +
                                "\"\nclock_trust = \"file:" + synced_ + "\"\n");
    test::WriteAll(clock_, "-3d\n");  // booted offline on a saved time three days behind
  }
  void TearDown() override { gateway_.Stop(5000); }

  bool Start() {
    std::remove(dir_.File("data/status.json").c_str());
    if (!gateway_.Start({EDGESYNC_BINARY, "gateway", "--config", config_}, dir_.File("gateway.log"),
                        test::FakeTimeEnv(clock_))) {
      return false;
    }
    return WaitFor([&] { return test::StatusField(Status(), metrics::kIngestMqttConnected) == 1; }, 20000);
  }
  nlohmann::json Status() { return test::ReadStatusFile(dir_.File("data/status.json")); }
  int64_t Periods(const char* key) {
    nlohmann::json j = Status();
    if (!j.contains("clock") || !j["clock"].contains("periods")) return -1;
    return j["clock"]["periods"].value(key, int64_t{-1});
  }
  // Publishes bare numbers from `first` on, with their true publish times
  // kept, and waits until the gateway committed `total` since it started.
  void PublishBare(int first, int n, int64_t total) {
    test::TestMqttClient client(broker_.uri(), "sensor-d1", true);
    ASSERT_TRUE(client.Connect());
    for (int i = first; i < first + n; ++i) {
      sent_at_.push_back(NowMs());
      ASSERT_TRUE(client.Publish("sensors/d1/temp", std::to_string(i), 1));
      test::SleepMs(20);
    }
    ASSERT_TRUE(WaitFor([&] { return test::StatusField(Status(), metrics::kIngestReadingsCommitted) >= total; }, 20000))
        << test::ReadAll(dir_.File("gateway.log"));
  }
  // Every reading published, once, at its true time within a second,
  // flagged as `clock` says.
  void ExpectQueryShows(const std::string& clock) {
    std::string out;
    ASSERT_EQ(test::RunEdgesync({"query", "--config", config_, "--device", "d1", "--from", "0", "--oldest-first",
                                 "--format", "json"},
                                dir_.File("query-" + clock + ".log"), &out),
              0)
        << out;
    std::vector<nlohmann::json> rows = test::JsonLines(out);
    ASSERT_EQ(rows.size(), sent_at_.size()) << out;
    std::vector<bool> seen(sent_at_.size(), false);
    for (const nlohmann::json& r : rows) {
      const size_t i = static_cast<size_t>(r["value"].get<double>());
      ASSERT_LT(i, sent_at_.size()) << r.dump();
      EXPECT_FALSE(seen[i]) << "twice: " << r.dump();
      seen[i] = true;
      EXPECT_EQ(r.value("clock", ""), clock) << r.dump();
      if (clock == "corrected") {
        EXPECT_EQ(r.value("quality", 0), 2 + 8) << r.dump();
      }
      // Received after it was sent, within a second.
      EXPECT_GE(r["ts"].get<int64_t>(), sent_at_[i] - 1000) << r.dump();
      EXPECT_LE(r["ts"].get<int64_t>(), sent_at_[i] + 1000) << r.dump();
    }
  }

  test::TempDir dir_;
  test::Broker broker_{dir_.File("broker")};
  std::string lib_;
  std::string config_ = dir_.File("edgesync.toml");
  std::string synced_ = dir_.File("synchronized");
  std::string clock_ = dir_.File("faketime");
  test::Process gateway_;
  std::vector<int64_t> sent_at_;  // true wall time each value was published
};

TEST_F(TimeCorrectionGateway, ReadingsStampedThreeDaysBehindShowAtTheirTrueTimesOnceTrusted) {
  ASSERT_TRUE(Start());
  PublishBare(0, 20, 20);
  EXPECT_EQ(Periods("open"), 1) << Status().dump(2);
  EXPECT_EQ(Periods("readings_open"), 20) << Status().dump(2);
  // Before trust: as stamped, three days back, flagged.
  {
    std::string out;
    ASSERT_EQ(test::RunEdgesync({"query", "--config", config_, "--device", "d1", "--from", "0", "--format", "json"},
                                dir_.File("query-before.log"), &out),
              0);
    std::vector<nlohmann::json> rows = test::JsonLines(out);
    ASSERT_EQ(rows.size(), 20u) << out;
    for (const nlohmann::json& r : rows) {
      EXPECT_EQ(r.value("clock", ""), "untrusted") << r.dump();
      EXPECT_LT(r["ts"].get<int64_t>(), NowMs() - 2 * 86400000LL) << r.dump();
      // The flags (untrusted clock, receive time) apart from the period.
      EXPECT_EQ(r.value("quality", 0), 3) << r.dump();
      EXPECT_EQ(r.value("clock_period", 0), 1) << r.dump();
    }
  }
  // NTP steps the clock to the true time and the time daemon says so.
  test::WriteAll(clock_, "+0\n");
  test::WriteAll(synced_, "");
  ASSERT_TRUE(WaitFor([&] { return Periods("corrected") == 1; }, 20000)) << Status().dump(2);
  EXPECT_EQ(Periods("readings_corrected"), 20);
  EXPECT_EQ(Periods("open"), 0);
  ExpectQueryShows("corrected");
  std::string status;
  EXPECT_EQ(test::RunEdgesync({"status", "--config", config_}, dir_.File("status.log"), &status), 0) << status;
  EXPECT_EQ(test::StatusTextValue(status, "clock", "untrusted periods")
                .rfind("0 open (0 readings, corrected once trusted), 1 corrected (20 readings)", 0),
            0u)
      << status;
}

TEST_F(TimeCorrectionGateway, AGatewayKilledBeforeCorrectingCorrectsWhenItComesBack) {
  ASSERT_TRUE(Start());
  PublishBare(0, 10, 10);
  gateway_.Kill9();
  // Trusted while the gateway is down: it must correct at its next start.
  test::WriteAll(clock_, "+0\n");
  test::WriteAll(synced_, "");
  ASSERT_TRUE(Start());
  ASSERT_TRUE(WaitFor([&] { return Periods("corrected") == 1; }, 20000)) << Status().dump(2);
  PublishBare(10, 5, 5);  // trusted: stamped as they arrive
  ASSERT_EQ(gateway_.Stop(10000), 0);
  std::string out;
  ASSERT_EQ(test::RunEdgesync({"query", "--config", config_, "--device", "d1", "--from", "0", "--oldest-first",
                               "--format", "json"},
                              dir_.File("query.log"), &out),
            0)
      << out;
  std::vector<nlohmann::json> rows = test::JsonLines(out);
  ASSERT_EQ(rows.size(), 15u) << out;
  for (const nlohmann::json& r : rows) {
    const size_t i = static_cast<size_t>(r["value"].get<double>());
    ASSERT_LT(i, sent_at_.size());
    EXPECT_EQ(r.value("clock", ""), i < 10 ? "corrected" : "gateway") << r.dump();
    EXPECT_GE(r["ts"].get<int64_t>(), sent_at_[i] - 1000) << r.dump();
    EXPECT_LE(r["ts"].get<int64_t>(), sent_at_[i] + 1000) << r.dump();
  }
}

}  // namespace
}  // namespace edgesync

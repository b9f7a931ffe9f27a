// Clock trust with the real program: a real Mosquitto, `edgesync gateway`
// whose clock source is a file (the stand-in for /run/systemd/timesync/
// synchronized; the kernel source is covered by ClockTrustTest), bare
// numbers published by a real MQTT client, and the real SQLite store read
// back after the gateway stopped.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/options.h"
#include "firmware-config/config.h"
#include "store/store.h"
#include "tests/support/broker.h"
#include "tests/support/cli_run.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/status_text_lines.h"

namespace edgesync {
namespace {

using test::WaitFor;

class ClockTrustGateway : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(broker_.Start());
    test::WriteAll(config_, "[gateway]\nid = \"gw1\"\ndata_dir = \"" + dir_.File("data") + "\"\n[ingest]\nbroker_uri = \"" +
                                broker_.uri() + "\"\nclock_trust = \"file:" + synced_ + "\"\n");
  }
  void TearDown() override { gateway_.Stop(5000); }

  bool Start() {
    std::remove(dir_.File("data/status.json").c_str());
    if (!gateway_.Start({EDGESYNC_BINARY, "gateway", "--config", config_}, dir_.File("gateway.log"))) return false;
    return WaitFor([&] { return test::StatusField(Status(), metrics::kIngestMqttConnected) == 1; }, 20000);
  }
  nlohmann::json Status() { return test::ReadStatusFile(dir_.File("data/status.json")); }
  bool Trusted() {
    nlohmann::json j = Status();
    return test::StatusField(j, metrics::kClockTrusted) == 1;
  }
  // Publishes bare numbers on device `device` and waits until the gateway
  // committed `total` readings since it started.
  void PublishBare(const std::string& device, int n, int64_t total) {
    test::TestMqttClient client(broker_.uri(), "sensor-" + device, true);
    ASSERT_TRUE(client.Connect());
    for (int i = 0; i < n; ++i) ASSERT_TRUE(client.Publish("sensors/" + device + "/temp", std::to_string(i), 1));
    ASSERT_TRUE(WaitFor([&] { return test::StatusField(Status(), metrics::kIngestReadingsCommitted) >= total; }, 20000))
        << test::ReadAll(dir_.File("gateway.log"));
  }
  std::vector<QueryRow> Rows(const std::string& device) {
    Config config;
    std::vector<ConfigError> errors;
    EXPECT_OK(LoadConfig(config_, ConfigRole::kGateway, &config, &errors));
    StoreOptions so = StoreOptionsFromConfig(config);
    so.read_only = true;
    std::unique_ptr<Store> store;
    EXPECT_OK(Store::Open(so, &store));
    std::vector<QueryRow> rows;
    if (!store) return rows;
    QueryRequest q;
    q.device_id = device;
    EXPECT_OK(store->Query(q, &rows));
    return rows;
  }

  test::TempDir dir_;
  test::Broker broker_{dir_.File("broker")};
  std::string config_ = dir_.File("edgesync.toml");
  std::string synced_ = dir_.File("synchronized");
  test::Process gateway_;
};

TEST_F(ClockTrustGateway, BareNumbersAreFlaggedUntilTheClockIsSynchronisedAndNotAfterItInThisBoot) {
  ASSERT_TRUE(Start());
  PublishBare("before", 5, 5);
  EXPECT_FALSE(Trusted()) << Status().dump(2);
  EXPECT_EQ(test::StatusField(Status(), metrics::kIngestUntrustedClock), 5);
  std::string status;
  EXPECT_EQ(test::RunEdgesync({"status", "--config", config_}, dir_.File("status.log"), &status), 0) << status;
  EXPECT_EQ(test::StatusTextValue(status, "clock", "trusted"), "no") << status;
  EXPECT_EQ(test::StatusTextValue(status, "clock", "source"), "file: unsynchronized") << status;
  EXPECT_EQ(test::StatusTextValue(status, "clock", "readings so far (while not trusted)"), "5") << status;

  test::WriteAll(synced_, "");  // the time daemon synchronised the clock
  ASSERT_TRUE(WaitFor([&] { return Trusted(); }, 10000)) << Status().dump(2);
  PublishBare("after", 5, 10);
  EXPECT_EQ(test::StatusField(Status(), metrics::kIngestUntrustedClock), 5);
  ASSERT_EQ(gateway_.Stop(10000), 0);

  // A restart in the same boot keeps the trust, file or not.
  std::remove(synced_.c_str());
  ASSERT_TRUE(Start());
  EXPECT_TRUE(WaitFor([&] { return Trusted(); }, 10000)) << Status().dump(2);
  PublishBare("restarted", 5, 5);
  ASSERT_EQ(gateway_.Stop(10000), 0);

  for (const char* device : {"before", "after", "restarted"}) {
    std::vector<QueryRow> rows = Rows(device);
    ASSERT_EQ(rows.size(), 5u) << device;
    for (const QueryRow& r : rows) {
      EXPECT_TRUE(r.reading.quality & kQualityReceiveTime) << device;
      // Stamped before trust in this boot: corrected since (the clock did
      // not step, so by a few ms at most), no longer flagged untrusted.
      EXPECT_EQ(r.reading.quality & kQualityUntrustedClock, 0u) << device;
      EXPECT_EQ((r.reading.quality & kQualityCorrectedTime) != 0, std::string(device) == "before") << device;
    }
  }
}

}  // namespace
}  // namespace edgesync

// Retention in the `edgesync gateway` program, with real parts: sensors (a
// publishing process) -> local Mosquitto -> gateway -> region hub. What the
// region acknowledged is pruned once older than store.retention_age_s; what
// it did not acknowledge stays, however old.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/sync_sites.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/reading_tally.h"

namespace edgesync::test {
namespace {

int Publish(const std::string& uri, const std::string& client, int devices, int readings, const std::string& prefix) {
  Process p;
  p.Start({EDGESYNC_PUBLISHER, uri, client, std::to_string(devices), std::to_string(readings), prefix, "1800000000000",
           "0"});
  return p.Wait(120000);
}

nlohmann::json StatusOf(const std::string& dir) {
  std::string text = ReadAll(dir + "/status.json");
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

// status.json's section.key, 0 while absent.
int64_t Field(const std::string& dir, const char* section, const char* key) {
  nlohmann::json j = StatusOf(dir);
  if (!j.contains(section) || !j[section].is_object() || !j[section].contains(key)) return 0;
  return j[section][key].is_number() ? j[section][key].get<int64_t>() : 0;
}

TEST(GatewayRetentionTest, PrunesWhatTheRegionAcknowledgedAndKeepsWhatItDidNot) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  const std::string gw = dir.path() + "/gw";
  RegionSite::MakeDir(gw);
  std::ofstream(gw + "/gateway.toml")
      << "[gateway]\nid = \"gw-ret\"\ndata_dir = " << Q(gw) << "\n\n"
      << "[store]\nretention_age_s = 2\nretention_interval_s = 1\n\n"
      << "[ingest]\nbroker_uri = " << Q(local.uri()) << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
      << "[uplink]\nack_timeout_ms = 2000\nbackoff_base_ms = 50\nbackoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
      << "[[region]]\nname = \"eu\"\nuri = " << Q(eu.broker().uri()) << "\n";
  Process gateway;
  ASSERT_TRUE(gateway.Start({EDGESYNC_BINARY, "gateway", "--config", gw + "/gateway.toml"}, gw + "/gateway.log"));
  // The ingest link is up, so its subscription exists (the status file
  // alone came seconds before it under ThreadSanitizer).
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json j = StatusOf(gw);
        return j.contains("ingest_mqtt") && j["ingest_mqtt"].value("connected", false);
      },
      60000))
      << ReadAll(gw + "/gateway.log");
  SleepMs(500);  // the subscription exists before the sensors publish

  // Acknowledged by the region, then older than 2 s: pruned.
  ASSERT_EQ(Publish(local.uri(), "sensors-1", 10, 100, "ret-"), 0);
  ASSERT_TRUE(WaitFor([&] { return Field(gw, "uplink", "checkpoint") == 1000; }, 60000))
      << ReadAll(gw + "/gateway.log");
  ASSERT_TRUE(WaitFor([&] { return Field(gw, "retention", "readings_pruned") == 1000; }, 60000))
      << StatusOf(gw).dump(2);
  EXPECT_EQ(StoreStatsOf(gw + "/store.db").entries, 0);
  EXPECT_EQ(eu.Contents().size(), 1000u) << "the region still holds every reading";

  // The region goes away: new readings are not acknowledged and stay, however old.
  ASSERT_EQ(eu.StopHub(), 0);
  ASSERT_EQ(Publish(local.uri(), "sensors-2", 10, 50, "late-"), 0);
  ASSERT_TRUE(WaitFor([&] { return StoreStatsOf(gw + "/store.db").entries == 500; }, 60000));
  const int64_t passes = Field(gw, "retention", "passes");
  ASSERT_TRUE(WaitFor([&] { return Field(gw, "retention", "passes") >= passes + 4; }, 60000));
  EXPECT_EQ(StoreStatsOf(gw + "/store.db").entries, 500);
  EXPECT_EQ(Field(gw, "retention", "readings_pruned"), 1000);
  EXPECT_EQ(StoreStatsOf(gw + "/store.db").dropped_oldest, 0);

  // Back: they go upstream, then retention takes them too.
  ASSERT_TRUE(eu.StartHub());
  ASSERT_TRUE(WaitFor([&] { return Field(gw, "retention", "readings_pruned") == 1500; }, 60000))
      << StatusOf(gw).dump(2);
  EXPECT_EQ(gateway.Stop(10000), 0);
  EXPECT_EQ(eu.Contents().size(), 1500u);
}

}  // namespace
}  // namespace edgesync::test

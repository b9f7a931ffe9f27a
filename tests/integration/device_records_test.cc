// Device records end to end, every part a real process (tests/support/
// world.h): a device describes itself on gateway A's local broker (a
// retained MQTT message on ingest.device_topic), A's ingest writes the
// record, the uplink carries it to the region hub, and gateway B's feed
// puller brings it into B's read view, where `edgesync devices` (the real
// CLI) shows it. An update replaces it everywhere; clearing the retained
// message deletes it everywhere. A description the broker took survives a
// kill -9 of A right after.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cli_run.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/world.h"

namespace edgesync::test {
namespace {

using json = nlohmann::json;

constexpr char kDevice[] = "boiler-1";
constexpr char kTopic[] = "devices/boiler-1/meta";

class DeviceRecordsTest : public ::testing::Test {
 protected:
  // `edgesync devices --format json` with `config`; the rows of `device`.
  std::vector<json> Rows(const std::string& config, const std::string& device = kDevice) {
    std::string out;
    // A log of its own per run: the log is appended to.
    const std::string log = dir_.File("devices-" + std::to_string(++runs_) + ".log");
    const int rc = RunEdgesync({"devices", "-c", config, "--format", "json"}, log, &out);
    EXPECT_EQ(rc, 0) << out;
    std::vector<json> rows;
    for (json& j : JsonLines(out)) {
      if (j.value("device", "") == device) rows.push_back(std::move(j));
    }
    return rows;
  }
  // True once the store behind `config` shows exactly one row of `device`,
  // written by origin_gateway, with this name and location (name "": no row
  // with a record, as after a deletion).
  bool Shows(const std::string& config, const std::string& origin_gateway, const std::string& name,
             const std::string& location, const std::string& device = kDevice) {
    std::vector<json> rows = Rows(config, device);
    last_ = json(rows).dump();
    if (name.empty()) {
      for (const json& r : rows) {
        if (r.contains("name")) return false;
      }
      return true;
    }
    return rows.size() == 1 && rows[0].value("origin", "").rfind(origin_gateway + "/", 0) == 0 &&
           rows[0].value("name", "") == name && rows[0].value("location", "") == location;
  }

  TempDir dir_;
  int runs_ = 0;
  std::string last_;  // the rows last read, for a failure's message
};

TEST_F(DeviceRecordsTest, ADescriptionReachesTheRegionAndAnotherGatewayThenChangesAndGoes) {
  WorldOptions o;
  o.root = dir_.path() + "/world";
  o.regions = 1;
  o.gateways = 2;
  o.devices_per_gateway = 1;
  o.readings_per_s = 5;
  World world(o);
  ASSERT_TRUE(world.Start()) << world.error();
  const std::string a = world.gateway_config(0), b = world.gateway_config(1);
  const std::string hub = world.hub_dir(0) + ".toml";
  const std::string origin = world.gateway_id(0);

  TestMqttClient device(world.local_broker_uri(0), kDevice, /*clean_session=*/true);
  ASSERT_TRUE(device.Connect());
  ASSERT_TRUE(device.Publish(kTopic, R"({"name": "Boiler", "location": "cellar", "unit": "C"})", 1, true));
  // Generous deadlines for a loaded machine: what is asserted is what each
  // store ends up showing, not how fast.
  EXPECT_TRUE(WaitFor([&] { return Shows(a, origin, "Boiler", "cellar"); }, 60000)) << last_;
  EXPECT_TRUE(WaitFor([&] { return Shows(hub, origin, "Boiler", "cellar"); }, 60000)) << last_;
  ASSERT_TRUE(WaitFor([&] { return Shows(b, origin, "Boiler", "cellar"); }, 120000)) << last_;
  std::vector<json> rows = Rows(b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["unit"], "C");
  EXPECT_EQ(rows[0]["local"], false);
  EXPECT_EQ(rows[0]["readings"], 0) << "a description is not a reading";
  // The table people read has the columns too.
  std::string table;
  ASSERT_EQ(RunEdgesync({"devices", "-c", b}, dir_.File("table.log"), &table), 0) << table;
  EXPECT_NE(table.find("name"), std::string::npos) << table;
  EXPECT_NE(table.find("Boiler"), std::string::npos) << table;
  EXPECT_NE(table.find("cellar"), std::string::npos) << table;

  // An update replaces it: one row everywhere, the new name, no unit any more.
  ASSERT_TRUE(device.Publish(kTopic, R"({"name": "Boiler 2", "location": "roof"})", 1, true));
  EXPECT_TRUE(WaitFor([&] { return Shows(a, origin, "Boiler 2", "roof"); }, 60000)) << last_;
  EXPECT_TRUE(WaitFor([&] { return Shows(hub, origin, "Boiler 2", "roof"); }, 60000)) << last_;
  ASSERT_TRUE(WaitFor([&] { return Shows(b, origin, "Boiler 2", "roof"); }, 120000)) << last_;
  rows = Rows(b);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["unit"], "");

  // A killed with -9 right after a description (not retained: no copy the
  // broker would hand over again on a new subscription) reached its broker:
  // the broker keeps it for A's persistent session until A acknowledges it,
  // and A acknowledges it only once the record is committed. After the
  // restart A holds it, and so does B.
  ASSERT_TRUE(device.Publish("devices/pump-1/meta", R"({"name": "Pump", "location": "yard"})", 1, false));
  world.KillGateway(0);
  ASSERT_TRUE(world.StartGateway(0)) << world.error();
  EXPECT_TRUE(WaitFor([&] { return Shows(a, origin, "Pump", "yard", "pump-1"); }, 60000)) << last_;
  EXPECT_TRUE(WaitFor([&] { return Shows(b, origin, "Pump", "yard", "pump-1"); }, 120000)) << last_;

  // The retained description cleared (an empty retained payload): deleted.
  ASSERT_TRUE(device.Publish(kTopic, "", 1, true));
  EXPECT_TRUE(WaitFor([&] { return Shows(a, origin, "", ""); }, 60000)) << last_;
  EXPECT_TRUE(WaitFor([&] { return Shows(hub, origin, "", ""); }, 60000)) << last_;
  EXPECT_TRUE(WaitFor([&] { return Shows(b, origin, "", ""); }, 120000)) << last_;

  // A description that is not one is dead-lettered, not stored.
  ASSERT_TRUE(device.Publish("devices/boiler-1/meta", R"({"name": 42})", 1, false));
  EXPECT_TRUE(WaitFor(
      [&] {
        json s = world.GatewayStatus(0);
        return s.contains("ingest") && s["ingest"]["rejected"].value("invalid_device_record", 0) == 1;
      },
      60000))
      << world.GatewayStatus(0).dump();
  EXPECT_TRUE(Shows(a, origin, "", "")) << last_;
  device.Disconnect();
  world.StopAll();
}

}  // namespace
}  // namespace edgesync::test

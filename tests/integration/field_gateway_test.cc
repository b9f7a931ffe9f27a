// Field tests: the whole `edgesync gateway` program as it runs on a board,
// with every real part: sensors (a separate publishing process) -> the local
// Mosquitto -> edgesync gateway (ingest + store + uplink + read view) ->
// region brokers -> `edgesync region` hubs with their own stores.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "tests/support/broker.h"
#include "tests/support/gateway_program.h"
#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

// Every LSN 1..n of the gateway's origin is held by the regions, none twice in
// one region.
void ExpectEveryReadingOnce(const std::vector<RegionSite*>& regions, uint64_t n, const std::string& gateway_id) {
  std::set<uint64_t> held;
  for (RegionSite* r : regions) {
    for (const auto& [key, count] : r->Contents()) {
      if (key.first.rfind(gateway_id + "/", 0) != 0) continue;
      EXPECT_EQ(count, 1) << r->name() << " holds " << key.first << " LSN " << key.second << " " << count << " times";
      held.insert(key.second);
    }
  }
  EXPECT_EQ(held.size(), n);
  if (!held.empty()) {
    EXPECT_EQ(*held.begin(), 1u);
    EXPECT_EQ(*held.rbegin(), n);
  }
}

TEST(FieldGatewayTest, SensorsReachTheRegionThroughTheGatewayProgram) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  GatewayProgram gw(dir.path(), "gw-field", local.uri(), {&eu});
  ASSERT_TRUE(gw.Start());
  ASSERT_TRUE(WaitFor([&] { return gw.IngestConnected(); }, 60000)) << gw.log();
  SleepMs(500);  // the first run's subscription must exist before sensors publish
  ASSERT_EQ(Publish(local.uri(), "sensors-1", 20, 200, "field"), 0);
  EXPECT_TRUE(WaitFor([&] { return gw.CaughtUp(4000); }, 60000)) << gw.StatusLine() << gw.log();
  EXPECT_EQ(gw.Stop(), 0) << "graceful stop on SIGTERM";
  ExpectEveryReadingOnce({&eu}, 4000, "gw-field");
}

// kill -9 of the gateway while sensors publish and the uplink drains: with
// acknowledgement after commit nothing is lost, and the region holds nothing
// twice.
TEST(FieldGatewayTest, GatewayKilledMidStreamLosesAndDuplicatesNothing) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  GatewayProgram gw(dir.path(), "gw-kill", local.uri(), {&eu});
  ASSERT_TRUE(gw.Start());
  ASSERT_TRUE(WaitFor([&] { return gw.IngestConnected(); }, 60000)) << gw.log();
  SleepMs(500);
  Process sensors;
  ASSERT_TRUE(sensors.Start({EDGESYNC_PUBLISHER, local.uri(), "sensors-2", "20", "300", "kill", "1800000000000",
                             "1500"}));
  for (int i = 0; i < 2; ++i) {
    SleepMs(1200);
    gw.Kill9();
    SleepMs(300);
    ASSERT_TRUE(gw.Start());
  }
  ASSERT_EQ(sensors.Wait(120000), 0);
  EXPECT_TRUE(WaitFor([&] { return gw.CaughtUp(6000); }, 90000)) << gw.StatusLine() << gw.log();
  gw.Stop();
  ExpectEveryReadingOnce({&eu}, 6000, "gw-kill");
}

// Two gateways, each writing to its own region; each one's query shows the
// other's readings (pulled from the regions' feeds), marked with their origin.
TEST(FieldGatewayTest, QueryOnOneGatewaySeesTheOtherGatewaysReadings) {
  TempDir dir;
  Broker local_a(dir.File("local-a")), local_b(dir.File("local-b"));
  ASSERT_TRUE(local_a.Start());
  ASSERT_TRUE(local_b.Start());
  RegionSite eu(dir.path(), "eu"), us(dir.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  GatewayProgram a(dir.path(), "gw-a", local_a.uri(), {&eu, &us});
  GatewayProgram b(dir.path(), "gw-b", local_b.uri(), {&us, &eu});
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  ASSERT_TRUE(WaitFor([&] { return a.IngestConnected() && b.IngestConnected(); }, 60000));
  SleepMs(500);
  ASSERT_EQ(Publish(local_a.uri(), "sensors-a", 3, 50, "alpha-"), 0);
  ASSERT_EQ(Publish(local_b.uri(), "sensors-b", 3, 50, "beta-"), 0);
  ASSERT_TRUE(WaitFor([&] { return a.CaughtUp(150) && b.CaughtUp(150); }, 60000)) << a.StatusLine() << b.StatusLine();
  auto query = [](const GatewayProgram& gw, const std::string& device) {
    std::string cmd = std::string(EDGESYNC_BINARY) + " query --config " + gw.config() + " --device " + device;
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
  };
  auto count_lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  std::string beta_on_a;
  EXPECT_TRUE(WaitFor([&] { beta_on_a = query(a, "beta-0"); return count_lines(beta_on_a) == 50; }, 30000))
      << beta_on_a;
  EXPECT_NE(beta_on_a.find("gw-b"), std::string::npos) << "rows name their origin: " << beta_on_a.substr(0, 300);
  std::string alpha_on_b;
  EXPECT_TRUE(WaitFor([&] { alpha_on_b = query(b, "alpha-1"); return count_lines(alpha_on_b) == 50; }, 30000))
      << alpha_on_b;
  // A gateway's own readings come from its local store, once (the read view
  // skips its own origin).
  EXPECT_EQ(count_lines(query(a, "alpha-2")), 50);
}

}  // namespace
}  // namespace edgesync::test

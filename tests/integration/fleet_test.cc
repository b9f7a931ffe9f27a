// A fleet against one region, with real parts: a Mosquitto region broker set
// up by firmware-config/region/edgesync-region-auth (passwords, the shipped
// ACL, plus one simulator identity allowed to write every inbox level of the
// region and read every uplink reply: tests/tools/fleet.h), a real
// `edgesync region` process, and 200 simulated gateways over 4 connections
// speaking the uplink protocol. The hub is SIGKILLed and restarted mid-run:
// what it had taken but not committed is lost with it and the gateways
// resend from their acknowledged marks. In the end every gateway's every
// batch is acknowledged, and the region holds each (origin, LSN) exactly
// once: LSNs 1..last of every origin, nothing twice, nothing else.
#include <gtest/gtest.h>

#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"
#include "tests/tools/fleet.h"

namespace edgesync::test {
namespace {

bool Auth(const std::string& dir, const std::string& args) {
  std::string cmd = std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/region/edgesync-region-auth --dir '" + dir +
                    "' " + args + " >/dev/null 2>>'" + dir + "/auth.log'";
  return std::system(cmd.c_str()) == 0;
}

// 200 simulated gateways send 10 batches each through a real Mosquitto with
// the shipped ACL to a real hub with a receive queue of `queue` messages;
// with kill_hub the hub is SIGKILLed a third of the way through. Every batch
// must be acknowledged and the region must hold each (origin, LSN) once.
void RunFleet(int queue, bool kill_hub) {
  TempDir tmp;
  const std::string auth = tmp.path() + "/auth";
  RegionSite::MakeDir(auth);
  ASSERT_TRUE(Auth(auth, "init"));
  ASSERT_TRUE(Auth(auth, "add-hub eu hub-secret"));
  ASSERT_TRUE(Auth(auth, "add-gateway fleet-sim sim-secret"));
  // The simulator speaks for many gateways over one identity (docs/REGION.md).
  WriteAll(auth + "/acl", ReadAll(auth + "/acl") +
                              "\nuser fleet-sim\ntopic write edgesync/region/eu/in/#\n"
                              "topic read edgesync/reply/+/up\n");
  WriteAll(tmp.File("hub.cred"), "hub-eu:hub-secret\n");
  WriteAll(tmp.File("sim.cred"), "fleet-sim:sim-secret\n");
  BrokerOptions bo;
  bo.password_file = auth + "/passwd";
  bo.acl_file = auth + "/acl";
  RegionSite eu(tmp.path(), "eu", bo);
  ASSERT_TRUE(eu.broker().Start());
  const std::string hub_extra = "credentials_file = " + Q(tmp.File("hub.cred")) +
                                "\nmax_queued_messages = " + std::to_string(queue) + "\n";
  ASSERT_TRUE(eu.StartHub("", hub_extra));

  FleetOptions o;
  o.uri = eu.broker().uri();
  o.credentials_file = tmp.File("sim.cred");
  o.gateways = 200;
  o.connections = 4;
  o.batches_per_gateway = 10;
  o.window = 4;
  o.ack_timeout_ms = 3000;
  o.backoff_max_ms = 2000;
  Fleet fleet(o);
  Status st = fleet.Start();
  ASSERT_OK(st);
  const uint64_t per_origin = o.batches_per_gateway * static_cast<uint64_t>(fleet.readings_per_batch());
  const uint64_t total = per_origin * static_cast<uint64_t>(o.gateways);

  ASSERT_TRUE(WaitFor([&] { return fleet.stats().readings_acked >= total / 3; }, 300000))
      << "acknowledged " << fleet.stats().readings_acked << " of " << total << "\n" << eu.hub_log();
  if (kill_hub) {
    eu.KillHub();
    ASSERT_TRUE(eu.StartHub("", hub_extra));
  }
  EXPECT_TRUE(WaitFor([&] { return fleet.done(); }, 480000));
  FleetStats s = fleet.stats();
  fleet.Stop();
  EXPECT_EQ(eu.StopHub(), 0);
  // Refusals (gaps: what the killed hub had taken but not applied) and
  // resends are expected; what must hold is the outcome below.
  std::printf("fleet: %llu batches sent, %llu acknowledged, %llu refused, %llu resends, %llu answers ignored\n",
              static_cast<unsigned long long>(s.batches_sent), static_cast<unsigned long long>(s.batches_acked),
              static_cast<unsigned long long>(s.refusals), static_cast<unsigned long long>(s.resends),
              static_cast<unsigned long long>(s.acks_ignored));
  EXPECT_EQ(s.gateways_done, o.gateways);
  EXPECT_EQ(s.readings_acked, total);

  auto contents = eu.Contents();
  std::map<std::string, std::set<uint64_t>> by_origin;
  size_t twice = 0;
  for (const auto& [key, count] : contents) {
    twice += count > 1;
    by_origin[key.first].insert(key.second);
  }
  EXPECT_EQ(twice, 0u) << "the region holds readings twice";
  EXPECT_EQ(contents.size(), total);
  EXPECT_EQ(by_origin.size(), static_cast<size_t>(o.gateways));
  for (int i = 0; i < o.gateways; ++i) {
    const std::set<uint64_t>& lsns = by_origin[fleet.OriginOf(i).ToString()];
    ASSERT_EQ(lsns.size(), per_origin) << fleet.GatewayId(i);
    EXPECT_EQ(*lsns.begin(), 1u) << fleet.GatewayId(i);
    EXPECT_EQ(*lsns.rbegin(), per_origin) << fleet.GatewayId(i);
  }
  if (queue < o.gateways) {
    // 200 gateways with one batch each in flight overflow a queue of 8: the
    // hub sheds (and the resends above made up for it) instead of stopping.
    EXPECT_NE(eu.hub_log().find("was shed"), std::string::npos) << "the queue never overflowed";
  }
}

TEST(FleetTest, TwoHundredGatewaysEveryBatchAcknowledgedAndHeldExactlyOnceAcrossAHubKill) {
  RunFleet(/*queue=*/4096, /*kill_hub=*/true);
}

// A queue far smaller than what the fleet has in flight used to stop the hub
// for good (its receive thread waited for room while the answers that make
// room waited for that thread).
TEST(FleetTest, AReceiveQueueSmallerThanTheFleetShedsAndEveryBatchStillArrivesOnce) {
  RunFleet(/*queue=*/8, /*kill_hub=*/false);
}

}  // namespace
}  // namespace edgesync::test

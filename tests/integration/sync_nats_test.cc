// A second broker: nats-server's MQTT listener (MQTT 3.1.1 only, QoS 0/1,
// no `.` in topic levels) as the region broker. Works because the reply
// address and correlation id travel inside the payload and every topic level
// is [A-Za-z0-9_-]: batches are applied and acknowledged, and the feed
// (retained head notice included) is served.
#include <gtest/gtest.h>

#include <fstream>

#include "sync/feed_puller.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

class NatsServer {
 public:
  explicit NatsServer(const std::string& dir) : dir_(dir), port_(FreePort()), mqtt_port_(FreePort()) {
    RegionSite::MakeDir(dir_ + "/js");
    std::ofstream(dir_ + "/nats.conf") << "listen: 127.0.0.1:" << port_ << "\nserver_name: es_test\n"
                                       << "jetstream { store_dir: " << Q(dir_ + "/js") << " }\n"
                                       << "mqtt { listen: 127.0.0.1:" << mqtt_port_ << " }\n";
  }
  bool Start() {
    return process_.Start({"nats-server", "-c", dir_ + "/nats.conf"}, dir_ + "/nats.log") &&
           WaitForPort(mqtt_port_, 15000);
  }
  std::string uri() const { return "tcp://127.0.0.1:" + std::to_string(mqtt_port_); }

 private:
  std::string dir_;
  int port_;
  int mqtt_port_;
  Process process_;
};

TEST(SyncNatsTest, UplinkAndFeedOverNatsServerMqtt) {
  TempDir tmp;
  NatsServer nats(tmp.path());
  ASSERT_TRUE(nats.Start()) << ReadAll(tmp.File("nats.log"));
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.StartHub(nats.uri()));
  auto a = OpenGatewayStore(tmp.File("a.db"), "gw-a");
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload workload(1000, 1780000000000);
  Fill(a.get(), &workload, 20000);
  UplinkOptions o = FastUplinkOptions("gw-a");
  o.regions.push_back(RegionAt("eu", nats.uri()));
  Uplink uplink(a.get(), o);
  ASSERT_OK(uplink.Start());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 20000; }, 30000)) << eu.hub_log();
  uplink.Stop();

  FeedPullerOptions fo;
  fo.gateway_id = "gw-b";
  fo.page_max_entries = 5000;
  fo.poll_interval_ms = 60000;  // only the head notice and the continuation drive pulls
  fo.regions.push_back(RegionAt("eu", nats.uri()));
  FeedPuller puller(b.get(), fo);
  ASSERT_OK(puller.Start());
  // The puller counts a page after the transaction that moved its position.
  ASSERT_TRUE(WaitFor(
      [&] { return Checkpoint(b.get(), "feed:eu") == 20000 && puller.stats().regions[0].applied >= 20000u; },
      30000));
  EXPECT_EQ(puller.stats().regions[0].applied, 20000u);
  puller.Stop();
  EXPECT_EQ(eu.StopHub(), 0);
  ExpectExactlyOnce({&eu}, a->origin(), 20000);
}

}  // namespace
}  // namespace edgesync::test

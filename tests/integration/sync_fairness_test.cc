// Per-sender fairness at a real hub (sync/fair_queue.h): nine gateways
// drain their readings through a real Mosquitto and `edgesync region`
// while a tenth identity floods the hub with feed requests for 5,000-entry
// pages (500 a second, far beyond the pages the hub can serve). Every reading of the nine arrives exactly once; their mean
// acknowledgement latency is printed beside the same run without the flood
// (a figure, not asserted: timings depend on the machine).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "sync/wire.h"
#include "tests/integration/sync_sites.h"

namespace edgesync::test {
namespace {

constexpr int kGateways = 9;
constexpr size_t kReadings = 3000;

// Mean acknowledgement latency (ms) of the nine; with `flood`, a tenth
// sender publishes feed requests as fast as the broker takes them.
double NineGateways(const std::string& root, bool flood, uint64_t* flood_sent) {
  RegionSite eu(root, "eu");
  EXPECT_TRUE(eu.Start());
  std::vector<std::unique_ptr<Store>> stores;
  std::vector<std::unique_ptr<SensorWorkload>> work;
  std::vector<std::unique_ptr<Uplink>> uplinks;
  for (int g = 0; g < kGateways; ++g) {
    std::string id = "gw-" + std::to_string(g);
    stores.push_back(OpenGatewayStore(root + "/" + id + ".db", id));
    work.push_back(std::make_unique<SensorWorkload>(20, 1780000000000, 1000, g + 1, id + "-"));
  }
  // The region's feed has something to page through.
  for (int g = 0; g < kGateways; ++g) Fill(stores[g].get(), work[g].get(), 300);
  for (int g = 0; g < kGateways; ++g) {
    UplinkOptions o = FastUplinkOptions("gw-" + std::to_string(g));
    o.regions.push_back(RegionAt("eu", eu.broker().uri()));
    uplinks.push_back(std::make_unique<Uplink>(stores[g].get(), o));
    EXPECT_TRUE(uplinks.back()->Start().ok());
  }
  EXPECT_TRUE(WaitFor(
      [&] {
        for (auto& s : stores) {
          if (Checkpoint(s.get()) != 300) return false;
        }
        return true;
      },
      60000));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::thread flooder;
  if (flood) {
    flooder = std::thread([&] {
      MqttLinkOptions lo;
      lo.uri = eu.broker().uri();
      lo.client_id = "flood";
      lo.clean_start = true;
      std::unique_ptr<MqttLink> link;
      if (!NewPahoMqttLink(lo, &link).ok() || !link->Connect(10000).ok()) return;
      const std::string topic = HubInboxTopic("edgesync", "eu", "gw-flood");
      const std::string reply = ReplyTopic("edgesync", "gw-flood", "feed");
      uint64_t id = 1;
      while (!stop) {
        if (link->Publish(topic, EncodeFeedRequest(reply, id++, ShardPositions{}, 5000, ""), 1, false, 1000).ok()) {
          ++sent;
        }
        // 500 requests a second: far more pages than the hub can serve,
        // not so many that the one broker (and this machine) spends
        // itself on them; per-client rates at the broker are not ours to
        // limit (Mosquitto has none).
        SleepMs(2);
      }
      link->Disconnect(2000);
    });
    SleepMs(1000);  // the flood is on before the nine write
  }
  for (int round = 0; round < 9; ++round) {
    for (int g = 0; g < kGateways; ++g) {
      Fill(stores[g].get(), work[g].get(), (kReadings - 300) / 9);
      uplinks[g]->NotifyAppended();
    }
    SleepMs(300);
  }
  EXPECT_TRUE(WaitFor(
      [&] {
        for (auto& s : stores) {
          if (Checkpoint(s.get()) != kReadings) return false;
        }
        return true;
      },
      180000))
      << eu.hub_log();
  stop = true;
  if (flooder.joinable()) flooder.join();
  *flood_sent = sent;
  double sum = 0;
  uint64_t count = 0;
  for (auto& u : uplinks) {
    UplinkStats s = u->stats();
    sum += s.ack_latency.sum;
    count += s.ack_latency.count;
    u->Stop();
  }
  EXPECT_EQ(eu.StopHub(), 0);
  for (auto& s : stores) ExpectExactlyOnce({&eu}, s->origin(), kReadings);
  return count == 0 ? 0 : 1000 * sum / static_cast<double>(count);
}

TEST(SyncFairnessTest, AFloodingSenderDoesNotStopNineOthers) {
  TempDir quiet, loud;
  uint64_t none = 0, sent = 0;
  double base_ms = NineGateways(quiet.path(), false, &none);
  double flood_ms = NineGateways(loud.path(), true, &sent);
  EXPECT_GT(sent, 0u) << "the flood never started";
  std::printf("fairness: nine gateways' mean acknowledgement latency %.1f ms without a flood, %.1f ms while one "
              "sender published %llu feed requests for 5,000-entry pages\n",
              base_ms, flood_ms, static_cast<unsigned long long>(sent));
}

}  // namespace
}  // namespace edgesync::test

// tests/support/hub_flood.h: per-sender fairness at a real hub, the
// scenario shared by the fairness test (integration/sync_fairness_test.cc,
// which checks what it delivers) and bench_hub_flood (which reports its
// latency): nine gateways drain their readings through a real Mosquitto and
// `edgesync region` while, optionally, a tenth identity floods the hub with
// feed requests for 5,000-entry pages, 500 a second, far beyond the pages
// the hub can serve. A feed reader of its own identity pulls the region
// feed meanwhile, in both runs.
#ifndef EDGESYNC_TESTS_SUPPORT_HUB_FLOOD_H_
#define EDGESYNC_TESTS_SUPPORT_HUB_FLOOD_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sync/feed_puller.h"
#include "sync/wire.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {

struct HubFloodRun {
  double ack_latency_ms = 0;  // the nine gateways' mean acknowledgement latency
  uint64_t flood_sent = 0;    // feed requests the flooder published
};

// Every reading of the nine arrives at the region exactly once, and the
// reader gets every one of them once, without a reset (checked with
// EXPECT_*: a failure is the caller's test's).
inline HubFloodRun NineGatewaysBesideAFlood(const std::string& root, bool flood) {
  constexpr int kGateways = 9;
  constexpr size_t kReadings = 3000;
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
    EXPECT_OK(uplinks.back()->Start());
  }
  EXPECT_TRUE(WaitFor(
      [&] {
        for (auto& s : stores) {
          if (Checkpoint(s.get()) != 300) return false;
        }
        return true;
      },
      60000));

  auto reader_store = OpenGatewayStore(root + "/reader.db", "gw-reader");
  FeedPullerOptions ro;
  ro.gateway_id = "gw-reader";
  ro.poll_interval_ms = 300;
  ro.answer_timeout_ms = 2000;
  ro.backoff_base_ms = 50;
  ro.backoff_max_ms = 500;
  ro.regions.push_back(RegionAt("eu", eu.broker().uri()));
  FeedPuller reader(reader_store.get(), ro);
  EXPECT_OK(reader.Start());

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
  const uint64_t total = kGateways * kReadings;
  EXPECT_TRUE(WaitFor([&] { return reader.stats().regions[0].applied >= total; }, 120000))
      << "the reader got " << reader.stats().regions[0].applied << " of " << total;
  stop = true;
  if (flooder.joinable()) flooder.join();
  reader.Stop();
  FeedPullerStats rs = reader.stats();
  EXPECT_EQ(rs.regions[0].applied, total) << "the reader's read view holds another count than the region";
  EXPECT_EQ(rs.regions[0].resets, 0u);
  HubFloodRun run;
  run.flood_sent = sent;
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
  run.ack_latency_ms = count == 0 ? 0 : 1000 * sum / static_cast<double>(count);
  return run;
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_HUB_FLOOD_H_

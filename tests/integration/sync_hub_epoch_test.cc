// A region hub whose store is lost: two regions (real hub processes, real
// Mosquitto brokers), two gateways each writing to one and pulling both
// feeds. Mid-run the eu hub is SIGKILLed, its store deleted and the hub
// restarted: a new store, a new epoch, sequences from 1 again. Readers
// positioned in the old epoch get an explicit reset (counted, logged) and
// re-sync from the oldest entry; at the end every gateway's read view holds
// every reading of the other, none skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "sync/feed_puller.h"
#include "tests/integration/sync_sites.h"

namespace edgesync::test {
namespace {

FeedPullerOptions Puller(const std::string& gateway, RegionSite& eu, RegionSite& us) {
  FeedPullerOptions o;
  o.gateway_id = gateway;
  o.page_max_entries = 1000;
  o.poll_interval_ms = 300;
  o.answer_timeout_ms = 2000;
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  o.regions.push_back(RegionAt("us", us.broker().uri()));
  return o;
}

// How many of `prefix`'s devices' readings the read view of `store` holds.
int64_t RemoteReadings(Store* store, const char* prefix) {
  int64_t n = 0;
  for (int d = 0; d < 100; ++d) {
    char device[32];
    std::snprintf(device, sizeof device, "%s%05d", prefix, d);
    QueryRequest q;
    q.device_id = device;
    q.limit = 100000;
    std::vector<QueryRow> rows;
    EXPECT_TRUE(store->Query(q, &rows).ok());
    for (const auto& r : rows) n += !r.local;
  }
  return n;
}

TEST(SyncHubEpochTest, AHubRebuiltFromNothingResetsItsReadersAndNoReadingIsSkipped) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  auto a = OpenGatewayStore(tmp.File("a.db"), "gw-a");
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload wa(100, 1780000000000, 1000, 1, "a-"), wb(100, 1780000000000, 1000, 2, "b-");
  Fill(a.get(), &wa, 4000);
  Fill(b.get(), &wb, 4000);
  UplinkOptions ua = FastUplinkOptions("gw-a"), ub = FastUplinkOptions("gw-b");
  ua.regions.push_back(RegionAt("eu", eu.broker().uri()));
  ub.regions.push_back(RegionAt("us", us.broker().uri()));
  Uplink up_a(a.get(), ua), up_b(b.get(), ub);
  FeedPuller pa(a.get(), Puller("gw-a", eu, us)), pb(b.get(), Puller("gw-b", eu, us));
  ASSERT_TRUE(up_a.Start().ok());
  ASSERT_TRUE(up_b.Start().ok());
  ASSERT_TRUE(pa.Start().ok());
  ASSERT_TRUE(pb.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get(), "feed:eu") == 4000 && Checkpoint(a.get(), "feed:us") == 4000; },
                      60000));
  FeedPosition before;
  ASSERT_TRUE(b->GetFeedPosition("eu", &before).ok());

  // The eu hub loses its store.
  eu.KillHub();
  std::filesystem::remove_all(std::filesystem::path(eu.store_path()).parent_path());
  ASSERT_TRUE(eu.StartHub());
  Fill(a.get(), &wa, 2000);
  Fill(b.get(), &wb, 2000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 6000 && Checkpoint(b.get()) == 6000; }, 60000))
      << eu.hub_log();
  // The new eu store holds a's 4001..6000 as sequences 1..2000: b's old
  // position (4000) would have skipped all of them without the reset.
  ASSERT_TRUE(WaitFor([&] { return RemoteReadings(b.get(), "a-") == 6000 && RemoteReadings(a.get(), "b-") == 6000; },
                      60000))
      << "b holds " << RemoteReadings(b.get(), "a-") << " of a's readings; a holds " << RemoteReadings(a.get(), "b-")
      << " of b's";
  FeedPosition after;
  ASSERT_TRUE(b->GetFeedPosition("eu", &after).ok());
  EXPECT_NE(after.epoch, before.epoch);
  EXPECT_EQ(after.seq, 2000u);
  EXPECT_GE(pb.stats().regions[0].resets, 1u);
  EXPECT_GE(pa.stats().regions[0].resets, 1u);
  EXPECT_EQ(pb.stats().regions[1].resets, 0u);  // us was never rebuilt
  pa.Stop();
  pb.Stop();
  up_a.Stop();
  up_b.Stop();
  ASSERT_EQ(eu.StopHub(), 0);
  std::string log = eu.hub_log();
  EXPECT_NE(log.find("of another hub epoch"), std::string::npos) << log;
  EXPECT_NE(log.find("jumped over 1..4000"), std::string::npos) << log;  // a's next batch, base 4000
}

}  // namespace
}  // namespace edgesync::test

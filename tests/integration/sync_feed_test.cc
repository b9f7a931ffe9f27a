// The read view: two gateways write to different regions; each pulls every
// region's feed, skips its own origin, and ends up with the other's readings
// exactly once; a restarted puller continues from its checkpoint.
#include <gtest/gtest.h>

#include "sync/feed_puller.h"
#include "tests/integration/sync_sites.h"

namespace edgesync::test {
namespace {

FeedPullerOptions PullerOptions(const std::string& gateway, RegionSite& eu, RegionSite& us) {
  FeedPullerOptions o;
  o.gateway_id = gateway;
  o.page_max_entries = 1000;
  o.poll_interval_ms = 500;
  o.answer_timeout_ms = 2000;
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  o.regions.push_back(RegionAt("us", us.broker().uri()));
  return o;
}

int64_t RemoteRows(Store* store, const std::string& device) {
  QueryRequest q;
  q.device_id = device;
  q.limit = 100000;
  std::vector<QueryRow> rows;
  EXPECT_TRUE(store->Query(q, &rows).ok());
  int64_t remote = 0;
  for (const auto& r : rows) remote += !r.local;
  return remote;
}

TEST(SyncFeedTest, EachGatewaySeesTheOthersReadingsOnce) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  auto a = OpenGatewayStore(tmp.File("a.db"), "gw-a");
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload wa(100, 1780000000000, 1000, 1, "a-"), wb(100, 1780000000000, 1000, 2, "b-");
  Fill(a.get(), &wa, 8000);
  Fill(b.get(), &wb, 8000);
  UplinkOptions ua = FastUplinkOptions("gw-a"), ub = FastUplinkOptions("gw-b");
  ua.regions.push_back(RegionAt("eu", eu.broker().uri()));
  ub.regions.push_back(RegionAt("us", us.broker().uri()));
  Uplink up_a(a.get(), ua), up_b(b.get(), ub);
  ASSERT_TRUE(up_a.Start().ok());
  ASSERT_TRUE(up_b.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 8000 && Checkpoint(b.get()) == 8000; }, 30000));

  {
    FeedPuller pa(a.get(), PullerOptions("gw-a", eu, us));
    FeedPuller pb(b.get(), PullerOptions("gw-b", eu, us));
    ASSERT_TRUE(pa.Start().ok());
    ASSERT_TRUE(pb.Start().ok());
    ASSERT_TRUE(WaitFor(
        [&] { return Checkpoint(a.get(), "feed:us") == 8000 && Checkpoint(a.get(), "feed:eu") == 8000; }, 30000));
    ASSERT_TRUE(WaitFor(
        [&] { return Checkpoint(b.get(), "feed:eu") == 8000 && Checkpoint(b.get(), "feed:us") == 8000; }, 30000));
    FeedPullerStats sa = pa.stats();
    EXPECT_EQ(sa.regions[0].skipped_own, 8000u);  // eu holds a's own readings
    EXPECT_EQ(sa.regions[0].applied, 0u);
    EXPECT_EQ(sa.regions[1].applied, 8000u);
    EXPECT_EQ(sa.regions[1].resets, 0u);
    EXPECT_EQ(pb.stats().regions[0].applied, 8000u);
  }
  // Each of a's devices: 80 readings of b's in a's read view, none of its own twice.
  EXPECT_EQ(RemoteRows(a.get(), "b-00007"), 80);
  EXPECT_EQ(RemoteRows(a.get(), "a-00007"), 0);
  EXPECT_EQ(RemoteRows(b.get(), "a-00042"), 80);

  // More from b; a fresh puller on a continues from its checkpoint.
  Fill(b.get(), &wb, 800);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 8800; }, 30000));
  FeedPuller again(a.get(), PullerOptions("gw-a", eu, us));
  ASSERT_TRUE(again.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get(), "feed:us") == 8800; }, 30000));
  EXPECT_EQ(again.stats().regions[1].applied, 800u);
  again.Stop();
  EXPECT_EQ(RemoteRows(a.get(), "b-00007"), 88);
  up_a.Stop();
  up_b.Stop();
}

}  // namespace
}  // namespace edgesync::test

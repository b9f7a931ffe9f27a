// The read view: two gateways write to different regions; each pulls every
// region's feed, skips its own origin, and ends up with the other's readings
// exactly once; a restarted puller continues from its checkpoint. A hub
// whose store is lost mid-run (SIGKILL, store deleted, restarted: a new
// epoch, sequences from 1 again) resets its readers explicitly, its gateway
// refills it and no reading is skipped.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "sync/feed_puller.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

FeedPullerOptions PullerOptions(const std::string& gateway, RegionSite& eu, RegionSite& us) {
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

int64_t RemoteRows(Store* store, const std::string& device) {
  QueryRequest q;
  q.device_id = device;
  q.limit = 100000;
  std::vector<QueryRow> rows;
  EXPECT_OK(store->Query(q, &rows));
  int64_t remote = 0;
  for (const auto& r : rows) remote += !r.local;
  return remote;
}

// Two regions; gateway a writes n readings to eu, gateway b n to us.
struct TwoGateways {
  TwoGateways(const std::string& root, size_t n)
      : eu(root, "eu"),
        us(root, "us"),
        a(OpenGatewayStore(root + "/a.db", "gw-a")),
        b(OpenGatewayStore(root + "/b.db", "gw-b")),
        wa(100, 1780000000000, 1000, 1, "a-"),
        wb(100, 1780000000000, 1000, 2, "b-") {
    EXPECT_TRUE(eu.Start());
    EXPECT_TRUE(us.Start());
    Fill(a.get(), &wa, n);
    Fill(b.get(), &wb, n);
    UplinkOptions ua = FastUplinkOptions("gw-a"), ub = FastUplinkOptions("gw-b");
    ua.regions.push_back(RegionAt("eu", eu.broker().uri()));
    ub.regions.push_back(RegionAt("us", us.broker().uri()));
    up_a = std::make_unique<Uplink>(a.get(), ua);
    up_b = std::make_unique<Uplink>(b.get(), ub);
    EXPECT_OK(up_a->Start());
    EXPECT_OK(up_b->Start());
  }
  ~TwoGateways() {
    up_a->Stop();
    up_b->Stop();
  }
  RegionSite eu, us;
  std::unique_ptr<Store> a, b;
  SensorWorkload wa, wb;
  std::unique_ptr<Uplink> up_a, up_b;
};

TEST(SyncFeedTest, EachGatewaySeesTheOthersReadingsOnce) {
  TempDir tmp;
  TwoGateways g(tmp.path(), 8000);
  RegionSite &eu = g.eu, &us = g.us;
  Store *a = g.a.get(), *b = g.b.get();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a) == 8000 && Checkpoint(b) == 8000; }, 30000));

  {
    FeedPuller pa(a, PullerOptions("gw-a", eu, us));
    FeedPuller pb(b, PullerOptions("gw-b", eu, us));
    ASSERT_OK(pa.Start());
    ASSERT_OK(pb.Start());
    // A puller counts a page after the transaction that applied it and moved
    // its position: the counts are waited for too, not read at once.
    ASSERT_TRUE(WaitFor(
        [&] {
          FeedPullerStats st = pa.stats();
          return Checkpoint(a, "feed:us") == 8000 && Checkpoint(a, "feed:eu") == 8000 &&
                 st.regions[0].skipped_own >= 8000u && st.regions[1].applied >= 8000u;
        },
        30000));
    ASSERT_TRUE(WaitFor(
        [&] {
          return Checkpoint(b, "feed:eu") == 8000 && Checkpoint(b, "feed:us") == 8000 &&
                 pb.stats().regions[0].applied >= 8000u;
        },
        30000));
    FeedPullerStats sa = pa.stats();
    EXPECT_EQ(sa.regions[0].skipped_own, 8000u);  // eu holds a's own readings
    EXPECT_EQ(sa.regions[0].applied, 0u);
    EXPECT_EQ(sa.regions[1].applied, 8000u);
    EXPECT_EQ(sa.regions[1].resets, 0u);
    EXPECT_EQ(pb.stats().regions[0].applied, 8000u);
  }
  // Each of a's devices: 80 readings of b's in a's read view, none of its own twice.
  EXPECT_EQ(RemoteRows(a, "b-00007"), 80);
  EXPECT_EQ(RemoteRows(a, "a-00007"), 0);
  EXPECT_EQ(RemoteRows(b, "a-00042"), 80);

  // More from b; a fresh puller on a continues from its checkpoint.
  Fill(b, &g.wb, 800);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b) == 8800; }, 30000));
  FeedPuller again(a, PullerOptions("gw-a", eu, us));
  ASSERT_OK(again.Start());
  ASSERT_TRUE(WaitFor(
      [&] { return Checkpoint(a, "feed:us") == 8800 && again.stats().regions[1].applied >= 800u; }, 30000));
  EXPECT_EQ(again.stats().regions[1].applied, 800u);
  again.Stop();
  EXPECT_EQ(RemoteRows(a, "b-00007"), 88);
}

// How many readings of `prefix`'s 100 devices the read view of `store` holds.
int64_t RemoteReadings(Store* store, const char* prefix) {
  int64_t n = 0;
  for (int d = 0; d < 100; ++d) {
    char device[32];
    std::snprintf(device, sizeof device, "%s%05d", prefix, d);
    n += RemoteRows(store, device);
  }
  return n;
}

TEST(SyncFeedTest, AHubRebuiltFromNothingResetsItsReadersAndNoReadingIsSkipped) {
  TempDir tmp;
  TwoGateways g(tmp.path(), 4000);
  Store *a = g.a.get(), *b = g.b.get();
  FeedPuller pa(a, PullerOptions("gw-a", g.eu, g.us)), pb(b, PullerOptions("gw-b", g.eu, g.us));
  ASSERT_OK(pa.Start());
  ASSERT_OK(pb.Start());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b, "feed:eu") == 4000 && Checkpoint(a, "feed:us") == 4000; }, 60000));
  FeedPosition before;
  ASSERT_OK(b->GetFeedPosition("eu", &before));

  // The eu hub loses its store.
  g.eu.KillHub();
  g.eu.WipeHubStore();
  ASSERT_TRUE(g.eu.StartHub());
  Fill(a, &g.wa, 2000);
  Fill(b, &g.wb, 2000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a) == 6000 && Checkpoint(b) == 6000; }, 60000)) << g.eu.hub_log();
  // The new eu store holds a's 1..6000 (a refilled it) as sequences
  // 1..6000: b's old position (4000) would have skipped 4000 of them
  // without the reset.
  ASSERT_TRUE(WaitFor([&] { return RemoteReadings(b, "a-") == 6000 && RemoteReadings(a, "b-") == 6000; }, 60000))
      << "b holds " << RemoteReadings(b, "a-") << " of a's readings; a holds " << RemoteReadings(a, "b-")
      << " of b's";
  FeedPosition after;
  ASSERT_OK(b->GetFeedPosition("eu", &after));
  EXPECT_NE(after.epoch, before.epoch);
  EXPECT_EQ(after.shards[RegionShardOf("gw-a")], 6000u);  // the one-writer hub moves every shard with its sequence
  EXPECT_GE(pb.stats().regions[0].resets, 1u);
  // a may hold all of b's readings through us before it next reads eu (a
  // rebuilt hub first takes its shard leases): the reset comes with that read.
  EXPECT_TRUE(WaitFor([&] { return pa.stats().regions[0].resets >= 1; }, 60000));
  EXPECT_EQ(pb.stats().regions[1].resets, 0u);  // us was never rebuilt
  pa.Stop();
  pb.Stop();
  g.up_a->Stop();
  ASSERT_EQ(g.eu.StopHub(), 0);
  std::string log = g.eu.hub_log();
  EXPECT_NE(log.find("of another hub epoch"), std::string::npos) << log;
  // a's next batch named the store that had acknowledged 4000: refused as
  // regressed, then a resent 1..6000 instead of jumping over 1..4000.
  EXPECT_NE(log.find("(regressed)"), std::string::npos) << log;
  EXPECT_EQ(log.find("jumped over"), std::string::npos) << log;
  ExpectExactlyOnce({&g.eu}, g.a->origin(), 6000);
}

}  // namespace
}  // namespace edgesync::test

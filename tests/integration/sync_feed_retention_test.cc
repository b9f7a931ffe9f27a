// Retention at a real region hub (`edgesync region` process): it prunes its
// region feed after hub.feed_retention_s, and a reader whose position was
// pruned gets the explicit reset (counted), then follows the feed again.
#include <gtest/gtest.h>

#include "sync/feed_puller.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

FeedPullerOptions PullerOptions(const std::string& gateway, RegionSite& eu) {
  FeedPullerOptions o;
  o.gateway_id = gateway;
  o.page_max_entries = 1000;
  o.poll_interval_ms = 200;
  o.answer_timeout_ms = 2000;
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  return o;
}

int64_t ReadViewRows(Store* store) {
  StoreStats s;
  EXPECT_OK(store->Stats(&s));
  return s.remote_entries;
}

TEST(SyncFeedRetentionTest, HubPrunesItsFeedAndAReaderBehindGetsAnExplicitReset) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  // The feed keeps entries 6 s; retention looks every second.
  ASSERT_TRUE(eu.Start("", "feed_retention_s = 6\n[store]\nretention_interval_s = 1\n"));
  auto a = OpenGatewayStore(tmp.File("a.db"), "gw-a");
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload wa(100, 1780000000000, 1000, 1, "a-");
  UplinkOptions ua = FastUplinkOptions("gw-a");
  ua.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink up(a.get(), ua);
  ASSERT_OK(up.Start());

  // b reads the first 800 of a's readings, then goes away.
  Fill(a.get(), &wa, 800);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 800; }, 30000));
  {
    FeedPuller pb(b.get(), PullerOptions("gw-b", eu));
    ASSERT_OK(pb.Start());
    ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get(), "feed:eu") == 800; }, 30000));
  }
  EXPECT_EQ(ReadViewRows(b.get()), 800);

  // While b is away, 8000 more arrive and the hub prunes all of them.
  Fill(a.get(), &wa, 8000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 8800; }, 30000));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto [oldest, head] = eu.FeedBounds();
        return head == 8800 && oldest == 0;  // empty: everything pruned
      },
      60000))
      << eu.hub_log();

  // b comes back behind the pruned point: an explicit reset, not a silent
  // rewind or skip; then it follows what arrives next.
  FeedPuller pb(b.get(), PullerOptions("gw-b", eu));
  ASSERT_OK(pb.Start());
  ASSERT_TRUE(WaitFor([&] { return pb.stats().regions[0].resets >= 1; }, 30000));
  Fill(a.get(), &wa, 800);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get(), "feed:eu") == 9600; }, 30000));
  // The puller counts a page after the transaction that applied it and
  // moved the position (read 0 here under ThreadSanitizer).
  EXPECT_TRUE(WaitFor([&] { return pb.stats().regions[0].applied >= 800u; }, 10000));
  FeedPullerStats st = pb.stats();
  EXPECT_EQ(st.regions[0].resets, 1u);
  EXPECT_EQ(st.regions[0].applied, 800u);
  EXPECT_EQ(ReadViewRows(b.get()), 1600);

}

}  // namespace
}  // namespace edgesync::test

// Region selection with real brokers and hubs: the nearer region (measured
// round trip, one link slowed by the delaying proxy) is chosen over the
// preferred one; when the write region dies mid-stream the gateway fails
// over, and moves back once the nearer region has been healthy for
// failback_after; a near region that answers late at start takes the writes
// as soon as it is measured; no region holds a reading twice and the union
// holds all.
#include <gtest/gtest.h>

#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

TEST(SyncRegionsTest, TheNearerRegionWinsOverPreference) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  TcpProxy far(eu.broker().port());
  // eu is preferred, but 800 ms away. Until both have answered, writes go to
  // the preferred region if it answers; at 240 ms away, under
  // ThreadSanitizer on a loaded machine, eu's first answer came before us's
  // and took the first batches.
  far.SetDelayMs(400);
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 20000);
  UplinkOptions o = FastUplinkOptions();
  o.regions.push_back(RegionAt("eu", far.uri(), 0));
  o.regions.push_back(RegionAt("us", us.broker().uri(), 1));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 30000));
  // Both answered probes by now; the far one stays unused.
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().regions[0].healthy; }, 10000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  EXPECT_EQ(s.write_region, "us");
  EXPECT_GT(s.regions[0].rtt_ms, s.regions[1].rtt_ms);
  EXPECT_TRUE(eu.Contents().empty());
  ExpectExactlyOnce({&eu, &us}, store->origin(), last);
}

// The nearest region (also the preferred one) is slow to answer at start:
// its hub comes up only after the far region has answered and the start
// grace has passed, so the far one takes the writes first. Once the near
// region's first round trips are measured, writes move to it at once, not
// after failback_after (left at its default of 60 s).
TEST(SyncRegionsTest, ANearRegionAnsweringLateAtStartTakesWritesAtOnce) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.broker().Start());  // eu's hub is not running yet: probes go unanswered
  ASSERT_TRUE(us.Start());
  TcpProxy far(us.broker().port());
  far.SetDelayMs(60);  // us: 120 ms away
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 20000);
  UplinkOptions o = FastUplinkOptions();
  o.failback_after_ms = 60000;
  // Health lapses after 3 probe intervals + 1 s without an answer: at the
  // fast 200 ms a hub under ThreadSanitizer on a loaded machine, busy with
  // the first batches, went 1.6 s without one and writes failed over back.
  o.probe_interval_ms = 1000;
  o.regions.push_back(RegionAt("eu", eu.broker().uri(), 0));
  o.regions.push_back(RegionAt("us", far.uri(), 1));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().write_region == "us"; }, 20000));
  ASSERT_TRUE(eu.StartHub());
  const int64_t hub_started = NowMs();
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().write_region == "eu"; }, 30000))
      << "still writing to " << uplink.stats().write_region << " (round trips eu "
      << uplink.stats().regions[0].rtt_ms << " ms, us " << uplink.stats().regions[1].rtt_ms << " ms)";
  const int64_t moved_after = NowMs() - hub_started;
  EXPECT_LT(moved_after, o.failback_after_ms) << "moved only after the failback hysteresis";
  Fill(store.get(), &workload, 5000);
  uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  std::printf("near region answering late: writes moved %lld ms after its hub started\n", (long long)moved_after);
  EXPECT_EQ(s.write_region, "eu");
  EXPECT_EQ(s.region_switches, 2u);  // us (the only one answering), then eu
  EXPECT_LT(s.regions[0].rtt_ms, s.regions[1].rtt_ms);
  EXPECT_FALSE(eu.Contents().empty());
  ExpectExactlyOnce({&eu, &us}, store->origin(), last);
}

TEST(SyncRegionsTest, FailoverWhenTheWriteRegionDiesAndFailback) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  TcpProxy far(us.broker().port());
  far.SetDelayMs(20);
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 200000);
  UplinkOptions o = FastUplinkOptions();
  o.batch_max_readings = 500;  // a drain long enough to kill the region inside it
  o.window = 2;
  o.regions.push_back(RegionAt("eu", eu.broker().uri(), 0));
  o.regions.push_back(RegionAt("us", far.uri(), 1));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  uint64_t last = store->LastLsn();
  // On a loaded machine the near hub's first answer can come after the far
  // one's: the uplink then starts on us and moves to eu once eu has been
  // healthy for failback_after (as NearRegionAnsweringLate checks). The
  // failure is injected while eu takes the writes.
  ASSERT_TRUE(
      WaitFor([&] { return Checkpoint(store.get()) > 5000 && uplink.stats().write_region == "eu"; }, 30000))
      << "writing to " << uplink.stats().write_region;
  ASSERT_LT(Checkpoint(store.get()), last) << "drain finished before the failure could be injected";
  eu.KillHub();
  eu.broker().Kill9();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  EXPECT_EQ(uplink.stats().write_region, "us");

  // eu comes back; after failback_after (2 s) healthy, writes return to it.
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().write_region == "eu"; }, 20000));
  Fill(store.get(), &workload, 10000);
  last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 30000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  EXPECT_GE(s.region_switches, 3u);  // eu, us, eu
  EXPECT_FALSE(us.Contents().empty());
  ExpectExactlyOnce({&eu, &us}, store->origin(), last);
}

// Two lanes across a failover (sync/PROTOCOL.md, "Two lanes"): the write
// region holds live readings as a span above its mark when it dies mid-drain.
// The gateway closes the lane, fails over and sends the rest to the other
// region from its checkpoint, while live readings keep arriving; when the
// first region returns, writes go back to it. Each region holds every
// reading it holds once, and together they hold every LSN.
TEST(SyncRegionsTest, AFailoverMidDrainWithALiveLaneOpenLosesAndDuplicatesNothing) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  TcpProxy near(eu.broker().port());
  near.SetRateBytesPerSec(64 * 1024);  // a drain of seconds: the lane opens and the kill lands inside it
  TcpProxy far(us.broker().port());
  far.SetDelayMs(20);
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 100000);
  UplinkOptions o = FastUplinkOptions();
  o.live_lane = true;
  o.batch_max_readings = 500;
  o.window = 2;
  o.regions.push_back(RegionAt("eu", near.uri(), 0));
  o.regions.push_back(RegionAt("us", far.uri(), 1));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  // Live readings while the backlog drains to eu, until eu holds some of
  // them above its mark.
  auto live = [&] {
    Fill(store.get(), &workload, 20);
    uplink.NotifyAppended();
    SleepMs(50);
  };
  bool ready = false;
  for (int i = 0; i < 600 && !ready; ++i) {
    live();
    UplinkStats s = uplink.stats();
    ready = s.write_region == "eu" && s.live_lane_open && s.live_lane.waiting == 0 && s.live_lane.entries_sent > 0 &&
            s.checkpoint > 5000;
  }
  ASSERT_TRUE(ready) << "no live lane to eu held live readings (writing to " << uplink.stats().write_region << ")";
  const uint64_t live_from = uplink.stats().live_from;
  ASSERT_LT(Checkpoint(store.get()), live_from) << "the backlog reached the lane before the failure";
  eu.KillHub();
  eu.broker().Kill9();
  for (int i = 0; i < 60; ++i) live();  // 3 s more, across the failover
  uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 90000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  EXPECT_EQ(uplink.stats().write_region, "us");

  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().write_region == "eu"; }, 20000));
  Fill(store.get(), &workload, 2000);
  last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 30000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  EXPECT_GE(s.live_lanes_opened, 1u);
  EXPECT_GE(s.region_switches, 3u);  // eu, us, eu
  ExpectExactlyOnce({&eu, &us}, store->origin(), last);
  // eu held live readings above its mark when it died: they are in its
  // store, and us holds them too (it got all after the checkpoint).
  size_t eu_live = 0;
  for (const auto& [key, count] : eu.Contents()) {
    if (key.first == store->origin().ToString() && key.second >= live_from && key.second < live_from + 20) ++eu_live;
  }
  EXPECT_GT(eu_live, 0u) << "eu held none of the live lane's readings";
}

// Two regions at the same distance: a busy drain must not make the write
// region look farther (round trips are stamped on arrival, and hubs answer
// probes ahead of their queue), so writes stay put instead of flapping.
// Counted from the settled start choice on: a region's first round trip
// after its connect can be far longer than its distance (hundreds of times
// longer under ThreadSanitizer on a loaded machine), so the
// start choice may move once or twice before both distances are measured;
// that is the start choice's business (ANearRegionAnsweringLateAtStart and
// the selector's unit tests), not the drain's.
TEST(SyncRegionsTest, ALongDrainDoesNotDragWritesBetweenEqualRegions) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  UplinkOptions o = FastUplinkOptions();
  o.batch_max_readings = 500;
  o.window = 2;
  o.failback_after_ms = 500;
  // A region is unhealthy after 3 probe intervals + 1 s unanswered, a real
  // failover this test is not about. With the suite's 200 ms a hub on
  // PostgreSQL on a loaded 2-core machine sometimes took longer with a
  // batch; with 1 s, under ThreadSanitizer with the suite at -j2, the test
  // process itself (filling the store while the uplink drains it) once left
  // both regions' probes unread for 4 s: writes went to no region, then
  // back. 2 s (7 s to unhealthy) still gives each region 10 or more probes
  // during the drain.
  o.probe_interval_ms = 2000;
  o.regions.push_back(RegionAt("eu", eu.broker().uri(), 0));
  o.regions.push_back(RegionAt("us", us.broker().uri(), 1));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  // Settled: both regions healthy and no switch for 3 probe intervals (the
  // failback hysteresis is 500 ms).
  uint64_t switches = ~uint64_t{0};
  int64_t steady_since = NowMs();
  ASSERT_TRUE(WaitFor([&] {
    UplinkStats s = uplink.stats();
    if (s.regions.size() < 2 || !s.regions[0].healthy || !s.regions[1].healthy || s.region_switches != switches) {
      switches = s.region_switches;
      steady_since = NowMs();
      return false;
    }
    return NowMs() - steady_since >= 3 * o.probe_interval_ms;
  }, 120000)) << "the start choice never settled";
  const std::string write_region = uplink.stats().write_region;
  ASSERT_FALSE(write_region.empty());

  Fill(store.get(), &workload, 100000);
  uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 120000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  std::printf("equal regions: %llu switch(es) to settle at start, %llu during the drain of %llu readings\n",
              (unsigned long long)switches, (unsigned long long)(s.region_switches - switches),
              (unsigned long long)last);
  EXPECT_EQ(s.region_switches, switches) << "writes moved between equally near regions during the drain";
  EXPECT_EQ(s.write_region, write_region);
  ExpectExactlyOnce({&eu, &us}, store->origin(), last);
}

}  // namespace
}  // namespace edgesync::test

// RegionSelector: nearest first, failover in preference order, failback only
// after the nearer region has been healthy for failback_after.
#include "sync/region_selector.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

constexpr int64_t kHealth = 1000, kFailback = 5000, kGrace = 500;

RegionSelector Three() {
  return RegionSelector({{"a", 0}, {"b", 1}, {"c", 2}}, kHealth, kFailback, kGrace);
}

TEST(RegionSelectorTest, WaitsForAnswersThenPicksTheNearest) {
  RegionSelector s = Three();
  bool changed;
  for (size_t i = 0; i < 3; ++i) s.OnConnected(i, true, 0);
  EXPECT_EQ(s.Select(0, &changed), -1);
  s.OnProbeAnswered(1, 5000, 10);   // b: 5 ms
  EXPECT_EQ(s.Select(10, &changed), -1) << "b answered first, but a is preferred and not measured yet";
  s.OnProbeAnswered(0, 80000, 20);  // a: 80 ms, preferred but far
  EXPECT_EQ(s.Select(20, &changed), 0) << "c has not answered and the grace has not passed: the preferred one";
  EXPECT_EQ(s.Select(kGrace, &changed), 1);
  EXPECT_TRUE(changed);
  EXPECT_EQ(s.Select(kGrace + 1, &changed), 1);
  EXPECT_FALSE(changed);
  EXPECT_EQ(s.switches(), 2);
}

TEST(RegionSelectorTest, AllMeasuredBeforeTheGraceTheNearestAtOnce) {
  RegionSelector s = Three();
  bool changed;
  for (size_t i = 0; i < 3; ++i) s.OnConnected(i, true, 0);
  s.OnProbeAnswered(2, 3000, 5);
  s.OnProbeAnswered(1, 5000, 6);
  EXPECT_EQ(s.Select(6, &changed), -1);
  s.OnProbeAnswered(0, 1000, 7);
  EXPECT_EQ(s.Select(7, &changed), 0);
  EXPECT_EQ(s.switches(), 1);
}

// A region down or slow at start (its hub starting late) answers after the
// start choice: it was never measured, so it is not held to failback_after
// (once three round trips measure it).
TEST(RegionSelectorTest, ARegionFirstMeasuredAfterTheStartChoiceTakesWritesAtOnceIfNearer) {
  RegionSelector s({{"near", 0}, {"far", 1}, {"farther", 2}}, kHealth, kFailback, kGrace);
  bool changed;
  for (size_t i = 0; i < 3; ++i) s.OnConnected(i, true, 0);
  for (int64_t t = 0; t <= kGrace; t += 100) {
    s.OnProbeAnswered(1, 120000, t);
    s.OnProbeAnswered(2, 200000, t);
    s.Select(t, &changed);
  }
  ASSERT_EQ(s.Select(kGrace, &changed), 1) << "near never answered within the grace";
  // farther is nothing new; near answers for the first time at 2 s.
  int64_t t = kGrace + 100;
  for (; t < 2000; t += 100) {
    s.OnProbeAnswered(1, 120000, t);
    s.OnProbeAnswered(2, 200000, t);
    EXPECT_EQ(s.Select(t, &changed), 1);
  }
  // Its first answer is slow (a hub that just started): one round trip is
  // no measure, so it is not weighed on it; its next two show it near.
  s.OnProbeAnswered(0, 300000, t);
  s.OnProbeAnswered(1, 120000, t);
  EXPECT_EQ(s.Select(t, &changed), 1) << "weighed on one round trip";
  t += 100;
  s.OnProbeAnswered(0, 2000, t);
  s.OnProbeAnswered(1, 120000, t);
  EXPECT_EQ(s.Select(t, &changed), 1) << "weighed on two round trips";
  t += 100;
  s.OnProbeAnswered(0, 2000, t);
  s.OnProbeAnswered(1, 120000, t);
  EXPECT_EQ(s.Select(t, &changed), 0) << "failback_after is " << kFailback << " ms; these are its first answers";
  EXPECT_TRUE(changed);
  // Once measured, near is held to the hysteresis like any region: it drops
  // out and comes back, and writes return only after failback_after.
  s.OnConnected(0, false, t + 10);
  EXPECT_EQ(s.Select(t + 10, &changed), 1);
  s.OnConnected(0, true, t + 20);
  s.OnProbeAnswered(0, 2000, t + 30);
  s.OnProbeAnswered(1, 120000, t + 30);
  EXPECT_EQ(s.Select(t + 30, &changed), 1);
}

TEST(RegionSelectorTest, AFartherRegionAnsweringLateLeavesWritesWhereTheyAre) {
  RegionSelector s({{"a", 0}, {"b", 1}}, kHealth, kFailback, kGrace);
  bool changed;
  s.OnConnected(0, true, 0);
  s.OnConnected(1, true, 0);
  s.OnProbeAnswered(1, 5000, 0);
  EXPECT_EQ(s.Select(0, &changed), -1);
  s.OnProbeAnswered(1, 5000, kGrace);
  EXPECT_EQ(s.Select(kGrace, &changed), 1);
  s.OnProbeAnswered(0, 90000, kGrace + 100);
  s.OnProbeAnswered(1, 5000, kGrace + 100);
  EXPECT_EQ(s.Select(kGrace + 100, &changed), 1);
  EXPECT_EQ(s.switches(), 1);
}

TEST(RegionSelectorTest, NoiseWithinTheMarginLetsPreferenceDecide) {
  RegionSelector s = Three();
  bool changed;
  for (size_t i = 0; i < 3; ++i) {
    s.OnConnected(i, true, 0);
    s.OnProbeAnswered(i, 400 - static_cast<int64_t>(i) * 100, 0);  // 0.4, 0.3, 0.2 ms
  }
  EXPECT_EQ(s.Select(0, &changed), 0);
}

TEST(RegionSelectorTest, FailsOverInPreferenceOrderAndFailsBackLater) {
  RegionSelector s = Three();
  bool changed;
  for (size_t i = 0; i < 3; ++i) s.OnConnected(i, true, 0);
  s.OnProbeAnswered(0, 1000, 0);
  s.OnProbeAnswered(1, 50000, 0);
  s.OnProbeAnswered(2, 20000, 0);
  ASSERT_EQ(s.Select(0, &changed), 0);
  s.OnConnected(0, false, 100);
  // c is nearer than b, but failover follows preference: b.
  EXPECT_EQ(s.Select(100, &changed), 1);
  EXPECT_TRUE(changed);
  // a returns; healthy streak starts at 200.
  s.OnConnected(0, true, 150);
  for (int64_t t = 200; t < 200 + kFailback; t += 500) {
    s.OnProbeAnswered(0, 1000, t);
    s.OnProbeAnswered(1, 50000, t);
    s.OnProbeAnswered(2, 20000, t);
    EXPECT_NE(s.Select(t, &changed), 0) << "moved back before failback_after at " << t;
  }
  // c has been healthy all along and is nearer than b: it may win first; a is nearest.
  s.OnProbeAnswered(0, 1000, 200 + kFailback);
  s.OnProbeAnswered(1, 50000, 200 + kFailback);
  s.OnProbeAnswered(2, 20000, 200 + kFailback);
  EXPECT_EQ(s.Select(200 + kFailback, &changed), 0);
}

TEST(RegionSelectorTest, LoadOnTheWriteRegionDoesNotMoveWrites) {
  RegionSelector s({{"a", 0}, {"b", 1}}, kHealth, kFailback, kGrace);
  bool changed;
  s.OnConnected(0, true, 0);
  s.OnConnected(1, true, 0);
  s.OnProbeAnswered(0, 1000, 0);
  s.OnProbeAnswered(1, 1000, 0);
  ASSERT_EQ(s.Select(0, &changed), 0);
  // a is draining a backlog: its probes queue behind the work (30-60 ms),
  // except now and then; b idles at 1 ms. The minimum is a's distance.
  for (int64_t t = 100; t < 4 * kFailback; t += 100) {
    s.OnProbeAnswered(0, (t / 100) % 7 == 0 ? 1200 : 30000 + (t % 3) * 10000, t);
    s.OnProbeAnswered(1, 1000, t);
    EXPECT_EQ(s.Select(t, &changed), 0) << "at " << t;
  }
  EXPECT_EQ(s.switches(), 1);
}

TEST(RegionSelectorTest, ARegionMustStayNearerForTheWholeFailbackTime) {
  RegionSelector s({{"a", 0}, {"b", 1}}, kHealth, kFailback, kGrace);
  bool changed;
  s.OnConnected(0, true, 0);
  s.OnConnected(1, true, 0);
  s.OnProbeAnswered(0, 50000, 0);
  s.OnProbeAnswered(1, 80000, 0);
  ASSERT_EQ(s.Select(0, &changed), 0);
  // b's path improves to 10 ms, but a's minimum drops to 12 ms for a while
  // in the middle (within the margin): the streak restarts.
  int64_t t = 100;
  for (; t < 3000; t += 100) {
    s.OnProbeAnswered(0, 50000, t);
    s.OnProbeAnswered(1, 10000, t);
    EXPECT_EQ(s.Select(t, &changed), 0);
  }
  s.OnProbeAnswered(0, 12000, t);  // stays the minimum of a's last 64 samples for 64 probes
  for (int i = 0; i < 63; ++i, t += 100) {
    s.OnProbeAnswered(0, 50000, t);
    s.OnProbeAnswered(1, 10000, t);
    EXPECT_EQ(s.Select(t, &changed), 0);
  }
  int64_t streak_start = t;
  for (; t < streak_start + kFailback; t += 100) {
    s.OnProbeAnswered(0, 50000, t);
    s.OnProbeAnswered(1, 10000, t);
    EXPECT_EQ(s.Select(t, &changed), 0) << "moved at " << t << " before a full failback period";
  }
  s.OnProbeAnswered(0, 50000, t);
  s.OnProbeAnswered(1, 10000, t);
  EXPECT_EQ(s.Select(t, &changed), 1);
}

TEST(RegionSelectorTest, UnansweredProbesMakeARegionUnhealthy) {
  RegionSelector s({{"a", 0}, {"b", 1}}, kHealth, kFailback, kGrace);
  bool changed;
  s.OnConnected(0, true, 0);
  s.OnConnected(1, true, 0);
  s.OnProbeAnswered(0, 1000, 0);
  s.OnProbeAnswered(1, 9000, 0);
  ASSERT_EQ(s.Select(0, &changed), 0);
  // Only b keeps answering (a's hub is gone, its broker still up).
  for (int64_t t = 300; t <= 1500; t += 300) s.OnProbeAnswered(1, 9000, t);
  EXPECT_EQ(s.Select(1500, &changed), 1);
  EXPECT_FALSE(s.Healthy(0, 1500));
  // Nothing healthy: no write region.
  EXPECT_EQ(s.Select(1500 + 2 * kHealth, &changed), -1);
}

// A region busy with a backlog may answer its probes late; its answers to
// batches still show it alive, but never make a region healthy that no
// probe measured.
TEST(RegionSelectorTest, AnsweredBatchesKeepABusyRegionHealthy) {
  RegionSelector s({{"a", 0}, {"b", 1}}, kHealth, kFailback, kGrace);
  bool changed;
  s.OnConnected(0, true, 0);
  s.OnConnected(1, true, 0);
  s.OnProbeAnswered(0, 1000, 0);
  s.OnBatchAnswered(1, 0);
  EXPECT_FALSE(s.Healthy(1, 0)) << "no probe has measured b";
  s.OnProbeAnswered(1, 1000, 0);
  EXPECT_EQ(s.Select(0, &changed), 0);
  // a's probes go unanswered, its batches are answered: it keeps the writes.
  for (int64_t t = 200; t <= 5 * kHealth; t += 200) {
    s.OnBatchAnswered(0, t);
    s.OnProbeAnswered(1, 1000, t);
    EXPECT_EQ(s.Select(t, &changed), 0) << "at " << t << " ms";
  }
  EXPECT_EQ(s.switches(), 1);
  // Nothing answered by a, neither probes nor batches: failover to b.
  const int64_t later = 6 * kHealth + 1;
  s.OnProbeAnswered(1, 1000, later);
  EXPECT_EQ(s.Select(later, &changed), 1);
}

}  // namespace
}  // namespace edgesync

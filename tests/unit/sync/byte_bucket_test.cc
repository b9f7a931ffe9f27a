// ByteBucket on a ManualClock: refill at the rate up to the depth,
// the debt a packet larger than that leaves, and the bound on what any span
// of time lets through.
#include "sync/byte_bucket.h"

#include <gtest/gtest.h>

#include <random>

namespace edgesync {
namespace {

TEST(ByteBucketTest, StartsFullAndRefillsAtTheRateUpToOneSecond) {
  ManualClock clock;
  ByteBucket bucket(1000, 1000, &clock);
  EXPECT_EQ(bucket.depth(), 1000);
  EXPECT_DOUBLE_EQ(bucket.tokens(), 1000);
  ASSERT_TRUE(bucket.CanTake(600));
  bucket.Take(600);
  EXPECT_FALSE(bucket.CanTake(401));
  EXPECT_TRUE(bucket.CanTake(400));
  EXPECT_EQ(bucket.WaitMs(500), 100);
  clock.Advance(100);
  EXPECT_TRUE(bucket.CanTake(500));
  EXPECT_EQ(bucket.WaitMs(500), 0);
  clock.Advance(10000);  // idle: never more than one second of the rate
  EXPECT_DOUBLE_EQ(bucket.tokens(), 1000);
}

TEST(ByteBucketTest, APacketLargerThanTheDepthGoesWhenFullAndLeavesADebt) {
  ManualClock clock;
  ByteBucket bucket(1000, 1000, &clock);
  bucket.Take(100);
  EXPECT_FALSE(bucket.CanTake(2500)) << "a large packet still waits for a full bucket";
  EXPECT_EQ(bucket.WaitMs(2500), 100);
  clock.Advance(100);
  ASSERT_TRUE(bucket.CanTake(2500));
  bucket.Take(2500);
  EXPECT_DOUBLE_EQ(bucket.tokens(), -1500);
  // The debt is paid before even a small packet goes.
  EXPECT_FALSE(bucket.CanTake(1));
  EXPECT_EQ(bucket.WaitMs(1), 1501);
  clock.Advance(1500);
  EXPECT_FALSE(bucket.CanTake(1));
  clock.Advance(1);
  EXPECT_TRUE(bucket.CanTake(1));
}

// Packets of random sizes (up to twice the depth) offered every few ms;
// over every window the bytes taken stay within rate x T + the depth, plus
// the part of the last packet above the depth.
void ExpectAnySpanWithinRateTimesSpanPlusDepth(int64_t rate, int64_t depth) {
  ManualClock clock;
  ByteBucket bucket(rate, depth, &clock);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> size(40, 2 * depth);
  std::uniform_int_distribution<int64_t> step(1, 30);
  std::vector<std::pair<int64_t, int64_t>> taken;  // (ms, bytes)
  int64_t now_ms = 0, next = size(rng), largest = 0;
  for (int i = 0; i < 20000; ++i) {
    if (bucket.CanTake(next)) {
      bucket.Take(next);
      taken.emplace_back(now_ms, next);
      largest = std::max(largest, next);
      next = size(rng);
    }
    const int64_t dt = step(rng);
    clock.Advance(dt);
    now_ms += dt;
  }
  ASSERT_GT(taken.size(), 100u);
  int64_t total = 0;
  for (const auto& t : taken) total += t.second;
  // Long run: the rate, within one burst.
  EXPECT_LE(total, rate * now_ms / 1000 + std::max(depth, largest));
  // Nearly the rate goes through (refill is lost only while a packet
  // larger than the depth waits at a full bucket, up to one step).
  EXPECT_GE(total, rate * now_ms / 1000 * 8 / 10) << "the bucket lets the rate through";
  for (size_t a = 0; a < taken.size(); a += 7) {
    int64_t bytes = 0;
    for (size_t b = a; b < taken.size() && taken[b].first - taken[a].first <= 10000; ++b) {
      bytes += taken[b].second;
      const int64_t span_ms = taken[b].first - taken[a].first;
      ASSERT_LE(bytes, rate * span_ms / 1000 + depth + std::max<int64_t>(0, taken[b].second - depth))
          << "from packet " << a << " to " << b;
    }
  }
}

TEST(ByteBucketTest, AnySpanPassesAtMostRateTimesSpanPlusDepth) {
  ExpectAnySpanWithinRateTimesSpanPlusDepth(20000, 20000);
  // The uplink's depth: a quarter second of the rate.
  ExpectAnySpanWithinRateTimesSpanPlusDepth(20000, 5000);
}

TEST(ByteBucketTest, ADepthBelowOneSecondBoundsTheBurstAfterIdle) {
  ManualClock clock;
  ByteBucket bucket(1000, 250, &clock);
  EXPECT_EQ(bucket.depth(), 250);
  EXPECT_DOUBLE_EQ(bucket.tokens(), 250);
  bucket.Take(250);
  EXPECT_FALSE(bucket.CanTake(100));
  EXPECT_EQ(bucket.WaitMs(100), 100);
  clock.Advance(10000);  // idle: never more than the depth
  EXPECT_DOUBLE_EQ(bucket.tokens(), 250);
  // A packet above the depth goes when the bucket is full and leaves its
  // excess as a debt paid at the rate.
  ASSERT_TRUE(bucket.CanTake(1000));
  bucket.Take(1000);
  EXPECT_EQ(bucket.WaitMs(250), 1000);
}

}  // namespace
}  // namespace edgesync

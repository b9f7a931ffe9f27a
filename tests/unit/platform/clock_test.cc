#include "platform/clock.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

TEST(ClockTest, SystemClockMonotonicNeverGoesBack) {
  Clock* c = SystemClock();
  int64_t a = c->MonotonicNanos();
  int64_t b = c->MonotonicNanos();
  EXPECT_LE(a, b);
  EXPECT_GT(c->WallMillis(), 1600000000000);  // after 2020
}

TEST(ClockTest, ManualClockJumpsWallWithoutMovingMonotonic) {
  ManualClock c(/*wall_ms=*/1000, /*mono_ns=*/0);
  c.Advance(250);
  EXPECT_EQ(c.WallMillis(), 1250);
  EXPECT_EQ(c.MonotonicMillis(), 250);
  c.SetWall(5);  // an NTP step backwards
  EXPECT_EQ(c.WallMillis(), 5);
  EXPECT_EQ(c.MonotonicMillis(), 250);
}

}  // namespace
}  // namespace edgesync

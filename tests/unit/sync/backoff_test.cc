#include "sync/backoff.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

TEST(BackoffTest, StaysWithinBaseAndCapAndGrows) {
  Backoff b(100, 5000, 42);
  int64_t max_seen = 0;
  for (int i = 0; i < 200; ++i) {
    int64_t d = b.Next();
    EXPECT_GE(d, 100);
    EXPECT_LE(d, 5000);
    max_seen = std::max(max_seen, d);
  }
  EXPECT_GT(max_seen, 1000);  // it does grow towards the cap
}

TEST(BackoffTest, ResetStartsOverFromBase) {
  Backoff b(10, 100000, 7);
  for (int i = 0; i < 50; ++i) b.Next();
  b.Reset();
  EXPECT_LE(b.Next(), 30);  // within [base, 3*base] right after a reset
}

TEST(BackoffTest, DifferentSeedsDecorrelate) {
  Backoff a(100, 60000, 1), b(100, 60000, 2);
  int same = 0;
  for (int i = 0; i < 20; ++i) same += a.Next() == b.Next();
  EXPECT_LT(same, 5);
}

}  // namespace
}  // namespace edgesync

// The commit groups' rule (agent/ingest/commit_pacer.h) at the rates a
// gateway meets: how long a group gathers and what it aims for.
#include "agent/ingest/commit_pacer.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace edgesync {
namespace {

// Feeds `seconds` of commits at `rate` readings/s, one commit per delay.
void Feed(CommitPacer* p, double rate, int seconds, int64_t* now_ms) {
  const int64_t end = *now_ms + seconds * 1000;
  while (*now_ms < end) {
    const int64_t step = std::max<int64_t>(1, p->DelayMs());
    *now_ms += step;
    p->Committed(static_cast<size_t>(rate * static_cast<double>(step) / 1000.0), *now_ms);
  }
}

TEST(CommitPacerTest, UntilARateIsKnownAGroupWaitsATenthOfASecond) {
  CommitPacer p(500, 2000, false);
  EXPECT_EQ(p.DelayMs(), CommitPacer::kFirstDelayMs);
  EXPECT_EQ(p.TargetGroup(), 16u);
  p.Committed(3, 100);
  EXPECT_EQ(p.DelayMs(), CommitPacer::kFirstDelayMs) << "a rate needs half a second of commits";
  CommitPacer low_cap(40, 2000, false);
  EXPECT_EQ(low_cap.DelayMs(), 40);
}

TEST(CommitPacerTest, AHundredASecondGathersSixteenWithinTheCap) {
  CommitPacer p(500, 2000, false);
  int64_t now = 0;
  Feed(&p, 100, 5, &now);
  EXPECT_NEAR(p.rate(), 100, 15);
  EXPECT_GE(p.DelayMs(), 140);
  EXPECT_LE(p.DelayMs(), 180);
  EXPECT_FALSE(p.busy());
}

TEST(CommitPacerTest, AThousandASecondKeepsItsLatency) {
  CommitPacer p(500, 2000, false);
  int64_t now = 0;
  Feed(&p, 1000, 5, &now);
  EXPECT_GE(p.DelayMs(), CommitPacer::kMinDelayMs);
  EXPECT_LE(p.DelayMs(), 20);
}

TEST(CommitPacerTest, ALowRateThatCannotFillAGroupCommitsAtOnce) {
  CommitPacer p(500, 2000, false);
  int64_t now = 0;
  for (int i = 0; i < 10; ++i) {  // one reading a second
    now += 1000;
    p.Committed(1, now);
  }
  EXPECT_NEAR(p.rate(), 1, 0.01);
  EXPECT_EQ(p.DelayMs(), CommitPacer::kMinDelayMs);
  // Ten a second can gather five within the cap: it waits the cap.
  CommitPacer q(500, 2000, false);
  now = 0;
  for (int i = 0; i < 10; ++i) {
    now += 500;
    q.Committed(5, now);
  }
  EXPECT_EQ(q.DelayMs(), 500);
}

TEST(CommitPacerTest, SyncedCommitsGatherLongerUpToTheLossWindow) {
  CommitPacer p(1000, 2000, true);
  EXPECT_EQ(p.TargetGroup(), 192u);
  int64_t now = 0;
  Feed(&p, 100, 10, &now);
  EXPECT_EQ(p.DelayMs(), 1000) << "the Pi config's one-second window";
}

TEST(CommitPacerTest, AboveTheBusyRateGroupsFillToBatchMaxAndBusyEndsBelowTwoThirds) {
  CommitPacer p(500, 2000, false);
  int64_t now = 0;
  for (int i = 0; i < 8; ++i) {
    now += 250;
    p.Committed(2000, now);  // 8,000/s
  }
  EXPECT_TRUE(p.busy());
  EXPECT_EQ(p.TargetGroup(), 2000u);
  EXPECT_EQ(p.DelayMs(), 500);
  for (int i = 0; i < 4; ++i) {  // 1,600/s: still busy (above two thirds)
    now += 500;
    p.Committed(800, now);
  }
  EXPECT_TRUE(p.busy());
  for (int i = 0; i < 4; ++i) {  // 1,000/s
    now += 500;
    p.Committed(500, now);
  }
  EXPECT_FALSE(p.busy());
  EXPECT_EQ(p.TargetGroup(), 16u);
}

TEST(CommitPacerTest, ACapBelowTheFloorIsKept) {
  CommitPacer p(0, 2000, false);
  int64_t now = 0;
  Feed(&p, 100, 3, &now);
  EXPECT_EQ(p.DelayMs(), 0) << "batch_delay_ms = 0 commits at once";
}

}  // namespace
}  // namespace edgesync

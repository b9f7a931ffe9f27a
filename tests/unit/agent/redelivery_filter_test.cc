#include "agent/ingest/redelivery_filter.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

// Fresh messages 1..n arrive and are taken, as from Mosquitto.
void TakeInSequence(RedeliveryFilter* f, int first, int n, const char* payload = "21.5") {
  for (int id = first; id < first + n; ++id) {
    f->Arrived(id, false);
    f->Taken(id, "sensors/d1/temp", payload);
  }
}

TEST(RedeliveryFilterTest, ARedeliveryOfATakenMessageIsKnownByItsIdAndContent) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 10);
  f.Arrived(9, true);
  EXPECT_TRUE(f.AlreadyTaken(9, "sensors/d1/temp", "21.5"));
  EXPECT_FALSE(f.AlreadyTaken(9, "sensors/d1/temp", "21.6")) << "another payload under the id";
  EXPECT_FALSE(f.AlreadyTaken(9, "sensors/d2/temp", "21.5")) << "another topic under the id";
  EXPECT_FALSE(f.AlreadyTaken(11, "sensors/d1/temp", "21.5")) << "an id never taken";
  EXPECT_FALSE(f.AlreadyTaken(0, "sensors/d1/temp", "21.5")) << "QoS 0 has no id";
}

TEST(RedeliveryFilterTest, IdsWrapAroundWithoutBreakingTheSequence) {
  RedeliveryFilter f;
  TakeInSequence(&f, 65530, 6);  // 65530..65535
  TakeInSequence(&f, 1, 3);
  EXPECT_TRUE(f.matching());
  EXPECT_TRUE(f.AlreadyTaken(65535, "sensors/d1/temp", "21.5"));
  EXPECT_TRUE(f.AlreadyTaken(2, "sensors/d1/temp", "21.5"));
}

// A broker that hands out the lowest free id could reuse an id at once: a
// match could then be a new message, so matching stops for good.
TEST(RedeliveryFilterTest, AnIdOutOfSequenceTurnsMatchingOff) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 5);
  f.Arrived(1, false);
  EXPECT_FALSE(f.matching());
  EXPECT_EQ(f.sequence_breaks(), 1);
  f.Taken(1, "sensors/d1/temp", "21.5");
  EXPECT_FALSE(f.AlreadyTaken(1, "sensors/d1/temp", "21.5"));
  TakeInSequence(&f, 2, 5);
  EXPECT_FALSE(f.AlreadyTaken(3, "sensors/d1/temp", "21.5"));
  EXPECT_EQ(f.sequence_breaks(), 1);
}

TEST(RedeliveryFilterTest, GapsFromDroppedMessagesAreStillASequence) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 5);
  TakeInSequence(&f, 5 + RedeliveryFilter::kMaxStep, 1);
  EXPECT_TRUE(f.matching());
  TakeInSequence(&f, 6 + 2 * RedeliveryFilter::kMaxStep + 1, 1);
  EXPECT_FALSE(f.matching());
}

// An entry goes long before its id can come round again.
TEST(RedeliveryFilterTest, OldEntriesAreForgotten) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 1);
  TakeInSequence(&f, 2, static_cast<int>(RedeliveryFilter::kCapacity));
  EXPECT_FALSE(f.AlreadyTaken(1, "sensors/d1/temp", "21.5"));
  EXPECT_TRUE(f.AlreadyTaken(2, "sensors/d1/temp", "21.5"));
  RedeliveryFilter g;
  TakeInSequence(&g, 1, 1);
  for (int k = 1; k * RedeliveryFilter::kMaxStep <= RedeliveryFilter::kWindow; ++k) {
    g.Arrived(static_cast<int>(1 + k * RedeliveryFilter::kMaxStep), false);
  }
  EXPECT_TRUE(g.AlreadyTaken(1, "sensors/d1/temp", "21.5")) << "still within the window";
  g.Arrived(static_cast<int>(1 + RedeliveryFilter::kWindow + 1), false);
  EXPECT_TRUE(g.matching());
  EXPECT_FALSE(g.AlreadyTaken(1, "sensors/d1/temp", "21.5"));
}

TEST(RedeliveryFilterTest, ASessionLostForgetsEverythingAndRestartsTheSequence) {
  RedeliveryFilter f;
  TakeInSequence(&f, 100, 5);
  f.SessionLost();
  EXPECT_FALSE(f.AlreadyTaken(101, "sensors/d1/temp", "21.5"));
  TakeInSequence(&f, 1, 3);  // a new session's ids start again
  EXPECT_TRUE(f.matching());
  EXPECT_TRUE(f.AlreadyTaken(2, "sensors/d1/temp", "21.5"));
}

}  // namespace
}  // namespace edgesync

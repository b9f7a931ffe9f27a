#include "agent/ingest/redelivery_filter.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

uint64_t Fp(const char* topic, const char* payload) { return RedeliveryFilter::Fingerprint(topic, payload); }

// Fresh messages 1..n arrive and are taken, as from Mosquitto.
void TakeInSequence(RedeliveryFilter* f, int first, int n, const char* payload = "21.5") {
  for (int id = first; id < first + n; ++id) {
    f->Arrived(id, false);
    f->Taken(id, Fp("sensors/d1/temp", payload));
  }
}

TEST(RedeliveryFilterTest, ARedeliveryOfATakenMessageIsKnownByItsIdAndContent) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 10);
  f.Arrived(9, true);
  EXPECT_TRUE(f.AlreadyTaken(9, Fp("sensors/d1/temp", "21.5")));
  EXPECT_FALSE(f.AlreadyTaken(9, Fp("sensors/d1/temp", "21.6"))) << "another payload under the id";
  EXPECT_FALSE(f.AlreadyTaken(9, Fp("sensors/d2/temp", "21.5"))) << "another topic under the id";
  EXPECT_FALSE(f.AlreadyTaken(11, Fp("sensors/d1/temp", "21.5"))) << "an id never taken";
  EXPECT_FALSE(f.AlreadyTaken(0, Fp("sensors/d1/temp", "21.5"))) << "QoS 0 has no id";
}

// The fingerprint's low byte is kept in the intake journal and read back by
// the next start, maybe of another build: its value is part of the format
// (docs/FORMATS.md), pinned here.
TEST(RedeliveryFilterTest, TheFingerprintIsTheSameInEveryBuild) {
  EXPECT_EQ(Fp("sensors/d1/temp", "21.5"), 0xbecb7fe3c76a34e7ULL);
  EXPECT_NE(Fp("ab", "c"), Fp("a", "bc")) << "where the topic ends matters";
  EXPECT_NE(Fp("", ""), Fp("", " "));
}

TEST(RedeliveryFilterTest, IdsWrapAroundWithoutBreakingTheSequence) {
  RedeliveryFilter f;
  TakeInSequence(&f, 65530, 6);  // 65530..65535
  TakeInSequence(&f, 1, 3);
  EXPECT_TRUE(f.matching());
  EXPECT_TRUE(f.AlreadyTaken(65535, Fp("sensors/d1/temp", "21.5")));
  EXPECT_TRUE(f.AlreadyTaken(2, Fp("sensors/d1/temp", "21.5")));
}

// A broker that hands out the lowest free id could reuse an id at once: a
// match could then be a new message, so matching stops for good.
TEST(RedeliveryFilterTest, AnIdOutOfSequenceTurnsMatchingOff) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 5);
  f.Arrived(1, false);
  EXPECT_FALSE(f.matching());
  EXPECT_EQ(f.sequence_breaks(), 1);
  f.Taken(1, Fp("sensors/d1/temp", "21.5"));
  EXPECT_FALSE(f.AlreadyTaken(1, Fp("sensors/d1/temp", "21.5")));
  TakeInSequence(&f, 2, 5);
  EXPECT_FALSE(f.AlreadyTaken(3, Fp("sensors/d1/temp", "21.5")));
  EXPECT_EQ(f.sequence_breaks(), 1);
}

// With an unlimited in-flight window the broker sends thousands of
// messages that a stalled gateway never reads; after the cut they come
// again with DUP set, then fresh ones follow them.
// A broker killed -9 comes back from its last saved state: it numbers on
// from the id it saved, behind the newest we saw, and sends again what it
// had queued then. Fresh ids up to the newest seen before the step may be
// such messages; past it, or after a jump elsewhere, nothing is.
TEST(RedeliveryFilterTest, AStepBackOpensAReplayWindowUpToTheNewestIdSeen) {
  // Arrived answers what MayBeReplayed then says (ingest asks once).
  auto arrive = [](RedeliveryFilter* f, int id) {
    const bool answer = f->Arrived(id, false);
    EXPECT_EQ(answer, f->MayBeReplayed(id)) << id;
    return answer;
  };
  RedeliveryFilter f;
  for (int id = 1; id <= 500; ++id) EXPECT_FALSE(arrive(&f, id));
  for (int id = 244; id <= 500; ++id) EXPECT_TRUE(arrive(&f, id)) << id;  // 257 back
  EXPECT_FALSE(arrive(&f, 501));
  // Across the wrap of the id space too; a forward jump opens nothing.
  RedeliveryFilter g;
  arrive(&g, 65530);
  arrive(&g, 65535);
  arrive(&g, 3);
  EXPECT_TRUE(arrive(&g, 65534));  // 4 back
  arrive(&g, 65535);
  EXPECT_TRUE(arrive(&g, 1));
  EXPECT_FALSE(arrive(&g, 30000));
  EXPECT_FALSE(arrive(&g, 30001));
  // A lost session closes it; a DUP is never in it.
  RedeliveryFilter h;
  arrive(&h, 100);
  EXPECT_TRUE(arrive(&h, 90));
  EXPECT_FALSE(h.Arrived(95, true));
  h.SessionLost();
  EXPECT_FALSE(arrive(&h, 91));
}

TEST(RedeliveryFilterTest, RedeliveriesOfMessagesNeverReadCarryTheSequenceOn) {
  RedeliveryFilter f;
  TakeInSequence(&f, 1, 10);
  f.Arrived(8, true);  // taken, its PUBACK lost
  EXPECT_TRUE(f.AlreadyTaken(8, Fp("sensors/d1/temp", "21.5")));
  for (int id = 11; id <= 10 + 3 * RedeliveryFilter::kMaxStep; ++id) {
    f.Arrived(id, true);
    f.Taken(id, Fp("sensors/d1/temp", "21.5"));
  }
  TakeInSequence(&f, 11 + 3 * RedeliveryFilter::kMaxStep, 1);
  EXPECT_TRUE(f.matching());
  EXPECT_TRUE(f.AlreadyTaken(10 + 3 * RedeliveryFilter::kMaxStep, Fp("sensors/d1/temp", "21.5")));
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
  EXPECT_FALSE(f.AlreadyTaken(1, Fp("sensors/d1/temp", "21.5")));
  EXPECT_TRUE(f.AlreadyTaken(2, Fp("sensors/d1/temp", "21.5")));
  RedeliveryFilter g;
  TakeInSequence(&g, 1, 1);
  for (int k = 1; k * RedeliveryFilter::kMaxStep <= RedeliveryFilter::kWindow; ++k) {
    g.Arrived(static_cast<int>(1 + k * RedeliveryFilter::kMaxStep), false);
  }
  EXPECT_TRUE(g.AlreadyTaken(1, Fp("sensors/d1/temp", "21.5"))) << "still within the window";
  g.Arrived(static_cast<int>(1 + RedeliveryFilter::kWindow + 1), false);
  EXPECT_TRUE(g.matching());
  EXPECT_FALSE(g.AlreadyTaken(1, Fp("sensors/d1/temp", "21.5")));
}

TEST(RedeliveryFilterTest, ASessionLostForgetsEverythingAndRestartsTheSequence) {
  RedeliveryFilter f;
  TakeInSequence(&f, 100, 5);
  f.SessionLost();
  EXPECT_FALSE(f.AlreadyTaken(101, Fp("sensors/d1/temp", "21.5")));
  TakeInSequence(&f, 1, 3);  // a new session's ids start again
  EXPECT_TRUE(f.matching());
  EXPECT_TRUE(f.AlreadyTaken(2, Fp("sensors/d1/temp", "21.5")));
}

// After a restart: the journal's messages count while the broker's
// numbering goes on from them.
TEST(RedeliveryFilterTest, RestoredMessagesAreKnownWhileTheNumberingGoesOnFromThem) {
  const uint64_t fp = Fp("sensors/d1/temp", "21.5");
  RedeliveryFilter f;
  for (int id = 40; id <= 50; ++id) f.Restored(id, false, static_cast<uint8_t>(fp));
  f.Arrived(50, true);
  EXPECT_TRUE(f.AlreadyTaken(50, fp)) << "the redelivery of the last message taken";
  EXPECT_FALSE(f.AlreadyTaken(50, Fp("sensors/d1/temp", "21.6")));
  f.Arrived(51, false);
  EXPECT_TRUE(f.matching());
  EXPECT_TRUE(f.AlreadyTaken(49, fp));

  RedeliveryFilter g;
  for (int id = 40; id <= 50; ++id) g.Restored(id, false, static_cast<uint8_t>(fp));
  g.Arrived(50 + RedeliveryFilter::kMaxStep + 1, false);  // the broker went on without us
  EXPECT_FALSE(g.AlreadyTaken(50, fp)) << "entries across a gap we cannot vouch for";
  EXPECT_TRUE(g.matching()) << "a restart's gap is not a broker out of sequence";
  TakeInSequence(&g, 50 + RedeliveryFilter::kMaxStep + 2, 2);
  EXPECT_TRUE(g.AlreadyTaken(50 + RedeliveryFilter::kMaxStep + 2, fp));
}

}  // namespace
}  // namespace edgesync

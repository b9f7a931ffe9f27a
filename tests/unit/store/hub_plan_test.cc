// PlanApply (store/hub_store.h): one origin's batch decided against its
// high-water mark and the spans held above it (sync/PROTOCOL.md, "Two
// lanes"), without a store. The conformance suite runs the same rule
// through both backends; this covers every case of the rule itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/hub_store.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const Origin kGw{"gw-1", "0123456789abcdef0123456789abcdef"};

std::vector<ChangeEntry> Entries(uint64_t from, uint64_t to) {
  std::vector<ChangeEntry> v;
  for (uint64_t lsn = from; lsn <= to; ++lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = Reading{"dev-1", "temp", 1000 + static_cast<int64_t>(lsn), 1.0, "C", 0};
    v.push_back(e);
  }
  return v;
}

OriginBatch Batch(const std::vector<ChangeEntry>& entries, bool live = false, uint64_t base = 0) {
  OriginBatch b;
  b.origin = kGw;
  b.base_lsn = base;
  b.first_lsn = entries.empty() ? 0 : entries.front().lsn;
  b.entries = &entries;
  b.live = live;
  return b;
}

// The LSNs of the entries a plan calls new.
std::vector<uint64_t> Fresh(const ApplyPlan& plan, const std::vector<ChangeEntry>& entries) {
  std::vector<uint64_t> out;
  for (size_t i : plan.fresh) out.push_back(entries[i].lsn);
  return out;
}

std::vector<uint64_t> Range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> v;
  for (uint64_t l = from; l <= to; ++l) v.push_back(l);
  return v;
}

using Spans = std::vector<LsnSpan>;

TEST(PlanApplyTest, WithoutSpansABatchIsDecidedAgainstTheMarkAsBefore) {
  auto next = Entries(11, 20);
  ApplyPlan p = PlanApply(Batch(next), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 20u);
  EXPECT_EQ(Fresh(p, next), Range(11, 20));
  EXPECT_TRUE(p.new_spans.empty());

  auto overlap = Entries(5, 15);
  p = PlanApply(Batch(overlap), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(Fresh(p, overlap), Range(11, 15));

  auto resend = Entries(1, 10);
  p = PlanApply(Batch(resend), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_high_water, 10u);

  auto jump = Entries(101, 105);
  p = PlanApply(Batch(jump, false, 100), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 105u);

  std::vector<ChangeEntry> none;
  p = PlanApply(Batch(none, false, 40), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 40u);
}

// A batch of the backlog lane (not live) above the mark next to no span is
// a gap, exactly as for a sender that knows no lanes.
TEST(PlanApplyTest, ANonLiveBatchAboveTheMarkIsAGapAsBefore) {
  auto later = Entries(20, 25);
  ApplyPlan p = PlanApply(Batch(later), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kGap);
  EXPECT_EQ(p.new_high_water, 10u);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_TRUE(p.new_spans.empty());
  EXPECT_NE(p.detail.find("gap in origin"), std::string::npos) << p.detail;
  // Also with spans held elsewhere: it names them.
  p = PlanApply(Batch(later), 10, Spans{{40, 50}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kGap);
  EXPECT_EQ(p.new_spans, (Spans{{40, 50}}));
  EXPECT_NE(p.detail.find("40..50"), std::string::npos) << p.detail;
}

TEST(PlanApplyTest, ALiveBatchAboveTheMarkOpensASpanAndLeavesTheMark) {
  auto live = Entries(20, 25);
  ApplyPlan p = PlanApply(Batch(live, true), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 10u);
  EXPECT_EQ(p.new_spans, (Spans{{20, 25}}));
  EXPECT_EQ(Fresh(p, live), Range(20, 25));
  // Its watermark waits: only gap-free LSNs count.
  OriginBatch b = Batch(live, true);
  b.complete_through_ms = 5000;
  EXPECT_FALSE(BatchCompletes(b, p.new_high_water));
}

TEST(PlanApplyTest, ALiveBatchAtTheMarkJoinsTheMarkAsAnyBatch) {
  auto live = Entries(11, 15);
  ApplyPlan p = PlanApply(Batch(live, true), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 15u);
  EXPECT_TRUE(p.new_spans.empty());
}

TEST(PlanApplyTest, ABatchAtASpansEndGrowsItLiveOrNot) {
  auto live = Entries(26, 30);
  ApplyPlan p = PlanApply(Batch(live, true), 10, Spans{{20, 25}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 10u);
  EXPECT_EQ(p.new_spans, (Spans{{20, 30}}));
  EXPECT_EQ(Fresh(p, live), Range(26, 30));
  p = PlanApply(Batch(live, false), 10, Spans{{20, 25}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans, (Spans{{20, 30}}));
  // A span whose first LSNs were compacted away at the gateway (first_lsn
  // before the first entry) joins the span's end too.
  auto compacted = Entries(33, 35);
  OriginBatch b = Batch(compacted);
  b.first_lsn = 31;
  p = PlanApply(b, 10, Spans{{20, 30}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans, (Spans{{20, 35}}));
  EXPECT_EQ(Fresh(p, compacted), Range(33, 35));
}

TEST(PlanApplyTest, AResendIntoASpanIsAlreadyHeldAndAnOverlapAddsOnlyWhatIsNew) {
  auto inside = Entries(22, 28);
  ApplyPlan p = PlanApply(Batch(inside, true), 10, Spans{{20, 30}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_high_water, 10u);
  EXPECT_EQ(p.new_spans, (Spans{{20, 30}}));
  // The whole span again (a live lane resent from its start after a
  // reconnect), live or not.
  auto whole = Entries(20, 30);
  EXPECT_EQ(PlanApply(Batch(whole, true), 10, Spans{{20, 30}}).outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(PlanApply(Batch(whole, false), 10, Spans{{20, 30}}).outcome, ApplyOutcome::kAlreadyHeld);
  auto overlap = Entries(25, 35);
  p = PlanApply(Batch(overlap, true), 10, Spans{{20, 30}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(Fresh(p, overlap), Range(31, 35));
  EXPECT_EQ(p.new_spans, (Spans{{20, 35}}));
}

TEST(PlanApplyTest, TheBacklogReachingASpanMergesItIntoTheMark) {
  auto upto = Entries(11, 19);
  ApplyPlan p = PlanApply(Batch(upto), 10, Spans{{20, 30}, {40, 50}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 30u);
  EXPECT_EQ(p.new_spans, (Spans{{40, 50}}));
  EXPECT_EQ(Fresh(p, upto), Range(11, 19));
  OriginBatch b = Batch(upto);
  b.complete_through_ms = 5000;
  EXPECT_TRUE(BatchCompletes(b, p.new_high_water));
}

TEST(PlanApplyTest, ABacklogBatchThatRunsIntoASpanAndPastItAddsOnlyWhatTheSpanLacks) {
  auto across = Entries(11, 35);
  ApplyPlan p = PlanApply(Batch(across), 10, Spans{{20, 30}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 35u);
  EXPECT_TRUE(p.new_spans.empty());
  std::vector<uint64_t> want = Range(11, 19);
  for (uint64_t l = 31; l <= 35; ++l) want.push_back(l);
  EXPECT_EQ(Fresh(p, across), want);
  // An overlap of the mark that runs into the span: what lies at or below
  // the mark is not new either.
  auto overlap = Entries(5, 22);
  p = PlanApply(Batch(overlap), 10, Spans{{20, 30}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 30u);
  EXPECT_EQ(Fresh(p, overlap), Range(11, 19));
}

TEST(PlanApplyTest, SeveralSpansMergeIntoTheMarkOneAfterAnother) {
  auto upto = Entries(11, 26);
  ApplyPlan p = PlanApply(Batch(upto), 10, Spans{{20, 25}, {27, 30}, {40, 50}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 30u) << "26 reaches 20..25, then 27..30 starts at the mark + 1";
  EXPECT_EQ(p.new_spans, (Spans{{40, 50}}));
  std::vector<uint64_t> want = Range(11, 19);
  want.push_back(26);  // between the two spans
  EXPECT_EQ(Fresh(p, upto), want);
}

TEST(PlanApplyTest, SpansThatComeToTouchMerge) {
  // Growing one span up to the next.
  auto bridge = Entries(26, 29);
  ApplyPlan p = PlanApply(Batch(bridge, true), 10, Spans{{20, 25}, {30, 35}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans, (Spans{{20, 35}}));
  // A new live span that reaches a later one.
  auto reach = Entries(25, 31);
  p = PlanApply(Batch(reach, true), 10, Spans{{30, 35}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans, (Spans{{25, 35}}));
  EXPECT_EQ(Fresh(p, reach), Range(25, 29));
  // A span grown past several others swallows them.
  auto long_one = Entries(26, 60);
  p = PlanApply(Batch(long_one, true), 10, Spans{{20, 25}, {30, 35}, {40, 45}, {70, 80}});
  EXPECT_EQ(p.new_spans, (Spans{{20, 60}, {70, 80}}));
  std::vector<uint64_t> want = Range(26, 29);
  for (uint64_t l : Range(36, 39)) want.push_back(l);
  for (uint64_t l : Range(46, 60)) want.push_back(l);
  EXPECT_EQ(Fresh(p, long_one), want);
}

TEST(PlanApplyTest, AtMostEightSpansAreHeld) {
  Spans eight;
  for (uint64_t i = 0; i < kMaxHeldRanges; ++i) eight.push_back(LsnSpan{100 + i * 10, 104 + i * 10});
  ASSERT_EQ(eight.size(), 8u);
  // A ninth is refused as a gap that says why; nothing changes.
  auto ninth = Entries(500, 505);
  ApplyPlan p = PlanApply(Batch(ninth, true), 10, eight);
  EXPECT_EQ(p.outcome, ApplyOutcome::kGap);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_high_water, 10u);
  EXPECT_EQ(p.new_spans, eight);
  EXPECT_NE(p.detail.find("holds 8 spans"), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("one lane"), std::string::npos) << p.detail;
  // Growing one of them is fine, and so is a batch that joins two (the
  // store then holds seven) or a new live span that reaches the next one
  // (still eight: the bound is on what is held, not on batches).
  auto grow = Entries(105, 106);
  p = PlanApply(Batch(grow, true), 10, eight);
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans.size(), 8u);
  auto join = Entries(105, 109);
  p = PlanApply(Batch(join, true), 10, eight);
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans.size(), 7u);
  EXPECT_EQ(p.new_spans.front(), (LsnSpan{100, 114}));
  auto reach = Entries(107, 109);
  p = PlanApply(Batch(reach, true), 10, eight);
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans.size(), 8u);
  EXPECT_EQ(p.new_spans[1], (LsnSpan{107, 114}));
  // The backlog still merges them into the mark.
  auto backlog = Entries(11, 99);
  p = PlanApply(Batch(backlog), 10, eight);
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 104u);
  EXPECT_EQ(p.new_spans.size(), 7u);
}

// The base rule keeps its meaning: everything up to base is held
// elsewhere, so spans it reaches join the mark.
TEST(PlanApplyTest, ABaseJumpReachingASpanMergesIt) {
  auto after_base = Entries(26, 28);
  ApplyPlan p = PlanApply(Batch(after_base, false, 25), 10, Spans{{20, 30}, {40, 45}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 30u);
  EXPECT_EQ(p.new_spans, (Spans{{40, 45}}));
  EXPECT_TRUE(p.fresh.empty()) << "26..28 were held in the span";
  // A live batch above a base jump opens its span above the new mark.
  auto live = Entries(60, 62);
  p = PlanApply(Batch(live, true, 50), 10, Spans{{40, 45}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_high_water, 50u);
  EXPECT_EQ(p.new_spans, (Spans{{60, 62}}));
}

TEST(PlanApplyTest, ARegressedMarkIsRegressedWhateverTheSpans) {
  auto live = Entries(40, 45);
  OriginBatch b = Batch(live, true);
  b.held_claim = 20;
  ApplyPlan p = PlanApply(b, 10, Spans{{30, 35}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kRegressed);
  EXPECT_EQ(p.new_high_water, 10u);
  EXPECT_EQ(p.new_spans, (Spans{{30, 35}}));
  EXPECT_TRUE(p.fresh.empty());
}

// A batch whose span starts at or below the mark + 1 but whose first entry
// above the mark does not follow it is a gap, as before: a span is opened
// only above the mark.
TEST(PlanApplyTest, ALiveBatchWithAHoleAtTheMarkIsAGap) {
  auto holed = Entries(5, 8);
  for (ChangeEntry& e : Entries(12, 14)) holed.push_back(e);
  ApplyPlan p = PlanApply(Batch(holed, true), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kGap);
  EXPECT_TRUE(p.new_spans.empty());
}

// Priority by topic (sync/PROTOCOL.md, "Priority by topic"). An origin's
// log where each LSN's level is lsn % 4 (0..3), so every level is scattered.
std::vector<ChangeEntry> Levelled(uint64_t from, uint64_t to, uint32_t only = 4) {
  std::vector<ChangeEntry> v;
  for (ChangeEntry& e : Entries(from, to)) {
    const uint32_t level = static_cast<uint32_t>(e.lsn % 4);
    if (only != 4 && level != only) continue;
    e.reading.quality = WithPriority(kQualitySensorFlagged, level);
    v.push_back(e);
  }
  return v;
}

OriginBatch Priority(const std::vector<ChangeEntry>& entries, uint8_t level, uint64_t first, uint64_t last) {
  OriginBatch b = Batch(entries);
  b.priority = level;
  b.first_lsn = first;
  b.last_lsn = last;
  return b;
}

PriorityMarks Marks(uint64_t p1, uint64_t p2, uint64_t p3) { return PriorityMarks{p1, p2, p3}; }

TEST(PlanApplyPriorityTest, APriorityBatchAppliesItsLevelAndMovesOnlyItsMark) {
  // Level 1 of 11..40 (LSNs 13, 17, ...), above the mark 10.
  const auto level1 = Levelled(11, 40, 1);
  ApplyPlan p = PlanApply(Priority(level1, 1, 11, 40), 10, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(Fresh(p, level1), (std::vector<uint64_t>{13, 17, 21, 25, 29, 33, 37}));
  EXPECT_EQ(p.new_priority, Marks(40, 0, 0));
  EXPECT_EQ(p.new_high_water, 10u);  // the mark stays
  EXPECT_TRUE(p.new_spans.empty());
  EXPECT_EQ(p.base, 0u);
  // The next one of the level follows P (its span may start anywhere up to P + 1).
  const auto next = Levelled(41, 90, 1);
  p = PlanApply(Priority(next, 1, 41, 90), 10, {}, Marks(40, 0, 0));
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_priority, Marks(90, 0, 0));
  EXPECT_EQ(p.fresh.size(), next.size());
  // Other levels' marks are their own: level 2 from the mark on.
  const auto level2 = Levelled(11, 30, 2);
  p = PlanApply(Priority(level2, 2, 11, 30), 10, {}, Marks(90, 0, 7));
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_priority, Marks(90, 30, 7));
  EXPECT_EQ(Fresh(p, level2), (std::vector<uint64_t>{14, 18, 22, 26, 30}));
}

TEST(PlanApplyPriorityTest, AnEmptyPriorityBatchMovesTheMarkOfItsLevel) {
  const std::vector<ChangeEntry> none;
  ApplyPlan p = PlanApply(Priority(none, 3, 11, 5000), 10, {}, Marks(0, 0, 0));
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_priority, Marks(0, 0, 5000));
  // Again: nothing new.
  p = PlanApply(Priority(none, 3, 11, 5000), 10, {}, Marks(0, 0, 5000));
  EXPECT_EQ(p.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_EQ(p.new_priority, Marks(0, 0, 5000));
}

// Above P + 1 (and above M + 1) is a gap: the answer names P, the sender
// resumes at P + 1. The base a failover declares opens no way.
TEST(PlanApplyPriorityTest, APriorityBatchPastItsMarkIsAGap) {
  const auto later = Levelled(60, 80, 1);
  ApplyPlan p = PlanApply(Priority(later, 1, 60, 80), 10, {}, Marks(40, 0, 0));
  EXPECT_EQ(p.outcome, ApplyOutcome::kGap);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_priority, Marks(40, 0, 0));
  EXPECT_NE(p.detail.find("priority 1: held through 40"), std::string::npos) << p.detail;
  OriginBatch based = Priority(later, 1, 60, 80);
  based.base_lsn = 59;
  EXPECT_EQ(PlanApply(based, 10, {}, Marks(40, 0, 0)).outcome, ApplyOutcome::kGap);
  // Right after P, or after M when M is past P: no gap.
  EXPECT_EQ(PlanApply(Priority(later, 1, 41, 80), 10, {}, Marks(40, 0, 0)).outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(PlanApply(Priority(later, 1, 60, 80), 59, {}, Marks(40, 0, 0)).outcome, ApplyOutcome::kApplied);
  // Another level's mark is no way either.
  EXPECT_EQ(PlanApply(Priority(later, 1, 60, 80), 10, {}, Marks(0, 59, 59)).outcome, ApplyOutcome::kGap);
}

// Below the mark: the backlog holds those; what lies above it is applied,
// and P still moves (it may trail M: harmless).
TEST(PlanApplyPriorityTest, APriorityBatchReachingBelowTheMarkAddsOnlyWhatLiesAbove) {
  const auto level2 = Levelled(1, 60, 2);
  ApplyPlan p = PlanApply(Priority(level2, 2, 1, 60), 30, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(Fresh(p, level2), (std::vector<uint64_t>{34, 38, 42, 46, 50, 54, 58}));
  EXPECT_EQ(p.new_priority, Marks(0, 60, 0));
  EXPECT_EQ(p.new_high_water, 30u);
  // All below the mark: already held, but the mark of the level moves.
  const auto low = Levelled(1, 30, 2);
  p = PlanApply(Priority(low, 2, 1, 30), 30, {});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_priority, Marks(0, 30, 0));
  p = PlanApply(Priority(low, 2, 1, 30), 30, {}, Marks(0, 30, 0));
  EXPECT_EQ(p.outcome, ApplyOutcome::kAlreadyHeld);
}

// A live lane's span holds every entry in it: a priority batch over it adds
// none of those, and leaves the spans as they are.
TEST(PlanApplyPriorityTest, APriorityBatchSkipsWhatAHeldSpanHolds) {
  const auto level3 = Levelled(11, 60, 3);
  ApplyPlan p = PlanApply(Priority(level3, 3, 11, 60), 10, Spans{{20, 30}, {50, 52}});
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(Fresh(p, level3), (std::vector<uint64_t>{11, 15, 19, 31, 35, 39, 43, 47, 55, 59}));
  EXPECT_EQ(p.new_spans, (Spans{{20, 30}, {50, 52}}));
  EXPECT_EQ(p.new_priority, Marks(0, 0, 60));
  // A resend of the same: nothing new.
  p = PlanApply(Priority(level3, 3, 11, 60), 10, Spans{{20, 30}, {50, 52}}, Marks(0, 0, 60));
  EXPECT_EQ(p.outcome, ApplyOutcome::kAlreadyHeld);
  EXPECT_TRUE(p.fresh.empty());
  // An overlapping resend adds only what lies past P.
  const auto more = Levelled(40, 80, 3);
  p = PlanApply(Priority(more, 3, 40, 80), 10, Spans{{20, 30}}, Marks(0, 0, 60));
  EXPECT_EQ(Fresh(p, more), (std::vector<uint64_t>{63, 67, 71, 75, 79}));
}

// The backlog skips the entries a priority batch brought (level k at or
// below P[k]) and moves the mark as before: each entry once.
TEST(PlanApplyPriorityTest, TheBacklogSkipsWhatPriorityBatchesHoldAndMovesTheMarkAsBefore) {
  const auto backlog = Levelled(11, 30);
  ApplyPlan p = PlanApply(Batch(backlog), 10, {}, Marks(20, 40, 0));
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  // Level 1 (13, 17) at or below 20 and level 2 (14, 18, ..., 30) at or
  // below 40 are held; level 0 and 3 and level 1 above 20 are new.
  std::vector<uint64_t> want;
  for (uint64_t lsn = 11; lsn <= 30; ++lsn) {
    const uint64_t level = lsn % 4;
    if ((level == 1 && lsn <= 20) || level == 2) continue;
    want.push_back(lsn);
  }
  EXPECT_EQ(Fresh(p, backlog), want);
  EXPECT_EQ(p.new_high_water, 30u);
  EXPECT_EQ(p.new_priority, Marks(20, 40, 0));
  // A backlog batch of held entries only still moves the mark.
  const auto held_only = Levelled(33, 35);  // levels 1, 2, 3
  p = PlanApply(Batch(held_only), 32, {}, Marks(40, 40, 40));
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_high_water, 35u);
  // A live batch above the mark skips them too and still opens its span.
  const auto live = Levelled(100, 110);
  p = PlanApply(Batch(live, true), 30, {}, Marks(0, 0, 105));
  EXPECT_EQ(p.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(p.new_spans, (Spans{{100, 110}}));
  EXPECT_EQ(Fresh(p, live), (std::vector<uint64_t>{100, 101, 102, 104, 105, 106, 107, 108, 109, 110}));
  // Device records have no level: never skipped.
  std::vector<ChangeEntry> device(1);
  device[0].lsn = 31;
  device[0].kind = ChangeEntry::Kind::kDeviceUpsert;
  device[0].device = DeviceRecord{"dev-1", "n", "l", "", false};
  p = PlanApply(Batch(device), 30, {}, Marks(100, 100, 100));
  EXPECT_EQ(p.fresh.size(), 1u);
}

// The whole drain, both orders: priority batches first, then the backlog
// over them, or the backlog first: every entry is new exactly once.
TEST(PlanApplyPriorityTest, EveryEntryIsNewExactlyOnceWhicheverPathBringsItFirst) {
  const auto log = Levelled(1, 200);
  for (int order = 0; order < 3; ++order) {
    SCOPED_TRACE(order);
    std::vector<int> times(201, 0);
    uint64_t mark = 0;
    Spans spans;
    PriorityMarks marks{};
    auto apply = [&](const OriginBatch& b, const std::vector<ChangeEntry>& entries) {
      ApplyPlan p = PlanApply(b, mark, spans, marks);
      ASSERT_TRUE(p.outcome == ApplyOutcome::kApplied || p.outcome == ApplyOutcome::kAlreadyHeld) << p.detail;
      for (size_t i : p.fresh) ++times[entries[i].lsn];
      mark = p.new_high_water;
      spans = p.new_spans;
      marks = p.new_priority;
    };
    std::vector<std::vector<ChangeEntry>> keep;
    keep.reserve(64);
    auto priority_pass = [&](uint64_t from, uint64_t to) {
      for (uint8_t level = 1; level <= 3; ++level) {
        for (uint64_t f = from; f <= to; f += 50) {
          keep.push_back(Levelled(f, std::min(to, f + 49), level));
          apply(Priority(keep.back(), level, f, std::min(to, f + 49)), keep.back());
        }
      }
    };
    auto backlog_pass = [&](uint64_t from, uint64_t to) {
      for (uint64_t f = from; f <= to; f += 30) {
        keep.push_back(Levelled(f, std::min(to, f + 29)));
        apply(Batch(keep.back()), keep.back());
      }
    };
    if (order == 0) {
      priority_pass(1, 200);
      backlog_pass(1, 200);
    } else if (order == 1) {
      backlog_pass(1, 200);
      priority_pass(1, 200);
    } else {
      // Interleaved: the backlog halfway, priority over all of it (below and
      // above the mark), a live span near the end, then the rest.
      backlog_pass(1, 90);
      priority_pass(1, 200);
      keep.push_back(Levelled(170, 180));
      apply(Batch(keep.back(), true), keep.back());
      backlog_pass(91, 200);
    }
    EXPECT_EQ(mark, 200u);
    EXPECT_TRUE(spans.empty());
    for (uint64_t lsn = 1; lsn <= 200; ++lsn) EXPECT_EQ(times[lsn], 1) << "LSN " << lsn;
  }
}

TEST(PlanApplyPriorityTest, ARegressedMarkIsRegressedForAPriorityBatchToo) {
  const auto level1 = Levelled(11, 40, 1);
  OriginBatch b = Priority(level1, 1, 11, 40);
  b.held_claim = 50;
  ApplyPlan p = PlanApply(b, 10, {}, Marks(7, 8, 9));
  EXPECT_EQ(p.outcome, ApplyOutcome::kRegressed);
  EXPECT_TRUE(p.fresh.empty());
  EXPECT_EQ(p.new_priority, Marks(7, 8, 9));
}

TEST(PlanApplyPriorityTest, AMalformedPriorityBatchIsInvalid) {
  const auto level1 = Levelled(11, 40, 1);
  EXPECT_OK(ValidateOriginBatch(Priority(level1, 1, 11, 40)));
  EXPECT_FALSE(ValidateOriginBatch(Priority(level1, 4, 11, 40)).ok());
  EXPECT_FALSE(ValidateOriginBatch(Priority(level1, 2, 11, 40)).ok());  // entries of another level
  EXPECT_FALSE(ValidateOriginBatch(Priority(level1, 1, 11, 30)).ok());  // an entry past the span
  EXPECT_FALSE(ValidateOriginBatch(Priority(level1, 1, 0, 40)).ok());   // no span start
  const std::vector<ChangeEntry> none;
  EXPECT_FALSE(ValidateOriginBatch(Priority(none, 1, 11, 0)).ok());
  EXPECT_OK(ValidateOriginBatch(Priority(none, 1, 11, 11)));
  OriginBatch live = Priority(level1, 1, 11, 40);
  live.live = true;
  EXPECT_FALSE(ValidateOriginBatch(live).ok());
  const auto mixed = Levelled(11, 20);
  EXPECT_FALSE(ValidateOriginBatch(Priority(mixed, 1, 11, 20)).ok());
  // A lane batch's span ends at its last entry.
  OriginBatch lane = Batch(mixed);
  lane.last_lsn = 25;
  EXPECT_FALSE(ValidateOriginBatch(lane).ok());
  lane.last_lsn = 20;
  EXPECT_OK(ValidateOriginBatch(lane));
}

}  // namespace
}  // namespace edgesync::test

// PlanApply (store/hub_store.h): one origin's batch decided against its
// high-water mark and the spans held above it (sync/PROTOCOL.md, "Two
// lanes"), without a store. The conformance suite runs the same rule
// through both backends; this covers every case of the rule itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "store/hub_store.h"

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

}  // namespace
}  // namespace edgesync::test

// The hub feed and the read view tables through their own APIs on a real
// SQLite file of the store's schema. Hub: a batch is decided once against
// its origin's mark (applied, then already held when resent, a gap refused
// with nothing written), the feed serves each entry once by sequence and a
// position below what retention pruned is a reset. Read view: a page
// applied twice is held once, watermarks only rise, and the store's own
// origin is never kept as another's.
#include "store/hub_feed.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/read_view_tables.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const Origin kGw{"gw-1", "0123456789abcdef0123456789abcdef"};
const Origin kSelf{"gw-self", "fedcba9876543210fedcba9876543210"};

std::vector<ChangeEntry> Readings(uint64_t first, int n) {
  std::vector<ChangeEntry> out;
  for (int i = 0; i < n; ++i) {
    ChangeEntry e;
    e.lsn = first + static_cast<uint64_t>(i);
    e.reading = Reading{"dev-1", "temp", 1780000000000 + static_cast<int64_t>(e.lsn), 20.5, "C", 0};
    out.push_back(e);
  }
  return out;
}

class HubFeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("hub.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(series_writer_.Open(&db_, &index_));
    ASSERT_OK(series_reader_.Open(&db_, &index_));
    ASSERT_OK(write_stmts_.Prepare(&db_, true));
    ASSERT_OK(read_stmts_.Prepare(&db_, false));
    ASSERT_OK(writer_.Open(&db_, &series_writer_, &origins_, &write_stmts_));
    ASSERT_OK(reader_.Open(&db_, &series_reader_, &origins_, &read_stmts_, &rows_));
  }
  ApplyResult Apply(const std::vector<ChangeEntry>& entries) {
    OriginBatch b;
    b.origin = kGw;
    b.entries = &entries;
    std::vector<ApplyResult> results(1);
    Txn txn(&db_);
    EXPECT_OK(txn.Begin());
    EXPECT_OK(writer_.Apply({b}, {true}, 1780000000000, &results));
    EXPECT_OK(txn.Commit());
    series_writer_.Commit();
    return results[0];
  }
  TempDir dir_;
  Db db_;
  SeriesIndex index_;
  SeriesWriter series_writer_;
  SeriesReader series_reader_;
  OriginCatalog origins_;
  OriginCatalog::Statements write_stmts_, read_stmts_;
  RemoteRows rows_;
  HubFeedWriter writer_;
  HubFeedReader reader_;
};

TEST_F(HubFeedTest, ABatchIsDecidedOnceAgainstItsOriginsMark) {
  ApplyResult first = Apply(Readings(1, 5));
  EXPECT_EQ(first.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(first.applied, 5u);
  EXPECT_EQ(first.high_water, 5u);
  // A resend overlapping what is held adds only what is new.
  ApplyResult overlap = Apply(Readings(3, 5));
  EXPECT_EQ(overlap.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(overlap.applied, 2u);
  EXPECT_EQ(Apply(Readings(1, 7)).outcome, ApplyOutcome::kAlreadyHeld);
  ApplyResult gap = Apply(Readings(20, 2));
  EXPECT_EQ(gap.outcome, ApplyOutcome::kGap) << gap.detail;
  uint64_t mark = 0;
  ASSERT_OK(reader_.HighWater(kGw, &mark));
  EXPECT_EQ(mark, 7u);
  ASSERT_OK(reader_.HighWater(kSelf, &mark));
  EXPECT_EQ(mark, 0u) << "an origin never seen";

  std::vector<RegionFeedEntry> entries;
  uint64_t head = 0;
  bool reset = true;
  ASSERT_OK(reader_.Read(0, 100, &entries, &head, &reset));
  EXPECT_FALSE(reset);
  EXPECT_EQ(head, 7u);
  ASSERT_EQ(entries.size(), 7u);
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].seq, i + 1);
    EXPECT_EQ(entries[i].remote.origin_lsn, i + 1) << "each LSN once, in order";
    EXPECT_EQ(entries[i].remote.origin, kGw);
    EXPECT_EQ(entries[i].remote.entry.reading.device_id, "dev-1");
  }
  // From inside the first row.
  ASSERT_OK(reader_.Read(3, 2, &entries, &head, &reset));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].seq, 4u);
  uint64_t oldest = 0;
  ASSERT_OK(reader_.Bounds(&oldest, &head));
  EXPECT_EQ(oldest, 1u);
  // Retention pruned the first row: a reader behind it is told so.
  ASSERT_OK(db_.Exec("DELETE FROM region_chunks WHERE seq = 1"));
  ASSERT_OK(WriteMetaInt(&db_, "region_pruned_seq", 5));
  ASSERT_OK(reader_.Read(2, 100, &entries, &head, &reset));
  EXPECT_TRUE(reset);
  EXPECT_TRUE(entries.empty());
  ASSERT_OK(reader_.Read(5, 100, &entries, &head, &reset));
  EXPECT_FALSE(reset);
  EXPECT_EQ(entries.size(), 2u);
}

TEST_F(HubFeedTest, AReadViewPageAppliedTwiceIsHeldOnceAndWatermarksOnlyRise) {
  ReadViewTables view;
  ASSERT_OK(view.Open(&db_, &series_writer_, &origins_, &write_stmts_, &rows_));
  std::vector<RemoteEntry> page;
  for (const ChangeEntry& e : Readings(1, 4)) page.push_back(RemoteEntry{kGw, e.lsn, e});
  int64_t added = 0;
  ASSERT_OK(view.Apply(page, 1780000000000, &added));
  view.Committed();
  EXPECT_EQ(added, 4);
  added = 0;
  ASSERT_OK(view.Apply(page, 1780000000000, &added));
  EXPECT_EQ(added, 0) << "every entry already held";
  int64_t held = 0, pairs = 0;
  ASSERT_OK(db_.QueryInt("SELECT sum(n) FROM view_chunks", &held));
  ASSERT_OK(db_.QueryInt("SELECT count(*) FROM view_series", &pairs));
  EXPECT_EQ(held, 4);
  EXPECT_EQ(pairs, 1);

  ASSERT_OK(view.KeepWatermarks({OriginWatermark{kGw, 5000, 0}, OriginWatermark{kSelf, 9000, 0}}, kSelf));
  ASSERT_OK(view.KeepWatermarks({OriginWatermark{kGw, 4000, 0}}, kSelf));
  std::vector<OriginWatermark> marks;
  ASSERT_OK(ListStoreWatermarks(&db_, kSelf, &marks));
  ASSERT_EQ(marks.size(), 1u) << "the store's own origin is not another's";
  EXPECT_EQ(marks[0].origin, kGw);
  EXPECT_EQ(marks[0].complete_through_ms, 5000);
}

}  // namespace
}  // namespace edgesync::test

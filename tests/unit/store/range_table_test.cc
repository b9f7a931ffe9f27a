// The range table through its own API on a real SQLite file of the store's
// schema: counts reach the table only when due (and survive a reload as
// pending until then), a range past its limit splits into two halves that
// cover it, and a flush writes what is pending.
#include "store/range_table.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class RangeTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("ranges.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    // Two initial ranges: the lower and the upper half of the hash space.
    const uint64_t mid = UINT64_MAX / 2;
    ASSERT_OK(db_.Exec("INSERT INTO ranges VALUES(1, " + std::to_string(HashKey(0)) + ", " +
                       std::to_string(HashKey(mid)) + ", 0, 1, 0, 0)"));
    ASSERT_OK(db_.Exec("INSERT INTO ranges VALUES(2, " + std::to_string(HashKey(mid)) + ", " +
                       std::to_string(HashKey(UINT64_MAX)) + ", 0, 1, 0, 0)"));
  }
  int64_t TableEntries(uint32_t id) {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt("SELECT entries FROM ranges WHERE id = " + std::to_string(id), &n));
    return n;
  }
  // One commit of the writer: counts added in a transaction.
  void Commit(RangeTable* t, const RangeCounts& add, int64_t mono_ms) {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    ASSERT_OK(t->Refresh(++version_));
    const bool persist = t->DueToPersist(mono_ms);
    ASSERT_OK(t->Count(add, persist));
    ASSERT_OK(txn.Commit());
    t->Committed(add, persist, mono_ms);
  }
  TempDir dir_;
  Db db_;
  int64_t version_ = 0;  // a new data_version each time: every Refresh reloads
};

TEST_F(RangeTableTest, CountsReachTheTableOnlyWhenDueAndArePendingUntilThen) {
  RangeTable t(1000, 1 << 30);
  ASSERT_OK(t.Open(&db_));
  Commit(&t, {{1, {10, 100}}}, RangeTable::kFlushMs);  // the first commit is due
  EXPECT_EQ(TableEntries(1), 10);
  Commit(&t, {{1, {5, 50}}, {2, {3, 30}}}, RangeTable::kFlushMs + 1000);
  EXPECT_EQ(TableEntries(1), 10) << "not due: held as pending";
  EXPECT_TRUE(t.has_pending());
  // A reload (another connection wrote) still counts what is pending.
  ASSERT_OK(t.Refresh(++version_));
  EXPECT_EQ(FindRange(t.rows(), 1)->entries, 15);
  EXPECT_EQ(FindRange(t.rows(), 2)->entries, 3);
  Commit(&t, {{2, {1, 10}}}, 2 * RangeTable::kFlushMs + 1);
  EXPECT_EQ(TableEntries(1), 15);
  EXPECT_EQ(TableEntries(2), 4);
  EXPECT_FALSE(t.has_pending());
  // At close, what is pending is flushed.
  Commit(&t, {{2, {6, 60}}}, 2 * RangeTable::kFlushMs + 2);
  ASSERT_OK(t.Flush());
  EXPECT_EQ(TableEntries(2), 10);
}

TEST_F(RangeTableTest, ARangePastItsLimitSplitsIntoTwoHalvesThatCoverIt) {
  RangeTable t(100, 1 << 30);
  ASSERT_OK(t.Open(&db_));
  const uint64_t low_hash = 12345;
  ASSERT_OK(t.Refresh(++version_));
  const size_t at = t.Locate(low_hash, SIZE_MAX);
  ASSERT_NE(at, SIZE_MAX);
  EXPECT_EQ(t.rows()[at].info.id, 1u);
  Commit(&t, {{1, {99, 990}}}, RangeTable::kFlushMs);
  EXPECT_TRUE(FindRange(t.rows(), 1)->info.active);
  Commit(&t, {{1, {1, 10}}}, RangeTable::kFlushMs + 1);
  ASSERT_OK(t.Refresh(++version_));
  std::vector<RangeRow> rows;
  ASSERT_OK(LoadRanges(&db_, &rows));
  ASSERT_EQ(rows.size(), 4u);
  const RangeRow* parent = FindRange(rows, 1);
  const RangeRow* a = FindRange(rows, 3);
  const RangeRow* b = FindRange(rows, 4);
  ASSERT_TRUE(parent && a && b);
  EXPECT_FALSE(parent->info.active);
  EXPECT_EQ(a->info.parent, 1u);
  EXPECT_EQ(b->info.parent, 1u);
  EXPECT_EQ(a->info.min, parent->info.min);
  EXPECT_EQ(a->info.max, b->info.min);
  EXPECT_EQ(b->info.max, parent->info.max);
  // New entries of that hash now count in a child.
  const size_t child = t.Locate(low_hash, at);
  ASSERT_NE(child, SIZE_MAX);
  EXPECT_EQ(t.rows()[child].info.id, 3u);
  EXPECT_EQ(FindRange(rows, 99), nullptr);
}

}  // namespace
}  // namespace edgesync::test

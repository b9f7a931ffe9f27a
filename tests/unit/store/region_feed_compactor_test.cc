// RegionFeedCompactor on a real SQLite file of the store's schema: runs of
// old small rows become merged rows whose entries keep their sequences and
// origins, each exactly once; large, merged and young rows are left; the
// merge is bounded; a damaged row stops a step with nothing written.
#include "store/region_feed_compactor.h"

#include <sqlite3.h>

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/codec_test_util.h"

namespace edgesync::test {
namespace {

struct Row {
  int64_t seq, n, origin, min_ts, max_ts, at;
  std::string data;
};

// What the feed holds at one sequence.
struct Held {
  int64_t origin;
  RemoteChunkEntry entry;
};

class RegionFeedCompactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("hub.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(ins_.Prepare(&db_, kInsertRegionChunkSql));
  }

  // A row of n readings of origin at sequence head_ + 1; each reading's
  // value is its sequence, so where an entry ends up is checkable.
  void Append(int64_t origin, int n, int64_t at) {
    std::vector<RemoteChunkEntry> entries;
    for (int i = 0; i < n; ++i) {
      const int64_t seq = head_ + 1 + i;
      entries.push_back(RemoteReading(++olsn_[origin], 1 + seq % 7, 1780000000000 + seq * 10, static_cast<double>(seq)));
      want_[seq] = Held{origin, entries.back()};
    }
    std::string block;
    ASSERT_OK(InsertRemoteChunkRow(&ins_, head_ + 1, origin, entries, at, &block));
    head_ += n;
  }

  std::vector<Row> Rows() {
    std::vector<Row> rows;
    Stmt s;
    EXPECT_OK(s.Prepare(&db_, "SELECT seq, n, origin, min_ts, max_ts, at, data FROM region_chunks ORDER BY seq"));
    Status st;
    while (s.Step(&st)) {
      rows.push_back(Row{s.Int(0), s.Int(1), s.Int(2), s.Int(3), s.Int(4), s.Int(5), std::string(s.Blob(6))});
    }
    EXPECT_OK(st);
    return rows;
  }

  // Every entry of the table at its sequence, each exactly once, as appended.
  void ExpectFeedAsAppended() {
    std::map<int64_t, Held> got;
    int64_t next = 0;
    for (const Row& r : Rows()) {
      if (next != 0) {
        EXPECT_EQ(r.seq, next) << "a hole or an overlap before sequence " << r.seq;
      }
      next = r.seq + r.n;
      std::vector<RemoteChunkEntry> entries;
      std::vector<int64_t> origins;
      ASSERT_OK(DecodeRegionRow(r.data, r.origin, kMaxRemoteChunkEntries, &entries, &origins));
      ASSERT_EQ(static_cast<int64_t>(entries.size()), r.n) << "row " << r.seq;
      int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
      for (size_t i = 0; i < entries.size(); ++i) {
        ASSERT_TRUE(got.emplace(r.seq + static_cast<int64_t>(i), Held{origins[i], entries[i]}).second);
        min_ts = std::min(min_ts, entries[i].ts_ms);
        max_ts = std::max(max_ts, entries[i].ts_ms);
      }
      EXPECT_EQ(r.min_ts, min_ts) << "row " << r.seq;
      EXPECT_EQ(r.max_ts, max_ts) << "row " << r.seq;
    }
    ASSERT_EQ(got.size(), want_.size());
    for (const auto& [seq, held] : want_) {
      ASSERT_EQ(got.count(seq), 1u) << seq;
      EXPECT_EQ(got[seq].origin, held.origin) << seq;
      ExpectSameEntries({got[seq].entry}, {held.entry});
    }
  }

  Status Step(RegionFeedCompactor* c, int64_t cutoff, RegionFeedMergeResult* r) {
    Txn txn(&db_);
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(c->Step(&db_, cutoff, r));
    return txn.Commit();
  }

  // Steps until nothing more is due; the results' sum.
  RegionFeedMergeResult StepAll(RegionFeedCompactor* c, int64_t cutoff) {
    RegionFeedMergeResult all;
    for (int i = 0; i < 1000; ++i) {
      RegionFeedMergeResult r;
      EXPECT_OK(Step(c, cutoff, &r));
      all.merged_rows += r.merged_rows;
      all.source_rows += r.source_rows;
      all.entries += r.entries;
      all.bytes_before += r.bytes_before;
      all.bytes_after += r.bytes_after;
      all.left_rows += r.left_rows;
      if (!r.more) return all;
    }
    ADD_FAILURE() << "compaction never finished";
    return all;
  }

  TempDir dir_;
  Db db_;
  Stmt ins_;
  int64_t head_ = 0;
  std::map<int64_t, uint64_t> olsn_;
  std::map<int64_t, Held> want_;
};

TEST_F(RegionFeedCompactorTest, OldSmallRowsBecomeMergedRowsWithEveryEntryAtItsSequence) {
  for (int b = 0; b < 60; ++b) Append(1 + b % 5, 20, 1000 + b);  // five gateways' 20-reading batches, in turn
  const int64_t bytes_before = [&] {
    int64_t sum = 0;
    for (const Row& r : Rows()) sum += static_cast<int64_t>(r.data.size());
    return sum;
  }();
  RegionFeedCompactorOptions o;
  o.max_entries = 500;
  RegionFeedCompactor c(o);
  const RegionFeedMergeResult r = StepAll(&c, 5000);
  EXPECT_EQ(r.merged_rows, 3);  // 1,200 entries in runs of at most 500: 25 + 25 + 10 rows
  EXPECT_EQ(r.source_rows, 60);
  EXPECT_EQ(r.entries, 1200);
  const std::vector<Row> rows = Rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].seq, 1);
  EXPECT_EQ(rows[0].n, 500);
  EXPECT_EQ(rows[1].seq, 501);
  EXPECT_EQ(rows[2].n, 200);
  int64_t bytes_after = 0;
  for (const Row& row : rows) {
    EXPECT_EQ(row.origin, 0) << "a merged row is marked by origin 0";
    EXPECT_TRUE(IsMergedRegionChunk(row.data));
    bytes_after += static_cast<int64_t>(row.data.size());
  }
  EXPECT_EQ(rows[0].at, 1024) << "the newest applied time of the rows it replaced";
  EXPECT_EQ(r.bytes_before, bytes_before);
  EXPECT_EQ(r.bytes_after, bytes_after);
  EXPECT_LT(bytes_after * 2, bytes_before) << "merging 20-reading batches must save most of their bytes";
  ExpectFeedAsAppended();
  // Nothing is due any more: another pass writes nothing.
  EXPECT_EQ(StepAll(&c, 5000).merged_rows, 0);
  EXPECT_EQ(Rows().size(), 3u);
}

TEST_F(RegionFeedCompactorTest, LargeMergedAndYoungRowsStayAsTheyAre) {
  for (int b = 0; b < 10; ++b) Append(1 + b % 2, 20, 1000);
  Append(3, 600, 1000);  // a large batch: already compact
  for (int b = 0; b < 10; ++b) Append(1 + b % 2, 20, 1000);
  Append(1, 20, 1000);
  Append(2, 20, 9000);  // young: the run before it may still grow
  Append(1, 20, 1000);
  RegionFeedCompactor c;
  RegionFeedMergeResult r = StepAll(&c, 5000);
  // The ten before the large row; the eleven after it wait for the young
  // row, which the run may still take in.
  EXPECT_EQ(r.merged_rows, 1);
  EXPECT_EQ(r.source_rows, 10);
  std::vector<Row> rows = Rows();
  ASSERT_EQ(rows.size(), 15u);
  EXPECT_EQ(rows[0].origin, 0);
  EXPECT_EQ(rows[0].n, 200);
  EXPECT_EQ(rows[1].origin, 3);
  EXPECT_EQ(rows[1].n, 600);
  EXPECT_EQ(rows[2].origin, 1);
  ExpectFeedAsAppended();
  // Once the young row is old, the rest merge as one; the merged and the
  // large row are not read again.
  r = StepAll(&c, 10000);
  EXPECT_EQ(r.merged_rows, 1);
  EXPECT_EQ(r.source_rows, 13);
  rows = Rows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1].origin, 3);
  EXPECT_EQ(rows[2].origin, 0);
  EXPECT_EQ(rows[2].seq, 801);
  EXPECT_EQ(rows[2].n, 260);
  ExpectFeedAsAppended();
}

TEST_F(RegionFeedCompactorTest, ARunOfOneRowIsLeft) {
  Append(1, 20, 1000);
  Append(2, 600, 1000);
  Append(1, 20, 1000);
  RegionFeedCompactor c;
  const RegionFeedMergeResult r = StepAll(&c, 5000);
  EXPECT_EQ(r.merged_rows, 0);
  EXPECT_EQ(r.left_rows, 2);
  EXPECT_EQ(Rows().size(), 3u);
  ExpectFeedAsAppended();
}

TEST_F(RegionFeedCompactorTest, ADamagedRowStopsTheStepWithNothingWritten) {
  for (int b = 0; b < 6; ++b) Append(1 + b % 3, 20, 1000);
  ASSERT_OK(db_.Exec("UPDATE region_chunks SET data = substr(data, 1, length(data) - 4) || x'00000000' WHERE seq = 41"));
  const std::vector<Row> before = Rows();
  RegionFeedCompactor c;
  RegionFeedMergeResult r;
  Status st = Step(&c, 5000, &r);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("sequence 41"), std::string::npos) << st.message();
  const std::vector<Row> after = Rows();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i].data, before[i].data);
  int64_t mark = -1;
  ASSERT_OK(db_.QueryInt("SELECT ifnull((SELECT value FROM meta WHERE key = 'region_merged_seq'), 0)", &mark));
  EXPECT_EQ(mark, 0);
}

// Read and Build run outside the write transaction: a feed changed in
// between (retention pruned part of the run, or another step merged it) is
// refused at Write with nothing written.
TEST_F(RegionFeedCompactorTest, AWriteAfterTheFeedChangedIsRefusedWithNothingWritten) {
  for (int b = 0; b < 8; ++b) Append(1 + b % 2, 20, 1000);
  RegionFeedCompactor c;
  RegionFeedMergePlan plan;
  ASSERT_OK(c.Read(&db_, 5000, &plan));
  ASSERT_OK(c.Build(&plan));
  ASSERT_TRUE(plan.merge);
  ASSERT_EQ(plan.rows.size(), 8u);
  ASSERT_OK(db_.Exec("DELETE FROM region_chunks WHERE seq <= 20"));  // retention, meanwhile
  want_.erase(want_.begin(), want_.upper_bound(20));
  RegionFeedMergeResult r;
  {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    Status st = c.Write(&db_, plan, &r);
    EXPECT_EQ(st.code(), Status::Code::kConflict) << st.ToString();
  }  // rolled back
  EXPECT_EQ(Rows().size(), 7u);
  ExpectFeedAsAppended();
  // A plan made before another step moved the mark is refused too.
  ASSERT_OK(c.Read(&db_, 5000, &plan));
  ASSERT_OK(c.Build(&plan));
  RegionFeedCompactor other;
  ASSERT_OK(Step(&other, 5000, &r));
  ASSERT_EQ(r.merged_rows, 1);
  {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    EXPECT_EQ(c.Write(&db_, plan, &r).code(), Status::Code::kConflict);
  }
  EXPECT_EQ(Rows().size(), 1u);
  ExpectFeedAsAppended();
}

TEST_F(RegionFeedCompactorTest, AMergeReadsAtMostItsByteBound) {
  for (int b = 0; b < 40; ++b) Append(1 + b % 4, 20, 1000);
  const int64_t row_bytes = static_cast<int64_t>(Rows()[0].data.size());
  RegionFeedCompactorOptions o;
  o.max_source_bytes = row_bytes * 9;  // fewer than ten rows of blocks per merge
  RegionFeedCompactor c(o);
  RegionFeedMergeResult r;
  ASSERT_OK(Step(&c, 5000, &r));
  EXPECT_EQ(r.merged_rows, 1);
  EXPECT_LE(r.bytes_before, o.max_source_bytes);
  EXPECT_GE(r.source_rows, 2);
  EXPECT_LT(r.source_rows, 10);
  StepAll(&c, 5000);
  ExpectFeedAsAppended();
}

}  // namespace
}  // namespace edgesync::test

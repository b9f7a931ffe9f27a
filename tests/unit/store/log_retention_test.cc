// Log retention through its own API on a real SQLite file of the store's
// schema: a step prunes only acknowledged readings past their age (cutting
// a commit chunk at the acknowledgement, keeping every LSN of the rest),
// tombstones past theirs, the read view's old chunks; the size limit asks
// for room and drop-oldest counts what it drops unacknowledged.
#include "store/log_retention.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/chunk_compactor.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int64_t kNow = 1780000000000;
constexpr int64_t kDay = 86400 * 1000LL;

class LogRetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("retention.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(ins_.Prepare(&db_, kInsertChunkSql));
    options_.path = dir_.File("retention.db");
    options_.retention_age_ms = kDay;
    options_.ack_grace_ms = 0;
    options_.tombstone_retention_ms = kDay;
    options_.remote_retention_ms = kDay;
    options_.max_bytes = 0;
    options_.min_free_bytes = 0;
  }
  void AddChunk(int64_t first, int n, int64_t written_at) {
    std::vector<ChunkReading> readings;
    for (int i = 0; i < n; ++i) readings.push_back(ChunkReading{1, written_at + i, 1.0 * (first + i), 0});
    std::string block;
    ASSERT_OK(InsertChunkRow(&ins_, readings, first, written_at, &block));
  }
  int64_t Count(const std::string& sql) {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt(sql, &n));
    return n;
  }
  TempDir dir_;
  Db db_;
  Stmt ins_;
  StoreOptions options_;
  ManualClock clock_{kNow};
};

TEST_F(LogRetentionTest, AStepPrunesOnlyAcknowledgedReadingsPastTheirAge) {
  AddChunk(1, 10, kNow - 3 * kDay);
  AddChunk(11, 10, kNow - 2 * kDay);
  AddChunk(21, 10, kNow - 1000);  // young
  ASSERT_OK(db_.Exec("INSERT INTO acks VALUES('eu', 15)"));
  LogRetention retention(options_, &clock_);
  PruneResult result;
  ASSERT_OK(retention.Step(&db_, 30, 1000, kNow, &result));
  EXPECT_EQ(result.readings, 15) << "the first chunk and the acknowledged half of the second";
  EXPECT_EQ(result.early, 0);
  EXPECT_FALSE(result.space_low);
  EXPECT_EQ(Count("SELECT min(first_lsn) FROM chunks"), 16) << "the second chunk's rest keeps its LSNs";
  std::vector<ChunkReading> rest;
  Stmt s;
  ASSERT_OK(s.Prepare(&db_, "SELECT first_lsn, last_lsn, data FROM chunks WHERE first_lsn = 16"));
  Status st;
  ASSERT_TRUE(s.Step(&st));
  ASSERT_OK(chunk_compactor::DecodeChunkRow(&db_, s.Blob(2), s.Int(0), s.Int(1), &rest));
  ASSERT_EQ(rest.size(), 5u);
  EXPECT_EQ(rest[0].value, 16.0);
  int64_t high = 0;
  ASSERT_OK(ReadMetaInt(&db_, "high_lsn", &high));
  EXPECT_EQ(high, 30) << "the high LSN outlives its rows";
  // Everything acknowledged and old is gone: a second step finds nothing.
  ASSERT_OK(db_.Exec("UPDATE acks SET lsn = 30"));
  PruneResult again;
  ASSERT_OK(retention.Step(&db_, 30, 1000, kNow, &again));
  EXPECT_EQ(again.readings, 5);
  EXPECT_EQ(Count("SELECT sum(last_lsn - first_lsn + 1) FROM chunks"), 10) << "the young chunk stays";
}

TEST_F(LogRetentionTest, TombstonesAndTheReadViewsOldChunksGoAfterTheirAge) {
  ASSERT_OK(db_.Exec("INSERT INTO devices VALUES('gone', '', '', '', 1, 7, " + std::to_string(kNow - 2 * kDay) + ")"));
  ASSERT_OK(db_.Exec("INSERT INTO devices VALUES('fresh', '', '', '', 1, 8, " + std::to_string(kNow - 1000) + ")"));
  ASSERT_OK(db_.Exec("INSERT INTO log VALUES(7, 2, 1, 0, 0, 0)"));
  ASSERT_OK(db_.Exec("INSERT INTO log VALUES(8, 2, 2, 0, 0, 0)"));
  Stmt view;
  ASSERT_OK(view.Prepare(&db_, kInsertViewChunkSql));
  for (int i = 0; i < 3; ++i) {
    std::vector<RemoteChunkEntry> entries(4);
    for (int k = 0; k < 4; ++k) {
      entries[k].olsn = static_cast<uint64_t>(i * 4 + k + 1);
      entries[k].series = 1;
    }
    std::string block;
    ASSERT_OK(InsertRemoteChunkRow(&view, i + 1, 1, entries, i < 2 ? kNow - 2 * kDay : kNow, &block));
  }
  LogRetention retention(options_, &clock_);
  PruneResult result;
  ASSERT_OK(retention.Step(&db_, 8, 1000, kNow, &result));
  EXPECT_EQ(result.tombstones, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM devices"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM log WHERE lsn = 7"), 0);
  EXPECT_EQ(result.remote, 8);
  EXPECT_EQ(Count("SELECT count(*) FROM view_chunks"), 1);
}

TEST_F(LogRetentionTest, TheSizeLimitAsksForRoomAndDropOldestCountsWhatItDropsUnacknowledged) {
  for (int c = 0; c < 50; ++c) AddChunk(1 + c * 100, 100, kNow - 1000);
  int64_t pages = 0, page_size = 0;
  ASSERT_OK(db_.QueryInt("PRAGMA page_count", &pages));
  ASSERT_OK(db_.QueryInt("PRAGMA page_size", &page_size));
  options_.max_bytes = pages * page_size;  // full now
  options_.disk_policy = StoreOptions::DiskPolicy::kDropOldest;
  LogRetention retention(options_, &clock_);
  int64_t to_drop = 0;
  ASSERT_OK(retention.CheckSpace(&db_, 100, &to_drop));
  EXPECT_GE(to_drop, 100);
  ASSERT_OK(db_.Exec("INSERT INTO acks VALUES('eu', 150)"));
  int64_t unacked = 0, removed = 0;
  ASSERT_OK(retention.DropOldest(&db_, 5000, 300, /*acked_only=*/false, &unacked, &removed));
  EXPECT_EQ(removed, 300);
  EXPECT_EQ(unacked, 150);
  int64_t dropped = 0, dropped_acked = 0;
  ASSERT_OK(ReadMetaInt(&db_, "dropped_oldest", &dropped));
  ASSERT_OK(ReadMetaInt(&db_, "dropped_acked", &dropped_acked));
  EXPECT_EQ(dropped, 150);
  EXPECT_EQ(dropped_acked, 150);
  // Acknowledged only (reject-new): nothing more acknowledged, nothing goes.
  ASSERT_OK(retention.DropOldest(&db_, 5000, 300, /*acked_only=*/true, &unacked, &removed));
  EXPECT_EQ(removed, 0);
  EXPECT_EQ(Count("SELECT min(first_lsn) FROM chunks"), 301);
}

}  // namespace
}  // namespace edgesync::test

// The chunk compactor through its own API on a real SQLite file of the
// store's schema: a whole, acknowledged, old run becomes a span that reads
// back reading for reading; a run still growing, unacknowledged or young is
// left alone; a swap that retention raced writes nothing; a span that would
// not be smaller stays as commit chunks.
#include "store/chunk_compactor.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int64_t kNow = 1780000000000;
constexpr int64_t kHour = 3600 * 1000;

class ChunkCompactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("compact.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(ins_.Prepare(&db_, kInsertChunkSql));
  }
  // A commit chunk of n readings from first: series alternate 1..series.
  std::vector<ChunkReading> AddChunk(int64_t first, int n, int64_t written_at, int series = 4) {
    std::vector<ChunkReading> readings;
    for (int i = 0; i < n; ++i) {
      int64_t lsn = first + i;
      readings.push_back(ChunkReading{1 + lsn % series, kNow - 10 * kHour + lsn * 1000, 20.0 + (lsn % 7) * 0.5, 0});
    }
    std::string block;
    EXPECT_OK(InsertChunkRow(&ins_, readings, first, written_at, &block));
    return readings;
  }
  void Ack(int64_t lsn) { ASSERT_OK(db_.Exec("INSERT OR REPLACE INTO acks VALUES('eu', " + std::to_string(lsn) + ")")); }
  int64_t Count(const char* sql) {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt(sql, &n));
    return n;
  }
  // Every reading of the chunks table, row by row, in LSN order.
  std::vector<ChunkReading> ReadAll() {
    std::vector<ChunkReading> all, row;
    Stmt s;
    EXPECT_OK(s.Prepare(&db_, "SELECT first_lsn, last_lsn, data FROM chunks ORDER BY first_lsn"));
    Status st;
    while (s.Step(&st)) {
      EXPECT_OK(chunk_compactor::DecodeChunkRow(&db_, s.Blob(2), s.Int(0), s.Int(1), &row));
      all.insert(all.end(), row.begin(), row.end());
    }
    EXPECT_OK(st);
    return all;
  }
  static void ExpectSame(const std::vector<ChunkReading>& a, const std::vector<ChunkReading>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].series, b[i].series) << i;
      EXPECT_EQ(a[i].ts_ms, b[i].ts_ms) << i;
      EXPECT_EQ(a[i].value, b[i].value) << i;
    }
  }
  Status Step(const chunk_compactor::Options& o, chunk_compactor::Plan* plan, bool* swapped) {
    ES_RETURN_IF_ERROR(chunk_compactor::FindRun(&db_, o, kNow, plan));
    if (plan->run.empty()) {
      *swapped = false;
      return Status::Ok();
    }
    ES_RETURN_IF_ERROR(chunk_compactor::Encode(o, plan));
    return chunk_compactor::Swap(&db_, plan, swapped);
  }
  TempDir dir_;
  Db db_;
  Stmt ins_;
};

TEST_F(ChunkCompactorTest, AWholeAcknowledgedRunBecomesASpanThatReadsBackTheSame) {
  std::vector<ChunkReading> before;
  for (int c = 0; c < 10; ++c) {
    auto r = AddChunk(1 + c * 20, 20, kNow - 2 * kHour);
    before.insert(before.end(), r.begin(), r.end());
  }
  AddChunk(201, 20, kNow - 2 * kHour);  // the run is full before this one
  Ack(220);
  chunk_compactor::Options o{200, kHour, false};
  chunk_compactor::Plan plan;
  bool swapped = false;
  ASSERT_OK(Step(o, &plan, &swapped));
  ASSERT_TRUE(swapped);
  EXPECT_EQ(plan.result.readings, 200);
  EXPECT_EQ(plan.blocks.size(), 4u) << "one block per series";
  EXPECT_EQ(Count("SELECT count(*) FROM chunks"), 2) << "the span's row and the next commit chunk";
  EXPECT_EQ(Count("SELECT count(*) FROM series_chunks"), 4);
  int64_t upto = 0;
  ASSERT_OK(chunk_compactor::CompactedUpTo(&db_, &upto));
  EXPECT_EQ(upto, 200);
  std::vector<ChunkReading> after = ReadAll();
  after.resize(200);
  ExpectSame(before, after);
  // The next run (one chunk, not whole yet) is left alone.
  ASSERT_OK(Step(o, &plan, &swapped));
  EXPECT_FALSE(swapped);
}

TEST_F(ChunkCompactorTest, AYoungUnacknowledgedOrGrowingRunIsLeftAlone) {
  chunk_compactor::Options o{40, kHour, false};
  chunk_compactor::Plan plan;
  AddChunk(1, 20, kNow - 2 * kHour);
  AddChunk(21, 20, kNow - 2 * kHour);
  AddChunk(41, 20, kNow - 2 * kHour);
  ASSERT_OK(chunk_compactor::FindRun(&db_, o, kNow, &plan));
  EXPECT_TRUE(plan.run.empty()) << "nothing acknowledged";
  Ack(30);
  ASSERT_OK(chunk_compactor::FindRun(&db_, o, kNow, &plan));
  EXPECT_TRUE(plan.run.empty()) << "the second chunk is not acknowledged: the run is still growing";
  Ack(60);
  ASSERT_OK(chunk_compactor::FindRun(&db_, o, kNow - 90 * 60 * 1000, &plan));
  EXPECT_TRUE(plan.run.empty()) << "written 30 minutes before that now: too young";
  ASSERT_OK(chunk_compactor::FindRun(&db_, o, kNow, &plan));
  ASSERT_EQ(plan.run.size(), 2u);
  EXPECT_EQ(plan.run.back().last, 40);
}

TEST_F(ChunkCompactorTest, ASwapThatRetentionRacedWritesNothing) {
  AddChunk(1, 20, kNow - 2 * kHour);
  AddChunk(21, 20, kNow - 2 * kHour);
  AddChunk(41, 20, kNow - 2 * kHour);
  Ack(60);
  chunk_compactor::Options o{40, kHour, false};
  chunk_compactor::Plan plan;
  ASSERT_OK(chunk_compactor::FindRun(&db_, o, kNow, &plan));
  ASSERT_EQ(plan.run.size(), 2u);
  ASSERT_OK(chunk_compactor::Encode(o, &plan));
  ASSERT_OK(db_.Exec("DELETE FROM chunks WHERE first_lsn = 1"));  // retention pruned the oldest meanwhile
  bool swapped = true;
  ASSERT_OK(chunk_compactor::Swap(&db_, &plan, &swapped));
  EXPECT_FALSE(swapped);
  EXPECT_EQ(Count("SELECT count(*) FROM series_chunks"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM chunks"), 2);
  int64_t upto = -1;
  ASSERT_OK(chunk_compactor::CompactedUpTo(&db_, &upto));
  EXPECT_EQ(upto, 0);
}

TEST_F(ChunkCompactorTest, ASpanThatWouldNotBeSmallerStaysAsCommitChunks) {
  // Two large chunks of 400 series each: one block per series costs more
  // than it saves.
  std::vector<ChunkReading> before = AddChunk(1, 400, kNow - 2 * kHour, 400);
  auto second = AddChunk(401, 400, kNow - 2 * kHour, 400);
  before.insert(before.end(), second.begin(), second.end());
  AddChunk(801, 10, kNow - 2 * kHour);
  Ack(810);
  chunk_compactor::Options o{800, kHour, true};
  chunk_compactor::Plan plan;
  bool swapped = false;
  ASSERT_OK(Step(o, &plan, &swapped));
  ASSERT_TRUE(swapped);
  EXPECT_TRUE(plan.keep);
  EXPECT_EQ(Count("SELECT count(*) FROM series_chunks"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM chunks"), 3);
  int64_t upto = 0;
  ASSERT_OK(chunk_compactor::CompactedUpTo(&db_, &upto));
  EXPECT_EQ(upto, 800) << "compaction moves past a span it keeps";
  std::vector<ChunkReading> after = ReadAll();
  after.resize(800);
  ExpectSame(before, after);
}

TEST_F(ChunkCompactorTest, ADamagedSpanIsRefusedWithAClearError) {
  AddChunk(1, 20, kNow - 2 * kHour);
  AddChunk(21, 20, kNow - 2 * kHour);
  AddChunk(41, 1, kNow - 2 * kHour);
  Ack(41);
  chunk_compactor::Options o{40, kHour, false};
  chunk_compactor::Plan plan;
  bool swapped = false;
  ASSERT_OK(Step(o, &plan, &swapped));
  ASSERT_TRUE(swapped);
  ASSERT_OK(db_.Exec("DELETE FROM series_chunks WHERE id = (SELECT min(id) FROM series_chunks)"));
  std::vector<ChunkReading> row;
  Stmt s;
  ASSERT_OK(s.Prepare(&db_, "SELECT data FROM chunks WHERE first_lsn = 1"));
  Status st;
  ASSERT_TRUE(s.Step(&st));
  Status d = chunk_compactor::DecodeChunkRow(&db_, s.Blob(0), 1, 40, &row);
  EXPECT_EQ(d.code(), Status::Code::kCorruption) << d.ToString();
  EXPECT_NE(d.message().find("span at LSN 1"), std::string::npos) << d.message();
}

}  // namespace
}  // namespace edgesync::test

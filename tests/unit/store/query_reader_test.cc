// The query reader through its own API on a real SQLite file of the store's
// schema, written directly: a device's readings from the store's own log,
// its read view of another origin and a hub's region feed come back as one
// answer in time order, each (origin, LSN) once, under a limit either way;
// the devices list names each origin's readings; a damaged region block
// fails the query by name and is counted.
#include "store/query_reader.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const Origin kSelf{"gw-self", "0123456789abcdef0123456789abcdef"};
const Origin kOther{"gw-other", "fedcba9876543210fedcba9876543210"};
constexpr int64_t kT = 1780000000000;

class QueryReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("query.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(writer_.Open(&db_, &index_));
    ASSERT_OK(series_.Open(&db_, &index_));
    ASSERT_OK(stmts_.Prepare(&db_, true));
    uint64_t hash = 0;
    ASSERT_OK(writer_.Intern("dev-1", "temp", "C", &temp_, &hash));
    ASSERT_OK(origins_.Find(kOther, &stmts_, true, &other_id_));
    // Own log: LSNs 1..3 at kT + 0, 20, 40 s.
    Stmt chunk;
    ASSERT_OK(chunk.Prepare(&db_, kInsertChunkSql));
    std::vector<ChunkReading> own;
    for (int i = 0; i < 3; ++i) own.push_back(ChunkReading{temp_, kT + i * 20000, 10.0 + i, 0});
    std::string block;
    ASSERT_OK(InsertChunkRow(&chunk, own, 1, kT, &block));
    // The other origin's LSNs 7..9 at kT + 10, 30, 50 s, in the read view;
    // its LSNs 8..10 in the region feed (8 and 9 held twice).
    Stmt view, region;
    ASSERT_OK(view.Prepare(&db_, kInsertViewChunkSql));
    ASSERT_OK(region.Prepare(&db_, kInsertRegionChunkSql));
    ASSERT_OK(InsertRemoteChunkRow(&view, 0, other_id_, Entries(7, 3), kT, &block));
    ASSERT_OK(db_.Exec("INSERT INTO view_series VALUES(" + std::to_string(temp_) + ", " + std::to_string(other_id_) +
                       ")"));
    ASSERT_OK(InsertRemoteChunkRow(&region, 1, other_id_, Entries(8, 3), kT, &block));
    reader_.Open(&db_, &series_, &origins_, &stmts_, &rows_, kSelf);
  }
  std::vector<RemoteChunkEntry> Entries(uint64_t first, int n) {
    std::vector<RemoteChunkEntry> out;
    for (int i = 0; i < n; ++i) {
      RemoteChunkEntry e;
      e.olsn = first + static_cast<uint64_t>(i);
      e.series = temp_;
      e.ts_ms = kT + 10000 + static_cast<int64_t>(e.olsn - 7) * 20000;
      e.value = 100.0 + static_cast<double>(e.olsn);
      out.push_back(e);
    }
    return out;
  }
  TempDir dir_;
  Db db_;
  SeriesIndex index_;
  SeriesWriter writer_;
  SeriesReader series_;
  OriginCatalog origins_;
  OriginCatalog::Statements stmts_;
  RemoteRows rows_;
  QueryReader reader_;
  int64_t temp_ = 0, other_id_ = 0;
};

TEST_F(QueryReaderTest, AllThreeSourcesAnswerInTimeOrderEachEntryOnce) {
  QueryRequest q;
  q.device_id = "dev-1";
  std::vector<QueryRow> rows;
  ASSERT_OK(reader_.Query(q, &rows));
  ASSERT_EQ(rows.size(), 7u) << "3 own, 4 of the other origin (8 and 9 held twice)";
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_LE(rows[i - 1].reading.ts_ms, rows[i].reading.ts_ms);
  EXPECT_TRUE(rows[0].local);
  EXPECT_EQ(rows[0].origin, kSelf);
  EXPECT_EQ(rows[1].origin, kOther);
  EXPECT_EQ(rows[1].lsn, 7u);
  EXPECT_EQ(rows.back().lsn, 10u) << "the region feed's own entry";
  EXPECT_EQ(rows.back().reading.value, 110.0);
  EXPECT_EQ(rows.back().reading.unit, "C");
  // The newest two, newest first; a window.
  q.newest_first = true;
  q.limit = 2;
  ASSERT_OK(reader_.Query(q, &rows));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].lsn, 10u);
  EXPECT_EQ(rows[1].lsn, 9u);
  q = QueryRequest{};
  q.device_id = "dev-1";
  q.from_ms = kT + 15000;
  q.to_ms = kT + 35000;
  ASSERT_OK(reader_.Query(q, &rows));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].reading.ts_ms, kT + 20000);
  EXPECT_EQ(rows[1].reading.ts_ms, kT + 30000);
  q.device_id = "dev-unknown";
  ASSERT_OK(reader_.Query(q, &rows));
  EXPECT_TRUE(rows.empty());
  q.limit = 0;
  EXPECT_EQ(reader_.Query(q, &rows).code(), Status::Code::kInvalidArgument);
}

TEST_F(QueryReaderTest, TheDevicesListNamesEachOriginsReadings) {
  std::vector<DeviceSummary> devices;
  ASSERT_OK(reader_.ListDevices(&devices));
  ASSERT_EQ(devices.size(), 2u);
  const DeviceSummary& own = devices[0].local ? devices[0] : devices[1];
  const DeviceSummary& other = devices[0].local ? devices[1] : devices[0];
  EXPECT_EQ(own.origin, kSelf);
  EXPECT_EQ(own.readings, 3);
  EXPECT_EQ(own.first_ts_ms, kT);
  EXPECT_EQ(other.origin, kOther);
  EXPECT_GE(other.readings, 3);
}

TEST_F(QueryReaderTest, ADamagedRegionBlockFailsTheQueryByNameAndIsCounted) {
  ASSERT_OK(db_.Exec("UPDATE region_chunks SET data = x'0102030405'"));
  QueryRequest q;
  q.device_id = "dev-1";
  std::vector<QueryRow> rows;
  Status st = reader_.Query(q, &rows);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("region chunk at sequence 1"), std::string::npos) << st.message();
  EXPECT_EQ(rows_.corrupt(), 1);
}

}  // namespace
}  // namespace edgesync::test

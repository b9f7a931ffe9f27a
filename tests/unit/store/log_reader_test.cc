// The log reader through its own API on a real SQLite file of the store's
// schema, written directly (chunks, a device record's log row, ranges): the
// whole log merges both tables in LSN order, pages resume inside a chunk, a
// range's feed holds only its devices and its continuation resumes it, and
// a token of another store or range is refused by name.
#include "store/log_reader.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "store/token.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const char kEpoch[] = "0123456789abcdef0123456789abcdef";
constexpr int64_t kWritten = 1780000000000;

class LogReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("log.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    const uint64_t mid = UINT64_MAX / 2;
    ASSERT_OK(db_.Exec("INSERT INTO ranges VALUES(1, " + std::to_string(HashKey(0)) + ", " +
                       std::to_string(HashKey(mid)) + ", 0, 1, 0, 0)"));
    ASSERT_OK(db_.Exec("INSERT INTO ranges VALUES(2, " + std::to_string(HashKey(mid)) + ", " +
                       std::to_string(HashKey(UINT64_MAX)) + ", 0, 1, 0, 0)"));
    ASSERT_OK(writer_.Open(&db_, &index_));
    // Two devices, one in each range.
    for (int i = 0; devices_[1].empty(); ++i) {
      std::string d = "dev-" + std::to_string(i);
      int which = PartitionHash(d) < mid ? 0 : 1;
      if (devices_[which].empty()) devices_[which] = d;
    }
    ASSERT_OK(ins_.Prepare(&db_, kInsertChunkSql));
    // LSNs 1..4: a chunk alternating the devices; 5: a device record of
    // devices_[1]; 6..9: another chunk.
    AddChunk(1);
    int64_t series = 0;
    uint64_t hash = 0;
    ASSERT_OK(writer_.Intern(devices_[1], "", "", &series, &hash));
    ASSERT_OK(db_.Exec("INSERT INTO log VALUES(5, 1, " + std::to_string(series) + ", 0, 0, 0)"));
    ASSERT_OK(db_.Exec("INSERT INTO devices VALUES('" + devices_[1] + "', 'boiler', 'cellar', 'C', 0, 5, 0)"));
    AddChunk(6);
    ASSERT_OK(series_.Open(&db_, &index_));
    ASSERT_OK(reader_.Open(&db_, &series_, kEpoch));
  }
  void AddChunk(int64_t first) {
    std::vector<ChunkReading> readings;
    for (int i = 0; i < 4; ++i) {
      int64_t id = 0;
      uint64_t hash = 0;
      ASSERT_OK(writer_.Intern(devices_[i % 2], "temp", "C", &id, &hash));
      readings.push_back(ChunkReading{id, kWritten + (first + i) * 1000, 20.0 + static_cast<double>(first + i), 0});
    }
    std::string block;
    ASSERT_OK(InsertChunkRow(&ins_, readings, first, kWritten + first, &block));
  }
  TempDir dir_;
  Db db_;
  Stmt ins_;
  SeriesIndex index_;
  SeriesWriter writer_;
  SeriesReader series_;
  LogReader reader_;
  std::string devices_[2];
};

TEST_F(LogReaderTest, TheWholeLogMergesChunksAndDeviceRecordsInLsnOrder) {
  std::vector<ChangeEntry> all;
  ASSERT_OK(reader_.ReadLog(0, 100, &all));
  ASSERT_EQ(all.size(), 9u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].lsn, i + 1);
  EXPECT_EQ(all[4].kind, ChangeEntry::Kind::kDeviceUpsert);
  EXPECT_EQ(all[4].device.name, "boiler");
  EXPECT_EQ(all[5].reading.value, 26.0);
  EXPECT_EQ(all[5].reading.device_id, devices_[0]);
  // Pages of three resume inside a chunk and across the device record.
  std::vector<ChangeEntry> page, paged;
  uint64_t after = 0;
  do {
    ASSERT_OK(reader_.ReadLog(after, 3, &page));
    for (const auto& e : page) paged.push_back(e);
    if (!page.empty()) after = page.back().lsn;
  } while (!page.empty());
  ASSERT_EQ(paged.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(paged[i].lsn, all[i].lsn);
  DeviceRecord d;
  ASSERT_OK(reader_.GetDevice(devices_[1], &d));
  EXPECT_EQ(d.location, "cellar");
  EXPECT_EQ(reader_.GetDevice(devices_[0], &d).code(), Status::Code::kNotFound);
}

TEST_F(LogReaderTest, ARangesFeedHoldsOnlyItsDevicesAndItsContinuationResumesIt) {
  FeedPage page;
  FeedStart from;
  ASSERT_OK(reader_.ReadFeed(2, from, 2, &page));
  ASSERT_EQ(page.entries.size(), 2u);
  EXPECT_EQ(page.entries[0].lsn, 2u);
  EXPECT_EQ(page.entries[1].lsn, 4u);
  FeedStart next;
  next.kind = FeedStart::Kind::kToken;
  next.token = page.continuation;
  ASSERT_OK(reader_.ReadFeed(2, next, 100, &page));
  ASSERT_EQ(page.entries.size(), 3u);
  EXPECT_EQ(page.entries[0].lsn, 5u) << "the device record is its range's";
  EXPECT_EQ(page.entries[1].lsn, 7u);
  EXPECT_EQ(page.entries[2].lsn, 9u);
  for (const auto& e : page.entries) EXPECT_EQ(e.device_id(), devices_[1]);
  // The other range's token, or another store's, is refused by name.
  Status other = reader_.ReadFeed(1, next, 10, &page);
  EXPECT_EQ(other.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(other.message().find("range 2"), std::string::npos) << other.message();
  next.token = EncodeFeedToken(FeedToken{2, "fedcba9876543210fedcba9876543210", 0});
  Status epoch = reader_.ReadFeed(2, next, 10, &page);
  EXPECT_EQ(epoch.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(epoch.message().find("re-created"), std::string::npos) << epoch.message();
  std::vector<RangeInfo> ranges;
  ASSERT_OK(reader_.ListRanges(&ranges));
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(reader_.ReadFeed(7, FeedStart{}, 10, &page).code(), Status::Code::kNotFound);
}

TEST_F(LogReaderTest, CompleteThroughIsTheWriteTimeOfTheGroupPastTheLsn) {
  int64_t through = 0;
  ASSERT_OK(reader_.CompleteThrough(2, kWritten + 99999, false, &through));
  EXPECT_EQ(through, kWritten + 1) << "LSN 3 is in the group written at that time";
  ASSERT_OK(reader_.CompleteThrough(5, kWritten + 99999, false, &through));
  EXPECT_EQ(through, kWritten + 6);
  ASSERT_OK(reader_.CompleteThrough(9, kWritten + 99999, false, &through));
  EXPECT_EQ(through, kWritten + 99999) << "nothing past it and nothing being written: now";
  ASSERT_OK(reader_.CompleteThrough(9, kWritten + 99999, true, &through));
  EXPECT_EQ(through, kWritten + 6) << "a group being written: only up to the newest committed one";
}

}  // namespace
}  // namespace edgesync::test

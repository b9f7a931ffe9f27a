// Other origins' rows as a SQLite store keeps them (store/remote_rows.h),
// directly: blocks of either layout decode with each entry's origin, every
// damaged block fails with Corruption naming its row and is counted, and an
// entry of each kind becomes a remote chunk entry with its series interned
// in a real store file and comes back the same.
#include "store/remote_rows.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "store/region_feed_chunk_codec.h"
#include "store/remote_chunk_codec.h"
#include "store/schema.h"
#include "store/series_catalog.h"
#include "store/sqlite_util.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

RemoteChunkEntry Entry(uint64_t olsn, int64_t series, int64_t ts, double value) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.series = series;
  e.ts_ms = ts;
  e.value = value;
  return e;
}

std::string Block(const std::vector<RemoteChunkEntry>& entries) {
  std::string out;
  EncodeRemoteChunk(entries, &out);
  return out;
}

TEST(RemoteRowsTest, AViewBlockDecodesAndADamagedOneIsNamedAndCounted) {
  RemoteRows rows;
  std::vector<RemoteChunkEntry> entries = {Entry(1, 3, 1000, 1.5), Entry(2, 3, 2000, 2.5), Entry(5, 4, 2500, -1)};
  std::vector<RemoteChunkEntry> back;
  ASSERT_OK(rows.DecodeView(Block(entries), "read view chunk", 7, &back));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].olsn, 5u);
  EXPECT_EQ(back[2].series, 4);
  EXPECT_EQ(back[2].value, -1);
  EXPECT_EQ(rows.corrupt(), 0);

  std::string cut = Block(entries);
  cut.resize(cut.size() / 2);
  Status st = rows.DecodeView(cut, "read view chunk", 42, &back);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_EQ(st.message().rfind("read view chunk 42: ", 0), 0u) << st.message();
  EXPECT_EQ(rows.corrupt(), 1);
  EXPECT_EQ(rows.DecodeView("", "hub chunk", 43, &back).code(), Status::Code::kCorruption);
  EXPECT_EQ(rows.DecodeView(std::string(64, '\xff'), "hub chunk", 44, &back).code(), Status::Code::kCorruption);
  EXPECT_EQ(rows.corrupt(), 3);
  rows.NoteCorrupt();
  EXPECT_EQ(rows.corrupt(), 4);
}

TEST(RemoteRowsTest, ARegionRowOfEitherLayoutGivesEachEntrysOrigin) {
  RemoteRows rows;
  std::vector<RemoteChunkEntry> entries;
  std::vector<int64_t> origins;
  // One origin's row: every entry is the row's origin's.
  ASSERT_OK(rows.DecodeRegion(Block({Entry(1, 3, 1000, 1), Entry(2, 3, 1001, 2)}), 100, 9, &entries, &origins));
  EXPECT_EQ(entries.size(), 2u);
  EXPECT_EQ(origins, (std::vector<int64_t>{9, 9}));
  // A merged row (origin 0): each run's origin.
  std::string merged;
  EncodeMergedRegionChunk({RegionFeedRun{4, {Entry(10, 1, 5, 1), Entry(11, 1, 6, 2)}},
                           RegionFeedRun{6, {Entry(3, 2, 7, 3)}}},
                          &merged);
  ASSERT_TRUE(IsMergedRegionChunk(merged));
  ASSERT_OK(rows.DecodeRegion(merged, 200, 0, &entries, &origins));
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(origins, (std::vector<int64_t>{4, 4, 6}));
  EXPECT_EQ(entries[2].olsn, 3u);
  EXPECT_EQ(rows.corrupt(), 0);
}

TEST(RemoteRowsTest, ARegionRowWhoseOriginAndLayoutDisagreeIsRefused) {
  RemoteRows rows;
  std::vector<RemoteChunkEntry> entries;
  std::vector<int64_t> origins;
  std::string merged;
  EncodeMergedRegionChunk({RegionFeedRun{4, {Entry(10, 1, 5, 1)}}}, &merged);
  Status st = rows.DecodeRegion(merged, 300, 4, &entries, &origins);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("region chunk at sequence 300"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("a merged block under origin 4"), std::string::npos) << st.message();
  st = rows.DecodeRegion(Block({Entry(1, 3, 1000, 1)}), 301, 0, &entries, &origins);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("a one-origin block under origin 0"), std::string::npos) << st.message();
  std::string cut = merged.substr(0, merged.size() - 1);
  st = rows.DecodeRegion(cut, 302, 0, &entries, &origins);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("region chunk at sequence 302"), std::string::npos) << st.message();
  EXPECT_EQ(rows.corrupt(), 3);
}

class RemoteRowsSeriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("rows.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(writer_.Open(&db_, &index_));
  }
  int64_t SeriesRows() {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt("SELECT count(*) FROM series", &n));
    return n;
  }
  // Each entry through ToRemoteChunkEntry in one transaction, and back
  // through a reader on a connection of its own.
  std::vector<ChangeEntry> RoundTrip(const std::vector<ChangeEntry>& in, std::vector<RemoteChunkEntry>* chunk) {
    {
      Txn txn(&db_);
      EXPECT_OK(txn.Begin());
      for (const ChangeEntry& e : in) {
        chunk->emplace_back();
        EXPECT_OK(ToRemoteChunkEntry(&writer_, e, &chunk->back()));
      }
      EXPECT_OK(txn.Commit());
      writer_.Commit();
    }
    Db read_db;
    EXPECT_OK(read_db.Open(dir_.File("rows.db"), SQLITE_OPEN_READONLY));
    SeriesIndex fresh;  // nothing cached: every lookup reads the file
    SeriesReader reader;
    EXPECT_OK(reader.Open(&read_db, &fresh));
    std::vector<ChangeEntry> out;
    for (const RemoteChunkEntry& c : *chunk) {
      out.emplace_back();
      EXPECT_OK(FromRemoteChunkEntry(&reader, c, &out.back()));
    }
    return out;
  }

  TempDir dir_;
  Db db_;
  SeriesIndex index_;
  SeriesWriter writer_;
};

TEST_F(RemoteRowsSeriesTest, EveryKindOfEntryComesBackWithItsSeries) {
  std::vector<ChangeEntry> in(5);
  in[0].lsn = 1;
  in[0].reading = Reading{"dev-1", "temp", 1000, 21.5, "C", 0};
  in[1].lsn = 2;
  in[1].reading = Reading{"dev-1", "temp", 2000, 22.0, "C", 0};  // the same series
  in[2].lsn = 3;
  in[2].reading = Reading{"dev-1", "temp", 3000, 295.0, "K", 0};  // another unit: another series
  in[3].lsn = 4;
  in[3].kind = ChangeEntry::Kind::kDeviceUpsert;
  in[3].device = DeviceRecord{"dev-1", "boiler", "basement", "C", false};
  in[4].lsn = 5;
  in[4].kind = ChangeEntry::Kind::kTimeCorrection;
  in[4].correction = TimeCorrection{2, -60000, 1000, 9000};
  std::vector<RemoteChunkEntry> chunk;
  std::vector<ChangeEntry> out = RoundTrip(in, &chunk);
  ASSERT_EQ(out.size(), in.size());
  EXPECT_EQ(chunk[0].series, chunk[1].series);
  EXPECT_NE(chunk[0].series, chunk[2].series);
  EXPECT_NE(chunk[0].series, chunk[3].series) << "a device record is (device, \"\", \"\")";
  EXPECT_NE(chunk[3].series, chunk[4].series) << "a correction is (\"\", \"\", \"\")";
  EXPECT_EQ(SeriesRows(), 4);
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(out[i].lsn, in[i].lsn);
    EXPECT_EQ(out[i].kind, in[i].kind);
  }
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out[i].reading.device_id, in[i].reading.device_id);
    EXPECT_EQ(out[i].reading.metric, in[i].reading.metric);
    EXPECT_EQ(out[i].reading.unit, in[i].reading.unit);
    EXPECT_EQ(out[i].reading.ts_ms, in[i].reading.ts_ms);
    EXPECT_EQ(out[i].reading.value, in[i].reading.value);
  }
  EXPECT_EQ(out[3].device.device_id, "dev-1");
  EXPECT_EQ(out[3].device.name, "boiler");
  EXPECT_EQ(out[3].device.location, "basement");
  EXPECT_EQ(out[3].device.default_unit, "C");
  EXPECT_FALSE(out[3].device.deleted);
  EXPECT_EQ(out[4].correction.period, 2u);
  EXPECT_EQ(out[4].correction.delta_ms, -60000);
  EXPECT_EQ(out[4].correction.from_ms, 1000);
  EXPECT_EQ(out[4].correction.to_ms, 9000);

  // Interned once: the same entries again add no series.
  std::vector<RemoteChunkEntry> again;
  RoundTrip(in, &again);
  EXPECT_EQ(SeriesRows(), 4);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(again[i].series, chunk[i].series);
}

TEST_F(RemoteRowsSeriesTest, AnEntryOfASeriesTheFileDoesNotHoldIsCorruption) {
  Db read_db;
  ASSERT_OK(read_db.Open(dir_.File("rows.db"), SQLITE_OPEN_READONLY));
  SeriesIndex fresh;
  SeriesReader reader;
  ASSERT_OK(reader.Open(&read_db, &fresh));
  ChangeEntry e;
  Status st = FromRemoteChunkEntry(&reader, Entry(1, 12345, 1000, 1), &e);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
}

}  // namespace
}  // namespace edgesync::test

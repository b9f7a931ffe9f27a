// The series catalog through its own API on a real SQLite file holding the
// table it writes (series): interning once, a rolled-back series forgotten,
// a store's series loaded at open, and a reader finding a series another
// connection wrote after its load.
#include "store/series_catalog.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/types.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int kOpenFlags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;

class SeriesCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(Path(), kOpenFlags));
    ASSERT_OK(db_.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(db_.Exec("CREATE TABLE series(id INTEGER PRIMARY KEY, device_id TEXT NOT NULL, metric TEXT NOT NULL, "
                       "unit TEXT NOT NULL, hkey INTEGER NOT NULL, UNIQUE(device_id, metric, unit))"));
  }
  std::string Path() const { return dir_.File("series.db"); }
  int64_t Rows() {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt("SELECT count(*) FROM series", &n));
    return n;
  }
  TempDir dir_;
  Db db_;
};

TEST_F(SeriesCatalogTest, ASeriesIsInternedOnceWithItsDevicesHash) {
  SeriesIndex index;
  SeriesWriter writer;
  ASSERT_OK(writer.Open(&db_, &index));
  int64_t temp = 0, again = 0, hum = 0;
  uint64_t h1 = 0, h2 = 0, h3 = 0;
  ASSERT_OK(writer.Intern("dev-1", "temp", "C", &temp, &h1));
  ASSERT_OK(writer.Intern("dev-1", "hum", "%", &hum, &h2));
  ASSERT_OK(writer.Intern("dev-1", "temp", "C", &again, &h3));
  writer.Commit();
  EXPECT_EQ(temp, again);
  EXPECT_NE(temp, hum);
  EXPECT_EQ(h1, PartitionHash("dev-1"));
  EXPECT_EQ(h2, h1);
  EXPECT_EQ(Rows(), 2);
  // Another unit is another series.
  int64_t kelvin = 0;
  ASSERT_OK(writer.Intern("dev-1", "temp", "K", &kelvin, &h1));
  EXPECT_NE(kelvin, temp);
  SeriesInfo info;
  ASSERT_TRUE(index.Find(hum, &info));
  EXPECT_EQ(info.device_id, "dev-1");
  EXPECT_EQ(info.metric, "hum");
  EXPECT_EQ(info.unit, "%");
  EXPECT_TRUE(info.known);
}

TEST_F(SeriesCatalogTest, ASeriesOfARolledBackTransactionIsForgotten) {
  SeriesIndex index;
  SeriesWriter writer;
  ASSERT_OK(writer.Open(&db_, &index));
  int64_t kept = 0, gone = 0;
  uint64_t h = 0;
  ASSERT_OK(writer.Intern("dev-1", "temp", "C", &kept, &h));
  writer.Commit();
  {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    ASSERT_OK(writer.Intern("dev-2", "temp", "C", &gone, &h));
    EXPECT_EQ(writer.pending(), 1u);
    txn.Rollback();
    writer.Rollback();
  }
  EXPECT_EQ(writer.pending(), 0u);
  EXPECT_EQ(Rows(), 1);
  SeriesInfo info;
  EXPECT_FALSE(index.Find(gone, &info)) << "an id whose row never committed stays cached";
  EXPECT_TRUE(index.Find(kept, &info));
  // Interning it again makes the row for real.
  int64_t made = 0;
  ASSERT_OK(writer.Intern("dev-2", "temp", "C", &made, &h));
  writer.Commit();
  EXPECT_EQ(Rows(), 2);
  ASSERT_TRUE(index.Find(made, &info));
  EXPECT_EQ(info.device_id, "dev-2");
}

TEST_F(SeriesCatalogTest, OpenLoadsTheFilesSeriesAndInterningFindsThemWithoutNewRows) {
  int64_t id = 0;
  uint64_t h = 0;
  {
    SeriesIndex index;
    SeriesWriter writer;
    ASSERT_OK(writer.Open(&db_, &index));
    ASSERT_OK(writer.Intern("dev-9", "volts", "V", &id, &h));
    writer.Commit();
  }
  SeriesIndex index;
  SeriesWriter writer;
  ASSERT_OK(writer.Open(&db_, &index));
  SeriesInfo info;
  ASSERT_TRUE(index.Find(id, &info));
  EXPECT_EQ(info.metric, "volts");
  EXPECT_EQ(info.hash, h);
  int64_t again = 0;
  ASSERT_OK(writer.Intern("dev-9", "volts", "V", &again, &h));
  EXPECT_EQ(again, id);
  EXPECT_EQ(writer.pending(), 0u);
  EXPECT_EQ(Rows(), 1);
}

TEST_F(SeriesCatalogTest, AReaderFindsASeriesWrittenAfterItsLoadAndRefusesAnUnknownId) {
  SeriesIndex reader_index;
  Db read_db;
  ASSERT_OK(read_db.Open(Path(), SQLITE_OPEN_READWRITE));
  SeriesReader reader;
  ASSERT_OK(reader.Open(&read_db, &reader_index));

  // Another process's writer (its own index) adds a series.
  SeriesIndex writer_index;
  SeriesWriter writer;
  ASSERT_OK(writer.Open(&db_, &writer_index));
  int64_t id = 0;
  uint64_t h = 0;
  ASSERT_OK(writer.Intern("dev-3", "rpm", "", &id, &h));
  writer.Commit();

  SeriesInfo info;
  EXPECT_FALSE(reader_index.Find(id, &info));
  ASSERT_OK(reader.Find(id, &info));
  EXPECT_EQ(info.device_id, "dev-3");
  EXPECT_EQ(info.metric, "rpm");
  EXPECT_EQ(info.hash, h);
  EXPECT_TRUE(reader_index.Find(id, &info)) << "read once, then cached";

  Status missing = reader.Find(id + 100, &info);
  EXPECT_EQ(missing.code(), Status::Code::kCorruption) << missing.ToString();
}

}  // namespace
}  // namespace edgesync::test

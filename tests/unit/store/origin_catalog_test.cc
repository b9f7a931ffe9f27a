// The origin catalog through its own API on a real SQLite file of the
// store's schema: an origin is inserted once and found again, an insert
// that rolls back is not cached, a read-only lookup never inserts, and an
// unknown id is refused.
#include "store/origin_catalog.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const Origin kA{"gw-a", "0123456789abcdef0123456789abcdef"};
const Origin kB{"gw-b", "fedcba9876543210fedcba9876543210"};

class OriginCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("origins.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(write_.Prepare(&db_, true));
    ASSERT_OK(read_.Prepare(&db_, false));
  }
  int64_t Rows() {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt("SELECT count(*) FROM origins", &n));
    return n;
  }
  TempDir dir_;
  Db db_;
  OriginCatalog::Statements write_, read_;
};

TEST_F(OriginCatalogTest, AnOriginIsInsertedOnceAndFoundAgain) {
  OriginCatalog catalog;
  int64_t a = 0, again = 0, none = -1;
  ASSERT_OK(catalog.Find(kB, &read_, /*insert=*/false, &none));
  EXPECT_EQ(none, 0) << "a lookup without insert never makes one";
  ASSERT_OK(catalog.Find(kA, &write_, true, &a));
  EXPECT_GT(a, 0);
  ASSERT_OK(catalog.Find(kA, &write_, true, &again));
  EXPECT_EQ(again, a);
  EXPECT_EQ(Rows(), 1);
  Origin back;
  ASSERT_OK(catalog.ById(a, &read_, &back));
  EXPECT_EQ(back, kA);
  Status unknown = catalog.ById(a + 7, &read_, &back);
  EXPECT_EQ(unknown.code(), Status::Code::kCorruption) << unknown.ToString();
}

TEST_F(OriginCatalogTest, AnInsertThatRollsBackIsNotCached) {
  OriginCatalog catalog;
  int64_t id = 0;
  {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    ASSERT_OK(catalog.Find(kB, &write_, true, &id));
    EXPECT_GT(id, 0);
    int64_t same = 0;  // a second batch of the same transaction finds (and caches) it
    ASSERT_OK(catalog.Find(kB, &write_, true, &same));
    EXPECT_EQ(same, id);
    txn.Rollback();
    catalog.Forget();
  }
  EXPECT_EQ(Rows(), 0);
  int64_t after = -1;
  ASSERT_OK(catalog.Find(kB, &read_, false, &after));
  EXPECT_EQ(after, 0) << "the rolled-back id is not served from the cache";
  Origin o;
  EXPECT_FALSE(catalog.ById(id, &read_, &o).ok());
}

}  // namespace
}  // namespace edgesync::test

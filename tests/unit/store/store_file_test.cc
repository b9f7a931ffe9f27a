// The store file through its own API on real files: a new store is made
// whole at its path (private, with its identity and ranges), a store that
// is already there is never replaced, and an empty, foreign or truncated
// file is refused by the header check without a byte written to it.
#include "store/store_file.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>

#include "gtest/gtest.h"
#include "store/sqlite_util.h"
#include "store/token.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

StoreOptions Options(const std::string& path) {
  StoreOptions o;
  o.path = path;
  o.gateway_id = "gw-1";
  o.initial_ranges = 4;
  return o;
}

std::string Meta(const std::string& path, const char* key) {
  Db db;
  EXPECT_OK(db.Open(path, SQLITE_OPEN_READONLY));
  std::string v;
  EXPECT_OK(db.QueryText(std::string("SELECT value FROM meta WHERE key='") + key + "'", &v));
  return v;
}

TEST(StoreFileTest, ANewStoreIsMadeWholeAndPrivateAndNeverReplacesOne) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  ASSERT_OK(store_file::Create(Options(path)));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Meta(path, "gateway_id"), "gw-1");
  const std::string epoch = Meta(path, "epoch");
  EXPECT_TRUE(IsEpoch(epoch)) << epoch;
  {
    Db db;
    ASSERT_OK(db.Open(path, SQLITE_OPEN_READONLY));
    int64_t ranges = 0, page = 0;
    ASSERT_OK(db.QueryInt("SELECT count(*) FROM ranges WHERE active = 1", &ranges));
    ASSERT_OK(db.QueryInt("PRAGMA page_size", &page));
    EXPECT_EQ(ranges, 4);
    EXPECT_EQ(page, 1024);
  }
  ASSERT_OK(store_file::Precheck(path));
  // Another process's create finds it there: the first one's stays.
  StoreOptions other = Options(path);
  other.gateway_id = "gw-2";
  ASSERT_OK(store_file::Create(other));
  EXPECT_EQ(Meta(path, "gateway_id"), "gw-1");
  EXPECT_EQ(Meta(path, "epoch"), epoch);
  StoreOptions nameless = Options(dir.File("nameless.db"));
  nameless.gateway_id.clear();
  EXPECT_EQ(store_file::Create(nameless).code(), Status::Code::kInvalidArgument);
}

TEST(StoreFileTest, AnEmptyForeignOrTruncatedFileIsRefusedUntouched) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir.File(name), std::ios::binary) << bytes;
    return dir.File(name);
  };
  Status empty = store_file::Precheck(write("empty.db", ""));
  EXPECT_EQ(empty.code(), Status::Code::kCorruption);
  EXPECT_NE(empty.message().find("empty"), std::string::npos) << empty.message();
  Status foreign = store_file::Precheck(write("foreign.db", std::string(4096, 'x')));
  EXPECT_EQ(foreign.code(), Status::Code::kCorruption);
  EXPECT_NE(foreign.message().find("not a SQLite database"), std::string::npos) << foreign.message();

  const std::string path = dir.File("store.db");
  ASSERT_OK(store_file::Create(Options(path)));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  ASSERT_EQ(::truncate(path.c_str(), st.st_size - 1024), 0);
  Status cut = store_file::Precheck(path);
  EXPECT_EQ(cut.code(), Status::Code::kCorruption);
  EXPECT_NE(cut.message().find("truncated"), std::string::npos) << cut.message();
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const off_t size = st.st_size;
  (void)store_file::Precheck(path);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, size) << "the check writes nothing";
}

TEST(StoreFileTest, EveryEpochIsNew) {
  std::string a, b;
  ASSERT_OK(store_file::MakeEpoch(&a));
  ASSERT_OK(store_file::MakeEpoch(&b));
  EXPECT_TRUE(IsEpoch(a));
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace edgesync::test

// Read-only opening (`edgesync query`, `feed`): nothing written, migrated or
// created beside the store, whether a writer is running, stopped cleanly or
// killed; and the store's files are 0600 whatever the umask.
#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>

#include "platform/files.h"
#include "store/schema.h"
#include "store/sqlite_util.h"
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreReadOnlyTest : public StoreTest {
 protected:
  StoreOptions ReadOnly() {
    StoreOptions o = Options();
    o.read_only = true;
    o.gateway_id.clear();
    o.open_check = StoreOptions::OpenCheck::kNone;
    return o;
  }
  std::set<std::string> Files() {
    std::set<std::string> names;
    DIR* d = ::opendir(dir_.path().c_str());
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.insert(n);
    }
    ::closedir(d);
    return names;
  }
  std::string Content(const std::string& path) {
    std::string s;
    EXPECT_OK(ReadFile(path, &s));
    return s;
  }
  size_t QueryCount(Store* s) {
    std::vector<QueryRow> rows;
    QueryRequest q;
    q.device_id = "dev1";
    q.limit = 100000;
    EXPECT_OK(s->Query(q, &rows));
    return rows.size();
  }
  int Mode(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
};

TEST_F(StoreReadOnlyTest, AStoppedStoreIsReadWithoutCreatingAnything) {
  {
    auto w = OpenStore();
    AppendResult r;
    ASSERT_OK(w->AppendReadings(Batch(100), &r));
  }
  const std::set<std::string> before = Files();
  ASSERT_EQ(before, std::set<std::string>{"store.db"});
  const std::string content = Content(Options().path);
  {
    std::unique_ptr<Store> s;
    Status st = Store::Open(ReadOnly(), &s);
    ASSERT_OK(st);
    EXPECT_EQ(QueryCount(s.get()), 10u);
    FeedPage page;
    ASSERT_OK(s->ReadFeed(1, FeedStart{}, 1000, &page));
    AppendResult r;
    EXPECT_FALSE(s->AppendReadings(Batch(1), &r).ok());  // read only
    EXPECT_EQ(Files(), before);
  }
  EXPECT_EQ(Files(), before);
  EXPECT_EQ(Content(Options().path), content);
}

TEST_F(StoreReadOnlyTest, BesideALiveWriterItSeesCommitsAndCreatesNothing) {
  auto w = OpenStore();
  AppendResult r;
  ASSERT_OK(w->AppendReadings(Batch(100), &r));
  const std::set<std::string> before = Files();
  EXPECT_EQ(before, (std::set<std::string>{"store.db", "store.db-shm", "store.db-wal"}));
  std::unique_ptr<Store> s;
  ASSERT_OK(Store::Open(ReadOnly(), &s));
  EXPECT_EQ(QueryCount(s.get()), 10u);
  ASSERT_OK(w->AppendReadings(Batch(100), &r));  // the writer is not held up
  EXPECT_EQ(QueryCount(s.get()), 20u);
  s.reset();
  EXPECT_EQ(Files(), before);
  ASSERT_OK(w->AppendReadings(Batch(10), &r));
}

TEST_F(StoreReadOnlyTest, AfterAKilledWriterItReadsTheWalAndCreatesNothing) {
  pid_t pid = ::fork();
  if (pid == 0) {  // a writer that dies without closing: its -wal and -shm stay
    std::unique_ptr<Store> w;
    AppendResult r;
    if (!Store::Open(Options(), &w).ok() || !w->AppendReadings(Batch(100), &r).ok()) _exit(1);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::set<std::string> before = Files();
  ASSERT_EQ(before, (std::set<std::string>{"store.db", "store.db-shm", "store.db-wal"}));
  std::unique_ptr<Store> s;
  Status st = Store::Open(ReadOnly(), &s);
  ASSERT_OK(st);
  EXPECT_EQ(QueryCount(s.get()), 10u);  // from the WAL, which immutable=1 would have ignored
  s.reset();
  EXPECT_EQ(Files(), before);
}

TEST_F(StoreReadOnlyTest, AWriterWaitsForAReaderToClose) {
  { OpenStore(); }
  std::unique_ptr<Store> reader;
  ASSERT_OK(Store::Open(ReadOnly(), &reader));
  StoreOptions o = Options();
  o.busy_timeout_ms = 200;
  std::unique_ptr<Store> w;
  Status st = Store::Open(o, &w);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("being read"), std::string::npos) << st.message();
  EXPECT_EQ(Files(), std::set<std::string>{"store.db"});  // immutable read stayed safe
  reader.reset();
  ASSERT_OK(Store::Open(o, &w));
}

TEST_F(StoreReadOnlyTest, NewerSchemaIsRefusedAndLeftUntouched) {
  { OpenStore(); }
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE));
    ASSERT_OK(db.Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 1)));
  }
  const std::string content = Content(Options().path);
  std::unique_ptr<Store> s;
  Status st = Store::Open(ReadOnly(), &s);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("newer edgesync"), std::string::npos) << st.message();
  EXPECT_EQ(Content(Options().path), content);
  EXPECT_EQ(Files(), std::set<std::string>{"store.db"});
}

TEST_F(StoreReadOnlyTest, OlderSchemaIsRefusedNotMigrated) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 1));
    ASSERT_OK(db.Exec("INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1')"));
  }
  const std::string content = Content(Options().path);
  std::unique_ptr<Store> s;
  Status st = Store::Open(ReadOnly(), &s);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("does not migrate"), std::string::npos) << st.message();
  EXPECT_EQ(Content(Options().path), content);
  Db db;
  ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READONLY));
  int64_t v = 0;
  ASSERT_OK(db.QueryInt("PRAGMA user_version", &v));
  EXPECT_EQ(v, 1);
}

TEST_F(StoreReadOnlyTest, MissingStoreIsNotFoundAndNotCreated) {
  std::unique_ptr<Store> s;
  EXPECT_EQ(Store::Open(ReadOnly(), &s).code(), Status::Code::kNotFound);
  EXPECT_TRUE(Files().empty());
}

TEST_F(StoreReadOnlyTest, StoreFilesAre0600WhateverTheUmask) {
  mode_t old = ::umask(0);
  {
    auto w = OpenStore();
    AppendResult r;
    ASSERT_OK(w->AppendReadings(Batch(10), &r));
    for (const char* f : {"store.db", "store.db-wal", "store.db-shm"}) EXPECT_EQ(Mode(dir_.File(f)), 0600) << f;
  }
  // A store left readable by others (an older version, a copy) is narrowed.
  ASSERT_EQ(::chmod(Options().path.c_str(), 0644), 0);
  { auto w = OpenStore(); }
  EXPECT_EQ(Mode(Options().path), 0600);
  ::umask(old);
}

}  // namespace
}  // namespace edgesync::test

// Full disk for real: the store on a 2 MiB tmpfs (or, where mounting is not
// permitted, under RLIMIT_FSIZE in a forked child). Writes fail with NoSpace,
// nothing committed is lost, reads go on, writes resume when space returns.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

#include "store/sqlite_util.h"
#include "store/store.h"
#include "tests/support/process.h"

namespace edgesync::test {
namespace {

class Tmpfs {
 public:
  explicit Tmpfs(const std::string& dir) : dir_(dir) {
    ::mkdir(dir.c_str(), 0700);
    // EDGESYNC_TEST_NO_MOUNT=1 exercises the fallback where mounting works.
    if (std::getenv("EDGESYNC_TEST_NO_MOUNT")) return;
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=2m") == 0;
  }
  ~Tmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

std::vector<Reading> Batch(uint64_t first, int n) {
  std::vector<Reading> v;
  for (int i = 0; i < n; ++i) {
    Reading r;
    r.device_id = "device-" + std::to_string((first + i) % 500);
    r.metric = "temperature";
    r.unit = "C";
    r.ts_ms = static_cast<int64_t>(first + i);
    r.value = static_cast<double>(first + i);
    v.push_back(r);
  }
  return v;
}

// Where mounting is not permitted: a file size limit makes writes fail with
// EFBIG. The scenario runs in a forked child so the limit does not touch the
// test process; the function it is given lifts the limit (makes room).
void ExpectScenarioUnderFileSizeLimit(const std::function<std::string(const std::function<void()>&)>& scenario) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim;
    ::getrlimit(RLIMIT_FSIZE, &lim);
    struct rlimit small = lim;
    small.rlim_cur = 1536 * 1024;
    ::setrlimit(RLIMIT_FSIZE, &small);
    std::string err = scenario([&] { ::setrlimit(RLIMIT_FSIZE, &lim); });
    if (!err.empty()) std::fprintf(stderr, "%s\n", err.c_str());
    _exit(err.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Returns "" when every expectation held, else what went wrong (so the same
// scenario can run in a forked child).
std::string Scenario(const std::string& dir, const std::function<void()>& make_room) {
  StoreOptions o;
  o.path = dir + "/store.db";
  o.gateway_id = "full-gw";
  uint64_t committed = 0;
  {
    std::unique_ptr<Store> store;
    Status st = Store::Open(o, &store);
    if (!st.ok()) return "open: " + st.ToString();
    AppendResult r;
    // Readings take ~2 bytes each in chunks: enough batches to fill 2 MiB
    // many times over (the loop ends at the first failure).
    for (int i = 0; i < 20000; ++i) {
      st = store->AppendReadings(Batch(committed + 1, 500), &r);
      if (!st.ok()) break;
      if (r.first_lsn != committed + 1) return "LSN jumped";
      committed = r.last_lsn;
    }
    if (st.code() != Status::Code::kNoSpace) return "expected NoSpace, got " + st.ToString();
    if (st.message().find("full") == std::string::npos) return "unclear message: " + st.message();
    if (committed == 0) return "nothing fit before the disk was full";
    // Nothing crashes on further attempts, and reads go on.
    for (int i = 0; i < 3; ++i) {
      st = store->AppendReadings(Batch(committed + 1, 500), &r);
      if (st.code() != Status::Code::kNoSpace) return "second attempt: " + st.ToString();
    }
    if (store->LastLsn() != committed) return "LastLsn moved on a failed write";
    std::vector<ChangeEntry> log;
    st = store->ReadLog(0, 10000000, &log);
    if (!st.ok()) return "read while full: " + st.ToString();
    if (log.size() != committed) return "read " + std::to_string(log.size()) + " of " + std::to_string(committed);
    for (size_t i = 0; i < log.size(); ++i) {
      if (log[i].lsn != i + 1 || log[i].reading.value != static_cast<double>(i + 1)) return "bad entry while full";
    }
    QueryRequest q;
    q.device_id = "device-1";
    std::vector<QueryRow> rows;
    if (!store->Query(q, &rows).ok() || rows.empty()) return "query while full failed";
    StoreStats stats;
    if (!store->Stats(&stats).ok() || stats.rejected_full < 500) return "rejected_full not counted";

    make_room();
    st = store->AppendReadings(Batch(committed + 1, 100), &r);
    if (!st.ok()) return "after making room: " + st.ToString();
    if (r.first_lsn != committed + 1) return "LSN after resume is not the next one";
    committed = r.last_lsn;
  }
  {
    Db db;
    if (!db.Open(o.path, SQLITE_OPEN_READWRITE).ok()) return "reopen for check";
    std::string result;
    if (!db.QueryText("PRAGMA integrity_check", &result).ok() || result != "ok") return "integrity: " + result;
  }
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) return "reopen: " + st.ToString();
  if (store->LastLsn() != committed) return "LastLsn after reopen differs";
  std::vector<ChangeEntry> log;
  if (!store->ReadLog(0, 10000000, &log).ok() || log.size() != committed) return "entries lost after reopen";
  return "";
}

TEST(StoreFullDiskTest, FailsCleanlyAndResumes) {
  TempDir tmp;
  std::string dir = tmp.File("small");
  Tmpfs fs(dir);
  if (fs.mounted()) {
    std::string filler = dir + "/filler";
    WriteAll(filler, std::string(512 * 1024, 'f'));
    std::string err = Scenario(dir, [&] { ::unlink(filler.c_str()); });
    EXPECT_EQ(err, "");
    return;
  }
  ExpectScenarioUnderFileSizeLimit([&](const std::function<void()>& make_room) { return Scenario(dir, make_room); });
}

// drop-oldest on a really full filesystem: writes go on, the oldest
// readings make room, and every dropped one is counted.
std::string DropOldestScenario(const std::string& dir) {
  StoreOptions o;
  o.path = dir + "/store.db";
  o.gateway_id = "full-gw";
  o.disk_policy = StoreOptions::DiskPolicy::kDropOldest;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) return "open: " + st.ToString();
  uint64_t next = 1;
  int64_t dropped = 0;
  // Enough to fill 2 MiB with chunks of ~2 bytes a reading, then go on.
  for (int i = 0; i < 4000; ++i) {
    AppendResult r;
    st = store->AppendReadings(Batch(next, 500), &r);
    if (!st.ok()) return "batch " + std::to_string(i) + ": " + st.ToString();
    if (r.first_lsn != next) return "LSN jumped";
    next = r.last_lsn + 1;
    dropped += r.dropped_oldest;
  }
  if (dropped == 0) return "the filesystem never filled up";
  StoreStats stats;
  if (!store->Stats(&stats).ok()) return "stats";
  if (stats.dropped_oldest != dropped) return "dropped_oldest " + std::to_string(stats.dropped_oldest) +
                                              " != " + std::to_string(dropped);
  if (stats.entries + dropped != static_cast<int64_t>(next - 1)) return "entries + dropped != written";
  std::vector<ChangeEntry> log;
  if (!store->ReadLog(0, 10000000, &log).ok() || log.size() != static_cast<size_t>(stats.entries)) return "read";
  for (size_t i = 0; i < log.size(); ++i) {
    if (log[i].lsn != static_cast<uint64_t>(dropped) + 1 + i) return "not the oldest were dropped";
  }
  return "";
}

int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// The filesystem fills up while the store's WAL holds frames not yet copied
// into the database (a reader kept it from starting over), everything
// acknowledged. Checkpointing and truncating the WAL is what makes room: the
// write must go through without dropping a single acknowledged reading. (It
// used to drop twice the batch's readings first, needlessly: the fault soak
// saw a gateway's two oldest readings go that way.)
// fill(wal_bytes): takes away the room the WAL would grow into.
std::string WalMakesRoomScenario(const std::string& dir, const std::function<std::string(int64_t)>& fill) {
  StoreOptions o;
  o.path = dir + "/store.db";
  o.gateway_id = "full-gw";
  o.retention_age_ms = 1;
  o.ack_grace_ms = 0;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) return "open: " + st.ToString();
  uint64_t next = 1;
  AppendResult r;
  auto append = [&](int batches) -> std::string {
    for (int i = 0; i < batches; ++i) {
      Status a = store->AppendReadings(Batch(next, 500), &r);
      if (!a.ok()) return "append: " + a.ToString();
      next = r.last_lsn + 1;
    }
    return store->AckUpstream("eu", next - 1).ToString() == "OK" ? "" : "ack";
  };
  // Free pages inside the file, so that copying the WAL back needs no
  // filesystem space: written, acknowledged, pruned.
  std::string err = append(200);
  if (!err.empty()) return err;
  ::usleep(20000);
  PruneResult pruned;
  if (!store->Prune(&pruned).ok() || pruned.readings == 0) return "prune";
  const uint64_t kept_from = next;
  {
    Db reader;  // holds a snapshot: the WAL grows instead of starting over
    if (!reader.Open(o.path, SQLITE_OPEN_READONLY).ok() || !reader.Exec("BEGIN").ok()) return "reader";
    int64_t n = 0;
    if (!reader.QueryInt("SELECT count(*) FROM meta", &n).ok()) return "reader snapshot";
    err = append(60);
    if (!err.empty()) return err;
    reader.Exec("COMMIT");
  }
  const int64_t wal_before = FileSize(o.path + "-wal");
  if (wal_before < 64 * 1024) return "the WAL did not grow: " + std::to_string(wal_before);
  err = fill(wal_before);
  if (!err.empty()) return err;
  st = store->AppendReadings(Batch(next, 500), &r);
  if (!st.ok()) return "the write after the filesystem filled: " + st.ToString();
  if (r.first_lsn != next) return "LSN jumped";
  next = r.last_lsn + 1;
  const int64_t wal_after = FileSize(o.path + "-wal");
  if (wal_after >= wal_before) {
    return "the WAL was not taken back (" + std::to_string(wal_before) + " -> " + std::to_string(wal_after) +
           " bytes): the filesystem never refused the write";
  }
  StoreStats stats;
  if (!store->Stats(&stats).ok()) return "stats";
  if (stats.dropped_acked != 0) return std::to_string(stats.dropped_acked) + " acknowledged readings dropped";
  if (stats.dropped_oldest != 0) return "dropped_oldest " + std::to_string(stats.dropped_oldest);
  std::vector<ChangeEntry> log;
  if (!store->ReadLog(0, 10000000, &log).ok()) return "read";
  if (log.size() != next - kept_from) return "held " + std::to_string(log.size()) + " of " + std::to_string(next - kept_from);
  return "";
}

TEST(StoreFullDiskTest, AFullFilesystemTakesBackTheWalBeforeAnyAcknowledgedReading) {
  TempDir tmp;
  std::string dir = tmp.File("small");
  Tmpfs fs(dir);
  if (fs.mounted()) {
    EXPECT_EQ(WalMakesRoomScenario(
                  dir, [&](int64_t) { return FillFilesystem(dir + "/ballast") ? "" : "filling the tmpfs"; }),
              "");
    return;
  }
  // No tmpfs: no file may grow past the WAL's size now (the database file,
  // smaller, takes the WAL's pages back into pages it frees).
  ExpectScenarioUnderFileSizeLimit([&](const std::function<void()>&) {
    return WalMakesRoomScenario(dir, [&](int64_t wal_bytes) -> std::string {
      const int64_t db_bytes = FileSize(dir + "/store.db");
      if (db_bytes >= wal_bytes) return "the database file (" + std::to_string(db_bytes) + ") outgrew the WAL";
      struct rlimit lim;
      ::getrlimit(RLIMIT_FSIZE, &lim);
      lim.rlim_cur = static_cast<rlim_t>(wal_bytes);
      ::setrlimit(RLIMIT_FSIZE, &lim);
      return "";
    });
  });
}

TEST(StoreFullDiskTest, DropOldestKeepsWritingOnAFullFilesystem) {
  TempDir tmp;
  std::string dir = tmp.File("small");
  Tmpfs fs(dir);
  if (fs.mounted()) {
    EXPECT_EQ(DropOldestScenario(dir), "");
    return;
  }
  ExpectScenarioUnderFileSizeLimit([&](const std::function<void()>&) { return DropOldestScenario(dir); });
}

}  // namespace
}  // namespace edgesync::test

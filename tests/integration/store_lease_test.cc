// Two consumer processes on one store file: each range is held by one owner
// at a time; a SIGKILLed owner's ranges are taken over after expiry and
// resumed from its last checkpoint.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>

#include "store/store.h"
#include "store/token.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int kReadings = 2000;
constexpr int kRanges = 4;
constexpr int64_t kExpiryMs = 800;

StoreOptions Opts(const std::string& path) {
  StoreOptions o;
  o.path = path;
  o.gateway_id = "lease-gw";
  o.initial_ranges = kRanges;
  o.lease_expiry_ms = kExpiryMs;
  return o;
}

void Line(int fd, const std::string& s) {
  std::string l = s + "\n";
  if (::write(fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) _exit(5);
}

// A feed consumer: takes every range it can, processes pages, checkpoints
// after each page, renews. Records what it did in its log file:
//   S <range> <start lsn>          acquired, resuming after <start lsn>
//   P <range> <lsn>                processed an entry
//   T <range> <lsn>                about to checkpoint (a kill may land between
//                                  the commit and its C line)
//   C <range> <version> <lsn>      checkpoint committed (CAS won)
// Exits 0 once every range is drained and held by it.
[[noreturn]] void Consumer(const std::string& path, const std::string& owner, const std::string& log_path,
                           int64_t page_delay_ms) {
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  std::unique_ptr<Store> store;
  if (fd < 0 || !Store::Open(Opts(path), &store).ok()) _exit(2);
  std::map<uint32_t, Lease> held;
  std::map<uint32_t, bool> drained;
  for (int64_t deadline = NowMs() + 30000; NowMs() < deadline;) {
    for (uint32_t r = 1; r <= kRanges; ++r) {
      if (held.count(r)) continue;
      Lease l;
      if (!store->AcquireLease(r, owner, &l).ok()) continue;
      FeedToken t;
      uint64_t start = l.continuation.empty() || !DecodeFeedToken(l.continuation, &t).ok() ? 0 : t.lsn;
      Line(fd, "S " + std::to_string(r) + " " + std::to_string(start));
      held[r] = l;
    }
    for (auto it = held.begin(); it != held.end();) {
      Lease& l = it->second;
      FeedStart from;
      if (!l.continuation.empty()) from = FeedStart{FeedStart::Kind::kToken, 0, 0, l.continuation};
      FeedPage page;
      if (!store->ReadFeed(l.range_id, from, 10, &page).ok()) _exit(3);
      for (const auto& e : page.entries) Line(fd, "P " + std::to_string(l.range_id) + " " + std::to_string(e.lsn));
      drained[l.range_id] = page.entries.empty();
      SleepMs(page_delay_ms);
      FeedToken t;
      DecodeFeedToken(page.continuation, &t);
      Line(fd, "T " + std::to_string(l.range_id) + " " + std::to_string(t.lsn));
      Lease next;
      Status st = store->CheckpointLease(l, page.continuation, &next);
      if (!st.ok()) {  // lost it: someone took over
        drained.erase(l.range_id);
        it = held.erase(it);
        continue;
      }
      Line(fd, "C " + std::to_string(l.range_id) + " " + std::to_string(next.version) + " " + std::to_string(t.lsn));
      l = next;
      ++it;
    }
    bool done = held.size() == kRanges;
    for (uint32_t r = 1; r <= kRanges; ++r) done = done && drained[r];
    if (done) _exit(0);
    SleepMs(20);
  }
  _exit(4);
}

struct Log {
  std::vector<std::vector<std::string>> lines;
};

Log ParseLog(const std::string& path) {
  Log log;
  std::istringstream in(ReadAll(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    std::string w;
    while (ls >> w) f.push_back(w);
    if (!f.empty()) log.lines.push_back(f);
  }
  return log;
}

pid_t Spawn(const std::string& path, const std::string& owner, const std::string& log, int64_t delay) {
  pid_t pid = ::fork();
  if (pid == 0) Consumer(path, owner, log, delay);
  return pid;
}

TEST(StoreLeaseProcessesTest, TakeoverAfterSigkillResumesFromCheckpoint) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  {
    std::unique_ptr<Store> store;
    ASSERT_OK(Store::Open(Opts(path), &store));
    std::vector<Reading> batch;
    for (int i = 0; i < kReadings; ++i) {
      batch.push_back(Reading{"dev" + std::to_string(i % 61), "temp", i, 1.0 * i, "", 0});
    }
    AppendResult r;
    ASSERT_OK(store->AppendReadings(batch, &r));
  }  // closed before forking: no SQLite connection crosses a fork
  const std::string log_a = dir.File("a.log"), log_b = dir.File("b.log");
  pid_t a = Spawn(path, "consumer-a", log_a, 25);  // slow: still busy when killed
  ASSERT_GT(a, 0);
  ASSERT_TRUE(WaitFor([&] { return ParseLog(log_a).lines.size() > 150; }, 20000));
  pid_t b = Spawn(path, "consumer-b", log_b, 0);
  ASSERT_GT(b, 0);
  SleepMs(300);  // b competes while a is alive and renewing
  ASSERT_EQ(::kill(a, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(a, &status, 0), a);
  ASSERT_EQ(::waitpid(b, &status, 0), b);
  ASSERT_TRUE(WIFEXITED(status)) << "consumer b was killed";
  ASSERT_EQ(WEXITSTATUS(status), 0) << "consumer b did not finish";

  Log la = ParseLog(log_a), lb = ParseLog(log_b);
  // Each range: every committed checkpoint version unique, a's all before b's.
  std::map<uint32_t, std::set<int64_t>> versions_a, versions_b;
  std::map<uint32_t, uint64_t> last_ckpt_a;
  // The checkpoint a was committing when it was killed, if it logged no C
  // after it: the store may hold it or not, never anything else.
  std::map<uint32_t, uint64_t> attempt_a;
  for (const auto& f : la.lines) {
    if (f[0] == "T") attempt_a[std::stoul(f[1])] = std::stoull(f[2]);
    if (f[0] == "C") {
      uint32_t r = std::stoul(f[1]);
      ASSERT_TRUE(versions_a[r].insert(std::stoll(f[2])).second);
      last_ckpt_a[r] = std::stoull(f[3]);
      attempt_a.erase(r);
    }
  }
  for (const auto& f : lb.lines) {
    if (f[0] == "C") {
      ASSERT_TRUE(versions_b[std::stoul(f[1])].insert(std::stoll(f[2])).second);
    }
  }
  for (uint32_t r = 1; r <= kRanges; ++r) {
    ASSERT_FALSE(versions_a[r].empty()) << "a never held range " << r;
    ASSERT_FALSE(versions_b[r].empty()) << "b never took over range " << r;
    EXPECT_LT(*versions_a[r].rbegin(), *versions_b[r].begin()) << "two owners at once on range " << r;
  }
  std::map<uint32_t, uint64_t> start_b;
  for (const auto& f : lb.lines) {
    if (f[0] == "S") start_b.emplace(std::stoul(f[1]), std::stoull(f[2]));
  }
  // b resumed each range exactly where a's last committed checkpoint left it:
  // the last one a logged, or the one it was committing when killed.
  for (uint32_t r = 1; r <= kRanges; ++r) {
    const bool at_last = start_b[r] == last_ckpt_a[r];
    const bool at_attempt = attempt_a.count(r) != 0 && start_b[r] == attempt_a[r];
    EXPECT_TRUE(at_last || at_attempt) << "range " << r << ": b started after " << start_b[r] << ", a's last checkpoint "
                                       << last_ckpt_a[r] << (attempt_a.count(r) ? ", a was committing " : "")
                                       << (attempt_a.count(r) ? std::to_string(attempt_a[r]) : "");
    last_ckpt_a[r] = start_b[r];  // what the store held when b took over
  }
  // Every entry processed; repeats only after a's last checkpoint (at least once).
  std::map<uint64_t, int> seen;
  std::map<uint64_t, uint32_t> range_of;
  for (const Log* l : {&la, &lb}) {
    for (const auto& f : l->lines) {
      if (f[0] != "P") continue;
      uint64_t lsn = std::stoull(f[2]);
      seen[lsn]++;
      range_of[lsn] = std::stoul(f[1]);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kReadings));
  for (const auto& [lsn, n] : seen) {
    if (n > 1) {
      EXPECT_GT(lsn, last_ckpt_a[range_of[lsn]]) << "entry " << lsn << " processed twice";
    }
  }
}

}  // namespace
}  // namespace edgesync::test

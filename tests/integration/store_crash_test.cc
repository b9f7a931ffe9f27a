// Crash safety for real: a forked writer appends batches (each one chunk of
// readings, store/schema.h) and reports each committed batch's last LSN
// through a pipe; it is SIGKILLed at random moments, and every time the
// store is reopened and checked. A second writer also prunes acknowledged
// chunks as it goes.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <random>

#include "store/sqlite_util.h"
#include "store/store.h"
#include "tests/support/kill_writer.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

StoreOptions Opts(const std::string& path, bool full) {
  StoreOptions o;
  o.path = path;
  o.gateway_id = "crash-gw";
  o.sync = full ? StoreOptions::Sync::kFull : StoreOptions::Sync::kNormal;
  o.initial_ranges = 2;
  o.split_max_entries = 20000;  // splits happen during the run too
  return o;
}

// 1 to 300 readings of random series; each one's value is its intended LSN.
std::vector<Reading> NextBatch(std::mt19937* rng, uint64_t next) {
  int n = 1 + static_cast<int>((*rng)() % 300);
  std::vector<Reading> batch;
  for (int i = 0; i < n; ++i) {
    Reading r;
    r.device_id = "dev" + std::to_string((*rng)() % 97);
    r.metric = "m" + std::to_string((*rng)() % 3);
    r.ts_ms = static_cast<int64_t>(next + i);
    r.value = static_cast<double>(next + i);
    batch.push_back(r);
  }
  return batch;
}

// The whole log, page by page; false if a page could not be read.
bool ReadWholeLog(Store* store, std::vector<ChangeEntry>* all) {
  uint64_t after = 0;
  for (;;) {
    std::vector<ChangeEntry> page;
    if (!store->ReadLog(after, 50000, &page).ok()) return false;
    if (page.empty()) return true;
    after = page.back().lsn;
    all->insert(all->end(), page.begin(), page.end());
  }
}

// The writer: never returns. Each reading's value is its intended LSN, so
// the checker can tell a misplaced row from a right one.
[[noreturn]] void Writer(const std::string& path, bool full, int fd, unsigned seed) {
  std::unique_ptr<Store> store;
  if (!Store::Open(Opts(path, full), &store).ok()) _exit(2);
  std::mt19937 rng(seed);
  for (;;) {
    std::vector<Reading> batch = NextBatch(&rng, store->LastLsn() + 1);
    AppendResult res;
    if (!store->AppendReadings(batch, &res).ok()) _exit(3);
    if (::write(fd, &res.last_lsn, sizeof(res.last_lsn)) != sizeof(res.last_lsn)) _exit(4);
  }
}

TEST(StoreCrashTest, SurvivesRepeatedSigkill) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  std::mt19937 rng(12345);
  uint64_t reported_max = 0;
  const int kKills = 60;
  for (int round = 0; round < kKills; ++round) {
    const bool full = round % 4 == 0;
    // The first round creates the store: kill it only once the store is
    // there (its first commit reported); under load the creation can
    // outlast the run.
    const KillRound run{round == 0, static_cast<int64_t>(rng() % 60) + (round == 0 ? 50 : 5)};
    const auto seed = static_cast<unsigned>(round * 7919 + 1);
    std::vector<uint64_t> reported;
    ASSERT_TRUE(RunAndKill<uint64_t>([&](int fd) { Writer(path, full, fd, seed); }, run, &reported))
        << "round " << round;
    for (uint64_t lsn : reported) reported_max = std::max(reported_max, lsn);

    {
      Db db;  // an independent integrity check, beyond the one at open
      ASSERT_OK(db.Open(path, SQLITE_OPEN_READWRITE));
      std::string result;
      ASSERT_OK(db.QueryText("PRAGMA integrity_check", &result));
      ASSERT_EQ(result, "ok") << "round " << round;
    }
    std::unique_ptr<Store> store;
    Status st = Store::Open(Opts(path, full), &store);
    ASSERT_OK(st) << "round " << round << ": " << st.ToString();
    ASSERT_GE(store->LastLsn(), reported_max) << "a reported-committed batch is missing, round " << round;
    std::vector<ChangeEntry> all;
    ASSERT_TRUE(ReadWholeLog(store.get(), &all)) << "round " << round;
    ASSERT_EQ(all.size(), store->LastLsn()) << "round " << round;
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(all[i].lsn, i + 1) << "gap or reuse at index " << i << ", round " << round;
      ASSERT_EQ(all[i].reading.value, static_cast<double>(i + 1)) << "round " << round;
    }
  }
  EXPECT_GT(reported_max, 0u);
}

// What the pruning writer reports: (last committed LSN, acknowledged LSN).
using Report = std::array<uint64_t, 2>;

// The writer of the pruning round: appends like Writer, acknowledges all
// but the newest ~500 LSNs upstream and runs retention steps (age 0: every
// acknowledged chunk is due), so SIGKILL lands inside chunk inserts and
// chunk deletes alike. Reports (last committed LSN, acknowledged LSN).
[[noreturn]] void PruningWriter(const std::string& path, int fd, unsigned seed) {
  StoreOptions o = Opts(path, false);
  o.retention_age_ms = 0;
  o.ack_grace_ms = 0;
  std::unique_ptr<Store> store;
  if (!Store::Open(o, &store).ok()) _exit(2);
  std::mt19937 rng(seed);
  for (;;) {
    std::vector<Reading> batch = NextBatch(&rng, store->LastLsn() + 1);
    AppendResult res;
    if (!store->AppendReadings(batch, &res).ok()) _exit(3);
    uint64_t acked = res.last_lsn > 500 ? res.last_lsn - 500 : 0;
    if (acked > 0 && !store->AckUpstream("region", acked).ok()) _exit(5);
    PruneResult pr;
    if (!store->PruneStep(1 + rng() % 2000, &pr).ok()) _exit(6);
    const Report report = {res.last_lsn, acked};
    if (::write(fd, report.data(), sizeof report) != sizeof report) _exit(4);
  }
}

// Retention deletes whole chunks while appends go on: killed anywhere,
// what remains is a gap-free run of LSNs up to the head, holding every
// reading not acknowledged (never pruned), each exactly once.
TEST(StoreCrashTest, ChunkPruningSurvivesSigkill) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  std::mt19937 rng(4242);
  uint64_t reported_max = 0, acked_max = 0;
  for (int round = 0; round < 30; ++round) {
    const KillRound run{round == 0, static_cast<int64_t>(rng() % 80) + 5};
    const auto seed = static_cast<unsigned>(round * 104729 + 3);
    std::vector<Report> reported;
    ASSERT_TRUE(RunAndKill<Report>([&](int fd) { PruningWriter(path, fd, seed); }, run, &reported))
        << "round " << round;
    for (const auto& report : reported) {
      reported_max = std::max(reported_max, report[0]);
      acked_max = std::max(acked_max, report[1]);
    }

    std::unique_ptr<Store> store;
    Status st = Store::Open(Opts(path, false), &store);
    ASSERT_OK(st) << "round " << round << ": " << st.ToString();
    ASSERT_GE(store->LastLsn(), reported_max) << "a reported-committed batch is missing, round " << round;
    std::vector<ChangeEntry> all;
    ASSERT_TRUE(ReadWholeLog(store.get(), &all)) << "round " << round;
    ASSERT_FALSE(all.empty()) << "round " << round;
    EXPECT_EQ(all.back().lsn, store->LastLsn()) << "round " << round;
    StoreStats stats;
    ASSERT_OK(store->Stats(&stats));
    EXPECT_GE(stats.acked_lsn, acked_max);
    EXPECT_LE(all.front().lsn, stats.acked_lsn + 1) << "an unacknowledged reading was pruned, round " << round;
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(all[i].lsn, all.front().lsn + i) << "gap or repeat at index " << i << ", round " << round;
      ASSERT_EQ(all[i].reading.value, static_cast<double>(all[i].lsn)) << "round " << round;
    }
  }
  EXPECT_GT(acked_max, 0u);
}

}  // namespace
}  // namespace edgesync::test

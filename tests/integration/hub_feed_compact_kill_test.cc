// Region feed compaction under SIGKILL, for real: a forked hub writer
// applies gateways' batches (mostly small, now and then a large one) whose
// readings carry (gateway, LSN) in their value, and merges the feed's rows
// (compact_after_ms 0) after every few batches, so kills land inside
// applies, compaction's reads and its swap transaction alike. After every
// kill the store is reopened and the whole feed read from the start: its
// sequences without a hole, every reported-applied entry there, each
// exactly once, at one sequence, with its own value; every gateway's
// entries 1..its high-water mark and nothing else.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <map>
#include <random>

#include "store/sqlite_util.h"
#include "store/store.h"
#include "tests/support/kill_writer.h"
#include "tests/support/process.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int kGateways = 5;

Origin Gateway(int k) { return Origin{"kill-gw-" + std::to_string(k), std::string(32, static_cast<char>('a' + k))}; }

StoreOptions Opts(const std::string& path) {
  StoreOptions o;
  o.path = path;
  o.gateway_id = "kill-hub";
  o.compact_after_ms = 0;  // every row is old enough to merge
  return o;
}

// What the writer reports after each committed apply.
struct Applied {
  int32_t gateway;
  uint64_t last_lsn;
};

[[noreturn]] void Writer(const std::string& path, int fd, unsigned seed) {
  std::unique_ptr<SqliteHubStore> hub;
  if (!OpenSqliteHubStore(Opts(path), &hub).ok()) _exit(2);
  std::mt19937 rng(seed);
  uint64_t next[kGateways];
  for (int k = 0; k < kGateways; ++k) {
    uint64_t hw = 0;
    if (!GetHighWater(hub.get(), Gateway(k), &hw).ok()) _exit(3);
    next[k] = hw + 1;
  }
  for (;;) {
    const int k = static_cast<int>(rng() % kGateways);
    const int n = rng() % 25 == 0 ? 600 : 1 + static_cast<int>(rng() % 40);
    std::vector<ChangeEntry> batch;
    for (int i = 0; i < n; ++i) {
      ChangeEntry e;
      e.lsn = next[k]++;
      e.reading.device_id = "dev" + std::to_string(rng() % 7);
      e.reading.metric = "temp";
      e.reading.ts_ms = 1'790'000'000'000 + static_cast<int64_t>(e.lsn) * 10;
      e.reading.value = k * 1e9 + static_cast<double>(e.lsn);
      batch.push_back(std::move(e));
    }
    uint64_t hw = 0;
    if (!ApplyOriginBatch(hub.get(), Gateway(k), 0, batch, &hw).ok()) _exit(4);
    const Applied a{k, hw};
    if (::write(fd, &a, sizeof a) != sizeof a) _exit(5);
    if (rng() % 4 == 0) {
      CompactResult c;
      if (!hub->CompactFeedStep(&c).ok()) _exit(6);
    }
  }
}

TEST(HubFeedCompactKillTest, SigkillDuringFeedCompactionLosesAndDuplicatesNothing) {
  TempDir dir;
  const std::string path = dir.File("hub.db");
  std::mt19937 rng(9173);
  std::map<int, uint64_t> reported;
  int64_t merged_rows_seen = 0;
  for (int round = 0; round < 25; ++round) {
    const KillRound run{true, static_cast<int64_t>(rng() % 80) + 5};
    const auto seed = static_cast<unsigned>(round * 7919 + 3);
    std::vector<Applied> applied;
    ASSERT_TRUE(RunAndKill<Applied>([&](int fd) { Writer(path, fd, seed); }, run, &applied)) << "round " << round;
    for (const Applied& a : applied) reported[a.gateway] = std::max(reported[a.gateway], a.last_lsn);
    {
      Db db;
      ASSERT_OK(db.Open(path, SQLITE_OPEN_READWRITE));
      std::string result;
      ASSERT_OK(db.QueryText("PRAGMA integrity_check", &result));
      ASSERT_EQ(result, "ok") << "round " << round;
      int64_t merged = 0;
      ASSERT_OK(db.QueryInt("SELECT count(*) FROM region_chunks WHERE origin = 0", &merged));
      merged_rows_seen = std::max(merged_rows_seen, merged);
    }
    std::unique_ptr<SqliteHubStore> hub;
    Status st = OpenSqliteHubStore(Opts(path), &hub);
    ASSERT_OK(st) << "round " << round << ": " << st.ToString();
    std::map<std::string, int> gateway_of;
    std::map<int, uint64_t> high_water;
    for (int k = 0; k < kGateways; ++k) {
      gateway_of[Gateway(k).ToString()] = k;
      ASSERT_OK(GetHighWater(hub.get(), Gateway(k), &high_water[k]));
      ASSERT_GE(high_water[k], reported[k]) << "gateway " << k << " lost applied entries, round " << round;
    }
    // The whole feed, in pages of an odd size (they end inside merged rows).
    std::map<int, uint64_t> last_lsn;
    uint64_t after = 0, head = 0;
    bool reset = false;
    std::vector<RegionFeedEntry> page;
    for (;;) {
      ASSERT_OK(ReadRegionFeed(hub.get(), after, 997, &page, &head, &reset)) << "round " << round;
      ASSERT_FALSE(reset);
      if (page.empty()) break;
      for (const RegionFeedEntry& e : page) {
        ASSERT_EQ(e.seq, after + 1) << "a hole or a repeat in the feed, round " << round;
        after = e.seq;
        auto g = gateway_of.find(e.remote.origin.ToString());
        ASSERT_NE(g, gateway_of.end()) << "round " << round;
        const int k = g->second;
        // Each gateway's entries in its LSN order, one after the other:
        // any repeat or loss breaks the chain.
        ASSERT_EQ(e.remote.origin_lsn, last_lsn[k] + 1) << "gateway " << k << ", sequence " << e.seq << ", round "
                                                         << round;
        last_lsn[k] = e.remote.origin_lsn;
        ASSERT_EQ(e.remote.entry.reading.value, k * 1e9 + static_cast<double>(e.remote.origin_lsn));
      }
    }
    EXPECT_EQ(after, head) << "round " << round;
    for (int k = 0; k < kGateways; ++k) {
      ASSERT_EQ(last_lsn[k], high_water[k]) << "gateway " << k << ", round " << round;
    }
  }
  uint64_t total = 0;
  for (const auto& [k, lsn] : reported) total += lsn;
  EXPECT_GT(total, 5000u);
  EXPECT_GT(merged_rows_seen, 0) << "the writer never merged: the test proves nothing";
}

}  // namespace
}  // namespace edgesync::test

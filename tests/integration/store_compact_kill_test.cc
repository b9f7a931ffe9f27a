// Compaction under SIGKILL, for real: a forked writer appends batches whose
// readings carry their own LSN as value, acknowledges all but the newest few
// hundred and compacts span after span (compact_after_ms 0, small spans), so
// kills land inside chunk inserts, compaction's reads and its swap
// transaction alike. After every kill the store is reopened and the whole log
// checked: every reported-committed LSN there, each exactly once, with its
// own value; queries agree with the log.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <map>
#include <random>

#include "store/sqlite_util.h"
#include "store/store.h"
#include "tests/support/kill_writer.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

StoreOptions Opts(const std::string& path) {
  StoreOptions o;
  o.path = path;
  o.gateway_id = "compact-gw";
  o.compact_after_ms = 0;
  o.compact_span_readings = 1500;
  o.compact_only_smaller = false;  // small spans: compacted whatever their size
  return o;
}

[[noreturn]] void Writer(const std::string& path, int fd, unsigned seed) {
  std::unique_ptr<Store> store;
  if (!Store::Open(Opts(path), &store).ok()) _exit(2);
  std::mt19937 rng(seed);
  for (;;) {
    const uint64_t next = store->LastLsn() + 1;
    const int n = 1 + static_cast<int>(rng() % 400);
    std::vector<Reading> batch;
    for (int k = 0; k < n; ++k) {
      Reading r;
      r.device_id = "dev" + std::to_string(rng() % 13);
      r.metric = "m" + std::to_string(rng() % 2);
      r.ts_ms = static_cast<int64_t>(next + k) * 100;
      r.value = static_cast<double>(next + k);
      batch.push_back(r);
    }
    AppendResult res;
    if (!store->AppendReadings(batch, &res).ok()) _exit(3);
    if (::write(fd, &res.last_lsn, sizeof(res.last_lsn)) != sizeof(res.last_lsn)) _exit(4);
    if (res.last_lsn > 300 && !store->AckUpstream("eu", res.last_lsn - 300).ok()) _exit(5);
    CompactResult c;
    if (!store->CompactStep(&c).ok()) _exit(6);
  }
}

TEST(StoreCompactKillTest, SigkillDuringCompactionLosesAndDuplicatesNothing) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  std::mt19937 rng(4242);
  uint64_t reported_max = 0;
  int64_t blocks_seen = 0;
  for (int round = 0; round < 30; ++round) {
    const KillRound run{true, static_cast<int64_t>(rng() % 80) + 5};  // running (and the store there) first
    const auto seed = static_cast<unsigned>(round * 104729 + 7);
    std::vector<uint64_t> reported;
    ASSERT_TRUE(RunAndKill<uint64_t>([&](int fd) { Writer(path, fd, seed); }, run, &reported)) << "round " << round;
    for (uint64_t lsn : reported) reported_max = std::max(reported_max, lsn);
    {
      Db db;
      ASSERT_OK(db.Open(path, SQLITE_OPEN_READWRITE));
      std::string result;
      ASSERT_OK(db.QueryText("PRAGMA integrity_check", &result));
      ASSERT_EQ(result, "ok") << "round " << round;
      ASSERT_OK(db.QueryInt("SELECT count(*) FROM series_chunks", &blocks_seen));
    }
    std::unique_ptr<Store> store;
    Status st = Store::Open(Opts(path), &store);
    ASSERT_OK(st) << "round " << round << ": " << st.ToString();
    ASSERT_GE(store->LastLsn(), reported_max) << "round " << round;
    std::vector<ChangeEntry> all, page;
    uint64_t after = 0;
    for (;;) {
      ASSERT_OK(store->ReadLog(after, 20000, &page)) << "round " << round;
      if (page.empty()) break;
      after = page.back().lsn;
      all.insert(all.end(), page.begin(), page.end());
    }
    ASSERT_EQ(all.size(), store->LastLsn()) << "round " << round;
    std::map<std::pair<std::string, std::string>, size_t> per_series;
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_EQ(all[i].lsn, i + 1) << "gap or duplicate at index " << i << ", round " << round;
      ASSERT_EQ(all[i].reading.value, static_cast<double>(i + 1)) << "round " << round;
      ++per_series[{all[i].reading.device_id, all[i].reading.metric}];
    }
    if (round % 8 == 7) {  // queries read compacted blocks and chunks: the same readings
      for (const auto& [key, count] : per_series) {
        QueryRequest q;
        q.device_id = key.first;
        q.metric = key.second;
        q.from_ms = 0;
        q.to_ms = INT64_MAX;
        q.limit = QueryRequest::kMaxRows;
        std::vector<QueryRow> rows;
        ASSERT_OK(store->Query(q, &rows));
        ASSERT_EQ(rows.size(), count) << key.first << "/" << key.second << ", round " << round;
        for (const QueryRow& r : rows) ASSERT_EQ(r.reading.value, static_cast<double>(r.lsn));
      }
    }
  }
  EXPECT_GT(reported_max, 3000u);
  EXPECT_GT(blocks_seen, 0) << "the writer never compacted: the test proves nothing";
}

}  // namespace
}  // namespace edgesync::test

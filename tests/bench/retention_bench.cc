// bench_retention: what the store costs an SD card (readings in compressed
// chunks, store/schema.h), and what retention does about it. Each figure
// against raw SQLite rows (series, ts, value; WAL, synchronous=NORMAL, the
// same commit sizes) in the same run.
//   1. bytes on disk per retained reading, reference workload (1000 devices x
//      8 metrics at 1 Hz, tests/support/workload.h), after a checkpoint;
//   2. bytes written to storage per reading (/proc/self/io write_bytes: WAL
//      and checkpoints; not the intake journal, see bench_ingest and
//      bench_storage), with group commits the size ingest makes them at
//      8,000 readings/s (above the busy rate: batch_max, 2,000 readings
//      per commit, agent/ingest/commit_pacer.h) and at 100 readings/s (1 per
//      commit, as fixed 10 ms groups made them, or 100 per commit, the Pi
//      config's groups);
//   2b. the same store compacted (everything acknowledged, default span):
//      pages in use per reading before and after (a store's free pages are
//      reused before its file grows, so in use is what it holds at steady
//      state) and bytes written per reading with compaction's own writes;
//   3. from those: days of backlog per GB of free space and GB written per
//      day, at 8,000 and at 100 readings/s;
//   4. steady state under a size limit: a store at max_bytes with retention
//      (store/retention.h) pruning acknowledged readings while ingest goes on:
//      its file size against max_bytes (free pages reused), and the longest
//      prune step (the write lock held) against one ingest commit.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/clock.h"
#include "store/retention.h"
#include "store/store.h"
#include "tests/bench/report.h"
#include "tests/support/process.h"
#include "tests/support/workload.h"

namespace edgesync {
namespace {

int64_t WriteBytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  int64_t v = 0;
  while (in >> key >> v) {
    if (key == "write_bytes:") return v;
  }
  return 0;
}

struct Cost {
  double disk_per_reading = 0;
  double written_per_reading = 0;
  // The store only (StoreCost): pages in use per reading before and after
  // compacting everything acknowledged, and what compaction wrote.
  double in_use_per_reading = 0;
  double compacted_in_use_per_reading = 0;
  double compaction_written_per_reading = 0;
};

void Die(const std::string& what) {
  std::fprintf(stderr, "bench_retention: %s\n", what.c_str());
  std::exit(1);
}

// n readings of the reference workload through Store::AppendReadings, commit
// readings per commit.
Cost StoreCost(const std::string& dir, size_t n, size_t commit) {
  StoreOptions o;
  o.path = dir + "/store.db";
  o.gateway_id = "gw-bench";
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) Die(st.ToString());
  test::SensorWorkload w(1000, 1780000000000);
  std::vector<Reading> all = w.Take(n);
  ::sync();
  int64_t before = WriteBytes();
  for (size_t at = 0; at < n; at += commit) {
    std::vector<Reading> batch(all.begin() + at, all.begin() + std::min(n, at + commit));
    AppendResult r;
    st = store->AppendReadings(batch, &r);
    if (!st.ok()) Die(st.ToString());
  }
  store.reset();  // closing checkpoints the WAL into the file
  ::sync();
  Cost c;
  c.written_per_reading = static_cast<double>(WriteBytes() - before) / n;
  c.disk_per_reading = static_cast<double>(bench::StoreFileBytes(o.path)) / n;
  c.in_use_per_reading = static_cast<double>(bench::PagesInUse(o.path)) / n;
  // Everything acknowledged and old enough: compaction as the retention
  // worker runs it, span by span (default span size).
  o.compact_after_ms = 0;
  st = Store::Open(o, &store);
  if (!st.ok()) Die(st.ToString());
  st = store->AckUpstream("eu", store->LastLsn());
  if (!st.ok()) Die(st.ToString());
  ::sync();
  before = WriteBytes();
  for (;;) {
    CompactResult step;
    st = store->CompactStep(&step);
    if (!st.ok()) Die("compaction: " + st.ToString());
    if (step.spans == 0) break;
  }
  store.reset();
  ::sync();
  c.compaction_written_per_reading = static_cast<double>(WriteBytes() - before) / n;
  c.compacted_in_use_per_reading = static_cast<double>(bench::PagesInUse(o.path)) / n;
  return c;
}

void Check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) Die(std::string(what) + ": " + sqlite3_errmsg(db));
}

// The same readings as raw rows: series id, timestamp, value.
Cost RawCost(const std::string& dir, size_t n, size_t commit) {
  std::string path = dir + "/raw.db";
  sqlite3* db = nullptr;
  Check(sqlite3_open(path.c_str(), &db), db, "open");
  Check(sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE r(series INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL NOT NULL)",
                     nullptr, nullptr, nullptr),
        db, "schema");
  test::SensorWorkload w(1000, 1780000000000);
  std::vector<Reading> all = w.Take(n);
  std::unordered_map<std::string, int64_t> ids;
  sqlite3_stmt* ins = nullptr;
  Check(sqlite3_prepare_v2(db, "INSERT INTO r VALUES(?, ?, ?)", -1, &ins, nullptr), db, "prepare");
  ::sync();
  int64_t before = WriteBytes();
  for (size_t at = 0; at < n; at += commit) {
    Check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db, "begin");
    for (size_t i = at; i < std::min(n, at + commit); ++i) {
      const Reading& r = all[i];
      auto it = ids.try_emplace(r.device_id + "/" + r.metric, static_cast<int64_t>(ids.size()) + 1).first;
      sqlite3_bind_int64(ins, 1, it->second);
      sqlite3_bind_int64(ins, 2, r.ts_ms);
      sqlite3_bind_double(ins, 3, r.value);
      Check(sqlite3_step(ins), db, "insert");
      sqlite3_reset(ins);
    }
    Check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
  }
  sqlite3_finalize(ins);
  sqlite3_close(db);
  ::sync();
  Cost c;
  c.written_per_reading = static_cast<double>(WriteBytes() - before) / n;
  c.disk_per_reading = static_cast<double>(bench::StoreFileBytes(path)) / n;
  return c;
}

// A store under max_bytes at steady ingest, acknowledged 5,000 readings
// behind, with retention passes between commits: returns the file's largest
// size and the longest prune step; *commit_ms the longest ingest commit.
void SteadyState(const std::string& dir, int64_t max_bytes, size_t n, int64_t* file_max, int64_t* step_ms,
                 double* commit_ms) {
  StoreOptions o;
  o.path = dir + "/steady.db";
  o.gateway_id = "gw-bench";
  o.max_bytes = max_bytes;
  o.min_free_bytes = 0;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) Die(st.ToString());
  RetentionOptions ro;  // the defaults: step_rows as shipped
  ro.pause_ms = 0;
  Retention retention(store.get(), ro);
  test::SensorWorkload w(1000, 1780000000000);
  *file_max = 0;
  *commit_ms = 0;
  for (size_t at = 0; at < n; at += 1000) {
    auto t0 = std::chrono::steady_clock::now();
    AppendResult r;
    st = store->AppendReadings(w.Take(1000), &r);
    if (!st.ok()) Die("steady state: " + st.ToString());
    *commit_ms = std::max(*commit_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (r.last_lsn > 5000) store->AckUpstream("eu", r.last_lsn - 5000);
    if ((at / 1000) % 10 == 9) {
      PruneResult p;
      st = retention.RunPass(&p);
      if (!st.ok()) Die("retention: " + st.ToString());
    }
    *file_max = std::max(*file_max, bench::FileBytes(o.path));
  }
  *step_ms = retention.stats().longest_step_ms;
}

}  // namespace
}  // namespace edgesync

int main() {
  using namespace edgesync;
  bench::Report report("retention");
  test::TempDir tmp;
  struct Rate {
    const char* name;
    double per_s;
    size_t commit;
    size_t n;
  };
  // Group commit (agent/ingest/commit_pacer.h): above the busy rate
  // batch_max readings a commit; at 100 readings/s one reading a commit (as
  // fixed 10 ms groups made them) and 100 (the Pi config's one-second
  // groups, synced commits). The
  // 8,000 series (strings and their index, ~0.5 MB) are part of every
  // figure: 200,000 readings keep them to a few bytes a reading.
  // Counts are whole spans of compaction (131,072 readings, its default):
  // a span is cut only once full.
  const Rate rates[] = {{"8000_per_s", 8000, 2000, 393216},
                        {"100_per_s", 100, 1, 262144},
                        {"100_per_s_batch_delay_1s", 100, 100, 262144}};
  for (const Rate& rate : rates) {
    test::TempDir a, b;
    Cost store = StoreCost(a.path(), rate.n, rate.commit);
    Cost raw = RawCost(b.path(), rate.n, rate.commit);
    std::string suffix = std::string("_") + rate.name;
    report.Add("disk_bytes_per_retained_reading" + suffix, store.disk_per_reading, "B/reading",
               "raw_sqlite_rows_disk_bytes_per_reading", raw.disk_per_reading);
    report.Add("storage_bytes_written_per_reading" + suffix, store.written_per_reading, "B/reading",
               "raw_sqlite_rows_written_per_reading", raw.written_per_reading);
    report.Add("pages_in_use_bytes_per_reading_after_compaction" + suffix, store.compacted_in_use_per_reading,
               "B/reading", "pages_in_use_bytes_per_reading_commit_chunks", store.in_use_per_reading);
    report.Add("storage_bytes_written_per_reading_with_compaction" + suffix,
               store.written_per_reading + store.compaction_written_per_reading, "B/reading",
               "storage_bytes_written_per_reading_without", store.written_per_reading);
    const double day = 86400.0 * rate.per_s;
    report.Add("backlog_days_per_gb" + suffix, 1e9 / (store.disk_per_reading * day), "days",
               "raw_sqlite_rows_days_per_gb", 1e9 / (raw.disk_per_reading * day));
    report.Add("storage_gb_written_per_day" + suffix, store.written_per_reading * day / 1e9, "GB/day",
               "raw_sqlite_rows_gb_written_per_day", raw.written_per_reading * day / 1e9);
  }
  int64_t file_max = 0, step_ms = 0;
  double commit_ms = 0;
  const int64_t limit = int64_t{16} << 20;
  SteadyState(tmp.path(), limit, 1500000, &file_max, &step_ms, &commit_ms);
  report.Add("steady_state_file_bytes_under_max_bytes", static_cast<double>(file_max), "bytes", "store.max_bytes",
             static_cast<double>(limit));
  report.Add("retention_longest_prune_step", static_cast<double>(step_ms), "ms", "longest_ingest_commit_1000",
             commit_ms);
  return report.Write() ? 0 : 1;
}

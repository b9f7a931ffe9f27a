// bench_store: committed readings per second through Store::AppendReadings
// (1000 per batch) against raw SQLite prepared inserts of the same rows into
// a table of the same shape (same columns, same index, WAL, same synchronous
// setting, 1000 per transaction), in the same run; and bytes written to
// storage per reading (/proc/self/io write_bytes, WAL and checkpoints
// included) against the raw baseline's; and the uplink's read rate through
// ReadLog against a raw SELECT of the same rows.
//
// Data: 200,000 readings, 1000 devices x 8 metrics, in arrival order (one
// round of every device's metrics per timestamp), as a gateway ingests them.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "platform/files.h"
#include "store/store.h"
#include "tests/bench/report.h"

namespace edgesync {
namespace {

constexpr int kDevices = 1000;
constexpr int kMetrics = 8;
constexpr int kReadings = 200000;
constexpr int kBatch = 1000;

const char* const kMetricNames[kMetrics] = {"temperature", "humidity", "pressure", "co2",
                                            "voltage",     "current",  "rssi",     "battery"};

struct Data {
  std::vector<Reading> readings;
  std::vector<int64_t> series;  // the raw baseline's interned ids
};

Data MakeData() {
  Data d;
  d.readings.reserve(kReadings);
  int64_t t0 = 1'800'000'000'000;
  for (int i = 0; i < kReadings; ++i) {
    int dev = (i / kMetrics) % kDevices;
    int metric = i % kMetrics;
    int64_t round = i / (kDevices * kMetrics);
    Reading r;
    r.device_id = "sensor-" + std::to_string(100000 + dev);
    r.metric = kMetricNames[metric];
    r.unit = metric == 0 ? "C" : metric == 1 ? "%" : "";
    r.ts_ms = t0 + round * 10000 + dev;
    r.value = 20.0 + (i % 1000) * 0.01;
    d.readings.push_back(r);
    d.series.push_back(1 + dev * kMetrics + metric);
  }
  return d;
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void RemoveDb(const std::string& path) {
  for (const char* s : {"", "-wal", "-shm"}) ::unlink((path + s).c_str());
}

struct Run {
  double rate = 0;
  double bytes_per_reading = 0;
};

void Check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "raw sqlite %s: %s\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

Run RawRun(const std::string& path, const Data& d, bool full) {
  RemoveDb(path);
  uint64_t w0 = ReadProcessStats().write_bytes;
  sqlite3* db = nullptr;
  Check(sqlite3_open(path.c_str(), &db), db, "open");
  Check(sqlite3_exec(db, full ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL"
                              : "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
                     nullptr, nullptr, nullptr),
        db, "pragma");
  Check(sqlite3_exec(db,
                     "CREATE TABLE log(lsn INTEGER PRIMARY KEY, kind INTEGER NOT NULL, series INTEGER NOT NULL,"
                     " ts INTEGER NOT NULL, value REAL NOT NULL, quality INTEGER NOT NULL);"
                     "CREATE INDEX log_query ON log(lsn >> 11, series, ts);",
                     nullptr, nullptr, nullptr),
        db, "schema");
  sqlite3_stmt* ins = nullptr;
  Check(sqlite3_prepare_v2(db, "INSERT INTO log VALUES(?, 0, ?, ?, ?, ?)", -1, &ins, nullptr), db, "prepare");
  double t = Seconds();
  for (int b = 0; b < kReadings; b += kBatch) {
    Check(sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr), db, "begin");
    for (int i = b; i < b + kBatch; ++i) {
      const Reading& r = d.readings[static_cast<size_t>(i)];
      sqlite3_bind_int64(ins, 1, i + 1);
      sqlite3_bind_int64(ins, 2, d.series[static_cast<size_t>(i)]);
      sqlite3_bind_int64(ins, 3, r.ts_ms);
      sqlite3_bind_double(ins, 4, r.value);
      sqlite3_bind_int64(ins, 5, r.quality);
      Check(sqlite3_step(ins), db, "insert");
      sqlite3_reset(ins);
    }
    Check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db, "commit");
  }
  double elapsed = Seconds() - t;
  sqlite3_finalize(ins);
  sqlite3_close(db);  // checkpoints the WAL into the file
  ::sync();
  uint64_t w1 = ReadProcessStats().write_bytes;
  return Run{kReadings / elapsed, static_cast<double>(w1 - w0) / kReadings};
}

Run StoreRun(const std::string& path, const Data& d, bool full) {
  RemoveDb(path);
  uint64_t w0 = ReadProcessStats().write_bytes;
  StoreOptions o;
  o.path = path;
  o.gateway_id = "bench-gw";
  o.sync = full ? StoreOptions::Sync::kFull : StoreOptions::Sync::kNormal;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) {
    std::fprintf(stderr, "store open: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  std::vector<std::vector<Reading>> batches;
  for (int b = 0; b < kReadings; b += kBatch) {
    batches.emplace_back(d.readings.begin() + b, d.readings.begin() + b + kBatch);
  }
  double t = Seconds();
  for (const auto& batch : batches) {
    AppendResult r;
    st = store->AppendReadings(batch, &r);
    if (!st.ok()) {
      std::fprintf(stderr, "append: %s\n", st.ToString().c_str());
      std::exit(1);
    }
  }
  double elapsed = Seconds() - t;
  store.reset();
  ::sync();
  uint64_t w1 = ReadProcessStats().write_bytes;
  return Run{kReadings / elapsed, static_cast<double>(w1 - w0) / kReadings};
}

// Uplink read path: the whole log in pages of 5000 through Store::ReadLog,
// against a raw SELECT of the same rows in LSN order turned into the same
// ChangeEntry values (series strings from an in-memory table).
double StoreReadRate(const std::string& path) {
  StoreOptions o;
  o.path = path;
  o.open_check = StoreOptions::OpenCheck::kNone;
  std::unique_ptr<Store> store;
  if (!Store::Open(o, &store).ok()) std::exit(1);
  double t = Seconds();
  uint64_t after = 0;
  size_t n = 0;
  for (;;) {
    std::vector<ChangeEntry> page;
    if (!store->ReadLog(after, 5000, &page).ok()) std::exit(1);
    if (page.empty()) break;
    after = page.back().lsn;
    n += page.size();
  }
  double elapsed = Seconds() - t;
  if (n != kReadings) std::exit(1);
  return n / elapsed;
}

double RawReadRate(const std::string& path, const Data& d) {
  sqlite3* db = nullptr;
  Check(sqlite3_open(path.c_str(), &db), db, "open");
  std::vector<const Reading*> by_series(kDevices * kMetrics + 1);
  for (size_t i = 0; i < d.readings.size(); ++i) by_series[static_cast<size_t>(d.series[i])] = &d.readings[i];
  sqlite3_stmt* sel = nullptr;
  Check(sqlite3_prepare_v2(db, "SELECT lsn, kind, series, ts, value, quality FROM log WHERE lsn > ? ORDER BY lsn LIMIT 5000",
                           -1, &sel, nullptr),
        db, "prepare");
  double t = Seconds();
  int64_t after = 0;
  size_t n = 0;
  for (;;) {
    std::vector<ChangeEntry> page;
    sqlite3_bind_int64(sel, 1, after);
    while (sqlite3_step(sel) == SQLITE_ROW) {
      ChangeEntry e;
      e.lsn = static_cast<uint64_t>(sqlite3_column_int64(sel, 0));
      const Reading* s = by_series[static_cast<size_t>(sqlite3_column_int64(sel, 2))];
      e.reading.device_id = s->device_id;
      e.reading.metric = s->metric;
      e.reading.unit = s->unit;
      e.reading.ts_ms = sqlite3_column_int64(sel, 3);
      e.reading.value = sqlite3_column_double(sel, 4);
      e.reading.quality = static_cast<uint32_t>(sqlite3_column_int64(sel, 5));
      page.push_back(std::move(e));
    }
    sqlite3_reset(sel);
    if (page.empty()) break;
    after = static_cast<int64_t>(page.back().lsn);
    n += page.size();
  }
  double elapsed = Seconds() - t;
  sqlite3_finalize(sel);
  sqlite3_close(db);
  if (n != kReadings) std::exit(1);
  return n / elapsed;
}

}  // namespace
}  // namespace edgesync

int main() {
  using namespace edgesync;
  const char* env = std::getenv("EDGESYNC_BENCH_DIR");
  std::string dir = std::string(env ? env : "build/bench") + "/store-work";
  if (!MakeDirs(dir).ok()) {
    std::fprintf(stderr, "cannot create %s\n", dir.c_str());
    return 1;
  }
  Data d = MakeData();
  bench::Report report("store");
  for (bool full : {false, true}) {
    const char* mode = full ? "full" : "normal";
    std::vector<double> raw_rate, store_rate, raw_bytes, store_bytes, raw_read, store_read;
    for (int rep = 0; rep < 3; ++rep) {  // interleaved so drift hits both alike
      Run raw = RawRun(dir + "/raw.db", d, full);
      Run mine = StoreRun(dir + "/store.db", d, full);
      raw_rate.push_back(raw.rate);
      store_rate.push_back(mine.rate);
      raw_bytes.push_back(raw.bytes_per_reading);
      store_bytes.push_back(mine.bytes_per_reading);
      if (!full) {
        raw_read.push_back(RawReadRate(dir + "/raw.db", d));
        store_read.push_back(StoreReadRate(dir + "/store.db"));
      }
    }
    report.Add(std::string("store_append_readings_per_s_sync_") + mode, bench::Median(store_rate), "readings/s",
               std::string("raw_sqlite_insert_per_s_sync_") + mode, bench::Median(raw_rate));
    report.Add(std::string("store_disk_bytes_per_reading_sync_") + mode, bench::Median(store_bytes), "bytes",
               std::string("raw_sqlite_disk_bytes_per_reading_sync_") + mode, bench::Median(raw_bytes));
    if (!full) {
      report.Add("store_readlog_entries_per_s", bench::Median(store_read), "entries/s",
                 "raw_sqlite_select_entries_per_s", bench::Median(raw_read));
    }
  }
  RemoveDb(dir + "/raw.db");
  RemoveDb(dir + "/store.db");
  ::rmdir(dir.c_str());
  return report.Write() ? 0 : 1;
}

// bench_remote_storage: what other gateways' readings cost on disk, on a
// SQLite region hub (what it applies and serves as its feed) and in a
// gateway's read view (what it pulls from the feed), against the layout of
// schema version 4 (a row per entry with UNIQUE(origin, olsn), a query
// index, and a feed row per entry) built in the same run from the same
// entries.
//
// The reference workload (tests/support/workload.h: 1000 devices x 8
// metrics at 1 Hz) of one gateway for 60 s (480,000 readings):
//   - hub: applied through the hub store (store/hub_store.h) as the uplink
//     sends it at that rate, batches of 1,600 readings (8,000 readings/s
//     over its 200 ms batch delay); bytes on disk per reading (store file
//     after a clean close, the WAL checkpointed into it) and batches
//     applied/s;
//   - read view: the hub's feed read back in the feed puller's pages (5,000
//     entries) and applied to a gateway store's read view; bytes on disk per
//     reading.
//   - fleet shape: 10,000 origins sending batches of 20 readings (the
//     shape of bench_region's simulated fleet), 3 rounds: batches applied/s
//     through the hub store, and bytes on disk per reading.
//   - feed compaction: both hub workloads again with the region feed
//     compacted (store/region_feed_compactor.h) every 2,000 batches and at
//     the end, as the hub's retention pass does: bytes on disk per reading
//     against the same batches without it, and the compaction passes' time
//     per reading against the time applying the same batches.
//   - PostgreSQL hub (where the backend is built): the fleet shape applied
//     through the PostgreSQL hub store (schema 4: a compressed chunk row per
//     batch) in groups of 64 batches, as a busy hub applies them, against the
//     same entries in schema 3's layout (a row per entry with three unique
//     indexes), COPYed in as schema 3 wrote them, on the same server: bytes
//     of the feed's tables (pg_total_relation_size) per reading.
// Store-level (no broker): the bytes a layout keeps do not depend on how the
// batches arrived. bench_region measures the hub process over MQTT.
// EDGESYNC_BENCH_QUICK=1 shortens it (a smoke run, not a figure).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/schema.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "tests/bench/report.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/process.h"
#include "tests/support/workload.h"
#ifdef EDGESYNC_HAVE_POSTGRESQL
#include "store/pg/pg_conn.h"
#include "tests/support/postgres.h"
#endif

namespace edgesync {
namespace {

using Steady = std::chrono::steady_clock;

constexpr size_t kBatch = 1600;
constexpr size_t kPage = 5000;
const Origin kOrigin{"gw-ref", "0123456789abcdef0123456789abcdef"};

std::vector<ChangeEntry> Entries(int64_t n) {
  test::SensorWorkload w(1000, 1780000000000);
  std::vector<ChangeEntry> out;
  out.reserve(static_cast<size_t>(n));
  for (const Reading& r : w.Take(static_cast<size_t>(n))) {
    ChangeEntry e;
    e.lsn = out.size() + 1;
    e.reading = r;
    out.push_back(std::move(e));
  }
  return out;
}

bool Check(const Status& st, const char* what) {
  if (!st.ok()) std::fprintf(stderr, "bench_remote_storage: %s: %s\n", what, st.ToString().c_str());
  return st.ok();
}

struct Figures {
  double hub_bytes = -1, hub_batches_s = -1, view_bytes = -1;
  double fleet_batches_s = -1, fleet_bytes = -1;
};

// The same hub workloads with the region feed compacted
// (store/region_feed_compactor.h), as the hub's retention pass does.
struct CompactedFigures {
  double hub_bytes = -1;
  double fleet_bytes = -1, fleet_in_use = -1;
  // The fleet's: seconds applying batches and seconds in compaction passes.
  double apply_s = 0, compact_s = 0;
  int64_t merged_rows = 0;
};

constexpr int kFleetOrigins = 10000;
constexpr size_t kFleetBatch = 20;

Origin FleetOrigin(int i) {
  char epoch[33];
  std::snprintf(epoch, sizeof epoch, "%032x", i + 1);
  return Origin{"gw-" + std::to_string(i), epoch};
}

// Round r of origin i: its readings r*20+1 .. (r+1)*20, taken in turn from
// the reference workload.
std::vector<ChangeEntry> FleetBatch(const std::vector<ChangeEntry>& all, int i, int round) {
  std::vector<ChangeEntry> b;
  for (size_t k = 0; k < kFleetBatch; ++k) {
    ChangeEntry e = all[(static_cast<size_t>(i) * kFleetBatch + k) % all.size()];
    e.lsn = static_cast<uint64_t>(round) * kFleetBatch + k + 1;
    b.push_back(std::move(e));
  }
  return b;
}

int FleetRounds() { return bench::Quick() ? 1 : 3; }

// The current layout: through the Store and the hub store.
Figures Chunked(const std::string& dir, const std::vector<ChangeEntry>& all) {
  Figures f;
  StoreOptions o;
  o.gateway_id = "hub";
  o.path = dir + "/hub.db";
  o.open_check = StoreOptions::OpenCheck::kNone;
  std::unique_ptr<SqliteHubStore> hub;
  if (!Check(OpenSqliteHubStore(o, &hub), "open hub")) return f;
  HubStore* hs = hub.get();
  auto t0 = Steady::now();
  size_t batches = 0;
  for (size_t i = 0; i < all.size(); i += kBatch, ++batches) {
    std::vector<ChangeEntry> b(all.begin() + static_cast<ptrdiff_t>(i),
                               all.begin() + static_cast<ptrdiff_t>(std::min(all.size(), i + kBatch)));
    ApplyResult r;
    if (!Check(hs->Apply(OriginBatch{kOrigin, 0, 0, &b, 0}, &r), "apply") || r.outcome != ApplyOutcome::kApplied) return f;
  }
  f.hub_batches_s = static_cast<double>(batches) / std::chrono::duration<double>(Steady::now() - t0).count();
  // The gateway's read view pulls the feed in pages.
  StoreOptions g = o;
  g.gateway_id = "gw-view";
  g.path = dir + "/view.db";
  std::unique_ptr<Store> view;
  if (!Check(Store::Open(g, &view), "open view")) return f;
  uint64_t after = 0, head = 0;
  bool reset = false;
  std::vector<RegionFeedEntry> page;
  int64_t held = 0;
  do {
    if (!Check(test::ReadRegionFeed(hub.get(), after, kPage, &page, &head, &reset), "feed")) return f;
    std::vector<RemoteEntry> entries;
    for (RegionFeedEntry& e : page) entries.push_back(std::move(e.remote));
    int64_t applied = 0;
    if (!entries.empty() && !Check(view->ApplyRemote(entries, &applied), "apply remote")) return f;
    held += applied;
    if (!page.empty()) after = page.back().seq;
  } while (!page.empty());
  hub.reset();
  view.reset();
  if (held != static_cast<int64_t>(all.size())) return f;
  f.hub_bytes = static_cast<double>(bench::StoreFileBytes(o.path)) / static_cast<double>(all.size());
  f.view_bytes = static_cast<double>(bench::StoreFileBytes(g.path)) / static_cast<double>(all.size());
  // The fleet's shape.
  StoreOptions fo = o;
  fo.path = dir + "/fleet.db";
  std::unique_ptr<SqliteHubStore> fleet;
  if (!Check(OpenSqliteHubStore(fo, &fleet), "open fleet hub")) return f;
  HubStore* fs = fleet.get();
  t0 = Steady::now();
  for (int round = 0; round < FleetRounds(); ++round) {
    for (int i = 0; i < kFleetOrigins; ++i) {
      std::vector<ChangeEntry> b = FleetBatch(all, i, round);
      ApplyResult r;
      if (!Check(fs->Apply(OriginBatch{FleetOrigin(i), 0, 0, &b, 0}, &r), "fleet apply") ||
          r.outcome != ApplyOutcome::kApplied) {
        return f;
      }
    }
  }
  const double fleet_batches = static_cast<double>(kFleetOrigins) * FleetRounds();
  f.fleet_batches_s = fleet_batches / std::chrono::duration<double>(Steady::now() - t0).count();
  fleet.reset();
  f.fleet_bytes = static_cast<double>(bench::StoreFileBytes(fo.path)) / (fleet_batches * kFleetBatch);
  return f;
}

// Batches in the hub's retention interval at the fleet's rate: how many the
// hub applies between two compaction passes.
constexpr int kBatchesPerPass = 2000;

// Compaction steps until none is due; false on an error.
bool CompactPass(HubStore* hs, int64_t* merged_rows) {
  for (;;) {
    CompactResult c;
    if (!Check(hs->CompactFeedStep(&c), "feed compaction")) return false;
    *merged_rows += c.spans;
    if (!c.more) return true;
  }
}

// The hub workloads again, each into a store of its own whose feed is
// compacted (compact_after_ms 0: every applied row is old enough) after
// every kBatchesPerPass batches and at the end, so merged rows reuse the
// pages the rows they replaced freed, as on a hub that runs.
CompactedFigures Compacted(const std::string& dir, const std::vector<ChangeEntry>& all) {
  CompactedFigures f;
  StoreOptions o;
  o.gateway_id = "hub";
  o.open_check = StoreOptions::OpenCheck::kNone;
  o.compact_after_ms = 0;
  {
    o.path = dir + "/hub-compacted.db";
    std::unique_ptr<SqliteHubStore> hub;
    if (!Check(OpenSqliteHubStore(o, &hub), "open hub")) return f;
    HubStore* hs = hub.get();
    int batches = 0;
    for (size_t i = 0; i < all.size(); i += kBatch) {
      std::vector<ChangeEntry> b(all.begin() + static_cast<ptrdiff_t>(i),
                                 all.begin() + static_cast<ptrdiff_t>(std::min(all.size(), i + kBatch)));
      ApplyResult r;
      if (!Check(hs->Apply(OriginBatch{kOrigin, 0, 0, &b, 0}, &r), "apply") || r.outcome != ApplyOutcome::kApplied) {
        return f;
      }
      if (++batches % kBatchesPerPass == 0 && !CompactPass(hs, &f.merged_rows)) return f;
    }
    if (!CompactPass(hs, &f.merged_rows)) return f;
  }
  f.hub_bytes = static_cast<double>(bench::StoreFileBytes(o.path)) / static_cast<double>(all.size());
  o.path = dir + "/fleet-compacted.db";
  {
    std::unique_ptr<SqliteHubStore> fleet;
    if (!Check(OpenSqliteHubStore(o, &fleet), "open fleet hub")) return f;
    HubStore* fs = fleet.get();
    int batches = 0;
    auto pass = [&]() {
      auto t0 = Steady::now();
      const bool ok = CompactPass(fs, &f.merged_rows);
      f.compact_s += std::chrono::duration<double>(Steady::now() - t0).count();
      return ok;
    };
    for (int round = 0; round < FleetRounds(); ++round) {
      for (int i = 0; i < kFleetOrigins; ++i) {
        std::vector<ChangeEntry> b = FleetBatch(all, i, round);
        ApplyResult r;
        auto t0 = Steady::now();
        if (!Check(fs->Apply(OriginBatch{FleetOrigin(i), 0, 0, &b, 0}, &r), "fleet apply") ||
            r.outcome != ApplyOutcome::kApplied) {
          return f;
        }
        f.apply_s += std::chrono::duration<double>(Steady::now() - t0).count();
        if (++batches % kBatchesPerPass == 0 && !pass()) return f;
      }
    }
    if (!pass()) return f;
  }
  const double readings = static_cast<double>(kFleetOrigins) * FleetRounds() * kFleetBatch;
  f.fleet_bytes = static_cast<double>(bench::StoreFileBytes(o.path)) / readings;
  f.fleet_in_use = static_cast<double>(bench::PagesInUse(o.path)) / readings;
  return f;
}

// Schema version 4's layout, written the way version 4 wrote it: per batch
// one transaction, a remote row per entry (series interned), a feed row per
// entry (hub) and the high-water mark.
Figures RowPerEntry(const std::string& dir, const std::vector<ChangeEntry>& all) {
  Figures f;
  auto make = [&](const std::string& path, Db* db) {
    return db->Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE).ok() && db->Exec("PRAGMA page_size=1024").ok() &&
           db->Exec("PRAGMA journal_mode=WAL").ok() && db->Exec("PRAGMA synchronous=NORMAL").ok() &&
           db->Exec("BEGIN").ok() && CreateSchema(db, 4).ok() && db->Exec("COMMIT").ok();
  };
  // Each batch reads the origin's mark and writes it, as version 4 did.
  int64_t origin_id = 1;
  auto apply = [&](Db* db, const std::vector<ChangeEntry>& all, size_t from, size_t to, bool feed,
                   std::map<std::string, int64_t>* series) -> bool {
    Stmt ins, ser, fd, hw;
    Stmt mark;
    if (!ins.Prepare(db, "INSERT INTO remote(origin, olsn, kind, series, ts, value, quality, at) "
                         "VALUES(?6, ?1, 0, ?2, ?3, ?4, ?5, 1780000000000) ON CONFLICT DO NOTHING").ok() ||
        !mark.Prepare(db, "SELECT lsn FROM high_water WHERE origin = ?").ok() ||
        !ser.Prepare(db, "INSERT INTO series(device_id, metric, unit, hkey) VALUES(?, ?, ?, 0)").ok() ||
        !fd.Prepare(db, "INSERT INTO region_feed(rid) VALUES(?)").ok() ||
        !hw.Prepare(db, "INSERT OR REPLACE INTO high_water VALUES(?, ?)").ok() || !db->Exec("BEGIN").ok()) {
      return false;
    }
    if (!db->Exec("INSERT OR IGNORE INTO origins VALUES(" + std::to_string(origin_id) + ", 'gw', '" +
                  std::to_string(origin_id) + "')")
             .ok()) {
      return false;
    }
    if (feed) {
      mark.Bind(1, origin_id);
      Status st;
      mark.Step(&st);
      if (!st.ok()) return false;
    }
    for (size_t i = from; i < to; ++i) {
      const Reading& r = all[i].reading;
      const std::string key = r.device_id + "\x1f" + r.metric + "\x1f" + r.unit;
      auto it = series->find(key);
      if (it == series->end()) {
        ser.Bind(1, std::string_view(r.device_id));
        ser.Bind(2, std::string_view(r.metric));
        ser.Bind(3, std::string_view(r.unit));
        if (!ser.Run().ok()) return false;
        it = series->emplace(key, static_cast<int64_t>(sqlite3_last_insert_rowid(db->get()))).first;
      }
      ins.Bind(1, static_cast<int64_t>(all[i].lsn));
      ins.Bind(2, it->second);
      ins.Bind(3, r.ts_ms);
      ins.Bind(4, r.value);
      ins.Bind(5, static_cast<int64_t>(r.quality));
      ins.Bind(6, origin_id);
      if (!ins.Run().ok()) return false;
      if (feed) {
        fd.Bind(1, static_cast<int64_t>(sqlite3_last_insert_rowid(db->get())));
        if (!fd.Run().ok()) return false;
      }
    }
    if (feed) {
      hw.Bind(1, origin_id);
      hw.Bind(2, static_cast<int64_t>(all[to - 1].lsn));
      if (!hw.Run().ok()) return false;
    }
    return db->Exec("COMMIT").ok();
  };
  const std::string hub_path = dir + "/hub-v4.db", view_path = dir + "/view-v4.db";
  {
    Db hub, view;
    std::map<std::string, int64_t> hub_series, view_series;
    if (!make(hub_path, &hub) || !make(view_path, &view)) return f;
    auto t0 = Steady::now();
    size_t batches = 0;
    for (size_t i = 0; i < all.size(); i += kBatch, ++batches) {
      if (!apply(&hub, all, i, std::min(all.size(), i + kBatch), true, &hub_series)) return f;
    }
    f.hub_batches_s = static_cast<double>(batches) / std::chrono::duration<double>(Steady::now() - t0).count();
    for (size_t i = 0; i < all.size(); i += kPage) {
      if (!apply(&view, all, i, std::min(all.size(), i + kPage), false, &view_series)) return f;
    }
    if (!hub.Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok() || !view.Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok()) {
      return f;
    }
  }
  const double n = static_cast<double>(all.size());
  f.hub_bytes = static_cast<double>(bench::StoreFileBytes(hub_path)) / n;
  f.view_bytes = static_cast<double>(bench::StoreFileBytes(view_path)) / n;
  const std::string fleet_path = dir + "/fleet-v4.db";
  {
    Db fleet;
    std::map<std::string, int64_t> series;
    if (!make(fleet_path, &fleet)) return f;
    auto t0 = Steady::now();
    for (int round = 0; round < FleetRounds(); ++round) {
      for (int i = 0; i < kFleetOrigins; ++i) {
        origin_id = i + 1;
        if (!apply(&fleet, FleetBatch(all, i, round), 0, kFleetBatch, true, &series)) return f;
      }
    }
    const double fleet_batches = static_cast<double>(kFleetOrigins) * FleetRounds();
    f.fleet_batches_s = fleet_batches / std::chrono::duration<double>(Steady::now() - t0).count();
    if (!fleet.Exec("PRAGMA wal_checkpoint(TRUNCATE)").ok()) return f;
    f.fleet_bytes = static_cast<double>(bench::StoreFileBytes(fleet_path)) / (fleet_batches * kFleetBatch);
  }
  return f;
}

#ifdef EDGESYNC_HAVE_POSTGRESQL
struct PgFigures {
  double chunk_bytes = -1, row_bytes = -1;
};

// Bytes of the named tables (heap, indexes, TOAST) per reading.
double PgBytesPer(PgConn* conn, const std::string& tables, double readings) {
  PgResult r;
  if (!Check(conn->Query("SELECT sum(pg_total_relation_size(t::regclass)) FROM unnest($1::text[]) AS t", {tables},
                         &r),
             "relation sizes")) {
    return -1;
  }
  return static_cast<double>(r.Int(0, 0)) / readings;
}

PgFigures Postgres(const std::string& dir, const std::vector<ChangeEntry>& all) {
  PgFigures f;
  test::Postgres pg(dir + "/pg");
  if (!pg.Start() || !pg.CreateDatabase("hub")) {
    std::fprintf(stderr, "bench_remote_storage: PostgreSQL did not start: %s\n", pg.log().c_str());
    return f;
  }
  const HubStoreOptions options = test::HubStoreOptionsFor(pg, "hub");
  std::unique_ptr<HubStore> hs;
  std::unique_ptr<PgConn> conn;
  if (!Check(OpenPostgresHubStore(options, &hs), "open postgresql hub") ||
      !Check(ConnectPostgres(options, &conn), "connect")) {
    return f;
  }
  constexpr size_t kGroup = 64;  // what a busy hub puts in one transaction
  std::string rows;              // the same entries as schema 3's rows
  int64_t seq = 0;
  for (int round = 0; round < FleetRounds(); ++round) {
    std::vector<std::vector<ChangeEntry>> batches;
    std::vector<OriginBatch> group;
    for (int i = 0; i < kFleetOrigins; ++i) {
      batches.push_back(FleetBatch(all, i, round));
      for (const ChangeEntry& e : batches.back()) {
        const Reading& r = e.reading;
        ++seq;
        rows += std::to_string(seq) + "\t" + std::to_string(i + 1) + "\t" +
                std::to_string(RegionShardOf(FleetOrigin(i).gateway_id)) + "\t" + std::to_string(seq) + "\t" +
                std::to_string(e.lsn) + "\t0\t" + r.device_id + "\t" + r.metric + "\t" + r.unit + "\t" +
                std::to_string(r.ts_ms) + "\t" + std::to_string(r.value) + "\t" + std::to_string(r.quality) +
                "\t\\N\t\\N\t\\N\t1780000000000\n";
      }
    }
    for (int i = 0; i < kFleetOrigins; ++i) {
      group.push_back(OriginBatch{FleetOrigin(i), 0, 0, &batches[static_cast<size_t>(i)], 0});
      if (group.size() < kGroup && i + 1 < kFleetOrigins) continue;
      std::vector<ApplyResult> results;
      if (!Check(hs->ApplyBatches(group, &results), "postgresql apply")) return f;
      for (const ApplyResult& r : results) {
        if (r.outcome != ApplyOutcome::kApplied) return f;
      }
      group.clear();
    }
  }
  const double readings = static_cast<double>(kFleetOrigins) * FleetRounds() * kFleetBatch;
  f.chunk_bytes = PgBytesPer(conn.get(), "{es_feed_chunks,es_series}", readings);
  // Schema 3's feed table, as its migrations made it.
  if (!Check(conn->Exec("CREATE TABLE v3_feed (seq bigint PRIMARY KEY, origin bigint NOT NULL, olsn bigint NOT NULL, "
                        "kind smallint NOT NULL, device_id text NOT NULL, metric text NOT NULL, unit text NOT NULL, "
                        "ts bigint NOT NULL, value double precision NOT NULL, quality integer NOT NULL, name text, "
                        "location text, default_unit text, applied_ms bigint NOT NULL, shard smallint NOT NULL, "
                        "shard_seq bigint NOT NULL, UNIQUE (origin, olsn));"
                        "CREATE UNIQUE INDEX v3_feed_shard_seq ON v3_feed (shard, shard_seq)"),
             "schema 3 table") ||
      !Check(conn->CopyIn("COPY v3_feed (seq, origin, shard, shard_seq, olsn, kind, device_id, metric, unit, ts, "
                          "value, quality, name, location, default_unit, applied_ms) FROM STDIN",
                          rows),
             "schema 3 rows")) {
    return f;
  }
  f.row_bytes = PgBytesPer(conn.get(), "{v3_feed}", readings);
  return f;
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync

int main() {
  using namespace edgesync;
  test::TempDir dir;
  const int64_t n = int64_t{8000} * (bench::Quick() ? 5 : 60);
  const std::vector<ChangeEntry> all = Entries(n);
  const Figures now = Chunked(dir.path(), all);
  const Figures v4 = RowPerEntry(dir.path(), all);
  std::printf("hub: %.2f bytes/reading (v4 rows %.2f), %.0f batches/s (v4 rows %.0f); read view: %.2f (v4 rows %.2f)\n",
              now.hub_bytes, v4.hub_bytes, now.hub_batches_s, v4.hub_batches_s, now.view_bytes, v4.view_bytes);
  bench::Report report("remote_storage");
  const char* kRows = "row per entry (schema 4), same entries";
  report.Add("SQLite hub bytes on disk/reading (reference workload, 1,600-reading batches)", now.hub_bytes, "bytes",
             kRows, v4.hub_bytes);
  report.Add("gateway read view bytes on disk/reading (reference workload, 5,000-entry pages)", now.view_bytes, "bytes",
             kRows, v4.view_bytes);
  report.Add("SQLite hub store batches applied/s (1,600 readings each, store only)", now.hub_batches_s, "batches/s",
             kRows, v4.hub_batches_s);
  std::printf("fleet shape: %.0f batches/s (v4 rows %.0f), %.2f bytes/reading (v4 rows %.2f)\n", now.fleet_batches_s,
              v4.fleet_batches_s, now.fleet_bytes, v4.fleet_bytes);
  report.Add("SQLite hub store batches applied/s (10,000 origins x 20 readings, store only)", now.fleet_batches_s,
             "batches/s", kRows, v4.fleet_batches_s);
  report.Add("SQLite hub bytes on disk/reading (10,000 origins x 20-reading batches)", now.fleet_bytes, "bytes", kRows,
             v4.fleet_bytes);
  const CompactedFigures c = Compacted(dir.path(), all);
  const double fleet_readings = static_cast<double>(kFleetOrigins) * FleetRounds() * kFleetBatch;
  const double compact_us = c.compact_s * 1e6 / fleet_readings, apply_us = c.apply_s * 1e6 / fleet_readings;
  std::printf("feed compaction: fleet shape %.2f bytes/reading (%.2f in pages in use), compaction %.2f us/reading "
              "(applying %.2f); 1,600-reading batches %.2f bytes/reading; %lld merged rows\n",
              c.fleet_bytes, c.fleet_in_use, compact_us, apply_us, c.hub_bytes, static_cast<long long>(c.merged_rows));
  const char* kUncompacted = "the same batches, feed not compacted, same run";
  report.Add("SQLite hub bytes on disk/reading (10,000 origins x 20-reading batches, feed compacted every 2,000 "
             "batches)",
             c.fleet_bytes, "bytes", kUncompacted, now.fleet_bytes);
  report.Add("SQLite hub feed compaction time/reading (10,000 origins x 20-reading batches, store only)", compact_us,
             "us", "applying the same batches, same store, same run", apply_us);
  report.Add("SQLite hub bytes on disk/reading (reference workload, 1,600-reading batches, feed compacted)",
             c.hub_bytes, "bytes", kUncompacted, now.hub_bytes);
#ifdef EDGESYNC_HAVE_POSTGRESQL
  const PgFigures pg = Postgres(dir.path(), all);
  std::printf("postgresql hub, fleet shape: %.2f bytes/reading (schema 3 rows %.2f)\n", pg.chunk_bytes, pg.row_bytes);
  report.Add("PostgreSQL hub feed bytes on disk/reading (10,000 origins x 20-reading batches)", pg.chunk_bytes,
             "bytes", "row per entry (PostgreSQL schema 3), same entries", pg.row_bytes);
  const bool pg_ok = pg.chunk_bytes > 0 && pg.row_bytes > 0;
#else
  const bool pg_ok = true;
#endif
  return report.Write() && pg_ok && now.hub_bytes > 0 && v4.hub_bytes > 0 && now.view_bytes > 0 && c.fleet_bytes > 0 &&
                 c.hub_bytes > 0
             ? 0
             : 1;
}

#include "store/schema.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "platform/log.h"
#include "store/chunk_codec.h"
#include "store/remote_chunk_codec.h"

namespace edgesync {
namespace {

const char* const kV1 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE series(id INTEGER PRIMARY KEY, device_id TEXT NOT NULL, metric TEXT NOT NULL,
                    unit TEXT NOT NULL, hkey INTEGER NOT NULL, UNIQUE(device_id, metric, unit));
CREATE TABLE log(lsn INTEGER PRIMARY KEY, kind INTEGER NOT NULL, series INTEGER NOT NULL,
                 ts INTEGER NOT NULL, value REAL NOT NULL, quality INTEGER NOT NULL);
CREATE INDEX log_query ON log(lsn >> 11, series, ts);
CREATE TABLE batches(first_lsn INTEGER PRIMARY KEY, written_at INTEGER NOT NULL);
CREATE TABLE devices(device_id TEXT PRIMARY KEY, name TEXT NOT NULL, location TEXT NOT NULL,
                     default_unit TEXT NOT NULL, deleted INTEGER NOT NULL, lsn INTEGER NOT NULL,
                     updated_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE ranges(id INTEGER PRIMARY KEY, min INTEGER NOT NULL, max INTEGER NOT NULL,
                    parent INTEGER NOT NULL, active INTEGER NOT NULL, entries INTEGER NOT NULL,
                    bytes INTEGER NOT NULL);
CREATE TABLE leases(range_id INTEGER PRIMARY KEY, owner TEXT NOT NULL, continuation TEXT NOT NULL,
                    renewed_at INTEGER NOT NULL, version INTEGER NOT NULL);
CREATE TABLE checkpoints(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE acks(target TEXT PRIMARY KEY, lsn INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE origins(id INTEGER PRIMARY KEY, gateway_id TEXT NOT NULL, epoch TEXT NOT NULL,
                     UNIQUE(gateway_id, epoch));
CREATE TABLE remote(rid INTEGER PRIMARY KEY, origin INTEGER NOT NULL, olsn INTEGER NOT NULL,
                    kind INTEGER NOT NULL, series INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL NOT NULL,
                    quality INTEGER NOT NULL, at INTEGER NOT NULL, UNIQUE(origin, olsn));
CREATE INDEX remote_query ON remote(rid >> 11, series, ts);
CREATE TABLE remote_devices(rid INTEGER PRIMARY KEY, name TEXT NOT NULL, location TEXT NOT NULL,
                            default_unit TEXT NOT NULL, deleted INTEGER NOT NULL);
CREATE TABLE dead_letters(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, topic TEXT NOT NULL,
                          head BLOB NOT NULL, reason TEXT NOT NULL);
)sql";

// Version 2: what a region hub keeps. high_water rows are never deleted
// (dedupe must hold for any outage length); region_feed's AUTOINCREMENT
// keeps sequence numbers unique even after the feed is pruned.
const char* const kV1ToV2 = R"sql(
CREATE TABLE high_water(origin INTEGER PRIMARY KEY, lsn INTEGER NOT NULL);
CREATE TABLE region_feed(seq INTEGER PRIMARY KEY AUTOINCREMENT, rid INTEGER NOT NULL);
)sql";

// Version 3: a lease's renewal as (boot id, monotonic ms) of the renewing
// host, so expiry never reads the wall clock (renewed_at stays, for people).
const char* const kV2ToV3 = R"sql(
ALTER TABLE leases ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN renewed_mono INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 4: readings in compressed chunks (store/chunk_codec.h), one row
// per commit group; `log` keeps device records only. MigrateSchema moves
// the readings of older stores into chunks.
const char* const kV3ToV4 = R"sql(
CREATE TABLE chunks(first_lsn INTEGER PRIMARY KEY, last_lsn INTEGER NOT NULL, written_at INTEGER NOT NULL,
                    min_ts INTEGER NOT NULL, max_ts INTEGER NOT NULL, data BLOB NOT NULL);
)sql";

// Version 5: compacted spans (store/chunk_compactor.h). A span of older chunks
// becomes one block per series; its row in `chunks` keeps LSNs, write time
// and time span, with a marker naming its blocks' row ids (consecutive), so
// every reader by LSN still finds it there. The query index leads with the
// series: one series over a window touches its own blocks only.
// meta 'compacted_upto' is the last LSN compacted: spans are exactly the
// chunks at or below it (compaction goes oldest first, retention prunes
// oldest first).
const char* const kV4ToV5 = R"sql(
CREATE TABLE series_chunks(id INTEGER PRIMARY KEY, span INTEGER NOT NULL, series INTEGER NOT NULL,
                           min_ts INTEGER NOT NULL, max_ts INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX series_chunks_query ON series_chunks(series, max_ts);
)sql";

// Version 6: other gateways' entries in compressed chunks
// (store/remote_chunk_codec.h), one row per applied batch instead of a row
// per entry with UNIQUE(origin, olsn) and a query index (~89 bytes per
// reading on a hub). region_chunks: what a hub applied, keyed by the first
// region sequence of its n entries (one origin's, seq..seq+n-1).
// view_chunks: a gateway's read view, one row per origin per feed page;
// its origin index finds the chunks a new page may overlap, so dedupe by
// (origin, LSN) stays exact without an index entry per entry.
// MigrateSchema moves the rows of `remote`, `region_feed` and
// `remote_devices` into them.
const char* const kV5ToV6 = R"sql(
CREATE TABLE region_chunks(seq INTEGER PRIMARY KEY, n INTEGER NOT NULL, origin INTEGER NOT NULL,
                           first_olsn INTEGER NOT NULL, last_olsn INTEGER NOT NULL, min_ts INTEGER NOT NULL,
                           max_ts INTEGER NOT NULL, at INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE view_chunks(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, origin INTEGER NOT NULL,
                         first_olsn INTEGER NOT NULL, last_olsn INTEGER NOT NULL, min_ts INTEGER NOT NULL,
                         max_ts INTEGER NOT NULL, at INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX view_chunks_origin ON view_chunks(origin, last_olsn, first_olsn);
CREATE INDEX view_chunks_time ON view_chunks(max_ts, min_ts);
)sql";

// Version 7: a query of one device decodes only the read-view chunks of
// the origins that wrote it, not every chunk of its window: view_series
// says which origins the read view holds each series of (a row per
// (series, origin) ever applied; rows outlive pruned chunks, harmlessly),
// and view_chunks are indexed by (origin, time) instead of time alone.
// On bench_storage's read-view store (another gateway's 2.1M readings in
// the queried hour) a one-series query of that hour took 95 ms of CPU
// decoding them all under version 6. MigrateSchema fills view_series from
// the chunks held.
const char* const kV6ToV7 = R"sql(
CREATE TABLE view_series(series INTEGER NOT NULL, origin INTEGER NOT NULL, PRIMARY KEY(series, origin))
  WITHOUT ROWID;
CREATE INDEX view_chunks_origin_time ON view_chunks(origin, max_ts, min_ts);
DROP INDEX view_chunks_time;
)sql";

// Version 8: the untrusted clock periods of this store's own origin
// (store/time_correction.h). A period's row is committed before the first
// reading that carries its number, so no reading names a period the store
// does not know; readings, first_ts and last_ts grow in the commits of its
// readings; delta_ms is set (NULL before) once the period is corrected.
const char* const kV7ToV8 = R"sql(
CREATE TABLE clock_periods(id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL, offset_ms INTEGER NOT NULL,
                           opened_at INTEGER NOT NULL, readings INTEGER NOT NULL DEFAULT 0,
                           first_ts INTEGER, last_ts INTEGER, delta_ms INTEGER, corrected_at INTEGER);
)sql";

// Version 9: each origin's completeness watermark beside its high-water
// mark (store/hub_store.h, BatchCompletes): the sender's commit time
// through which every reading of it is held, and the region feed sequence
// from which a reader holds all of it (0 = none known yet). A gateway's
// read view keeps the watermarks its feeds carried, per origin.
const char* const kV8ToV9 = R"sql(
ALTER TABLE high_water ADD COLUMN complete_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE high_water ADD COLUMN complete_seq INTEGER NOT NULL DEFAULT 0;
CREATE TABLE view_watermarks(origin INTEGER PRIMARY KEY, complete_ms INTEGER NOT NULL);
)sql";

// Version 10: other origins' time corrections (store/time_correction.h),
// one row per (origin, clock period), replaced when the same one comes
// again. The store had none to move: a peer before it sent none.
const char* const kV9ToV10 = R"sql(
CREATE TABLE origin_time_corrections(origin INTEGER NOT NULL, period INTEGER NOT NULL, delta_ms INTEGER NOT NULL,
                                     from_ts INTEGER NOT NULL, to_ts INTEGER NOT NULL,
                                     PRIMARY KEY(origin, period)) WITHOUT ROWID;
)sql";

// Version 11: a hub's region feed compaction (store/region_feed_compactor.h)
// may rewrite runs of `region_chunks` rows as merged rows: origin 0, a
// block of format 5 naming each entry's origin. The tables do not change;
// the version keeps an older edgesync, which would take such a row for a
// damaged one, from opening the store.
const char* const kV10ToV11 = "";

// Version 12: the spans of an origin's LSNs a hub holds above its
// high-water mark (a live lane's, delivered ahead of its backlog;
// store/hub_store.h PlanApply): at most kMaxHeldRanges rows per origin,
// written in the transaction that applies the batch, deleted when they
// join the mark. An older edgesync would take the spans' batches for gaps
// and never merge them, so the version keeps it from opening the store.
const char* const kV11ToV12 = R"sql(
CREATE TABLE held_spans(origin INTEGER NOT NULL, first INTEGER NOT NULL, last INTEGER NOT NULL,
                        PRIMARY KEY(origin, first)) WITHOUT ROWID;
)sql";

// Version 13: each origin's priority marks beside its high-water mark
// (sync/PROTOCOL.md, "Priority by topic"; store/hub_store.h PlanApply):
// priority_k, every entry of level k at or below it is held. Written with
// the mark, in the transaction that applies the batch. An older edgesync
// would ignore them and append a priority batch's entries a second time
// when the backlog brings them, so the version keeps it from opening the
// store.
const char* const kV12ToV13 = R"sql(
ALTER TABLE high_water ADD COLUMN priority_1 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE high_water ADD COLUMN priority_2 INTEGER NOT NULL DEFAULT 0;
ALTER TABLE high_water ADD COLUMN priority_3 INTEGER NOT NULL DEFAULT 0;
)sql";

// A migrated chunk holds at most this many readings (what a commit group
// holds at ingest.batch_max's default).
constexpr size_t kMigrationChunk = 1000;

// The readings of `log`, in LSN order, become chunks of consecutive LSNs
// written in the same batch (so retention's age stays what it was).
Status MoveReadingsToChunks(Db* db) {
  Stmt rows, ins;
  ES_RETURN_IF_ERROR(rows.Prepare(db,
                                  "SELECT lsn, series, ts, value, quality, ifnull((SELECT written_at FROM batches b "
                                  "WHERE b.first_lsn <= l.lsn ORDER BY b.first_lsn DESC LIMIT 1), 0) "
                                  "FROM log l WHERE kind = 0 ORDER BY lsn"));
  ES_RETURN_IF_ERROR(ins.Prepare(db, kInsertChunkSql));
  std::vector<ChunkReading> chunk;
  std::string block;
  int64_t first = 0, written_at = 0, moved = 0;
  Status st;
  while (rows.Step(&st)) {
    const int64_t lsn = rows.Int(0), at = rows.Int(5);
    if (!chunk.empty() && (lsn != first + static_cast<int64_t>(chunk.size()) || at != written_at ||
                           chunk.size() >= kMigrationChunk)) {
      ES_RETURN_IF_ERROR(InsertChunkRow(&ins, chunk, first, written_at, &block));
      chunk.clear();
    }
    if (chunk.empty()) {
      first = lsn;
      written_at = at;
    }
    chunk.push_back(ChunkReading{rows.Int(1), rows.Int(2), rows.Double(3), static_cast<uint32_t>(rows.Int(4))});
    ++moved;
  }
  ES_RETURN_IF_ERROR(st);
  if (!chunk.empty()) ES_RETURN_IF_ERROR(InsertChunkRow(&ins, chunk, first, written_at, &block));
  // high_lsn keeps the highest LSN given out, whatever left the log.
  ES_RETURN_IF_ERROR(db->Exec("INSERT OR REPLACE INTO meta(key, value) SELECT 'high_lsn', max(ifnull((SELECT value "
                              "FROM meta WHERE key='high_lsn'), 0), ifnull((SELECT max(lsn) FROM log), 0))"));
  ES_RETURN_IF_ERROR(db->Exec("DELETE FROM log WHERE kind = 0"));
  ES_RETURN_IF_ERROR(db->Exec("DROP INDEX IF EXISTS log_query"));
  if (moved > 0) ES_LOG(kInfo, "store: moved {} readings into compressed chunks", moved);
  return Status::Ok();
}

// Read-view rows are taken this many at a time, in apply order, and each
// origin's among them becomes one chunk (its entries sorted by LSN), so
// retention's apply order survives at that granularity.
constexpr size_t kMigrationWindow = 50000;

// A version 5 entry (the row-per-entry read view): RemoteRow reads its columns from olsn on.
constexpr char kRemoteColumnsSql[] =
    "r.olsn, r.kind, r.series, r.ts, r.value, r.quality, r.at, ifnull(d.name, ''), ifnull(d.location, ''), "
    "ifnull(d.default_unit, '') FROM remote r LEFT JOIN remote_devices d ON d.rid = r.rid ";

RemoteChunkEntry RemoteRow(const Stmt& s, int first) {
  RemoteChunkEntry e;
  e.olsn = static_cast<uint64_t>(s.Int(first));
  e.kind = static_cast<uint8_t>(s.Int(first + 1));
  e.series = s.Int(first + 2);
  e.ts_ms = s.Int(first + 3);
  e.value = s.Double(first + 4);
  e.quality = static_cast<uint32_t>(s.Int(first + 5));
  e.name = s.Text(first + 7);
  e.location = s.Text(first + 8);
  e.default_unit = s.Text(first + 9);
  return e;
}

// The region feed in sequence order: a run of consecutive sequences of one
// origin (a batch the hub applied) becomes a region chunk.
Status MoveRegionFeed(Db* db, std::string* block) {
  Stmt rows, ins;
  ES_RETURN_IF_ERROR(rows.Prepare(db, (std::string("SELECT f.seq, r.origin, ") + kRemoteColumnsSql +
                                       "JOIN region_feed f ON f.rid = r.rid ORDER BY f.seq")
                                          .c_str()));
  ES_RETURN_IF_ERROR(ins.Prepare(db, kInsertRegionChunkSql));
  std::vector<RemoteChunkEntry> run;
  int64_t first_seq = 0, origin = 0, at = 0;
  auto flush = [&]() -> Status {
    if (run.empty()) return Status::Ok();
    Status st = InsertRemoteChunkRow(&ins, first_seq, origin, run, at, block);
    run.clear();
    at = 0;
    return st;
  };
  Status st;
  while (rows.Step(&st)) {
    const int64_t seq = rows.Int(0), o = rows.Int(1);
    RemoteChunkEntry e = RemoteRow(rows, 2);
    if (!run.empty() && (o != origin || seq != first_seq + static_cast<int64_t>(run.size()) ||
                         e.olsn <= run.back().olsn || run.size() >= kMigrationChunk)) {
      ES_RETURN_IF_ERROR(flush());
    }
    if (run.empty()) {
      first_seq = seq;
      origin = o;
    }
    at = std::max(at, rows.Int(8));
    run.push_back(std::move(e));
  }
  ES_RETURN_IF_ERROR(st);
  ES_RETURN_IF_ERROR(flush());
  // Sequence numbers are never reused: with every row pruned, the head
  // AUTOINCREMENT kept lives on as the pruned mark.
  return db->Exec(
      "INSERT OR REPLACE INTO meta(key, value) SELECT 'region_pruned_seq', max(ifnull((SELECT value FROM meta "
      "WHERE key='region_pruned_seq'), 0), ifnull((SELECT seq FROM sqlite_sequence WHERE name='region_feed'), 0)) "
      "WHERE NOT EXISTS (SELECT 1 FROM region_feed)");
}

// The read view's rows that are not in the region feed.
Status MoveReadView(Db* db, std::string* block) {
  Stmt rows, ins;
  ES_RETURN_IF_ERROR(rows.Prepare(db, (std::string("SELECT r.origin, ") + kRemoteColumnsSql +
                                       "WHERE r.rid NOT IN (SELECT rid FROM region_feed) ORDER BY r.rid")
                                          .c_str()));
  ES_RETURN_IF_ERROR(ins.Prepare(db, kInsertViewChunkSql));
  std::map<int64_t, std::pair<int64_t, std::vector<RemoteChunkEntry>>> window;  // origin -> (at, entries)
  size_t held = 0;
  auto flush = [&]() -> Status {
    for (auto& [origin, group] : window) {
      std::vector<RemoteChunkEntry>& v = group.second;
      std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.olsn < b.olsn; });
      for (size_t i = 0; i < v.size(); i += kMigrationChunk) {
        std::vector<RemoteChunkEntry> part(v.begin() + static_cast<ptrdiff_t>(i),
                                           v.begin() + static_cast<ptrdiff_t>(std::min(v.size(), i + kMigrationChunk)));
        ES_RETURN_IF_ERROR(InsertRemoteChunkRow(&ins, 0, origin, part, group.first, block));
      }
    }
    window.clear();
    held = 0;
    return Status::Ok();
  };
  Status st;
  while (rows.Step(&st)) {
    auto& group = window[rows.Int(0)];
    group.first = std::max(group.first, rows.Int(7));
    group.second.push_back(RemoteRow(rows, 1));
    if (++held >= kMigrationWindow) ES_RETURN_IF_ERROR(flush());
  }
  ES_RETURN_IF_ERROR(st);
  return flush();
}

Status MoveRemoteIntoChunks(Db* db) {
  std::string block;
  int64_t rows = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("SELECT count(*) FROM remote", &rows));
  ES_RETURN_IF_ERROR(MoveRegionFeed(db, &block));
  ES_RETURN_IF_ERROR(MoveReadView(db, &block));
  ES_RETURN_IF_ERROR(db->Exec("DROP TABLE region_feed; DROP TABLE remote_devices; DROP TABLE remote;"));
  if (rows > 0) ES_LOG(kInfo, "store: moved {} read view and region feed entries into compressed chunks", rows);
  return Status::Ok();
}

Status FillViewSeries(Db* db) {
  Stmt rows, ins;
  ES_RETURN_IF_ERROR(rows.Prepare(db, "SELECT id, origin, data FROM view_chunks"));
  ES_RETURN_IF_ERROR(ins.Prepare(db, kInsertViewSeriesSql));
  std::set<std::pair<int64_t, int64_t>> seen;
  std::vector<RemoteChunkEntry> entries;
  Status st;
  while (rows.Step(&st)) {
    Status d = DecodeRemoteChunk(rows.Blob(2), kMaxRemoteChunkEntries, &entries);
    if (!d.ok()) return Status::Corruption("read view chunk " + std::to_string(rows.Int(0)) + ": " + d.message());
    for (const RemoteChunkEntry& e : entries) {
      if (e.kind != 0 || !seen.emplace(e.series, rows.Int(1)).second) continue;
      ins.Bind(1, e.series);
      ins.Bind(2, rows.Int(1));
      ES_RETURN_IF_ERROR(ins.Run());
    }
  }
  return st;
}

}  // namespace

Status InsertRemoteChunkRow(Stmt* ins, int64_t key, int64_t origin, const std::vector<RemoteChunkEntry>& entries,
                            int64_t at, std::string* block) {
  int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
  for (const RemoteChunkEntry& e : entries) {
    if (e.kind != 0) continue;  // a device record has no time: a query never needs its chunk for it
    min_ts = std::min(min_ts, e.ts_ms);
    max_ts = std::max(max_ts, e.ts_ms);
  }
  EncodeRemoteChunk(entries, block);
  if (key > 0) {
    ins->Bind(1, key);
  } else {
    sqlite3_bind_null(ins->get(), 1);
  }
  ins->Bind(2, static_cast<int64_t>(entries.size()));
  ins->Bind(3, origin);
  ins->Bind(4, static_cast<int64_t>(entries.front().olsn));
  ins->Bind(5, static_cast<int64_t>(entries.back().olsn));
  ins->Bind(6, min_ts);
  ins->Bind(7, max_ts);
  ins->Bind(8, at);
  ins->BindBlob(9, *block);
  return ins->Run();
}

Status InsertChunkRow(Stmt* ins, const std::vector<ChunkReading>& readings, int64_t first_lsn, int64_t written_at,
                      std::string* block) {
  int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
  for (const ChunkReading& r : readings) {
    min_ts = std::min(min_ts, r.ts_ms);
    max_ts = std::max(max_ts, r.ts_ms);
  }
  EncodeChunk(readings, block);
  ins->Bind(1, first_lsn);
  ins->Bind(2, first_lsn + static_cast<int64_t>(readings.size()) - 1);
  ins->Bind(3, written_at);
  ins->Bind(4, min_ts);
  ins->Bind(5, max_ts);
  ins->BindBlob(6, *block);
  return ins->Run();
}

Status CreateSchema(Db* db, int version) {
  if (version < 1 || version > kSchemaVersion) {
    return Status::InvalidArgument("schema version " + std::to_string(version) + " unknown");
  }
  ES_RETURN_IF_ERROR(db->Exec(kV1));
  ES_RETURN_IF_ERROR(db->Exec("PRAGMA application_id=" + std::to_string(kApplicationId)));
  ES_RETURN_IF_ERROR(db->Exec("PRAGMA user_version=1"));
  if (version > 1) ES_RETURN_IF_ERROR(MigrateBetween(db, 1, version));
  return Status::Ok();
}

Status MigrateSchema(Db* db, int from) { return MigrateBetween(db, from, kSchemaVersion); }

Status MigrateBetween(Db* db, int from, int to) {
  for (int v = from; v < to; ++v) {
    switch (v) {
      case 1:
        ES_RETURN_IF_ERROR(db->Exec(kV1ToV2).Annotate("migrating schema 1 to 2"));
        break;
      case 2:
        ES_RETURN_IF_ERROR(db->Exec(kV2ToV3).Annotate("migrating schema 2 to 3"));
        break;
      case 3:
        ES_RETURN_IF_ERROR(db->Exec(kV3ToV4).Annotate("migrating schema 3 to 4"));
        ES_RETURN_IF_ERROR(MoveReadingsToChunks(db).Annotate("migrating schema 3 to 4"));
        break;
      case 4:
        ES_RETURN_IF_ERROR(db->Exec(kV4ToV5).Annotate("migrating schema 4 to 5"));
        break;
      case 5:
        ES_RETURN_IF_ERROR(db->Exec(kV5ToV6).Annotate("migrating schema 5 to 6"));
        ES_RETURN_IF_ERROR(MoveRemoteIntoChunks(db).Annotate("migrating schema 5 to 6"));
        break;
      case 6:
        ES_RETURN_IF_ERROR(db->Exec(kV6ToV7).Annotate("migrating schema 6 to 7"));
        ES_RETURN_IF_ERROR(FillViewSeries(db).Annotate("migrating schema 6 to 7"));
        break;
      case 7:
        ES_RETURN_IF_ERROR(db->Exec(kV7ToV8).Annotate("migrating schema 7 to 8"));
        break;
      case 8:
        ES_RETURN_IF_ERROR(db->Exec(kV8ToV9).Annotate("migrating schema 8 to 9"));
        break;
      case 9:
        ES_RETURN_IF_ERROR(db->Exec(kV9ToV10).Annotate("migrating schema 9 to 10"));
        break;
      case 10:
        ES_RETURN_IF_ERROR(db->Exec(kV10ToV11).Annotate("migrating schema 10 to 11"));
        break;
      case 11:
        ES_RETURN_IF_ERROR(db->Exec(kV11ToV12).Annotate("migrating schema 11 to 12"));
        break;
      case 12:
        ES_RETURN_IF_ERROR(db->Exec(kV12ToV13).Annotate("migrating schema 12 to 13"));
        break;
      default:
        return Status::Unsupported("no migration from schema " + std::to_string(v));
    }
    ES_RETURN_IF_ERROR(db->Exec("PRAGMA user_version=" + std::to_string(v + 1)));
  }
  return Status::Ok();
}

Status ReadMetaInt(Db* db, const std::string& key, int64_t* value) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT value FROM meta WHERE key = ?"));
  s.Bind(1, std::string_view(key));
  Status st;
  *value = s.Step(&st) ? s.Int(0) : 0;
  return st;
}

Status WriteMetaInt(Db* db, const std::string& key, int64_t value) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"));
  s.Bind(1, std::string_view(key));
  s.Bind(2, value);
  return s.Run();
}

}  // namespace edgesync

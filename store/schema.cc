#include "store/schema.h"

#include <algorithm>
#include <string>
#include <vector>

#include "platform/log.h"
#include "store/chunk_codec.h"

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

// Version 5: compacted spans (store/compaction.h). A span of older chunks
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

}  // namespace

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
      default:
        return Status::Unsupported("no migration from schema " + std::to_string(v));
    }
    ES_RETURN_IF_ERROR(db->Exec("PRAGMA user_version=" + std::to_string(v + 1)));
  }
  return Status::Ok();
}

}  // namespace edgesync

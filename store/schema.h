// store/schema.h: the store's on-disk layout, its version and the forward
// migrations between versions.
//
// Layout choices (SD cards: few bytes per reading, few pages per commit):
// - (deviceId, metric, unit) is interned once in `series`.
// - The readings ARE the change log. Since version 4 a commit group of
//   readings (consecutive LSNs) is one row of `chunks`: a compressed column
//   block (store/chunk_codec.h, ~2 bytes per reading) keyed by its first
//   LSN, with its last LSN, write time and time span. A commit then dirties
//   the chunk table's last page (and the checkpoint row) instead of a row
//   and index entries per reading: one row per reading (version 3) cost ~51
//   bytes on disk and ~300 written per reading (tests/bench/storage_bench.cc
//   measures both layouts). Chunks are deleted whole by retention.
// - Since version 5, compaction (store/compaction.h) rewrites older
//   acknowledged chunks as spans: one block per series in `series_chunks`
//   (indexed by series and time), the span's `chunks` row a marker.
// - `log` holds device records only (kind 1 and 2; one entry per record, its
//   latest version); their content is in `devices`. LSNs of the two tables
//   interleave and never collide.
// - Write time: a chunk carries its own; `batches` indexes it coarsely (a
//   row per second of appends, one per device record) for "feed from a wall
//   time" and the backlog's age.
// - The read view (`remote`) keeps a row per entry with a query index
//   (rid >> 11, series, ts): readings arrive interleaved across thousands of
//   series, and leading with the row-id segment keeps each commit's index
//   writes in the newest few pages.
//
// Thread safety: functions act on the connection given, under its mutex.
#ifndef EDGESYNC_STORE_SCHEMA_H_
#define EDGESYNC_STORE_SCHEMA_H_

#include <string>
#include <vector>

#include "store/chunk_codec.h"
#include "store/sqlite_util.h"

namespace edgesync {

// The version this build writes. 1: base layout; 2: region hub tables;
// 3: leases renewed on the monotonic clock of a named boot; 4: readings in
// compressed chunks; 5: compacted spans in per-series blocks.
constexpr int kSchemaVersion = 5;
// "ESYG": marks a SQLite file as an edgesync store.
constexpr int kApplicationId = 0x45535947;
// remote_query's leading column is rid >> kQuerySegmentShift (SQL text must match).
constexpr int kQuerySegmentShift = 11;
// The highest LSN given out so far: the log's, or meta's high_lsn once
// pruning or drop-oldest took that row away (LSNs are never reused).
constexpr char kHighLsnSql[] =
    "SELECT max(ifnull((SELECT value FROM meta WHERE key='high_lsn'), 0), ifnull((SELECT max(lsn) FROM log), 0),"
    " ifnull((SELECT last_lsn FROM chunks ORDER BY first_lsn DESC LIMIT 1), 0))";

// The statement that inserts a chunk row (InsertChunkRow binds it).
constexpr char kInsertChunkSql[] = "INSERT INTO chunks VALUES(?, ?, ?, ?, ?, ?)";
// Encodes readings (consecutive LSNs from first_lsn) as one chunk into
// *block and inserts its row, with its time span, through ins (prepared
// from kInsertChunkSql).
Status InsertChunkRow(Stmt* ins, const std::vector<ChunkReading>& readings, int64_t first_lsn, int64_t written_at,
                      std::string* block);

// Creates the layout of `version` (1..kSchemaVersion) on an empty database
// inside the caller's transaction. Older versions exist for migration tests.
Status CreateSchema(Db* db, int version);
// Migrates from `from` up to kSchemaVersion inside the caller's transaction.
Status MigrateSchema(Db* db, int from);
// The same up to version `to` (tests make older stores with it).
Status MigrateBetween(Db* db, int from, int to);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SCHEMA_H_

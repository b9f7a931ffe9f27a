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
// - Since version 5, compaction (store/chunk_compactor.h) rewrites older
//   acknowledged chunks as spans: one block per series in `series_chunks`
//   (indexed by series and time), the span's `chunks` row a marker.
// - `log` holds device records only (kind 1 and 2; one entry per record, its
//   latest version); their content is in `devices`. LSNs of the two tables
//   interleave and never collide.
// - Write time: a chunk carries its own; `batches` indexes it coarsely (a
//   row per ten seconds of appends, one per device record) for "feed from a wall
//   time" and the backlog's age.
// - Other gateways' entries (since version 5) are compressed chunks too
//   (store/remote_chunk_codec.h), one origin's entries each: a hub's
//   `region_chunks` holds a row per applied batch keyed by its first region
//   sequence (the feed is read by that key); a gateway's `view_chunks` a row
//   per origin per feed page, with an index by (origin, last LSN) that finds
//   the chunks an incoming page may overlap, so the read view's dedupe by
//   (origin, LSN) stays exact. A row per entry with UNIQUE(origin, olsn) and
//   a query index (version 4) cost ~89 bytes per reading on a hub.
// - `clock_periods` (version 8): this origin's untrusted clock periods and
//   their corrections (store/time_correction.h); readings name theirs in the
//   quality's high bits.
// - Since version 11 a hub's feed compaction (store/region_feed_compactor.h)
//   merges runs of old `region_chunks` rows of small batches into one row
//   (origin 0, every entry's origin in its block), keyed and counted as the
//   rows it replaced.
// - `held_spans` (version 12): per origin, the LSN spans a hub holds above
//   its `high_water` mark (a live lane's; store/hub_store.h PlanApply), at
//   most kMaxHeldRanges each; a span that joins the mark is deleted.
// - `high_water.priority_1..3` (version 13): per origin, the priority
//   marks (store/hub_store.h PlanApply), written with the mark.
// - `origin_time_corrections` (version 10): other origins' corrections of
//   their untrusted clock periods, as a hub or a read view applied them
//   from the change log (their entries stay in the chunks too, so the feed
//   serves them on); a query shows those origins' readings through them.
//
// Thread safety: functions act on the connection given, under its mutex.
#ifndef EDGESYNC_STORE_SCHEMA_H_
#define EDGESYNC_STORE_SCHEMA_H_

#include <string>
#include <vector>

#include "store/chunk_codec.h"
#include "store/remote_chunk_codec.h"
#include "store/sqlite_util.h"

namespace edgesync {

// The version this build writes. 1: base layout; 2: region hub tables;
// 3: leases renewed on the monotonic clock of a named boot; 4: readings in
// compressed chunks; 5: compacted spans in per-series blocks; 6: the read
// view and the region feed in compressed chunks; 7: the read view's series
// per origin, its chunks indexed by (origin, time); 8: untrusted clock
// periods (store/time_correction.h); 9: each origin's completeness
// watermark beside its high-water mark, and the read view's; 10: other
// origins' time corrections; 11: merged region feed rows; 12: the LSN
// spans a hub holds above an origin's high-water mark; 13: an origin's
// priority marks beside its high-water mark.
constexpr int kSchemaVersion = 13;
// "ESYG": marks a SQLite file as an edgesync store.
constexpr int kApplicationId = 0x45535947;
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

// The region feed's head: the last sequence number given out. Retention
// prunes the oldest chunks first, so the newest chunk holds it, or, with
// every chunk pruned, the pruned mark does (sequences are never reused).
constexpr char kRegionHeadSql[] =
    "SELECT max(ifnull((SELECT seq + n - 1 FROM region_chunks ORDER BY seq DESC LIMIT 1), 0), "
    "ifnull((SELECT value FROM meta WHERE key = 'region_pruned_seq'), 0))";

// An origin's id by (gateway id, epoch).
constexpr char kFindOriginSql[] = "SELECT id FROM origins WHERE gateway_id=? AND epoch=?";

// The statements that insert a region chunk and a read view chunk
// (InsertRemoteChunkRow binds them).
constexpr char kInsertRegionChunkSql[] = "INSERT INTO region_chunks VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)";
constexpr char kInsertViewChunkSql[] = "INSERT INTO view_chunks VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)";
// Records that the read view holds readings of (series, origin).
constexpr char kInsertViewSeriesSql[] = "INSERT OR IGNORE INTO view_series VALUES(?, ?)";
// Encodes entries (one origin's, increasing LSNs, at least one) as one
// chunk into *block and inserts its row through ins: key is the region
// chunk's first sequence, or 0 for a new read view row id.
Status InsertRemoteChunkRow(Stmt* ins, int64_t key, int64_t origin, const std::vector<RemoteChunkEntry>& entries,
                            int64_t at, std::string* block);

// An integer of table meta (0 when the key is not there), and setting one.
Status ReadMetaInt(Db* db, const std::string& key, int64_t* value);
Status WriteMetaInt(Db* db, const std::string& key, int64_t value);

// Creates the layout of `version` (1..kSchemaVersion) on an empty database
// inside the caller's transaction. Older versions exist for migration tests.
Status CreateSchema(Db* db, int version);
// Migrates from `from` up to kSchemaVersion inside the caller's transaction.
Status MigrateSchema(Db* db, int from);
// The same up to version `to` (tests make older stores with it).
Status MigrateBetween(Db* db, int from, int to);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SCHEMA_H_

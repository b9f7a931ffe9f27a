// store/schema.h: the store's on-disk layout, its version and the forward
// migrations between versions.
//
// Layout choices (SD cards: few bytes per reading, few pages per commit):
// - (deviceId, metric, unit) is interned once in `series`; a reading's log
//   row is then (lsn, kind, series, ts, value, quality) ~ 30 bytes.
// - The readings ARE the change log: the LSN is the row id of `log`.
// - Write time is kept per committed batch (`batches`), not per row: it only
//   serves "feed from a wall time" and retention age, both batch-grained.
// - The query index is (lsn >> 11, series, ts), not (series, ts): readings
//   arrive interleaved across thousands of series, and a (series, ts) index
//   would dirty hundreds of scattered index pages per commit (measured: ~550
//   bytes written per reading, growing with the store). Leading with the LSN
//   segment keeps each commit's index writes in the newest few pages; a query
//   seeks once per 2048-LSN segment instead. The read view (`remote`) does
//   the same with its own row id.
// - Device records keep their content in `devices`; the log holds one entry
//   per record (its latest version).
//
// Thread safety: functions act on the connection given, under its mutex.
#ifndef EDGESYNC_STORE_SCHEMA_H_
#define EDGESYNC_STORE_SCHEMA_H_

#include "store/sqlite_util.h"

namespace edgesync {

// The version this build writes. 1: base layout; 2: region hub tables;
// 3: leases renewed on the monotonic clock of a named boot.
constexpr int kSchemaVersion = 3;
// "ESYG": marks a SQLite file as an edgesync store.
constexpr int kApplicationId = 0x45535947;
// log_query's leading column is lsn >> kQuerySegmentShift (SQL text must match).
constexpr int kQuerySegmentShift = 11;
// The highest LSN given out so far: the log's, or meta's high_lsn once
// pruning or drop-oldest took that row away (LSNs are never reused).
constexpr char kHighLsnSql[] =
    "SELECT max(ifnull((SELECT value FROM meta WHERE key='high_lsn'), 0), ifnull((SELECT max(lsn) FROM log), 0))";

// Creates the layout of `version` (1..kSchemaVersion) on an empty database
// inside the caller's transaction. Older versions exist for migration tests.
Status CreateSchema(Db* db, int version);
// Migrates from `from` up to kSchemaVersion inside the caller's transaction.
Status MigrateSchema(Db* db, int from);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SCHEMA_H_

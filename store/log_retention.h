// store/log_retention.h: how a store keeps within its space and its ages:
// the size limit and the disk policies when a batch is appended
// (CheckSpace, DropOldest), and the bounded steps retention prunes in
// (Step: acknowledged readings past the age or while space is low,
// tombstones, the read view and the region feed; store/retention.h runs
// them on a timer).
//
//
// Freed pages are not given back to the filesystem: a deleted row's page goes
// to SQLite's free list and the next inserts reuse it before the file grows,
// so a store at steady state keeps its size (the size limit counts pages in
// use, not the file). Giving pages back (auto_vacuum=INCREMENTAL and
// incremental_vacuum) would need a full VACUUM to switch an existing file
// over, pointer-map pages written on every page allocation, and it would move
// pages that the next minute's ingest allocates again: more writes on the SD
// card for bytes the store needs again anyway. StoreRetentionTest's simulated
// hours measure the file staying bounded under free-list reuse.
//
// Thread safety: a LogRetention belongs to the store's writer (SqliteStore
// holds it under its write mutex); every call runs on the writer's
// connection inside the caller's transaction.
#ifndef EDGESYNC_STORE_LOG_RETENTION_H_
#define EDGESYNC_STORE_LOG_RETENTION_H_

#include <cstddef>
#include <cstdint>

#include "platform/clock.h"
#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {

class LogRetention {
 public:
  // options outlives this (the store's own).
  LogRetention(const StoreOptions& options, Clock* clock) : options_(options), clock_(clock) {}

  // The WAL's size once it has grown to its limit (set at open).
  void set_wal_max_bytes(int64_t bytes) { wal_max_bytes_ = bytes; }

  // How many of the oldest readings must go before n more fit (0 = they
  // fit). max_bytes is checked against the pages in use; under drop-oldest
  // also against the filesystem's free bytes and the process's file size
  // limit, since once the filesystem is full neither a row nor the
  // checkpoint that recycles the WAL can be written.
  Status CheckSpace(Db* db, size_t n, int64_t* to_drop);
  // Drops up to n of the oldest readings (only acknowledged ones when
  // acked_only). high: the store's high LSN, which outlives its rows.
  // *removed counts all, *dropped_unacked those not yet acknowledged (data
  // lost by policy: counted in meta and logged every 10 s at most).
  Status DropOldest(Db* db, int64_t high, int64_t n, bool acked_only, int64_t* dropped_unacked, int64_t* removed);
  // One step of at most about max_rows rows of each kind, at wall time now.
  Status Step(Db* db, int64_t high, int64_t max_rows, int64_t now, PruneResult* result);

 private:
  // Whether retention should prune before the age (near max_bytes or a
  // full filesystem), with hysteresis in space_low_.
  Status SpaceLow(Db* db, bool* low);
  Status PruneReadings(Db* db, int64_t high, int64_t max_rows, int64_t now, bool space_low, PruneResult* result);
  // The highest LSN acknowledged at least ack_grace_ms before now (wall),
  // from a few (time, acknowledged LSN) samples kept in meta.
  Status AckGraceBound(Db* db, int64_t now, int64_t acked, int64_t* bound);
  Status PruneTombstones(Db* db, int64_t max_rows, int64_t now, PruneResult* result);
  Status PruneRemote(Db* db, int64_t max_rows, int64_t now, bool space_low, PruneResult* result);

  const StoreOptions& options_;
  Clock* const clock_;
  int64_t wal_max_bytes_ = 0;
  bool space_low_ = false;  // retention is pruning early for space (hysteresis)
  int64_t last_space_log_ms_ = INT64_MIN;
  int64_t last_drop_log_ms_ = 0;  // warnings about dropped readings, rate-limited
  int64_t drop_log_pending_ = 0;
  int64_t last_acked_drop_log_ms_ = 0;  // the same for acknowledged ones
  int64_t acked_drop_log_pending_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_LOG_RETENTION_H_

// store/range_table.h: a gateway store's ranges (table `ranges`): the
// partition-hash intervals feed consumers lease and read (docs/ARCHITECTURE.md
// "Ranges"), with the entry and byte counts that decide when one splits.
//
// A split is metadata only: rows stay where they are and two children cover
// the halves of the parent's interval; the parent stays (inactive) so
// consumers that leased it find its children.
//
// The counts drive splits only, so the writer writes them to the table at
// most every kFlushMs instead of in every commit (a small commit then
// touches the log and its index only). A kill -9 loses at most that long a
// stretch of counts, which only delays a split. Counts not written yet are
// held here (pending) and added to what the table says on every reload.
//
// Thread safety: RangeTable is the writer's; its owner serialises every
// call (SqliteStore holds it under its write mutex). LoadRanges and
// FindRange have no state.
#ifndef EDGESYNC_STORE_RANGE_TABLE_H_
#define EDGESYNC_STORE_RANGE_TABLE_H_

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {

struct RangeRow {
  RangeInfo info;
  int64_t entries = 0;
  int64_t bytes = 0;
};

// Range id -> (entries, bytes) to add.
using RangeCounts = std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>;

// Every range of the file, sorted by min.
Status LoadRanges(Db* db, std::vector<RangeRow>* ranges);
// nullptr = none.
const RangeRow* FindRange(const std::vector<RangeRow>& ranges, uint32_t id);

class RangeTable {
 public:
  // A Pi commits once a second: flushing the counts with each commit would
  // be a page of its ~4 synced pages.
  static constexpr int64_t kFlushMs = 10000;

  RangeTable(int64_t split_max_entries, int64_t split_max_bytes)
      : split_max_entries_(split_max_entries), split_max_bytes_(split_max_bytes) {}

  Status Open(Db* write_db);
  // Inside the writer's transaction: reloads the rows when the file changed
  // (data_version differs from the last load's) or a split or rollback made
  // them stale.
  Status Refresh(int64_t data_version);
  // A rollback: the rows are read again at the next Refresh.
  void Invalidate() { loaded_version_ = -1; }
  // Every range, active or split (sorted by min as loaded; children of a
  // split in this transaction come last).
  const std::vector<RangeRow>& rows() const { return rows_; }
  // The active range holding hash; `hint` (a position, or SIZE_MAX) is
  // tried first. SIZE_MAX = none.
  size_t Locate(uint64_t hash, size_t hint) const;
  // Whether a commit at mono_ms writes the counts (kFlushMs since the last).
  bool DueToPersist(int64_t mono_ms) const;
  // Inside the writer's transaction: adds the counts and splits a range
  // past its limit; with `persist`, writes them and every pending count to
  // the table.
  Status Count(const RangeCounts& add, bool persist);
  // After the transaction committed: counts not written wait as pending;
  // written ones clear the pending ones (at mono_ms, for DueToPersist).
  void Committed(const RangeCounts& add, bool persisted, int64_t mono_ms);
  bool has_pending() const { return !pending_.empty(); }
  // In a transaction of its own (at close): writes the pending counts.
  Status Flush();

 private:
  Status Write(const RangeCounts& counts);

  const int64_t split_max_entries_;
  const int64_t split_max_bytes_;
  Db* db_ = nullptr;
  Stmt update_;
  std::vector<RangeRow> rows_;
  int64_t loaded_version_ = -1;  // data_version of the last load; -1: reload
  RangeCounts pending_;
  int64_t last_flush_ms_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_RANGE_TABLE_H_

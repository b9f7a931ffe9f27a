// store/region_feed_compactor.h: a SQLite hub's region feed compaction.
// A hub applies each gateway's batch as one `region_chunks` row; at 100
// readings/s per gateway a batch is about 20 readings, and its row, zstd
// frame and block header cost more than its readings (docs/BENCHMARKS.md,
// Region). The compactor rewrites runs of such rows, once they are older
// than a given age, as merged rows (store/region_feed_chunk_codec.h): one
// block for a few thousand entries of any origins.
//
// A merged row keeps what readers of the table rely on: its key is the
// first sequence of the run and n its entry count, so entry i still has
// sequence seq + i and a feed position before, inside or after it resumes
// as before (readers skip the entries at or below it, as in any row); its
// time span covers the run's readings, and `at` is the newest of the run's
// (retention prunes it once all of it is due, never an entry early). Its
// origin column is 0 (no origin has id 0): the origin of each entry is in
// the block. first_olsn and last_olsn are 0 (they belong to one origin).
// docs/FORMATS.md, "Remote chunks", describes the layout.
//
// A run is rows of consecutive sequences, each a one-origin row of fewer
// than small_row_entries entries applied at or before a cutoff; it ends at
// a larger or merged row, a hole, max_entries entries or max_source_bytes of
// blocks. Only a run that is closed (something follows it) and whose merged
// block is smaller than its rows' blocks is merged; a run of one row, or
// one that would not shrink, is left and stepped over. Meta
// 'region_merged_seq' is the last sequence the compactor has looked at, so
// a step starts after it instead of at the oldest row.
//
// A step has three phases: Read (the run's rows, from a read snapshot),
// Build (decode and encode, on no connection) and Write (the swap, in the
// caller's write transaction), so a store holds its write lock only for
// the swap, not while a few thousand entries are decoded and encoded.
// Write refuses (Conflict, nothing written) when the feed is no longer
// what Read saw: rows are never changed in place, so the compaction mark
// and the count of the run's rows are enough to tell (retention deleting
// some of them meanwhile, another compactor).
//
// Crash safety: each step writes in one transaction: the run's rows and
// its merged row are swapped (and the mark moved) together, so after a
// kill either the old rows or the merged one exist, never both or neither.
// Memory: at most max_source_bytes of blocks and max_entries decoded
// entries per step.
//
// Thread safety: one step at a time (it keeps decode buffers): the store
// serialises steps with a mutex of their own.
#ifndef EDGESYNC_STORE_REGION_FEED_COMPACTOR_H_
#define EDGESYNC_STORE_REGION_FEED_COMPACTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "platform/status.h"
#include "store/region_feed_chunk_codec.h"
#include "store/sqlite_util.h"

namespace edgesync {

struct RegionFeedCompactorOptions {
  // Rows of at least this many entries are left alone: a large batch's
  // row already holds its readings in about 3 bytes each.
  int64_t small_row_entries = 512;
  // Entries per merged row: a reader resuming inside one decodes it whole.
  int64_t max_entries = 4096;
  // The run's source blocks read per step.
  int64_t max_source_bytes = int64_t{4} << 20;
};

// What one step did.
struct RegionFeedMergeResult {
  int64_t merged_rows = 0;    // merged rows written (0 or 1)
  int64_t source_rows = 0;    // the rows they replaced
  int64_t entries = 0;        // the entries they hold
  int64_t bytes_before = 0;   // the replaced rows' blocks
  int64_t bytes_after = 0;    // the merged block
  int64_t left_rows = 0;      // rows of a run left as they are (one row, or it would not shrink)
  bool more = false;          // another run may be due now
};

// One step's work between its phases.
struct RegionFeedMergePlan {
  struct SourceRow {
    int64_t seq = 0, n = 0, origin = 0, at = 0;
    std::string data;
  };
  int64_t mark_before = 0;  // the mark Read saw
  int64_t mark_after = 0;   // the mark Write sets
  bool closed = false;      // rows is a whole run
  bool more = false;
  std::vector<SourceRow> rows;
  // Build's: the merged row, when it is smaller than rows' blocks.
  bool merge = false;
  int64_t n = 0, min_ts = 0, max_ts = 0, at = 0, bytes_before = 0;
  std::string block;
};

class RegionFeedCompactor {
 public:
  explicit RegionFeedCompactor(RegionFeedCompactorOptions options = {});

  // The oldest due run of rows applied at or before cutoff_ms, read from
  // db (the caller holds a snapshot of it).
  Status Read(Db* db, int64_t cutoff_ms, RegionFeedMergePlan* plan);
  // The merged row of the run Read found. Corruption (naming the row) when
  // a row does not decode or its count disagrees with n.
  Status Build(RegionFeedMergePlan* plan);
  // Swaps the rows for the merged row and moves the mark, on db inside the
  // caller's write transaction; Conflict when the feed changed since Read.
  Status Write(Db* db, const RegionFeedMergePlan& plan, RegionFeedMergeResult* result);
  // The three on one connection, inside the caller's write transaction.
  Status Step(Db* db, int64_t cutoff_ms, RegionFeedMergeResult* result);

 private:
  RegionFeedCompactorOptions options_;
  std::vector<RemoteChunkEntry> decoded_;
  std::vector<RegionFeedRun> runs_;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_REGION_FEED_COMPACTOR_H_

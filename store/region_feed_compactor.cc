#include "store/region_feed_compactor.h"

#include <algorithm>
#include <climits>

namespace edgesync {
namespace {

// Rows stepped over (large or merged ones) per step, so a step over a long
// stretch of them stays short.
constexpr int64_t kMaxSteppedOver = 20000;
constexpr char kMarkKey[] = "region_merged_seq";

Status RowError(int64_t seq, const std::string& what) {
  return Status::Corruption("region feed compaction: region chunk at sequence " + std::to_string(seq) + ": " + what);
}

}  // namespace

RegionFeedCompactor::RegionFeedCompactor(RegionFeedCompactorOptions options) : options_(options) {
  options_.max_entries = std::clamp<int64_t>(options_.max_entries, 2, static_cast<int64_t>(kMaxRemoteChunkEntries));
  options_.small_row_entries = std::clamp<int64_t>(options_.small_row_entries, 2, options_.max_entries);
  options_.max_source_bytes = std::max<int64_t>(options_.max_source_bytes, 1);
}

Status RegionFeedCompactor::Step(Db* db, int64_t cutoff_ms, RegionFeedMergeResult* result) {
  *result = RegionFeedMergeResult{};
  int64_t mark = 0;
  {
    Stmt m;
    ES_RETURN_IF_ERROR(m.Prepare(db, "SELECT value FROM meta WHERE key = ?"));
    m.Bind(1, std::string_view(kMarkKey));
    Status st;
    if (m.Step(&st)) mark = m.Int(0);
    ES_RETURN_IF_ERROR(st);
  }
  const int64_t old_mark = mark;
  std::vector<SourceRow> run;
  int64_t entries = 0, bytes = 0, stepped_over = 0;
  bool closed = false;
  {
    Stmt rows;
    ES_RETURN_IF_ERROR(rows.Prepare(db, "SELECT seq, n, origin, at, data FROM region_chunks WHERE seq > ? ORDER BY seq"));
    rows.Bind(1, mark);
    Status st;
    bool ended = true;
    while (rows.Step(&st)) {
      const int64_t seq = rows.Int(0), n = rows.Int(1), origin = rows.Int(2), at = rows.Int(3);
      const std::string_view data = rows.Blob(4);
      if (n <= 0) return RowError(seq, "count " + std::to_string(n));
      const bool small = origin != 0 && n < options_.small_row_entries;
      if (!run.empty() && (!small || seq != run.back().seq + run.back().n || entries + n > options_.max_entries ||
                           bytes + static_cast<int64_t>(data.size()) > options_.max_source_bytes)) {
        closed = true;  // what follows cannot join: the run is whole
        ended = false;
        break;
      }
      if (!small) {  // a large batch's row or a merged one: nothing to do
        mark = seq + n - 1;
        if (++stepped_over >= kMaxSteppedOver) {
          result->more = true;
          ended = false;
          break;
        }
        continue;
      }
      if (at > cutoff_ms) {  // too young: the run may still grow
        ended = false;
        break;
      }
      run.push_back(SourceRow{seq, n, origin, at, std::string(data)});
      entries += n;
      bytes += static_cast<int64_t>(data.size());
      if (entries >= options_.max_entries) {
        closed = true;
        ended = false;
        break;
      }
    }
    ES_RETURN_IF_ERROR(st);
    // The end of the feed, every row old enough: the hub is idle, and
    // what is there is as whole as it will be until rows follow.
    if (ended && !run.empty()) closed = true;
  }
  if (closed) {
    bool merged = false;
    if (run.size() >= 2) ES_RETURN_IF_ERROR(Merge(db, run, result, &merged));
    if (!merged) result->left_rows = static_cast<int64_t>(run.size());
    mark = run.back().seq + run.back().n - 1;
    result->more = true;
  }
  if (mark != old_mark) {
    Stmt put;
    ES_RETURN_IF_ERROR(put.Prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"));
    put.Bind(1, std::string_view(kMarkKey));
    put.Bind(2, mark);
    ES_RETURN_IF_ERROR(put.Run());
  }
  return Status::Ok();
}

Status RegionFeedCompactor::Merge(Db* db, const std::vector<SourceRow>& run, RegionFeedMergeResult* result,
                                  bool* merged) {
  *merged = false;
  runs_.clear();
  int64_t min_ts = INT64_MAX, max_ts = INT64_MIN, at = INT64_MIN, n = 0, bytes_before = 0;
  for (const SourceRow& row : run) {
    if (IsMergedRegionChunk(row.data)) return RowError(row.seq, "a merged block under origin " + std::to_string(row.origin));
    Status d = DecodeRemoteChunk(row.data, kMaxRemoteChunkEntries, &decoded_);
    if (!d.ok()) return RowError(row.seq, d.message());
    if (static_cast<int64_t>(decoded_.size()) != row.n) {
      return RowError(row.seq, "holds " + std::to_string(decoded_.size()) + " entries, its row says " +
                                   std::to_string(row.n));
    }
    for (const RemoteChunkEntry& e : decoded_) {
      if (e.kind != 0) continue;  // a device record has no time
      min_ts = std::min(min_ts, e.ts_ms);
      max_ts = std::max(max_ts, e.ts_ms);
    }
    // One origin's rows in a row of the feed join one run while its LSNs
    // keep growing (they do, unless a failover re-based it).
    if (!runs_.empty() && runs_.back().origin == row.origin && decoded_.front().olsn > runs_.back().entries.back().olsn) {
      for (RemoteChunkEntry& e : decoded_) runs_.back().entries.push_back(std::move(e));
    } else {
      runs_.push_back(RegionFeedRun{row.origin, std::move(decoded_)});
      decoded_ = {};
    }
    at = std::max(at, row.at);
    n += row.n;
    bytes_before += static_cast<int64_t>(row.data.size());
  }
  EncodeMergedRegionChunk(runs_, &block_);
  runs_.clear();
  if (static_cast<int64_t>(block_.size()) >= bytes_before) return Status::Ok();  // would not shrink: left as it is
  const int64_t first = run.front().seq, last = run.back().seq;
  Stmt del;
  ES_RETURN_IF_ERROR(del.Prepare(db, "DELETE FROM region_chunks WHERE seq >= ? AND seq <= ?"));
  del.Bind(1, first);
  del.Bind(2, last);
  ES_RETURN_IF_ERROR(del.Run());
  if (db->changes() != static_cast<int64_t>(run.size())) {
    return Status::Conflict("region feed compaction: rows " + std::to_string(first) + ".." + std::to_string(last) +
                           " changed under the step");
  }
  Stmt ins;
  ES_RETURN_IF_ERROR(ins.Prepare(db, "INSERT INTO region_chunks VALUES(?, ?, 0, 0, 0, ?, ?, ?, ?)"));
  ins.Bind(1, first);
  ins.Bind(2, n);
  ins.Bind(3, min_ts);
  ins.Bind(4, max_ts);
  ins.Bind(5, at);
  ins.BindBlob(6, block_);
  ES_RETURN_IF_ERROR(ins.Run());
  *merged = true;
  result->merged_rows = 1;
  result->source_rows = static_cast<int64_t>(run.size());
  result->entries = n;
  result->bytes_before = bytes_before;
  result->bytes_after = static_cast<int64_t>(block_.size());
  return Status::Ok();
}

}  // namespace edgesync

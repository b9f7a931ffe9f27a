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

Status ReadMark(Db* db, int64_t* mark) {
  Stmt m;
  ES_RETURN_IF_ERROR(m.Prepare(db, "SELECT value FROM meta WHERE key = ?"));
  m.Bind(1, std::string_view(kMarkKey));
  Status st;
  *mark = m.Step(&st) ? m.Int(0) : 0;
  return st;
}

}  // namespace

RegionFeedCompactor::RegionFeedCompactor(RegionFeedCompactorOptions options) : options_(options) {
  options_.max_entries = std::clamp<int64_t>(options_.max_entries, 2, static_cast<int64_t>(kMaxRemoteChunkEntries));
  options_.small_row_entries = std::clamp<int64_t>(options_.small_row_entries, 2, options_.max_entries);
  options_.max_source_bytes = std::max<int64_t>(options_.max_source_bytes, 1);
}

Status RegionFeedCompactor::Read(Db* db, int64_t cutoff_ms, RegionFeedMergePlan* plan) {
  *plan = RegionFeedMergePlan{};
  ES_RETURN_IF_ERROR(ReadMark(db, &plan->mark_before));
  int64_t mark = plan->mark_before;
  std::vector<RegionFeedMergePlan::SourceRow>& run = plan->rows;
  int64_t entries = 0, bytes = 0, stepped_over = 0;
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
      plan->closed = true;  // what follows cannot join: the run is whole
      ended = false;
      break;
    }
    if (!small) {  // a large batch's row or a merged one: nothing to do
      mark = seq + n - 1;
      if (++stepped_over >= kMaxSteppedOver) {
        plan->more = true;
        ended = false;
        break;
      }
      continue;
    }
    if (at > cutoff_ms) {  // too young: the run may still grow
      ended = false;
      break;
    }
    run.push_back(RegionFeedMergePlan::SourceRow{seq, n, origin, at, std::string(data)});
    entries += n;
    bytes += static_cast<int64_t>(data.size());
    if (entries >= options_.max_entries) {
      plan->closed = true;
      ended = false;
      break;
    }
  }
  ES_RETURN_IF_ERROR(st);
  // The end of the feed, every row old enough: the hub is idle, and what
  // is there is as whole as it will be until rows follow.
  if (ended && !run.empty()) plan->closed = true;
  if (plan->closed) {
    mark = run.back().seq + run.back().n - 1;
    plan->more = true;
  } else {
    run.clear();  // an open run waits for the next step
  }
  plan->mark_after = mark;
  return Status::Ok();
}

Status RegionFeedCompactor::Build(RegionFeedMergePlan* plan) {
  plan->merge = false;
  if (plan->rows.size() < 2) return Status::Ok();
  runs_.clear();
  int64_t min_ts = INT64_MAX, max_ts = INT64_MIN, at = INT64_MIN, n = 0, bytes_before = 0;
  for (const RegionFeedMergePlan::SourceRow& row : plan->rows) {
    if (IsMergedRegionChunk(row.data)) {
      return RowError(row.seq, "a merged block under origin " + std::to_string(row.origin));
    }
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
    // One origin's consecutive rows join one run while its LSNs keep
    // growing (they do, unless a failover re-based it).
    if (!runs_.empty() && runs_.back().origin == row.origin &&
        decoded_.front().olsn > runs_.back().entries.back().olsn) {
      for (RemoteChunkEntry& e : decoded_) runs_.back().entries.push_back(std::move(e));
    } else {
      runs_.push_back(RegionFeedRun{row.origin, std::move(decoded_)});
      decoded_ = {};
    }
    at = std::max(at, row.at);
    n += row.n;
    bytes_before += static_cast<int64_t>(row.data.size());
  }
  EncodeMergedRegionChunk(runs_, &plan->block);
  runs_.clear();
  // Left as it is unless it shrinks.
  plan->merge = static_cast<int64_t>(plan->block.size()) < bytes_before;
  plan->n = n;
  plan->min_ts = min_ts;
  plan->max_ts = max_ts;
  plan->at = at;
  plan->bytes_before = bytes_before;
  return Status::Ok();
}

Status RegionFeedCompactor::Write(Db* db, const RegionFeedMergePlan& plan, RegionFeedMergeResult* result) {
  *result = RegionFeedMergeResult{};
  int64_t mark = 0;
  ES_RETURN_IF_ERROR(ReadMark(db, &mark));
  if (mark != plan.mark_before) {
    return Status::Conflict("region feed compaction: the feed was compacted meanwhile (mark " +
                            std::to_string(plan.mark_before) + " is now " + std::to_string(mark) + ")");
  }
  if (plan.merge) {
    const int64_t first = plan.rows.front().seq, last = plan.rows.back().seq;
    Stmt del;
    ES_RETURN_IF_ERROR(del.Prepare(db, "DELETE FROM region_chunks WHERE seq >= ? AND seq <= ?"));
    del.Bind(1, first);
    del.Bind(2, last);
    ES_RETURN_IF_ERROR(del.Run());
    // Rows are never changed in place: the same count in the same range
    // are the rows read (retention only deletes from the oldest).
    if (db->changes() != static_cast<int64_t>(plan.rows.size())) {
      return Status::Conflict("region feed compaction: rows " + std::to_string(first) + ".." + std::to_string(last) +
                              " changed meanwhile");
    }
    Stmt ins;
    ES_RETURN_IF_ERROR(ins.Prepare(db, "INSERT INTO region_chunks VALUES(?, ?, 0, 0, 0, ?, ?, ?, ?)"));
    ins.Bind(1, first);
    ins.Bind(2, plan.n);
    ins.Bind(3, plan.min_ts);
    ins.Bind(4, plan.max_ts);
    ins.Bind(5, plan.at);
    ins.BindBlob(6, plan.block);
    ES_RETURN_IF_ERROR(ins.Run());
    result->merged_rows = 1;
    result->source_rows = static_cast<int64_t>(plan.rows.size());
    result->entries = plan.n;
    result->bytes_before = plan.bytes_before;
    result->bytes_after = static_cast<int64_t>(plan.block.size());
  } else {
    result->left_rows = static_cast<int64_t>(plan.rows.size());
  }
  if (plan.mark_after != plan.mark_before) {
    Stmt put;
    ES_RETURN_IF_ERROR(put.Prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)"));
    put.Bind(1, std::string_view(kMarkKey));
    put.Bind(2, plan.mark_after);
    ES_RETURN_IF_ERROR(put.Run());
  }
  result->more = plan.more;
  return Status::Ok();
}

Status RegionFeedCompactor::Step(Db* db, int64_t cutoff_ms, RegionFeedMergeResult* result) {
  *result = RegionFeedMergeResult{};
  RegionFeedMergePlan plan;
  ES_RETURN_IF_ERROR(Read(db, cutoff_ms, &plan));
  ES_RETURN_IF_ERROR(Build(&plan));
  return Write(db, plan, result);
}

}  // namespace edgesync

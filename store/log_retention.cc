#include "store/log_retention.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>

#include "platform/files.h"
#include "platform/log.h"
#include "store/chunk_codec.h"
#include "store/chunk_compactor.h"
#include "store/schema.h"

namespace edgesync {
namespace {

// A reading in a chunk takes ~2-3 bytes with the row's share (schema.h);
// room is estimated with some margin.
constexpr int64_t kDiskBytesPerReading = 8;
// Retention prunes early above kSpaceHighPercent of max_bytes, down to
// kSpaceLowPercent: room made in the background before ingest meets the limit.
constexpr int64_t kSpaceHighPercent = 90;
constexpr int64_t kSpaceLowPercent = 80;

// The n oldest readings at or below limit: the last one's LSN, how many, and
// how many of them lie above split.
struct Oldest {
  int64_t upto = 0;
  int64_t count = 0;
  int64_t above = 0;
};

// Readings of [first, last] above split.
int64_t Above(int64_t first, int64_t last, int64_t split) { return std::max<int64_t>(0, last - std::max(first - 1, split)); }

// A compacted span (chunks at or below compacted_upto, store/chunk_compactor.h)
// goes whole: cutting one would rewrite every series block in it. Its
// readings are all acknowledged (only those are compacted), so taking more
// of them than asked frees room and loses nothing the uplink needs.
// *take_last: the last LSN to take from [first, last]; false = stop here.
bool TakeWhole(int64_t first, int64_t last, int64_t compacted, int64_t limit, int64_t taken, int64_t* take_last) {
  if (last > compacted || *take_last >= last) return *take_last >= first;
  if (taken > 0 || last > limit) return false;
  *take_last = last;
  return true;
}

Status SelectOldest(Db* db, int64_t limit, int64_t n, int64_t split, Oldest* out) {
  *out = Oldest{};
  int64_t compacted = 0;
  ES_RETURN_IF_ERROR(chunk_compactor::CompactedUpTo(db, &compacted));
  Stmt s;
  // In first_lsn order with no WHERE: the scan stops at the first chunk
  // past what is wanted instead of filtering the whole table.
  ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT first_lsn, last_lsn FROM chunks ORDER BY first_lsn"));
  Status st;
  while (out->count < n && s.Step(&st)) {
    const int64_t first = s.Int(0);
    int64_t take_last = std::min({s.Int(1), limit, first + (n - out->count) - 1});
    if (!TakeWhole(first, s.Int(1), compacted, limit, out->count, &take_last)) break;
    out->upto = take_last;
    out->count += take_last - first + 1;
    out->above += Above(first, take_last, split);
  }
  return st;
}

// Deletes every reading with LSN <= upto: whole chunks and spans (with
// their series blocks), and the head of the commit chunk holding upto,
// rewritten without it (its row moves to its new first LSN; LSNs never
// change). upto never falls inside a span (TakeWhole).
Status DeleteReadingsUpTo(Db* db, int64_t upto) {
  {
    int64_t compacted = 0;
    ES_RETURN_IF_ERROR(chunk_compactor::CompactedUpTo(db, &compacted));
    Stmt spans, blocks;
    ES_RETURN_IF_ERROR(spans.Prepare(db, "SELECT first_lsn, last_lsn, data FROM chunks WHERE first_lsn <= ? AND "
                                         "last_lsn <= ? ORDER BY first_lsn"));
    ES_RETURN_IF_ERROR(blocks.Prepare(db, "DELETE FROM series_chunks WHERE id >= ? AND id < ?"));
    spans.Bind(1, upto);
    spans.Bind(2, compacted);
    Status st;
    while (spans.Step(&st)) {
      // Commit chunks that compaction kept as they were (not smaller as
      // series blocks) are below compacted_upto too; they go as chunks.
      if (!IsSpanMarker(spans.Blob(2))) continue;
      if (spans.Int(1) > upto) {
        return Status::Corruption("retention would cut the compacted span at LSN " + std::to_string(spans.Int(0)));
      }
      SpanMarker m;
      ES_RETURN_IF_ERROR(DecodeSpanMarker(spans.Blob(2), &m).Annotate("span at LSN " + std::to_string(spans.Int(0))));
      blocks.Bind(1, m.first_block);
      blocks.Bind(2, m.first_block + m.blocks);
      ES_RETURN_IF_ERROR(blocks.Run());
    }
    ES_RETURN_IF_ERROR(st);
  }
  Stmt straddle;
  ES_RETURN_IF_ERROR(straddle.Prepare(db,
                                      "SELECT first_lsn, last_lsn, written_at, data FROM chunks WHERE first_lsn = "
                                      "(SELECT max(first_lsn) FROM chunks WHERE first_lsn <= ?) AND last_lsn > ?"));
  straddle.Bind(1, upto);
  straddle.Bind(2, upto);
  Status st;
  bool trim = false;
  int64_t first = 0, last = 0, written_at = 0;
  std::vector<ChunkReading> readings;
  if (straddle.Step(&st)) {
    trim = true;
    first = straddle.Int(0);
    last = straddle.Int(1);
    written_at = straddle.Int(2);
    Status d = DecodeChunk(straddle.Blob(3), kMaxChunkReadings, &readings);
    if (!d.ok()) return Status::Corruption("chunk at LSN " + std::to_string(first) + ": " + d.message());
    if (static_cast<int64_t>(readings.size()) != last - first + 1) {
      return Status::Corruption("chunk at LSN " + std::to_string(first) + " holds the wrong number of readings");
    }
  }
  ES_RETURN_IF_ERROR(st);
  straddle.Reset();
  Stmt del;
  ES_RETURN_IF_ERROR(del.Prepare(db, "DELETE FROM chunks WHERE first_lsn <= ?"));
  del.Bind(1, upto);
  ES_RETURN_IF_ERROR(del.Run());
  if (!trim) return Status::Ok();
  readings.erase(readings.begin(), readings.begin() + (upto - first + 1));
  Stmt ins;
  ES_RETURN_IF_ERROR(ins.Prepare(db, kInsertChunkSql));
  std::string block;
  return InsertChunkRow(&ins, readings, upto + 1, written_at, &block);
}

}  // namespace

// max_bytes is checked against the pages in use (free pages are reused
// before the file grows), before a batch is written.
Status LogRetention::CheckSpace(Db* db, size_t n, int64_t* to_drop) {
  *to_drop = 0;
  const bool drop = options_.disk_policy == StoreOptions::DiskPolicy::kDropOldest;
  if (options_.max_bytes <= 0 && !drop) return Status::Ok();  // the filesystem will say so
  int64_t pages = 0, free_pages = 0, page_size = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("PRAGMA page_count", &pages));
  ES_RETURN_IF_ERROR(db->QueryInt("PRAGMA freelist_count", &free_pages));
  ES_RETURN_IF_ERROR(db->QueryInt("PRAGMA page_size", &page_size));
  int64_t used = (pages - free_pages) * page_size;
  int64_t need = static_cast<int64_t>(n) * kDiskBytesPerReading;
  int64_t limit = options_.max_bytes > 0 ? options_.max_bytes : INT64_MAX;
  if (drop) {
    // Under drop-oldest, room must be made before the filesystem is full:
    // once it is, neither a new row nor the checkpoint that would recycle
    // the WAL can be written. Deleted rows free pages inside the file (which
    // new rows reuse), not bytes on the filesystem, so the file may grow
    // only into what the WAL does not still need.
    Result<uint64_t> fs_free = FreeBytes(options_.path);
    struct stat wal;
    int64_t wal_size = ::stat((options_.path + "-wal").c_str(), &wal) == 0 ? wal.st_size : 0;
    if (fs_free.ok()) {
      int64_t wal_room = std::max<int64_t>(0, wal_max_bytes_ - wal_size) + 2 * need + 65536;
      int64_t fs_limit = pages * page_size + static_cast<int64_t>(*fs_free) - wal_room;
      limit = std::min(limit, fs_limit);
    }
    struct rlimit lim;  // a per-file size limit caps the file the same way
    if (::getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
      limit = std::min(limit, static_cast<int64_t>(lim.rlim_cur) - 2 * need - 65536);
    }
  }
  if (used + need <= limit) return Status::Ok();
  // Under reject-new the caller may still make room from acknowledged
  // readings (AppendOnce); only if there are too few is the batch refused.
  *to_drop = std::max<int64_t>(static_cast<int64_t>(n), (used + need - limit) / kDiskBytesPerReading);
  return Status::Ok();
}

// Inside the caller's transaction. Drops the n oldest readings (acknowledged
// ones are always the oldest: acknowledgements cover a prefix of the log).
Status LogRetention::DropOldest(Db* db, int64_t high, int64_t n, bool acked_only, int64_t* dropped_unacked, int64_t* removed) {
  *dropped_unacked = 0;
  *removed = 0;
  int64_t acked = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &acked));
  Oldest oldest;
  ES_RETURN_IF_ERROR(SelectOldest(db, acked_only ? acked : INT64_MAX, n, acked, &oldest));
  if (oldest.count == 0) return Status::Ok();
  const int64_t unacked = oldest.above;
  ES_RETURN_IF_ERROR(WriteMetaInt(db, "high_lsn", high));  // the high LSN outlives its rows
  ES_RETURN_IF_ERROR(DeleteReadingsUpTo(db, oldest.upto));
  *removed = oldest.count;
  if (oldest.count > unacked) {
    // Acknowledged ones: a region holds them, but this gateway's own
    // history shrinks, so they are counted and said (every 10 s at most).
    int64_t total = 0;
    ES_RETURN_IF_ERROR(ReadMetaInt(db, "dropped_acked", &total));
    ES_RETURN_IF_ERROR(WriteMetaInt(db, "dropped_acked", total + oldest.count - unacked));
    acked_drop_log_pending_ += oldest.count - unacked;
    const int64_t now = clock_->MonotonicMillis();
    if (last_acked_drop_log_ms_ == 0 || now - last_acked_drop_log_ms_ >= 10000) {
      ES_LOG(kInfo, "store {}: full, dropped the {} oldest acknowledged readings to make room (a region holds them)",
             options_.path, acked_drop_log_pending_);
      acked_drop_log_pending_ = 0;
      last_acked_drop_log_ms_ = now;
    }
  }
  if (unacked > 0) {
    int64_t total = 0;
    ES_RETURN_IF_ERROR(ReadMetaInt(db, "dropped_oldest", &total));
    ES_RETURN_IF_ERROR(WriteMetaInt(db, "dropped_oldest", total + unacked));
    // Once full, every batch drops some: say so every 10 s, not per batch.
    drop_log_pending_ += unacked;
    int64_t now = clock_->MonotonicMillis();
    if (last_drop_log_ms_ == 0 || now - last_drop_log_ms_ >= 10000) {
      ES_LOG(kWarn, "store {}: full, dropped {} unacknowledged oldest readings (disk policy drop-oldest)",
             options_.path, drop_log_pending_);
      drop_log_pending_ = 0;
      last_drop_log_ms_ = now;
    }
  }
  *dropped_unacked = unacked;
  return Status::Ok();
}

Status LogRetention::SpaceLow(Db* db, bool* low) {
  int64_t pages = 0, free_pages = 0, page_size = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("PRAGMA page_count", &pages));
  ES_RETURN_IF_ERROR(db->QueryInt("PRAGMA freelist_count", &free_pages));
  ES_RETURN_IF_ERROR(db->QueryInt("PRAGMA page_size", &page_size));
  const int64_t used = (pages - free_pages) * page_size;
  bool over = false, clear = true;
  if (options_.max_bytes > 0) {
    over = used * 100 > options_.max_bytes * kSpaceHighPercent;
    clear = used * 100 <= options_.max_bytes * kSpaceLowPercent;
  }
  if (options_.min_free_bytes > 0) {
    Result<uint64_t> fs_free = FreeBytes(options_.path);
    if (fs_free.ok()) {
      // The store's free pages are room for its next rows as much as the
      // filesystem's free bytes are.
      int64_t room = static_cast<int64_t>(*fs_free) + free_pages * page_size;
      over = over || room < options_.min_free_bytes;
      clear = clear && room >= options_.min_free_bytes + options_.min_free_bytes / 4;
    }
  }
  // At a steady rate against the limit this state comes and goes every few
  // passes: say so once a minute at most.
  const int64_t now_ms = clock_->MonotonicMillis();
  if (over && !space_low_ && (last_space_log_ms_ == INT64_MIN || now_ms - last_space_log_ms_ >= 60000)) {
    ES_LOG(kWarn, "store {}: space is low ({} bytes in use, limit {}); pruning acknowledged data oldest first",
           options_.path, used, options_.max_bytes);
    last_space_log_ms_ = now_ms;
  }
  space_low_ = over || (space_low_ && !clear);
  *low = space_low_;
  return Status::Ok();
}

// Acknowledged readings, oldest first: past the retention age, or any of them
// when space is low. Age is chunk-grained (a chunk's write time); a clock
// stepped back only delays pruning. At most about max_rows readings (whole
// chunks, at least one) go in a step.
Status LogRetention::PruneReadings(Db* db, int64_t high, int64_t max_rows, int64_t now, bool space_low, PruneResult* result) {
  int64_t acked = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &acked));
  if (acked > 0 && options_.ack_grace_ms > 0) {
    int64_t bound = 0;
    ES_RETURN_IF_ERROR(AckGraceBound(db, now, acked, &bound));
    if (!space_low) acked = std::min(acked, bound);
  }
  if (acked <= 0) return Status::Ok();
  const int64_t cutoff = now - options_.retention_age_ms;
  int64_t upto = 0, count = 0, early = 0, compacted = 0;
  bool more = false;
  ES_RETURN_IF_ERROR(chunk_compactor::CompactedUpTo(db, &compacted));
  {
    Stmt c;
    ES_RETURN_IF_ERROR(c.Prepare(db, "SELECT first_lsn, last_lsn, written_at FROM chunks ORDER BY first_lsn"));
    Status st;
    while (c.Step(&st)) {
      const int64_t first = c.Int(0), last = c.Int(1);
      const bool old = c.Int(2) < cutoff;
      if (!old && !space_low) break;
      if (count >= max_rows) {
        more = true;
        break;
      }
      int64_t take_last = std::min({last, acked, first + (max_rows - count) - 1});
      if (!TakeWhole(first, last, compacted, acked, count, &take_last)) {
        more = count > 0 && last <= acked;  // stopped by max_rows before a whole span
        break;
      }
      upto = take_last;
      count += take_last - first + 1;
      if (!old) early += take_last - first + 1;
      if (take_last < last) {
        more = take_last < acked;  // stopped by max_rows, not by the acknowledgement
        break;
      }
    }
    ES_RETURN_IF_ERROR(st);
  }
  if (count == 0) return Status::Ok();
  ES_RETURN_IF_ERROR(WriteMetaInt(db, "high_lsn", high));  // LSNs are never reused
  ES_RETURN_IF_ERROR(DeleteReadingsUpTo(db, upto));
  // The time index keeps the batch row covering upto + 1.
  Stmt b;
  ES_RETURN_IF_ERROR(b.Prepare(db,
                               "DELETE FROM batches WHERE first_lsn < (SELECT max(first_lsn) FROM batches "
                               "WHERE first_lsn <= ?)"));
  b.Bind(1, upto + 1);
  ES_RETURN_IF_ERROR(b.Run());
  result->readings += count;
  result->early += early;
  if (more || count >= max_rows) result->more = true;
  return Status::Ok();
}

// Samples of (wall time, acknowledged LSN), one taken whenever the newest is
// a quarter of the grace old: the newest sample at least the grace old
// bounds what may go, so a reading stays between the grace and 1.25 times
// it after its acknowledgement. Five samples: the oldest is always past the
// grace once the store has been acknowledging that long. A clock stepped
// back only delays pruning.
Status LogRetention::AckGraceBound(Db* db, int64_t now, int64_t acked, int64_t* bound) {
  constexpr int kSamples = 5;
  const int64_t period = std::max<int64_t>(1, options_.ack_grace_ms / (kSamples - 1));
  int64_t at[kSamples], lsn[kSamples];
  int oldest = 0;
  int64_t newest_at = INT64_MIN;
  *bound = 0;
  for (int i = 0; i < kSamples; ++i) {
    ES_RETURN_IF_ERROR(ReadMetaInt(db, "ack_grace_at_" + std::to_string(i), &at[i]));
    ES_RETURN_IF_ERROR(ReadMetaInt(db, "ack_grace_lsn_" + std::to_string(i), &lsn[i]));
    if (at[i] < at[oldest]) oldest = i;
    newest_at = std::max(newest_at, at[i]);
    if (at[i] > 0 && at[i] <= now - options_.ack_grace_ms) *bound = std::max(*bound, lsn[i]);
  }
  if (newest_at <= 0 || now - newest_at >= period) {
    ES_RETURN_IF_ERROR(WriteMetaInt(db, "ack_grace_at_" + std::to_string(oldest), now));
    ES_RETURN_IF_ERROR(WriteMetaInt(db, "ack_grace_lsn_" + std::to_string(oldest), acked));
  }
  return Status::Ok();
}

// Tombstones past their retention leave the log and the device table.
Status LogRetention::PruneTombstones(Db* db, int64_t max_rows, int64_t now, PruneResult* result) {
  Stmt tomb;
  ES_RETURN_IF_ERROR(tomb.Prepare(db, "SELECT lsn FROM devices WHERE deleted = 1 AND updated_at < ? LIMIT ?"));
  tomb.Bind(1, now - options_.tombstone_retention_ms);
  tomb.Bind(2, max_rows);
  Status st;
  std::vector<int64_t> lsns;
  while (tomb.Step(&st)) lsns.push_back(tomb.Int(0));
  ES_RETURN_IF_ERROR(st);
  if (lsns.empty()) return Status::Ok();
  Stmt dl, dd;
  ES_RETURN_IF_ERROR(dl.Prepare(db, "DELETE FROM log WHERE lsn = ?"));
  ES_RETURN_IF_ERROR(dd.Prepare(db, "DELETE FROM devices WHERE lsn = ? AND deleted = 1"));
  for (int64_t l : lsns) {
    dl.Bind(1, l);
    ES_RETURN_IF_ERROR(dl.Run());
    dd.Bind(1, l);
    ES_RETURN_IF_ERROR(dd.Run());
  }
  result->tombstones += static_cast<int64_t>(lsns.size());
  if (static_cast<int64_t>(lsns.size()) >= max_rows) result->more = true;
  return Status::Ok();
}

// Read view (gateway) and region feed (hub): the oldest chunks applied
// before the cutoff, or the oldest ones when space is low, whole chunks of
// at most about max_rows entries in all (at least one). Both tables are in
// apply order (row ids and sequences grow together with it), so "old" is a
// prefix of each.
Status LogRetention::PruneRemote(Db* db, int64_t max_rows, int64_t now, bool space_low, PruneResult* result) {
  const int64_t cutoff = now - options_.remote_retention_ms;
  int64_t budget = max_rows;
  for (const char* table : {"view_chunks", "region_chunks"}) {
    const std::string key = std::string(table) == "view_chunks" ? "id" : "seq";
    Stmt s;
    ES_RETURN_IF_ERROR(s.Prepare(db, ("SELECT " + key + ", n, at FROM " + table + " ORDER BY " + key +
                                              " LIMIT ?").c_str()));
    s.Bind(1, max_rows);
    Status st;
    int64_t upto = -1, last_n = 0, count = 0;
    while (s.Step(&st)) {
      if (budget <= 0 || (!space_low && s.Int(2) >= cutoff)) break;
      upto = s.Int(0);
      last_n = s.Int(1);
      count += last_n;
      budget -= last_n;
    }
    ES_RETURN_IF_ERROR(st);
    s.Reset();
    if (upto < 0) continue;
    Stmt d;
    ES_RETURN_IF_ERROR(d.Prepare(db, ("DELETE FROM " + std::string(table) + " WHERE " + key + " <= ?").c_str()));
    d.Bind(1, upto);
    ES_RETURN_IF_ERROR(d.Run());
    if (key == "seq") {
      // A reader behind what went gets an explicit reset
      // (region_pruned_seq), never a page that silently skips entries.
      int64_t old = 0;
      ES_RETURN_IF_ERROR(ReadMetaInt(db, "region_pruned_seq", &old));
      ES_RETURN_IF_ERROR(WriteMetaInt(db, "region_pruned_seq", std::max(old, upto + last_n - 1)));
    }
    result->remote += count;
  }
  if (budget <= 0) result->more = true;
  return Status::Ok();
}

Status LogRetention::Step(Db* db, int64_t high, int64_t max_rows, int64_t now, PruneResult* result) {
  bool low = false;
  ES_RETURN_IF_ERROR(SpaceLow(db, &low));
  result->space_low = low;
  ES_RETURN_IF_ERROR(PruneReadings(db, high, max_rows, now, low, result));
  ES_RETURN_IF_ERROR(PruneTombstones(db, max_rows, now, result));
  return PruneRemote(db, max_rows, now, low, result);
}

}  // namespace edgesync

// The change log's read side: the whole log for the uplink, the per-range
// feed with its continuations, ranges, device records. A time correction
// (the whole origin's) is in the whole log only.
#include <algorithm>

#include "store/schema.h"
#include "store/clock_period_table.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {

Status SqliteStore::GetDevice(const std::string& device_id, DeviceRecord* device) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", device_id));
  MutexLock lock(&read_mu_);
  ChangeEntry e;
  ES_RETURN_IF_ERROR(FillDeviceEntry(device_id, &e));
  *device = e.device;
  return Status::Ok();
}

Status SqliteStore::FillDeviceEntry(const std::string& device_id, ChangeEntry* e) {
  StmtScope scope(&r_device_);
  r_device_.Bind(1, std::string_view(device_id));
  Status st;
  if (!r_device_.Step(&st)) {
    ES_RETURN_IF_ERROR(st);
    return Status::NotFound("device " + device_id + " has no record");
  }
  e->device.device_id = device_id;
  e->device.name = r_device_.Text(0);
  e->device.location = r_device_.Text(1);
  e->device.default_unit = r_device_.Text(2);
  e->device.deleted = r_device_.Int(3) != 0;
  return Status::Ok();
}

Status SqliteStore::ListRanges(std::vector<RangeInfo>* ranges) {
  MutexLock lock(&read_mu_);
  std::vector<RangeRow> rows;
  ES_RETURN_IF_ERROR(LoadRanges(&read_db_, &rows));
  ranges->clear();
  for (const auto& r : rows) ranges->push_back(r.info);
  std::sort(ranges->begin(), ranges->end(), [](const RangeInfo& a, const RangeInfo& b) { return a.id < b.id; });
  return Status::Ok();
}

Status SqliteStore::NextChunk(uint64_t after, bool* found, int64_t* first_lsn, int64_t* last_lsn,
                              const std::vector<ChunkReading>** readings) {
  *found = false;
  {
    StmtScope scope(&r_chunk_after_);
    r_chunk_after_.Bind(1, static_cast<int64_t>(after));
    Status st;
    if (!r_chunk_after_.Step(&st)) return st;
    *first_lsn = r_chunk_after_.Int(0);
    *last_lsn = r_chunk_after_.Int(1);
  }
  if (*first_lsn != decoded_first_ || *last_lsn != decoded_last_) {
    decoded_first_ = 0;
    StmtScope scope(&r_chunk_data_);
    r_chunk_data_.Bind(1, *first_lsn);
    Status st;
    if (!r_chunk_data_.Step(&st)) {
      ES_RETURN_IF_ERROR(st);
      return Status::Corruption("chunk " + std::to_string(*first_lsn) + " vanished inside a snapshot");
    }
    ES_RETURN_IF_ERROR(DecodeChunkRow(&read_db_, r_chunk_data_.Blob(0), *first_lsn, *last_lsn, &decoded_));
    decoded_first_ = *first_lsn;
    decoded_last_ = *last_lsn;
  }
  *readings = &decoded_;
  *found = true;
  return Status::Ok();
}

// Merges the two tables of the log in LSN order: readings from chunks,
// device records from `log`.
Status SqliteStore::ReadRows(uint64_t after_lsn, size_t max_entries, const RangeInfo* range, size_t scan_budget,
                             std::vector<ChangeEntry>* entries, uint64_t* last_scanned) {
  uint64_t cur = after_lsn;
  size_t scanned = 0;
  while (entries->size() < max_entries && scanned < scan_budget) {
    bool have_device = false;
    uint64_t device_lsn = 0;
    int64_t device_kind = 0, device_series = 0, device_quality = 0;
    {
      StmtScope scope(&r_log_after_);
      r_log_after_.Bind(1, static_cast<int64_t>(cur));
      Status st;
      if (r_log_after_.Step(&st)) {
        have_device = true;
        device_lsn = static_cast<uint64_t>(r_log_after_.Int(0));
        device_kind = r_log_after_.Int(1);
        device_series = r_log_after_.Int(2);
        device_quality = r_log_after_.Int(3);
      }
      ES_RETURN_IF_ERROR(st);
    }
    bool have_chunk = false;
    int64_t first = 0, last = 0;
    const std::vector<ChunkReading>* chunk = nullptr;
    ES_RETURN_IF_ERROR(NextChunk(cur, &have_chunk, &first, &last, &chunk));
    if (!have_device && !have_chunk) break;
    if (have_device && (!have_chunk || device_lsn < static_cast<uint64_t>(first))) {
      ++scanned;
      cur = device_lsn;
      if (device_kind == static_cast<int64_t>(ChangeEntry::Kind::kTimeCorrection)) {
        // The whole origin's, no device: the uplink's, not a range's.
        if (range) continue;
        ChangeEntry e;
        e.lsn = device_lsn;
        e.kind = ChangeEntry::Kind::kTimeCorrection;
        Status d = clock_period_table::CorrectionOf(&read_db_, static_cast<uint32_t>(device_quality), &e.correction);
        if (!d.ok()) return Status::Corruption("log entry " + std::to_string(device_lsn) + ": " + d.message());
        entries->push_back(std::move(e));
        continue;
      }
      SeriesInfo info;
      ES_RETURN_IF_ERROR(SeriesById(device_series, &info));
      if (range && !range->Contains(info.hash)) continue;
      ChangeEntry e;
      e.lsn = device_lsn;
      e.kind = static_cast<ChangeEntry::Kind>(device_kind);
      Status d = FillDeviceEntry(info.device_id, &e);
      if (!d.ok()) return Status::Corruption("log entry " + std::to_string(device_lsn) + ": " + d.message());
      entries->push_back(std::move(e));
      continue;
    }
    // A chunk's LSNs are consecutive: the readings after cur, in order.
    for (uint64_t lsn = std::max(cur + 1, static_cast<uint64_t>(first));
         lsn <= static_cast<uint64_t>(last) && entries->size() < max_entries && scanned < scan_budget; ++lsn) {
      const ChunkReading& c = (*chunk)[lsn - static_cast<uint64_t>(first)];
      ++scanned;
      cur = lsn;
      SeriesInfo info;
      ES_RETURN_IF_ERROR(SeriesById(c.series, &info));
      if (range && !range->Contains(info.hash)) continue;
      ChangeEntry e;
      e.lsn = lsn;
      e.kind = ChangeEntry::Kind::kReading;
      e.reading.device_id = std::move(info.device_id);
      e.reading.metric = std::move(info.metric);
      e.reading.unit = std::move(info.unit);
      e.reading.ts_ms = c.ts_ms;
      e.reading.value = c.value;
      e.reading.quality = c.quality;
      entries->push_back(std::move(e));
    }
  }
  *last_scanned = cur;
  return Status::Ok();
}

Status SqliteStore::ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) {
  entries->clear();
  if (max_entries == 0) return Status::Ok();
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);  // one snapshot across chunks and device lookups
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  uint64_t last = 0;
  return ReadRows(after_lsn, max_entries, nullptr, SIZE_MAX, entries, &last);
}

Status SqliteStore::CompleteThrough(uint64_t lsn, int64_t* through_ms) {
  *through_ms = 0;
  if (lsn > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("LSN out of range");
  // In this order: a commit group not yet announced when `writing` is read
  // takes its written_at after `now`.
  const int64_t now = clock_->WallMillis();
  const bool writing = appending_.load() > 0;
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);  // the group past lsn and the newest one, of one state
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  // The group holding lsn + 1, else the first one after it (device records
  // between are no readings). By first_lsn, the chunks' key: never a scan.
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_,
                               "SELECT ifnull((SELECT written_at FROM chunks WHERE first_lsn <= ?1 AND last_lsn > ?1 "
                               "AND first_lsn = (SELECT max(first_lsn) FROM chunks WHERE first_lsn <= ?1)), "
                               "(SELECT written_at FROM chunks WHERE first_lsn > ?1 ORDER BY first_lsn LIMIT 1))"));
  s.Bind(1, static_cast<int64_t>(lsn));
  Status st;
  bool past = false;
  if (s.Step(&st) && sqlite3_column_type(s.get(), 0) != SQLITE_NULL) {
    *through_ms = s.Int(0);
    past = true;
  }
  ES_RETURN_IF_ERROR(st);
  if (past) return Status::Ok();
  if (!writing) {
    *through_ms = now;
    return Status::Ok();
  }
  // A group is being written (its LSNs past lsn, its written_at perhaps
  // before now): every reading committed before the newest group's
  // written_at is in it or older.
  int64_t newest = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull((SELECT written_at FROM chunks ORDER BY first_lsn DESC LIMIT 1), 0)",
                                       &newest));
  *through_ms = newest;
  return Status::Ok();
}

Status SqliteStore::ResolveStart(uint32_t range_id, const std::vector<RangeRow>& rows, const FeedStart& from,
                                 uint64_t* after) {
  switch (from.kind) {
    case FeedStart::Kind::kBeginning:
      *after = 0;
      return Status::Ok();
    case FeedStart::Kind::kLsn:
      *after = from.lsn;
      return Status::Ok();
    case FeedStart::Kind::kNow: {
      int64_t high = 0;
      ES_RETURN_IF_ERROR(read_db_.QueryInt(kHighLsnSql, &high));
      *after = static_cast<uint64_t>(high);
      return Status::Ok();
    }
    case FeedStart::Kind::kTime: {
      // Entries are in LSN order; the first one written at or after the
      // time starts the feed (a later clock step back cannot rewind it).
      // Device records have a batches row each; chunks carry their write
      // time, and the batches row before the time (one per ten seconds of
      // appends) says where to look for the first chunk at or after it.
      Stmt s;
      ES_RETURN_IF_ERROR(s.Prepare(
          &read_db_,
          "SELECT min(ifnull((SELECT first_lsn - 1 FROM batches WHERE written_at >= ?1 ORDER BY first_lsn LIMIT 1),"
          " ?2), ifnull((SELECT first_lsn - 1 FROM chunks WHERE first_lsn >= ifnull((SELECT max(first_lsn) FROM "
          "batches WHERE written_at < ?1), 0) AND written_at >= ?1 ORDER BY first_lsn LIMIT 1), ?2))"));
      int64_t high = 0;
      ES_RETURN_IF_ERROR(read_db_.QueryInt(kHighLsnSql, &high));
      s.Bind(1, from.wall_ms);
      s.Bind(2, high);
      Status st;
      int64_t v = s.Step(&st) ? s.Int(0) : 0;
      ES_RETURN_IF_ERROR(st);
      *after = static_cast<uint64_t>(v);
      return Status::Ok();
    }
    case FeedStart::Kind::kToken: {
      FeedToken t;
      ES_RETURN_IF_ERROR(DecodeFeedToken(from.token, &t));
      if (t.epoch != origin_.epoch) {
        return Status::InvalidArgument("continuation token is from store epoch " + t.epoch + ", this store is epoch " +
                                       origin_.epoch + " (the store was re-created); start again from beginning");
      }
      // The token's range must be this range or one of its ancestors.
      uint32_t cur = range_id;
      for (size_t hops = 0; cur != 0 && hops <= rows.size(); ++hops) {
        if (cur == t.range_id) {
          *after = t.lsn;
          return Status::Ok();
        }
        const RangeRow* row = FindRange(rows, cur);
        cur = row ? row->info.parent : 0;
      }
      return Status::InvalidArgument("continuation token belongs to range " + std::to_string(t.range_id) +
                                     ", which is neither range " + std::to_string(range_id) + " nor its ancestor");
    }
  }
  return Status::InvalidArgument("unknown feed start");
}

Status SqliteStore::ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) {
  page->entries.clear();
  page->continuation.clear();
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  std::vector<RangeRow> rows;
  ES_RETURN_IF_ERROR(LoadRanges(&read_db_, &rows));
  const RangeRow* row = FindRange(rows, range_id);
  if (!row) return Status::NotFound("range " + std::to_string(range_id) + " does not exist");
  const RangeInfo* range = &row->info;
  if (!range->active) {
    std::string children;
    for (const auto& r : rows) {
      if (r.info.parent == range_id) children += (children.empty() ? "" : " and ") + std::to_string(r.info.id);
    }
    return Status::NotFound("range " + std::to_string(range_id) + " has split into ranges " + children +
                            "; read those with this range's continuation");
  }
  uint64_t after = 0;
  ES_RETURN_IF_ERROR(ResolveStart(range_id, rows, from, &after));
  max_entries = std::min<size_t>(max_entries, 100000);
  uint64_t last = after;
  if (max_entries > 0) {
    // A sparse range must not turn one page into a scan of the whole log:
    // stop after a bounded scan and continue from where it stopped.
    size_t budget = std::max<size_t>(max_entries * 64, 65536);
    ES_RETURN_IF_ERROR(ReadRows(after, max_entries, range, budget, &page->entries, &last));
  }
  page->continuation = EncodeFeedToken(FeedToken{range_id, origin_.epoch, last});
  return Status::Ok();
}

}  // namespace edgesync

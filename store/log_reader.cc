#include "store/log_reader.h"

#include <sqlite3.h>

#include <algorithm>

#include "store/chunk_compactor.h"
#include "store/clock_period_table.h"
#include "store/schema.h"
#include "store/token.h"

namespace edgesync {

Status LogReader::Open(Db* read_db, SeriesReader* series, std::string epoch) {
  db_ = read_db;
  series_ = series;
  epoch_ = std::move(epoch);
  decoded_first_ = decoded_last_ = 0;
  ES_RETURN_IF_ERROR(
      log_after_.Prepare(db_, "SELECT lsn, kind, series, quality FROM log WHERE lsn > ? ORDER BY lsn LIMIT 1"));
  // The chunk holding LSN ?1 + 1, else the first one after it: one seek.
  ES_RETURN_IF_ERROR(chunk_after_.Prepare(
      db_,
      "SELECT first_lsn, last_lsn FROM chunks WHERE first_lsn >= ifnull((SELECT max(first_lsn) FROM chunks "
      "WHERE first_lsn <= ?1 + 1), 0) AND last_lsn > ?1 ORDER BY first_lsn LIMIT 1"));
  ES_RETURN_IF_ERROR(chunk_data_.Prepare(db_, "SELECT data FROM chunks WHERE first_lsn = ?"));
  return device_.Prepare(db_, "SELECT name, location, default_unit, deleted FROM devices WHERE device_id = ?");
}


Status LogReader::GetDevice(const std::string& device_id, DeviceRecord* device) {
  ChangeEntry e;
  ES_RETURN_IF_ERROR(FillDeviceEntry(device_id, &e));
  *device = e.device;
  return Status::Ok();
}

Status LogReader::FillDeviceEntry(const std::string& device_id, ChangeEntry* e) {
  StmtScope scope(&device_);
  device_.Bind(1, std::string_view(device_id));
  Status st;
  if (!device_.Step(&st)) {
    ES_RETURN_IF_ERROR(st);
    return Status::NotFound("device " + device_id + " has no record");
  }
  e->device.device_id = device_id;
  e->device.name = device_.Text(0);
  e->device.location = device_.Text(1);
  e->device.default_unit = device_.Text(2);
  e->device.deleted = device_.Int(3) != 0;
  return Status::Ok();
}

Status LogReader::ListRanges(std::vector<RangeInfo>* ranges) {
  std::vector<RangeRow> rows;
  ES_RETURN_IF_ERROR(LoadRanges(db_, &rows));
  ranges->clear();
  for (const auto& r : rows) ranges->push_back(r.info);
  std::sort(ranges->begin(), ranges->end(), [](const RangeInfo& a, const RangeInfo& b) { return a.id < b.id; });
  return Status::Ok();
}

Status LogReader::NextChunk(uint64_t after, bool* found, int64_t* first_lsn, int64_t* last_lsn,
                              const std::vector<ChunkReading>** readings) {
  *found = false;
  {
    StmtScope scope(&chunk_after_);
    chunk_after_.Bind(1, static_cast<int64_t>(after));
    Status st;
    if (!chunk_after_.Step(&st)) return st;
    *first_lsn = chunk_after_.Int(0);
    *last_lsn = chunk_after_.Int(1);
  }
  if (*first_lsn != decoded_first_ || *last_lsn != decoded_last_) {
    decoded_first_ = 0;
    StmtScope scope(&chunk_data_);
    chunk_data_.Bind(1, *first_lsn);
    Status st;
    if (!chunk_data_.Step(&st)) {
      ES_RETURN_IF_ERROR(st);
      return Status::Corruption("chunk " + std::to_string(*first_lsn) + " vanished inside a snapshot");
    }
    ES_RETURN_IF_ERROR(chunk_compactor::DecodeChunkRow(db_, chunk_data_.Blob(0), *first_lsn, *last_lsn, &decoded_));
    decoded_first_ = *first_lsn;
    decoded_last_ = *last_lsn;
  }
  *readings = &decoded_;
  *found = true;
  return Status::Ok();
}

// Merges the two tables of the log in LSN order: readings from chunks,
// device records from `log`.
Status LogReader::ReadRows(uint64_t after_lsn, size_t max_entries, const RangeInfo* range, uint32_t level,
                           size_t scan_budget, std::vector<ChangeEntry>* entries, uint64_t* last_scanned) {
  uint64_t cur = after_lsn;
  size_t scanned = 0;
  while (entries->size() < max_entries && scanned < scan_budget) {
    bool have_device = false;
    uint64_t device_lsn = 0;
    int64_t device_kind = 0, device_series = 0, device_quality = 0;
    {
      StmtScope scope(&log_after_);
      log_after_.Bind(1, static_cast<int64_t>(cur));
      Status st;
      if (log_after_.Step(&st)) {
        have_device = true;
        device_lsn = static_cast<uint64_t>(log_after_.Int(0));
        device_kind = log_after_.Int(1);
        device_series = log_after_.Int(2);
        device_quality = log_after_.Int(3);
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
      if (level != 0) continue;  // device records and corrections have no priority
      if (device_kind == static_cast<int64_t>(ChangeEntry::Kind::kTimeCorrection)) {
        // The whole origin's, no device: the uplink's, not a range's.
        if (range) continue;
        ChangeEntry e;
        e.lsn = device_lsn;
        e.kind = ChangeEntry::Kind::kTimeCorrection;
        Status d = clock_period_table::CorrectionOf(db_, static_cast<uint32_t>(device_quality), &e.correction);
        if (!d.ok()) return Status::Corruption("log entry " + std::to_string(device_lsn) + ": " + d.message());
        entries->push_back(std::move(e));
        continue;
      }
      SeriesInfo info;
      ES_RETURN_IF_ERROR(series_->Find(device_series, &info));
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
      if (level != 0 && QualityPriority(c.quality) != level) continue;
      SeriesInfo info;
      ES_RETURN_IF_ERROR(series_->Find(c.series, &info));
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

Status LogReader::ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) {
  entries->clear();
  if (max_entries == 0) return Status::Ok();
  uint64_t last = 0;
  return ReadRows(after_lsn, max_entries, nullptr, 0, SIZE_MAX, entries, &last);
}

Status LogReader::ReadLogLevel(uint64_t after_lsn, uint32_t level, size_t max_entries, size_t max_scan,
                               std::vector<ChangeEntry>* entries, uint64_t* scanned_to) {
  entries->clear();
  *scanned_to = after_lsn;
  if (level == 0 || level > kMaxPriorityLevel) return Status::InvalidArgument("priority level out of range");
  if (max_entries == 0 || max_scan == 0) return Status::Ok();
  return ReadRows(after_lsn, max_entries, nullptr, level, max_scan, entries, scanned_to);
}

Status LogReader::CompleteThrough(uint64_t lsn, int64_t now, bool writing, int64_t* through_ms) {
  *through_ms = 0;
  // The group holding lsn + 1, else the first one after it (device records
  // between are no readings). By first_lsn, the chunks' key: never a scan.
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db_,
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
  ES_RETURN_IF_ERROR(db_->QueryInt("SELECT ifnull((SELECT written_at FROM chunks ORDER BY first_lsn DESC LIMIT 1), 0)",
                                       &newest));
  *through_ms = newest;
  return Status::Ok();
}

Status LogReader::ResolveStart(uint32_t range_id, const std::vector<RangeRow>& rows, const FeedStart& from,
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
      ES_RETURN_IF_ERROR(db_->QueryInt(kHighLsnSql, &high));
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
          db_,
          "SELECT min(ifnull((SELECT first_lsn - 1 FROM batches WHERE written_at >= ?1 ORDER BY first_lsn LIMIT 1),"
          " ?2), ifnull((SELECT first_lsn - 1 FROM chunks WHERE first_lsn >= ifnull((SELECT max(first_lsn) FROM "
          "batches WHERE written_at < ?1), 0) AND written_at >= ?1 ORDER BY first_lsn LIMIT 1), ?2))"));
      int64_t high = 0;
      ES_RETURN_IF_ERROR(db_->QueryInt(kHighLsnSql, &high));
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
      if (t.epoch != epoch_) {
        return Status::InvalidArgument("continuation token is from store epoch " + t.epoch + ", this store is epoch " +
                                       epoch_ + " (the store was re-created); start again from beginning");
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

Status LogReader::ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) {
  page->entries.clear();
  page->continuation.clear();
  std::vector<RangeRow> rows;
  ES_RETURN_IF_ERROR(LoadRanges(db_, &rows));
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
    ES_RETURN_IF_ERROR(ReadRows(after, max_entries, range, 0, budget, &page->entries, &last));
  }
  page->continuation = EncodeFeedToken(FeedToken{range_id, epoch_, last});
  return Status::Ok();
}

}  // namespace edgesync

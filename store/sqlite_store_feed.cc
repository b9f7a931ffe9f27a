// The change log's read side: the whole log for the uplink, the per-range
// feed with its continuations, ranges, device records.
#include <algorithm>

#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {

Status SqliteStore::GetDevice(const std::string& device_id, DeviceRecord* device) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", device_id));
  std::lock_guard<std::mutex> lock(read_mu_);
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
  std::lock_guard<std::mutex> lock(read_mu_);
  std::vector<RangeRow> rows;
  ES_RETURN_IF_ERROR(LoadRanges(&read_db_, &rows));
  ranges->clear();
  for (const auto& r : rows) ranges->push_back(r.info);
  std::sort(ranges->begin(), ranges->end(), [](const RangeInfo& a, const RangeInfo& b) { return a.id < b.id; });
  return Status::Ok();
}

Status SqliteStore::ReadRows(uint64_t after_lsn, size_t max_entries, const RangeInfo* range, size_t scan_budget,
                             std::vector<ChangeEntry>* entries, uint64_t* last_scanned) {
  *last_scanned = after_lsn;
  size_t scanned = 0;
  const int64_t chunk = range ? 2048 : static_cast<int64_t>(std::min<size_t>(max_entries, 100000));
  while (entries->size() < max_entries && scanned < scan_budget) {
    StmtScope scope(&r_log_after_);
    r_log_after_.Bind(1, static_cast<int64_t>(*last_scanned));
    r_log_after_.Bind(2, chunk);
    Status st;
    size_t got = 0;
    while (entries->size() < max_entries && r_log_after_.Step(&st)) {
      ++got;
      ++scanned;
      uint64_t lsn = static_cast<uint64_t>(r_log_after_.Int(0));
      int64_t series_id = r_log_after_.Int(2);
      SeriesInfo info;
      ES_RETURN_IF_ERROR(SeriesById(series_id, &info));
      *last_scanned = lsn;
      if (range && !range->Contains(info.hash)) continue;
      ChangeEntry e;
      e.lsn = lsn;
      e.kind = static_cast<ChangeEntry::Kind>(r_log_after_.Int(1));
      if (e.kind == ChangeEntry::Kind::kReading) {
        e.reading.device_id = std::move(info.device_id);
        e.reading.metric = std::move(info.metric);
        e.reading.unit = std::move(info.unit);
        e.reading.ts_ms = r_log_after_.Int(3);
        e.reading.value = r_log_after_.Double(4);
        e.reading.quality = static_cast<uint32_t>(r_log_after_.Int(5));
      } else {
        Status d = FillDeviceEntry(info.device_id, &e);
        if (!d.ok()) return Status::Corruption("log entry " + std::to_string(lsn) + ": " + d.message());
      }
      entries->push_back(std::move(e));
    }
    ES_RETURN_IF_ERROR(st);
    // A short chunk is the end of the log (the snapshot holds still): asking
    // again would only return nothing, on every poll of a caught-up uplink.
    if (got < static_cast<size_t>(chunk)) break;
  }
  return Status::Ok();
}

Status SqliteStore::ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) {
  entries->clear();
  if (max_entries == 0) return Status::Ok();
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);  // one snapshot across chunks and device lookups
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  uint64_t last = 0;
  return ReadRows(after_lsn, max_entries, nullptr, SIZE_MAX, entries, &last);
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
      // Batches are in LSN order; the first one written at or after the
      // time starts the feed (a later clock step back cannot rewind it).
      Stmt s;
      ES_RETURN_IF_ERROR(s.Prepare(
          &read_db_,
          "SELECT ifnull((SELECT first_lsn - 1 FROM batches WHERE written_at >= ? ORDER BY first_lsn LIMIT 1),"
          " (SELECT ifnull(max(lsn), 0) FROM log))"));
      s.Bind(1, from.wall_ms);
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
  std::lock_guard<std::mutex> lock(read_mu_);
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

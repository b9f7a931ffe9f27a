// The change log's write side: appending readings, device records and
// time corrections with the next LSN, partition key ranges and their
// splits; the clock periods' table is store/clock_period_table.h.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>

#include "platform/files.h"

#include "platform/log.h"
#include "store/chunk_codec.h"
#include "store/clock_period_table.h"
#include "store/schema.h"
#include "store/sqlite_store.h"

namespace edgesync {
namespace {

// A Pi commits once a second: flushing the counts with each commit would be
// a page of its ~4 synced pages.
constexpr int64_t kRangeFlushMs = 10000;
// One time-index row per this much of written_at (see AppendOnce).
constexpr int64_t kTimeIndexStepMs = 10000;

// What a log entry weighs for the split limit: the bytes a consumer reads.
int64_t EntryBytes(std::string_view device_id, std::string_view metric, std::string_view unit) {
  return static_cast<int64_t>(device_id.size() + metric.size() + unit.size()) + 32;
}

Status ValidateDevice(const DeviceRecord& d) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", d.device_id));
  const std::pair<const char*, const std::string*> fields[] = {
      {"name", &d.name}, {"location", &d.location}, {"default_unit", &d.default_unit}};
  for (const auto& f : fields) {
    if (f.second->size() > 256) return Status::InvalidArgument(std::string(f.first) + ": more than 256 bytes");
    if (!IsValidUtf8(*f.second)) return Status::InvalidArgument(std::string(f.first) + ": not valid UTF-8");
  }
  return Status::Ok();
}

// A write error whose errno SQLite did not keep (a short write, EFBIG) is
// still a full store when the filesystem or the file size limit says so.
bool LooksOutOfSpace(const std::string& path) {
  Result<uint64_t> free_bytes = FreeBytes(path);
  if (free_bytes.ok() && *free_bytes < (uint64_t{1} << 20)) return true;
  struct rlimit lim;
  if (::getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    for (const char* suffix : {"", "-wal"}) {
      struct stat st;
      if (::stat((path + suffix).c_str(), &st) == 0 &&
          static_cast<uint64_t>(st.st_size) + (uint64_t{1} << 16) >= static_cast<uint64_t>(lim.rlim_cur)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

Status SqliteStore::NextLsn(uint64_t* next, bool from_cache) {
  if (from_cache && cached_high_lsn_ >= 0) {
    *next = static_cast<uint64_t>(cached_high_lsn_) + 1;
    return Status::Ok();
  }
  StmtScope scope(&w_high_);
  Status st;
  int64_t high = w_high_.Step(&st) ? w_high_.Int(0) : 0;
  ES_RETURN_IF_ERROR(st);
  *next = std::max(static_cast<uint64_t>(high), lsn_floor_) + 1;
  return Status::Ok();
}

Status SqliteStore::LoadLsnFence() {
  uint64_t next = 0;
  ES_RETURN_IF_ERROR(NextLsn(&next));
  uint64_t floor = 0;
  ES_RETURN_IF_ERROR(lsn_fence_.Load(&write_db_, clock_->BootId(), next, &floor));
  if (floor > 0) {
    lsn_floor_ = floor;
    cached_high_lsn_ = -1;
    next = lsn_floor_ + 1;
  }
  last_lsn_ = next - 1;
  return Status::Ok();
}

Status SqliteStore::ReserveLsns(uint64_t last) { return lsn_fence_.Reserve(&write_db_, clock_->BootId(), last); }

void SqliteStore::ReleaseLsnFence() { lsn_fence_.Release(&write_db_, last_lsn_.load()); }

Status SqliteStore::InternSeries(const std::string& device_id, const std::string& metric, const std::string& unit,
                                 int64_t* id, uint64_t* hash) {
  DeviceSeries* dev = nullptr;
  if (last_device_ && device_id == last_device_id_) {
    dev = last_device_;
  } else {
    auto it = by_device_.find(device_id);
    if (it != by_device_.end()) {
      dev = &it->second;
      last_device_ = dev;
      last_device_id_ = device_id;
    }
  }
  if (dev) {
    for (const SeriesSlot& slot : dev->slots) {
      if (slot.metric == metric && slot.unit == unit) {
        *id = slot.id;
        *hash = dev->hash;
        return Status::Ok();
      }
    }
  }
  uint64_t h = dev ? dev->hash : PartitionHash(device_id);
  // Prepared once: a hub's first batch of each new gateway interns all its
  // series, and preparing this per call took a quarter of a region hub's
  // CPU while 10,000 new gateways sent their first batches (perf).
  Stmt& find = w_find_series_;
  StmtScope find_scope(&find);
  find.Bind(1, std::string_view(device_id));
  find.Bind(2, std::string_view(metric));
  find.Bind(3, std::string_view(unit));
  Status st;
  int64_t got = 0;
  bool fresh = false;
  if (find.Step(&st)) {
    got = find.Int(0);
  } else {
    ES_RETURN_IF_ERROR(st);
    StmtScope scope(&w_insert_series_);
    w_insert_series_.Bind(1, std::string_view(device_id));
    w_insert_series_.Bind(2, std::string_view(metric));
    w_insert_series_.Bind(3, std::string_view(unit));
    w_insert_series_.Bind(4, HashKey(h));
    if (!w_insert_series_.Step(&st)) return st.ok() ? Status::IoError("series insert returned no id") : st;
    got = w_insert_series_.Int(0);
    fresh = true;
  }
  WriterLock lock(&series_mu_);
  if (static_cast<size_t>(got) >= series_.size()) series_.resize(static_cast<size_t>(got) + 1);
  series_[static_cast<size_t>(got)] = SeriesInfo{device_id, metric, unit, h, true};
  DeviceSeries& entry = by_device_[device_id];
  entry.hash = h;
  entry.slots.push_back(SeriesSlot{metric, unit, got});
  if (fresh) pending_series_.emplace_back(device_id, got);
  *id = got;
  *hash = h;
  return Status::Ok();
}

// A rolled-back transaction takes its new series rows with it.
void SqliteStore::ForgetPendingSeries() {
  WriterLock lock(&series_mu_);
  for (const auto& p : pending_series_) {
    auto it = by_device_.find(p.first);
    if (it != by_device_.end()) {
      auto& slots = it->second.slots;
      slots.erase(std::remove_if(slots.begin(), slots.end(), [&](const SeriesSlot& s) { return s.id == p.second; }),
                  slots.end());
      if (slots.empty()) by_device_.erase(it);
    }
    series_[static_cast<size_t>(p.second)] = SeriesInfo{};
  }
  last_device_ = nullptr;
  pending_series_.clear();
}

// A failed append or device write: the rows, series and LSNs it made are
// gone, so everything cached about the file is read again.
void SqliteStore::RollBackLocalWrite(Txn* txn) {
  txn->Rollback();
  ForgetPendingSeries();
  write_data_version_ = -1;
  cached_high_lsn_ = -1;
  last_batch_at_ = INT64_MIN;
}

Status SqliteStore::LoadRanges(Db* db, std::vector<RangeRow>* ranges) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT id, min, max, parent, active, entries, bytes FROM ranges ORDER BY min, id"));
  ranges->clear();
  Status st;
  while (s.Step(&st)) {
    RangeRow r;
    r.info.id = static_cast<uint32_t>(s.Int(0));
    r.info.min = HashFromKey(s.Int(1));
    r.info.max = HashFromKey(s.Int(2));
    r.info.parent = static_cast<uint32_t>(s.Int(3));
    r.info.active = s.Int(4) != 0;
    r.entries = s.Int(5);
    r.bytes = s.Int(6);
    ranges->push_back(r);
  }
  return st;
}

const SqliteStore::RangeRow* SqliteStore::FindRange(const std::vector<RangeRow>& ranges, uint32_t id) {
  for (const RangeRow& r : ranges) {
    if (r.info.id == id) return &r;
  }
  return nullptr;
}

// Another process may have written since (lease consumers write leases;
// PRAGMA data_version tells cheaply whether anything changed).
Status SqliteStore::RefreshWriteRanges() {
  int64_t dv = 0;
  {
    StmtScope scope(&w_data_version_);
    Status st;
    dv = w_data_version_.Step(&st) ? w_data_version_.Int(0) : 0;
    ES_RETURN_IF_ERROR(st);
  }
  if (dv != seen_data_version_) {  // another connection wrote: forget what we knew
    cached_high_lsn_ = -1;
    last_batch_at_ = INT64_MIN;
    seen_data_version_ = dv;
  }
  if (dv == write_data_version_ && !write_ranges_.empty()) return Status::Ok();
  ES_RETURN_IF_ERROR(LoadRanges(&write_db_, &write_ranges_));
  for (auto& r : write_ranges_) {  // counts of ours not in the table yet
    auto it = pending_counts_.find(r.info.id);
    if (it != pending_counts_.end()) {
      r.entries += it->second.first;
      r.bytes += it->second.second;
    }
  }
  write_data_version_ = dv;
  return Status::Ok();
}

void SqliteStore::KeepPendingCounts(const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& add,
                                    bool persisted) {
  if (persisted) {
    pending_counts_.clear();
    return;
  }
  for (const auto& [id, c] : add) {
    auto& p = pending_counts_[id];
    p.first += c.first;
    p.second += c.second;
  }
}

// Adds per-range entry and byte counts to the ranges table (inside the
// caller's transaction).
Status SqliteStore::WriteRangeCounts(const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& counts) {
  for (const auto& [id, c] : counts) {
    StmtScope scope(&w_update_range_);
    w_update_range_.Bind(1, c.first);
    w_update_range_.Bind(2, c.second);
    w_update_range_.Bind(3, static_cast<int64_t>(id));
    Status st;
    w_update_range_.Step(&st);
    ES_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

// In its own transaction (at close).
Status SqliteStore::FlushRangeCounts() {
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(WriteRangeCounts(pending_counts_));
  ES_RETURN_IF_ERROR(txn.Commit());
  pending_counts_.clear();
  return Status::Ok();
}

// Adds counts per range and splits a range that passed its limit. A split is
// metadata only: rows stay where they are, the children cover the halves.
Status SqliteStore::CountIntoRanges(const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& add,
                                    bool persist) {
  if (persist) {
    std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> all = pending_counts_;
    for (const auto& [id, c] : add) {
      all[id].first += c.first;
      all[id].second += c.second;
    }
    ES_RETURN_IF_ERROR(WriteRangeCounts(all));
  }
  for (const auto& [id, counts] : add) {
    for (size_t i = 0; i < write_ranges_.size(); ++i) {
      RangeRow& r = write_ranges_[i];
      if (r.info.id != id) continue;
      r.entries += counts.first;
      r.bytes += counts.second;
      if (!r.info.active || (r.entries < options_.split_max_entries && r.bytes < options_.split_max_bytes)) break;
      if (r.info.max - r.info.min < 2) break;  // cannot halve further
      uint32_t next_id = 0;
      for (const auto& o : write_ranges_) next_id = std::max(next_id, o.info.id);
      const RangeInfo parent = r.info;
      uint64_t mid = parent.min + (parent.max - parent.min) / 2;
      Stmt ins, off;
      ES_RETURN_IF_ERROR(ins.Prepare(&write_db_, "INSERT INTO ranges VALUES(?, ?, ?, ?, 1, 0, 0)"));
      ES_RETURN_IF_ERROR(off.Prepare(&write_db_, "UPDATE ranges SET active = 0 WHERE id = ?"));
      off.Bind(1, static_cast<int64_t>(id));
      ES_RETURN_IF_ERROR(off.Run());
      r.info.active = false;
      const uint64_t bounds[2][2] = {{parent.min, mid}, {mid, parent.max}};
      ES_LOG(kInfo, "store: range {} split into {} and {} ({} entries, {} bytes)", id, next_id + 1, next_id + 2,
             r.entries, r.bytes);
      for (int k = 0; k < 2; ++k) {
        ins.Bind(1, static_cast<int64_t>(next_id + 1 + k));
        ins.Bind(2, HashKey(bounds[k][0]));
        ins.Bind(3, HashKey(bounds[k][1]));
        ins.Bind(4, static_cast<int64_t>(id));
        ES_RETURN_IF_ERROR(ins.Run());
        RangeRow child;
        child.info = RangeInfo{next_id + 1 + k, bounds[k][0], bounds[k][1], id, true};
        write_ranges_.push_back(child);  // invalidates r: leave the loop now
      }
      write_data_version_ = -1;  // reload after commit (or rollback)
      break;
    }
  }
  return Status::Ok();
}

Status SqliteStore::AppendReadings(const std::vector<Reading>& readings, AppendResult* result) {
  return AppendWithMark(readings, nullptr, result);
}

Status SqliteStore::MoveCheckpoint(const CheckpointMark& mark) {
  w_set_checkpoint_.Bind(1, std::string_view(mark.name));
  w_set_checkpoint_.Bind(2, static_cast<int64_t>(mark.value));
  return w_set_checkpoint_.Run();
}

Status SqliteStore::AppendWithMark(const std::vector<Reading>& readings, const CheckpointMark* mark,
                                   AppendResult* result) {
  *result = AppendResult{};
  for (size_t i = 0; i < readings.size(); ++i) {
    Status v = ValidateReading(readings[i]);
    if (!v.ok()) return v.Annotate("reading " + std::to_string(i));
  }
  MutexLock lock(&write_mu_);
  if (readings.empty()) {
    result->first_lsn = result->last_lsn = last_lsn_.load();
    return mark != nullptr ? MoveCheckpoint(*mark) : Status::Ok();
  }
  Status s = AppendOnce(readings, mark, result);
  int64_t dropped_total = s.ok() ? result->dropped_oldest : 0;  // a failed attempt dropped nothing
  // The filesystem itself is full: the space to win back is mostly the
  // WAL's. Each round checkpoints and truncates it, then retries. The first
  // round drops nothing: that alone usually does. The later ones drop the
  // oldest readings first (their pages go to the free list that new rows
  // reuse; acknowledged ones only under reject-new), more each round.
  const bool acked_only = options_.disk_policy == StoreOptions::DiskPolicy::kRejectNew;
  int64_t to_drop = static_cast<int64_t>(readings.size()) * 2;
  for (int round = 0; round < 4 && s.code() == Status::Code::kNoSpace; ++round) {
    write_db_.Exec("PRAGMA wal_checkpoint(TRUNCATE)");
    if (round > 0) {
      int64_t dropped = 0, removed = 0;
      Txn txn(&write_db_);
      Status d = txn.Begin();
      if (d.ok()) d = DropOldest(to_drop, acked_only, &dropped, &removed);
      if (d.ok() && removed == 0) d = Status::NoSpace("nothing acknowledged to prune");
      if (d.ok()) d = txn.Commit();
      if (!d.ok()) {
        txn.Rollback();
        break;
      }
      dropped_total += dropped;
      to_drop *= 4;
      write_db_.Exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
    s = AppendOnce(readings, mark, result);
    dropped_total += s.ok() ? result->dropped_oldest : 0;
  }
  result->dropped_oldest = dropped_total;
  if (s.code() == Status::Code::kNoSpace) rejected_full_ += static_cast<int64_t>(readings.size());
  return s;
}

Status SqliteStore::AppendOnce(const std::vector<Reading>& readings, const CheckpointMark* mark,
                               AppendResult* result) {
  result->dropped_oldest = 0;
  int64_t to_drop = 0;
  ES_RETURN_IF_ERROR(CheckSpace(readings.size(), &to_drop));
  ES_RETURN_IF_ERROR(ReserveLsns(last_lsn_.load() + readings.size()));
  Txn txn(&write_db_);
  pending_series_.clear();
  // Announced before written_at is taken: a CompleteThrough that does not
  // see it knows this group's written_at is not before its own wall time.
  appending_.fetch_add(1);
  struct AppendingScope {
    std::atomic<int>* n;
    ~AppendingScope() { n->fetch_sub(1); }
  } appending_scope{&appending_};
  const int64_t written_at = clock_->WallMillis();
  const int64_t mono_ms = clock_->MonotonicMillis();
  const bool persist_counts = mono_ms - last_range_flush_ms_ >= kRangeFlushMs || mono_ms < last_range_flush_ms_;
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> counts;
  bool wrote_batch = false;
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(RefreshWriteRanges());
    if (to_drop > 0) {
      // Acknowledged readings go first (they are the oldest); unacknowledged
      // ones only under drop-oldest.
      const bool acked_only = options_.disk_policy == StoreOptions::DiskPolicy::kRejectNew;
      int64_t dropped = 0, removed = 0;
      ES_RETURN_IF_ERROR(DropOldest(to_drop, acked_only, &dropped, &removed));
      if (acked_only && removed < to_drop) {
        return Status::NoSpace("store.max_bytes " + std::to_string(options_.max_bytes) +
                               " reached and too few acknowledged readings to prune");
      }
      result->dropped_oldest = dropped;
    }
    uint64_t lsn = 0;
    ES_RETURN_IF_ERROR(NextLsn(&lsn, /*from_cache=*/true));
    result->first_lsn = lsn;
    // Per-range counts by position in write_ranges_ (no per-reading map).
    std::vector<std::pair<int64_t, int64_t>> by_pos(write_ranges_.size());
    size_t pos = SIZE_MAX;
    chunk_buffer_.clear();
    for (const Reading& r : readings) {
      int64_t series = 0;
      uint64_t hash = 0;
      ES_RETURN_IF_ERROR(InternSeries(r.device_id, r.metric, r.unit, &series, &hash));
      chunk_buffer_.push_back(ChunkReading{series, r.ts_ms, r.value, r.quality});
      if (pos == SIZE_MAX || !write_ranges_[pos].info.Contains(hash)) {
        pos = SIZE_MAX;
        for (size_t k = 0; k < write_ranges_.size(); ++k) {
          if (write_ranges_[k].info.active && write_ranges_[k].info.Contains(hash)) {
            pos = k;
            break;
          }
        }
      }
      if (pos != SIZE_MAX) {
        by_pos[pos].first += 1;
        by_pos[pos].second += EntryBytes(r.device_id, r.metric, r.unit);
      }
    }
    for (size_t k = 0; k < by_pos.size(); ++k) {
      if (by_pos[k].first > 0) counts[write_ranges_[k].info.id] = by_pos[k];
    }
    ES_RETURN_IF_ERROR(clock_period_table::CountReadings(&write_db_, &w_count_period_, readings));
    result->last_lsn = lsn + readings.size() - 1;
    if (options_.sync == StoreOptions::Sync::kNormal && result->last_lsn > lsn_fence_.reserved()) {
      return Status::Corruption("LSN " + std::to_string(result->last_lsn) + " past the fence " +
                                std::to_string(lsn_fence_.reserved()));
    }
    // The whole group is one chunk row (schema.h).
    ES_RETURN_IF_ERROR(
        InsertChunkRow(&w_insert_chunk_, chunk_buffer_, static_cast<int64_t>(result->first_lsn), written_at, &block_buffer_));
    // The time index needs a row only where the ten seconds of written_at
    // change: a lookup takes the last index row before a time and finds
    // the exact chunk from there (chunks carry their own write time), and
    // most commits then leave the batches table alone (one page less; a
    // commit a second would otherwise write it each time).
    if (last_batch_at_ == INT64_MIN || written_at / kTimeIndexStepMs != last_batch_at_ / kTimeIndexStepMs ||
        written_at < last_batch_at_) {
      w_insert_batch_.Bind(1, static_cast<int64_t>(result->first_lsn));
      w_insert_batch_.Bind(2, written_at);
      ES_RETURN_IF_ERROR(w_insert_batch_.Run());
      wrote_batch = true;
    }
    ES_RETURN_IF_ERROR(CountIntoRanges(counts, persist_counts));
    if (mark != nullptr) ES_RETURN_IF_ERROR(MoveCheckpoint(*mark));
    return txn.Commit();
  }();
  if (!s.ok()) {
    RollBackLocalWrite(&txn);
    if (s.code() == Status::Code::kIoError && LooksOutOfSpace(options_.path)) {
      s = Status::NoSpace(s.message() + " (no space left for the store)");
    }
    if (s.code() == Status::Code::kNoSpace) {
      return Status::NoSpace("store " + options_.path + " is full: " + s.message() +
                             (options_.disk_policy == StoreOptions::DiskPolicy::kRejectNew
                                  ? "; new readings rejected (disk policy reject-new)"
                                  : ""));
    }
    return s;
  }
  pending_series_.clear();
  last_lsn_ = result->last_lsn;
  cached_high_lsn_ = static_cast<int64_t>(result->last_lsn);
  if (wrote_batch) last_batch_at_ = written_at;
  KeepPendingCounts(counts, persist_counts);
  if (persist_counts) last_range_flush_ms_ = mono_ms;
  return Status::Ok();
}

Status SqliteStore::WriteDeviceEntry(const DeviceRecord& device, bool deleted, uint64_t* lsn_out) {
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(ReserveLsns(last_lsn_.load() + 1));
  Txn txn(&write_db_);
  pending_series_.clear();
  uint64_t lsn = 0;
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(RefreshWriteRanges());
    DeviceRecord rec = device;
    Stmt old;
    ES_RETURN_IF_ERROR(old.Prepare(&write_db_,
                                   "SELECT lsn, name, location, default_unit FROM devices WHERE device_id = ?"));
    old.Bind(1, std::string_view(device.device_id));
    Status st;
    int64_t old_lsn = 0;
    if (old.Step(&st)) {
      old_lsn = old.Int(0);
      if (deleted) {  // a tombstone keeps the record's last content
        rec.name = old.Text(1);
        rec.location = old.Text(2);
        rec.default_unit = old.Text(3);
      }
    } else {
      ES_RETURN_IF_ERROR(st);
      if (deleted) return Status::NotFound("device " + device.device_id + " has no record");
    }
    old.Reset();
    int64_t series = 0;
    uint64_t hash = 0;
    ES_RETURN_IF_ERROR(InternSeries(device.device_id, "", "", &series, &hash));
    int64_t now = clock_->WallMillis();
    if (old_lsn > 0) {
      // Only the latest version of a record stays in the log.
      Stmt del;
      ES_RETURN_IF_ERROR(del.Prepare(&write_db_, "DELETE FROM log WHERE lsn = ?"));
      del.Bind(1, old_lsn);
      ES_RETURN_IF_ERROR(del.Run());
    }
    ES_RETURN_IF_ERROR(InsertLogRow(deleted ? ChangeEntry::Kind::kDeviceDelete : ChangeEntry::Kind::kDeviceUpsert,
                                    series, 0, now, &lsn));
    Stmt up;
    ES_RETURN_IF_ERROR(up.Prepare(&write_db_, "INSERT OR REPLACE INTO devices VALUES(?, ?, ?, ?, ?, ?, ?)"));
    up.Bind(1, std::string_view(rec.device_id));
    up.Bind(2, std::string_view(rec.name));
    up.Bind(3, std::string_view(rec.location));
    up.Bind(4, std::string_view(rec.default_unit));
    up.Bind(5, int64_t{deleted ? 1 : 0});
    up.Bind(6, static_cast<int64_t>(lsn));
    up.Bind(7, now);
    ES_RETURN_IF_ERROR(up.Run());
    for (const auto& rr : write_ranges_) {
      if (rr.info.active && rr.info.Contains(hash)) {
        ES_RETURN_IF_ERROR(CountIntoRanges({{rr.info.id, {1, EntryBytes(rec.device_id, "", "")}}}, /*persist=*/true));
        break;
      }
    }
    return txn.Commit();
  }();
  if (!s.ok()) {
    RollBackLocalWrite(&txn);
    return s;
  }
  pending_series_.clear();
  pending_counts_.clear();  // written with this commit
  NoteLogRow(lsn);
  if (lsn_out) *lsn_out = lsn;
  return Status::Ok();
}

Status SqliteStore::InsertLogRow(ChangeEntry::Kind kind, int64_t series, int64_t quality, int64_t now,
                                 uint64_t* lsn) {
  ES_RETURN_IF_ERROR(NextLsn(lsn, /*from_cache=*/true));
  if (options_.sync == StoreOptions::Sync::kNormal && *lsn > lsn_fence_.reserved()) {
    return Status::Corruption("LSN " + std::to_string(*lsn) + " past the fence " +
                              std::to_string(lsn_fence_.reserved()));
  }
  w_insert_log_.Bind(1, static_cast<int64_t>(*lsn));
  w_insert_log_.Bind(2, static_cast<int64_t>(kind));
  w_insert_log_.Bind(3, series);
  w_insert_log_.Bind(4, now);
  w_insert_log_.Bind(5, 0.0);
  w_insert_log_.Bind(6, quality);
  ES_RETURN_IF_ERROR(w_insert_log_.Run());
  w_insert_batch_.Bind(1, static_cast<int64_t>(*lsn));
  w_insert_batch_.Bind(2, now);
  return w_insert_batch_.Run();
}

void SqliteStore::NoteLogRow(uint64_t lsn) {
  last_lsn_ = lsn;
  cached_high_lsn_ = static_cast<int64_t>(lsn);
  last_batch_at_ = INT64_MIN;  // the next append writes its own row
}

Status SqliteStore::OpenClockPeriod(const std::string& boot_id, int64_t offset_ms, int64_t now_ms, uint32_t* id) {
  *id = 0;
  if (options_.read_only) return Status::Unsupported("store opened read only");
  MutexLock lock(&write_mu_);
  return clock_period_table::Open(&write_db_, boot_id, offset_ms, now_ms, id);
}

Status SqliteStore::ListClockPeriods(std::vector<ClockPeriod>* periods) {
  MutexLock lock(&read_mu_);
  return clock_period_table::List(&read_db_, periods);
}

Status SqliteStore::CorrectClockPeriod(uint32_t id, int64_t delta_ms, int64_t now_ms, bool* done) {
  *done = false;
  if (options_.read_only) return Status::Unsupported("store opened read only");
  if (delta_ms > kMaxCorrectionDeltaMs || delta_ms < -kMaxCorrectionDeltaMs) {
    return Status::InvalidArgument("a correction of " + std::to_string(delta_ms) + " ms is beyond +-2^53");
  }
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(ReserveLsns(last_lsn_.load() + 1));
  // The correction and its change-log entry commit together: replicas
  // learn it from the log, exactly like a write (store/time_correction.h).
  Txn txn(&write_db_);
  pending_series_.clear();
  uint64_t lsn = 0;
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    bool changed = false;
    ES_RETURN_IF_ERROR(clock_period_table::MarkCorrected(&write_db_, id, delta_ms, now_ms, &changed));
    if (!changed) return Status::Ok();  // corrected before
    // The log row names the period (in quality); its content is the
    // period's row (clock_period_table::CorrectionOf).
    ES_RETURN_IF_ERROR(InsertLogRow(ChangeEntry::Kind::kTimeCorrection, 0, id, clock_->WallMillis(), &lsn));
    return txn.Commit();
  }();
  if (!s.ok()) {
    RollBackLocalWrite(&txn);
    return s;
  }
  if (lsn == 0) return Status::Ok();
  *done = true;
  NoteLogRow(lsn);
  return Status::Ok();
}

Status SqliteStore::UpsertDevice(const DeviceRecord& device, uint64_t* lsn) {
  ES_RETURN_IF_ERROR(ValidateDevice(device));
  return WriteDeviceEntry(device, false, lsn);
}

Status SqliteStore::DeleteDevice(const std::string& device_id, uint64_t* lsn) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", device_id));
  DeviceRecord d;
  d.device_id = device_id;
  return WriteDeviceEntry(d, true, lsn);
}

}  // namespace edgesync

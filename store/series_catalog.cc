#include "store/series_catalog.h"

#include <algorithm>

#include "store/types.h"

namespace edgesync {

bool SeriesIndex::Find(int64_t id, SeriesInfo* info) const {
  ReaderLock lock(&mu_);
  if (id <= 0 || static_cast<size_t>(id) >= by_id_.size() || !by_id_[static_cast<size_t>(id)].known) return false;
  *info = by_id_[static_cast<size_t>(id)];
  return true;
}

void SeriesIndex::PutLocked(int64_t id, SeriesInfo info) {
  if (static_cast<size_t>(id) >= by_id_.size()) by_id_.resize(static_cast<size_t>(id) + 1);
  by_id_[static_cast<size_t>(id)] = std::move(info);
}

void SeriesIndex::Put(int64_t id, SeriesInfo info) {
  WriterLock lock(&mu_);
  PutLocked(id, std::move(info));
}

void SeriesIndex::PutIfUnknown(int64_t id, SeriesInfo info) {
  WriterLock lock(&mu_);
  if (static_cast<size_t>(id) < by_id_.size() && by_id_[static_cast<size_t>(id)].known) return;
  PutLocked(id, std::move(info));
}

void SeriesIndex::Forget(int64_t id) {
  WriterLock lock(&mu_);
  if (id > 0 && static_cast<size_t>(id) < by_id_.size()) by_id_[static_cast<size_t>(id)] = SeriesInfo{};
}

Status SeriesWriter::Open(Db* write_db, SeriesIndex* index) {
  index_ = index;
  ES_RETURN_IF_ERROR(
      insert_.Prepare(write_db, "INSERT INTO series(device_id, metric, unit, hkey) VALUES(?, ?, ?, ?) RETURNING id"));
  ES_RETURN_IF_ERROR(find_.Prepare(write_db, "SELECT id FROM series WHERE device_id=? AND metric=? AND unit=?"));
  // Series are few (devices x metrics): all of them are loaded once.
  Stmt all;
  ES_RETURN_IF_ERROR(all.Prepare(write_db, "SELECT id, device_id, metric, unit, hkey FROM series"));
  Status st;
  while (all.Step(&st)) {
    int64_t id = all.Int(0);
    SeriesInfo info{all.Text(1), all.Text(2), all.Text(3), HashFromKey(all.Int(4)), true};
    DeviceSeries& dev = by_device_[info.device_id];
    dev.hash = info.hash;
    dev.slots.push_back(Slot{info.metric, info.unit, id});
    index_->Put(id, std::move(info));
  }
  return st;
}

Status SeriesWriter::Intern(const std::string& device_id, const std::string& metric, const std::string& unit,
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
    for (const Slot& slot : dev->slots) {
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
  StmtScope find_scope(&find_);
  find_.Bind(1, std::string_view(device_id));
  find_.Bind(2, std::string_view(metric));
  find_.Bind(3, std::string_view(unit));
  Status st;
  int64_t got = 0;
  bool fresh = false;
  if (find_.Step(&st)) {
    got = find_.Int(0);
  } else {
    ES_RETURN_IF_ERROR(st);
    StmtScope scope(&insert_);
    insert_.Bind(1, std::string_view(device_id));
    insert_.Bind(2, std::string_view(metric));
    insert_.Bind(3, std::string_view(unit));
    insert_.Bind(4, HashKey(h));
    if (!insert_.Step(&st)) return st.ok() ? Status::IoError("series insert returned no id") : st;
    got = insert_.Int(0);
    fresh = true;
  }
  index_->Put(got, SeriesInfo{device_id, metric, unit, h, true});
  DeviceSeries& entry = by_device_[device_id];
  entry.hash = h;
  entry.slots.push_back(Slot{metric, unit, got});
  if (fresh) pending_.emplace_back(device_id, got);
  *id = got;
  *hash = h;
  return Status::Ok();
}

void SeriesWriter::Rollback() {
  for (const auto& p : pending_) {
    auto it = by_device_.find(p.first);
    if (it != by_device_.end()) {
      auto& slots = it->second.slots;
      slots.erase(std::remove_if(slots.begin(), slots.end(), [&](const Slot& s) { return s.id == p.second; }),
                  slots.end());
      if (slots.empty()) by_device_.erase(it);
    }
    index_->Forget(p.second);
  }
  last_device_ = nullptr;
  pending_.clear();
}

Status SeriesReader::Open(Db* read_db, SeriesIndex* index) {
  index_ = index;
  return by_id_.Prepare(read_db, "SELECT device_id, metric, unit, hkey FROM series WHERE id = ?");
}

Status SeriesReader::Find(int64_t id, SeriesInfo* info) {
  if (index_->Find(id, info)) return Status::Ok();
  // Written by another process (or after the load): read it once.
  StmtScope scope(&by_id_);
  by_id_.Bind(1, id);
  Status st;
  if (!by_id_.Step(&st)) {
    ES_RETURN_IF_ERROR(st);
    return Status::Corruption("log refers to unknown series " + std::to_string(id));
  }
  SeriesInfo got{by_id_.Text(0), by_id_.Text(1), by_id_.Text(2), HashFromKey(by_id_.Int(3)), true};
  *info = got;
  index_->PutIfUnknown(id, std::move(got));
  return Status::Ok();
}

}  // namespace edgesync

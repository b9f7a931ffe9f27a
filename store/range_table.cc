#include "store/range_table.h"

#include <algorithm>
#include <cstddef>

#include "platform/log.h"

namespace edgesync {

Status LoadRanges(Db* db, std::vector<RangeRow>* ranges) {
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

const RangeRow* FindRange(const std::vector<RangeRow>& ranges, uint32_t id) {
  for (const RangeRow& r : ranges) {
    if (r.info.id == id) return &r;
  }
  return nullptr;
}

Status RangeTable::Open(Db* write_db) {
  db_ = write_db;
  return update_.Prepare(db_, "UPDATE ranges SET entries = entries + ?, bytes = bytes + ? WHERE id = ?");
}

Status RangeTable::Refresh(int64_t data_version) {
  if (data_version == loaded_version_ && !rows_.empty()) return Status::Ok();
  ES_RETURN_IF_ERROR(LoadRanges(db_, &rows_));
  for (auto& r : rows_) {  // counts of ours not in the table yet
    auto it = pending_.find(r.info.id);
    if (it != pending_.end()) {
      r.entries += it->second.first;
      r.bytes += it->second.second;
    }
  }
  loaded_version_ = data_version;
  return Status::Ok();
}

size_t RangeTable::Locate(uint64_t hash, size_t hint) const {
  if (hint < rows_.size() && rows_[hint].info.active && rows_[hint].info.Contains(hash)) return hint;
  for (size_t k = 0; k < rows_.size(); ++k) {
    if (rows_[k].info.active && rows_[k].info.Contains(hash)) return k;
  }
  return SIZE_MAX;
}

bool RangeTable::DueToPersist(int64_t mono_ms) const {
  return mono_ms - last_flush_ms_ >= kFlushMs || mono_ms < last_flush_ms_;
}

Status RangeTable::Write(const RangeCounts& counts) {
  for (const auto& [id, c] : counts) {
    StmtScope scope(&update_);
    update_.Bind(1, c.first);
    update_.Bind(2, c.second);
    update_.Bind(3, static_cast<int64_t>(id));
    Status st;
    update_.Step(&st);
    ES_RETURN_IF_ERROR(st);
  }
  return Status::Ok();
}

Status RangeTable::Count(const RangeCounts& add, bool persist) {
  if (persist) {
    RangeCounts all = pending_;
    for (const auto& [id, c] : add) {
      all[id].first += c.first;
      all[id].second += c.second;
    }
    ES_RETURN_IF_ERROR(Write(all));
  }
  for (const auto& [id, counts] : add) {
    for (size_t i = 0; i < rows_.size(); ++i) {
      RangeRow& r = rows_[i];
      if (r.info.id != id) continue;
      r.entries += counts.first;
      r.bytes += counts.second;
      if (!r.info.active || (r.entries < split_max_entries_ && r.bytes < split_max_bytes_)) break;
      if (r.info.max - r.info.min < 2) break;  // cannot halve further
      uint32_t next_id = 0;
      for (const auto& o : rows_) next_id = std::max(next_id, o.info.id);
      const RangeInfo parent = r.info;
      uint64_t mid = parent.min + (parent.max - parent.min) / 2;
      Stmt ins, off;
      ES_RETURN_IF_ERROR(ins.Prepare(db_, "INSERT INTO ranges VALUES(?, ?, ?, ?, 1, 0, 0)"));
      ES_RETURN_IF_ERROR(off.Prepare(db_, "UPDATE ranges SET active = 0 WHERE id = ?"));
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
        rows_.push_back(child);  // invalidates r: leave the loop now
      }
      loaded_version_ = -1;  // reload after commit (or rollback)
      break;
    }
  }
  return Status::Ok();
}

void RangeTable::Committed(const RangeCounts& add, bool persisted, int64_t mono_ms) {
  if (persisted) {
    pending_.clear();
    last_flush_ms_ = mono_ms;
    return;
  }
  for (const auto& [id, c] : add) {
    auto& p = pending_[id];
    p.first += c.first;
    p.second += c.second;
  }
}

Status RangeTable::Flush() {
  Txn txn(db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(Write(pending_));
  ES_RETURN_IF_ERROR(txn.Commit());
  pending_.clear();
  return Status::Ok();
}

}  // namespace edgesync

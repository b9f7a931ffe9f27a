// Summaries for people: the devices a store knows and how old its backlog
// is. Read side only (read_mu_, one snapshot each).
#include <algorithm>

#include "store/sqlite_store.h"

namespace edgesync {

Status SqliteStore::ListDevices(std::vector<DeviceSummary>* devices) {
  devices->clear();
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  Stmt local, remote;
  ES_RETURN_IF_ERROR(local.Prepare(&read_db_,
                                   "SELECT s.device_id, count(*), min(l.ts), max(l.ts) FROM log l "
                                   "JOIN series s ON s.id = l.series WHERE l.kind = 0 GROUP BY s.device_id"));
  Status st;
  while (local.Step(&st)) {
    devices->push_back({local.Text(0), origin_, true, local.Int(1), local.Int(2), local.Int(3)});
  }
  ES_RETURN_IF_ERROR(st);
  ES_RETURN_IF_ERROR(remote.Prepare(&read_db_,
                                    "SELECT s.device_id, r.origin, count(*), min(r.ts), max(r.ts) FROM remote r "
                                    "JOIN series s ON s.id = r.series WHERE r.kind = 0 "
                                    "GROUP BY s.device_id, r.origin"));
  std::vector<std::pair<int64_t, DeviceSummary>> rows;
  while (remote.Step(&st)) {
    DeviceSummary d{remote.Text(0), Origin{}, false, remote.Int(2), remote.Int(3), remote.Int(4)};
    rows.emplace_back(remote.Int(1), std::move(d));
  }
  ES_RETURN_IF_ERROR(st);
  for (auto& [origin_id, d] : rows) {
    ES_RETURN_IF_ERROR(OriginById(origin_id, &d.origin));
    // Our own entries that came back through a region feed are local rows.
    if (d.origin == origin_) continue;
    devices->push_back(std::move(d));
  }
  std::sort(devices->begin(), devices->end(), [](const DeviceSummary& a, const DeviceSummary& b) {
    if (a.device_id != b.device_id) return a.device_id < b.device_id;
    if (a.local != b.local) return a.local;
    return a.origin.ToString() < b.origin.ToString();
  });
  return Status::Ok();
}

Status SqliteStore::Backlog(uint64_t after_lsn, BacklogInfo* info) {
  *info = BacklogInfo{};
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  Stmt st_oldest;
  // The batch holding after_lsn + 1 (batches share a row while their
  // millisecond does; see AppendOnce), if any entry is after it at all.
  ES_RETURN_IF_ERROR(st_oldest.Prepare(&read_db_,
                                       "SELECT (SELECT written_at FROM batches WHERE first_lsn <= ?1 "
                                       "ORDER BY first_lsn DESC LIMIT 1) "
                                       "WHERE EXISTS (SELECT 1 FROM log WHERE lsn >= ?1)"));
  st_oldest.Bind(1, static_cast<int64_t>(after_lsn + 1));
  Status st;
  if (st_oldest.Step(&st)) info->oldest_written_ms = st_oldest.Int(0);
  ES_RETURN_IF_ERROR(st);
  Stmt mean;
  ES_RETURN_IF_ERROR(mean.Prepare(&read_db_, "SELECT ifnull(sum(bytes), 0), ifnull(sum(entries), 0) FROM ranges"));
  if (mean.Step(&st) && mean.Int(1) > 0) {
    info->avg_entry_bytes = static_cast<double>(mean.Int(0)) / static_cast<double>(mean.Int(1));
  }
  return st;
}

}  // namespace edgesync

// The change log's read side (store/log_reader.h), each call under the read
// connection's mutex and in one read transaction.
#include "store/sqlite_store.h"

namespace edgesync {

Status SqliteStore::GetDevice(const std::string& device_id, DeviceRecord* device) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", device_id));
  MutexLock lock(&read_mu_);
  return log_reader_.GetDevice(device_id, device);
}

Status SqliteStore::ListRanges(std::vector<RangeInfo>* ranges) {
  MutexLock lock(&read_mu_);
  return log_reader_.ListRanges(ranges);
}

Status SqliteStore::ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) {
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);  // one snapshot across chunks and device lookups
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  return log_reader_.ReadLog(after_lsn, max_entries, entries);
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
  return log_reader_.CompleteThrough(lsn, now, writing, through_ms);
}

Status SqliteStore::ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) {
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  return log_reader_.ReadFeed(range_id, from, max_entries, page);
}

}  // namespace edgesync

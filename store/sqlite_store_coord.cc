// Coordination and housekeeping: leases of feed consumers
// (store/lease_table.h), named checkpoints, feed positions
// (store/feed_position_table.h) and upstream acknowledgements, dead letters
// (store/dead_letter_table.h) and statistics. Space limits and
// retention: sqlite_store_retention.cc.
#include <sys/stat.h>

#include <algorithm>

#include "platform/files.h"
#include "platform/log.h"
#include "store/dead_letter_table.h"
#include "store/feed_position_table.h"
#include "store/lease_table.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {
namespace {

Status ValidateMark(const CheckpointMark& mark) {
  ES_RETURN_IF_ERROR(ValidateName("checkpoint name", mark.name));
  if (mark.value > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("checkpoint value too large");
  return Status::Ok();
}

}  // namespace

Status SqliteStore::AcquireLease(uint32_t range_id, const std::string& owner, Lease* lease) {
  ES_RETURN_IF_ERROR(lease_table::ValidateOwner(owner));
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(RefreshWriteRanges());
  const RangeRow* range = FindRange(ranges_.rows(), range_id);
  if (!range) return Status::NotFound("range " + std::to_string(range_id) + " does not exist");
  if (!range->info.active) return Status::NotFound("range " + std::to_string(range_id) + " has split; lease its children");
  std::vector<uint32_t> ancestors;
  for (uint32_t p = range->info.parent; p != 0;) {
    ancestors.push_back(p);
    const RangeRow* parent = FindRange(ranges_.rows(), p);
    p = parent ? parent->info.parent : 0;
  }
  ES_RETURN_IF_ERROR(
      lease_table::Acquire(&write_db_, *clock_, range_id, owner, ancestors, options_.lease_expiry_ms, lease));
  return txn.Commit();
}

Status SqliteStore::RenewLease(const Lease& held, Lease* lease) {
  return CheckpointLease(held, held.continuation, lease);
}

Status SqliteStore::CheckpointLease(const Lease& held, const std::string& continuation, Lease* lease) {
  MutexLock lock(&write_mu_);
  return lease_table::Checkpoint(&write_db_, *clock_, held, continuation, lease);
}

Status SqliteStore::ReleaseLease(const Lease& held) {
  MutexLock lock(&write_mu_);
  return lease_table::Release(&write_db_, held);
}

// A consumer takes a range from another (rebalancing); see store.h.
Status SqliteStore::TakeLease(const Lease& seen, const std::string& owner, Lease* lease) {
  MutexLock lock(&write_mu_);
  return lease_table::Take(&write_db_, *clock_, seen, owner, lease);
}

Status SqliteStore::ListLeases(std::vector<Lease>* leases) {
  MutexLock lock(&read_mu_);
  return lease_table::List(&read_db_, leases);
}

Status SqliteStore::GetCheckpoint(const std::string& name, uint64_t* value) {
  ES_RETURN_IF_ERROR(ValidateName("checkpoint name", name));
  MutexLock lock(&read_mu_);
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_, "SELECT value FROM checkpoints WHERE name=?"));
  s.Bind(1, std::string_view(name));
  Status st;
  *value = s.Step(&st) ? static_cast<uint64_t>(s.Int(0)) : 0;
  return st;
}

Status SqliteStore::SetCheckpoint(const std::string& name, uint64_t value) {
  const CheckpointMark mark{name, value};
  ES_RETURN_IF_ERROR(ValidateMark(mark));
  MutexLock lock(&write_mu_);
  return MoveCheckpoint(mark);
}

Status SqliteStore::AppendReadingsMarked(const std::vector<Reading>& readings, const CheckpointMark& mark,
                                         AppendResult* result) {
  ES_RETURN_IF_ERROR(ValidateMark(mark));
  return AppendWithMark(readings, &mark, result);
}

Status SqliteStore::GetFeedPosition(const std::string& region, FeedPosition* position) {
  ES_RETURN_IF_ERROR(feed_position_table::ValidateRegion(region));
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  ES_RETURN_IF_ERROR(feed_position_table::Read(&read_db_, region, position));
  return snapshot.Commit();
}

Status SqliteStore::SetFeedPosition(const std::string& region, const FeedPosition& position, bool reset) {
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(feed_position_table::Write(&write_db_, region, position, reset));
  return txn.Commit();
}

Status SqliteStore::AckUpstream(const std::string& target, uint64_t lsn) {
  ES_RETURN_IF_ERROR(ValidateName("upstream target", target));
  MutexLock lock(&write_mu_);
  // From the file, not the cached LastLsn: another process may be the writer.
  uint64_t next = 0;
  ES_RETURN_IF_ERROR(NextLsn(&next));
  if (lsn >= next) {
    return Status::InvalidArgument("ack of LSN " + std::to_string(lsn) + " beyond the last LSN " +
                                   std::to_string(next - 1));
  }
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&write_db_,
                               "INSERT INTO acks VALUES(?, ?) ON CONFLICT(target) DO UPDATE SET lsn=max(lsn, excluded.lsn)"));
  s.Bind(1, std::string_view(target));
  s.Bind(2, static_cast<int64_t>(lsn));
  return s.Run();
}

Status SqliteStore::AddDeadLetters(const std::vector<DeadLetter>& letters) {
  MutexLock lock(&write_mu_);
  return dead_letter_table::Add(&write_db_, letters, options_.dead_letter_cap);
}

Status SqliteStore::ListDeadLetters(size_t max, std::vector<DeadLetter>* letters) {
  MutexLock lock(&read_mu_);
  return dead_letter_table::List(&read_db_, max, letters);
}

Status SqliteStore::Stats(StoreStats* stats) {
  *stats = StoreStats{};
  stats->last_lsn = last_lsn_.load();
  stats->rejected_full = rejected_full_.load();
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t v = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &v));
  stats->acked_lsn = static_cast<uint64_t>(v);
  ES_RETURN_IF_ERROR(read_db_.QueryInt(
      "SELECT (SELECT count(*) FROM log) + (SELECT ifnull(sum(last_lsn - first_lsn + 1), 0) FROM chunks)",
      &stats->entries));
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT (SELECT ifnull(sum(n), 0) FROM view_chunks) + "
                                       "(SELECT ifnull(sum(n), 0) FROM region_chunks)",
                                       &stats->remote_entries));
  stats->corrupt_chunks = corrupt_chunks_.load();
  ES_RETURN_IF_ERROR(GetMetaInt(&read_db_, "dropped_oldest", &stats->dropped_oldest));
  ES_RETURN_IF_ERROR(GetMetaInt(&read_db_, "dropped_acked", &stats->dropped_acked));
  ES_RETURN_IF_ERROR(GetMetaInt(&read_db_, "dead_letters", &stats->dead_letters));
  int64_t high = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt(kHighLsnSql, &high));
  stats->last_lsn = std::max<uint64_t>(stats->last_lsn, static_cast<uint64_t>(high));
  struct stat st;
  if (::stat(options_.path.c_str(), &st) == 0) stats->file_bytes += st.st_size;
  if (::stat((options_.path + "-wal").c_str(), &st) == 0) stats->file_bytes += st.st_size;
  return Status::Ok();
}

}  // namespace edgesync

// Coordination and housekeeping: leases of feed consumers, named checkpoints,
// feed positions (store/feed_position_table.h) and upstream
// acknowledgements, dead letters and statistics. Space limits and
// retention: sqlite_store_retention.cc.
#include <sys/stat.h>

#include <algorithm>

#include "platform/files.h"
#include "platform/log.h"
#include "store/feed_position_table.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {
namespace {

Status ValidateName(const char* what, const std::string& name) {
  if (name.empty() || name.size() > 256) return Status::InvalidArgument(std::string(what) + ": 1 to 256 bytes");
  if (!IsValidUtf8(name)) return Status::InvalidArgument(std::string(what) + ": not valid UTF-8");
  return Status::Ok();
}

Status ValidateMark(const CheckpointMark& mark) {
  ES_RETURN_IF_ERROR(ValidateName("checkpoint name", mark.name));
  if (mark.value > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("checkpoint value too large");
  return Status::Ok();
}

void ReadLease(const Stmt& s, Lease* l) {
  l->range_id = static_cast<uint32_t>(s.Int(0));
  l->owner = s.Text(1);
  l->continuation = s.Text(2);
  l->renewed_at_ms = s.Int(3);
  l->version = s.Int(4);
}

constexpr char kLeaseColumns[] = "range_id, owner, continuation, renewed_at, version, boot_id, renewed_mono";

// When a lease was last renewed, on the clock expiry is measured by: the
// monotonic clock of the renewing host's boot. Every process of one boot
// reads the same monotonic clock, which no wall-clock step (NTP, an RTC
// reset, `date -s`) moves; a renewal from another boot belongs to a process
// that cannot be running any more.
struct Renewal {
  std::string boot_id;
  int64_t mono_ms = 0;
};

Renewal LeaseRenewal(const Stmt& s) { return Renewal{s.Text(5), s.Int(6)}; }

// How long ago, on this boot's monotonic clock, the lease was renewed;
// INT64_MAX when it was renewed in another boot (or the clock says it was
// in the future, which only a reboot with an unknown boot id can cause).
int64_t SinceRenewal(const Renewal& r, const Clock& clock) {
  if (r.boot_id != clock.BootId()) return INT64_MAX;
  int64_t age = clock.MonotonicMillis() - r.mono_ms;
  return age < 0 ? INT64_MAX : age;
}

}  // namespace

Status SqliteStore::LoadLease(uint32_t range_id, bool* found, Lease* lease, int64_t* since_renewal_ms) {
  Stmt s;
  ES_RETURN_IF_ERROR(
      s.Prepare(&write_db_, (std::string("SELECT ") + kLeaseColumns + " FROM leases WHERE range_id=?").c_str()));
  s.Bind(1, static_cast<int64_t>(range_id));
  Status st;
  *found = s.Step(&st);
  if (*found) {
    ReadLease(s, lease);
    if (since_renewal_ms != nullptr) *since_renewal_ms = SinceRenewal(LeaseRenewal(s), *clock_);
  }
  return st;
}

Status SqliteStore::SetLeaseOwner(uint32_t range_id, const std::string& owner, int64_t version, int64_t now_ms,
                                  bool* moved) {
  // Stamped like every renewal: expiry is judged on this boot's monotonic
  // clock, never on the wall clock.
  const std::string boot = clock_->BootId();  // bound as SQLITE_STATIC: must outlive Run
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(&write_db_,
                                "UPDATE leases SET owner=?, renewed_at=?, boot_id=?, renewed_mono=?, version=version+1 "
                                "WHERE range_id=? AND version=?"));
  up.Bind(1, std::string_view(owner));
  up.Bind(2, now_ms);
  up.Bind(3, std::string_view(boot));
  up.Bind(4, clock_->MonotonicMillis());
  up.Bind(5, static_cast<int64_t>(range_id));
  up.Bind(6, version);
  ES_RETURN_IF_ERROR(up.Run());
  *moved = write_db_.changes() == 1;
  return Status::Ok();
}

Status SqliteStore::AcquireLease(uint32_t range_id, const std::string& owner, Lease* lease) {
  ES_RETURN_IF_ERROR(ValidateName("lease owner", owner));
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  ES_RETURN_IF_ERROR(RefreshWriteRanges());
  const RangeRow* range = FindRange(write_ranges_, range_id);
  if (!range) return Status::NotFound("range " + std::to_string(range_id) + " does not exist");
  if (!range->info.active) return Status::NotFound("range " + std::to_string(range_id) + " has split; lease its children");
  const int64_t now = clock_->WallMillis();
  const int64_t mono = clock_->MonotonicMillis();
  const std::string boot = clock_->BootId();
  bool found = false;
  Lease cur;
  int64_t since = 0;
  ES_RETURN_IF_ERROR(LoadLease(range_id, &found, &cur, &since));
  if (!found) {
    // A child starts from the nearest ancestor's checkpoint, so a split
    // neither loses nor repeats the parent consumer's progress.
    std::string cont;
    for (uint32_t p = range->info.parent; p != 0 && cont.empty();) {
      bool pf = false;
      Lease pl;
      ES_RETURN_IF_ERROR(LoadLease(p, &pf, &pl, nullptr));
      if (pf) cont = pl.continuation;
      const RangeRow* parent = FindRange(write_ranges_, p);
      p = parent ? parent->info.parent : 0;
    }
    Stmt ins;
    ES_RETURN_IF_ERROR(
        ins.Prepare(&write_db_,
                    (std::string("INSERT INTO leases(") + kLeaseColumns + ") VALUES(?, ?, ?, ?, 1, ?, ?)").c_str()));
    ins.Bind(1, static_cast<int64_t>(range_id));
    ins.Bind(2, std::string_view(owner));
    ins.Bind(3, std::string_view(cont));
    ins.Bind(4, now);
    ins.Bind(5, std::string_view(boot));
    ins.Bind(6, mono);
    ES_RETURN_IF_ERROR(ins.Run());
    *lease = Lease{range_id, owner, cont, now, 1};
    return txn.Commit();
  }
  bool expired = since >= options_.lease_expiry_ms;
  if (!cur.owner.empty() && cur.owner != owner && !expired) {
    return Status::Conflict("range " + std::to_string(range_id) + " is leased by " + cur.owner + " (renewed " +
                            std::to_string(since) + " ms ago, expires after " +
                            std::to_string(options_.lease_expiry_ms) + " ms)");
  }
  // Inside this transaction the version read above cannot have moved.
  bool moved = false;
  ES_RETURN_IF_ERROR(SetLeaseOwner(range_id, owner, cur.version, now, &moved));
  if (!moved) return Status::Conflict("lease on range " + std::to_string(range_id) + " moved while taken");
  if (!cur.owner.empty() && cur.owner != owner) {
    ES_LOG(kInfo, "store: lease on range {} taken over from {} by {} ({})", range_id, cur.owner, owner,
           since == INT64_MAX ? "renewed in an earlier boot" : "not renewed for " + std::to_string(since) + " ms");
  }
  *lease = Lease{range_id, owner, cur.continuation, now, cur.version + 1};
  return txn.Commit();
}

Status SqliteStore::RenewLease(const Lease& held, Lease* lease) {
  return CheckpointLease(held, held.continuation, lease);
}

Status SqliteStore::CheckpointLease(const Lease& held, const std::string& continuation, Lease* lease) {
  if (!continuation.empty()) {
    FeedToken t;
    ES_RETURN_IF_ERROR(DecodeFeedToken(continuation, &t));
  }
  MutexLock lock(&write_mu_);
  const int64_t now = clock_->WallMillis();
  const std::string boot = clock_->BootId();  // bound as SQLITE_STATIC: must outlive Run
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(&write_db_,
                                "UPDATE leases SET continuation=?, renewed_at=?, boot_id=?, renewed_mono=?, "
                                "version=version+1 WHERE range_id=? AND owner=? AND version=?"));
  up.Bind(1, std::string_view(continuation));
  up.Bind(2, now);
  up.Bind(3, std::string_view(boot));
  up.Bind(4, clock_->MonotonicMillis());
  up.Bind(5, static_cast<int64_t>(held.range_id));
  up.Bind(6, std::string_view(held.owner));
  up.Bind(7, held.version);
  ES_RETURN_IF_ERROR(up.Run());
  if (write_db_.changes() != 1) {
    return Status::Conflict("lease on range " + std::to_string(held.range_id) + " is no longer held by " + held.owner +
                            " at version " + std::to_string(held.version) + " (taken over or released)");
  }
  *lease = Lease{held.range_id, held.owner, continuation, now, held.version + 1};
  return Status::Ok();
}

Status SqliteStore::ReleaseLease(const Lease& held) {
  MutexLock lock(&write_mu_);
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(&write_db_,
                                "UPDATE leases SET owner='', version=version+1 WHERE range_id=? AND owner=? AND version=?"));
  up.Bind(1, static_cast<int64_t>(held.range_id));
  up.Bind(2, std::string_view(held.owner));
  up.Bind(3, held.version);
  ES_RETURN_IF_ERROR(up.Run());
  if (write_db_.changes() != 1) {
    return Status::Conflict("lease on range " + std::to_string(held.range_id) + " is no longer held by " + held.owner);
  }
  return Status::Ok();
}

// A consumer takes a range from another (rebalancing); see store.h.
Status SqliteStore::TakeLease(const Lease& seen, const std::string& owner, Lease* lease) {
  if (owner.empty() || owner.size() > 128) return Status::InvalidArgument("lease owner must be 1..128 bytes");
  MutexLock lock(&write_mu_);
  const int64_t now = clock_->WallMillis();
  bool moved = false;
  ES_RETURN_IF_ERROR(SetLeaseOwner(seen.range_id, owner, seen.version, now, &moved));
  if (!moved) {
    return Status::Conflict("lease on range " + std::to_string(seen.range_id) + " moved past version " +
                            std::to_string(seen.version));
  }
  *lease = Lease{seen.range_id, owner, seen.continuation, now, seen.version + 1};
  return Status::Ok();
}

Status SqliteStore::ListLeases(std::vector<Lease>* leases) {
  MutexLock lock(&read_mu_);
  leases->clear();
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_, (std::string("SELECT ") + kLeaseColumns + " FROM leases ORDER BY range_id").c_str()));
  Status st;
  while (s.Step(&st)) {
    Lease l;
    ReadLease(s, &l);
    leases->push_back(std::move(l));
  }
  return st;
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
  if (letters.empty()) return Status::Ok();
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  Stmt ins;
  ES_RETURN_IF_ERROR(ins.Prepare(&write_db_, "INSERT INTO dead_letters(at, topic, head, reason) VALUES(?, ?, ?, ?)"));
  for (const auto& d : letters) {
    std::string_view head(d.head.data(), std::min<size_t>(d.head.size(), 256));
    std::string_view topic(d.topic.data(), std::min<size_t>(d.topic.size(), 1024));
    std::string_view reason(d.reason.data(), std::min<size_t>(d.reason.size(), 1024));
    ins.Bind(1, d.at_ms);
    ins.Bind(2, topic);
    sqlite3_bind_blob(ins.get(), 3, head.data(), static_cast<int>(head.size()), SQLITE_STATIC);
    ins.Bind(4, reason);
    ES_RETURN_IF_ERROR(ins.Run());
  }
  Stmt cap;
  ES_RETURN_IF_ERROR(cap.Prepare(&write_db_, "DELETE FROM dead_letters WHERE id <= (SELECT max(id) FROM dead_letters) - ?"));
  cap.Bind(1, options_.dead_letter_cap);
  ES_RETURN_IF_ERROR(cap.Run());
  int64_t total = 0;
  ES_RETURN_IF_ERROR(GetMetaInt(&write_db_, "dead_letters", &total));
  ES_RETURN_IF_ERROR(SetMetaInt("dead_letters", total + static_cast<int64_t>(letters.size())));
  return txn.Commit();
}

Status SqliteStore::ListDeadLetters(size_t max, std::vector<DeadLetter>* letters) {
  MutexLock lock(&read_mu_);
  letters->clear();
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_, "SELECT at, topic, head, reason FROM dead_letters ORDER BY id DESC LIMIT ?"));
  s.Bind(1, static_cast<int64_t>(std::min<uint64_t>(max, INT64_MAX)));
  Status st;
  while (s.Step(&st)) {
    DeadLetter d;
    d.at_ms = s.Int(0);
    d.topic = s.Text(1);
    const void* blob = sqlite3_column_blob(s.get(), 2);
    d.head.assign(static_cast<const char*>(blob ? blob : ""), static_cast<size_t>(sqlite3_column_bytes(s.get(), 2)));
    d.reason = s.Text(3);
    letters->push_back(std::move(d));
  }
  return st;
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

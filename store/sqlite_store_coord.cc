// Coordination and housekeeping: space limits and drop-oldest, leases of feed
// consumers, named checkpoints and upstream acknowledgements, dead letters,
// retention and statistics.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>

#include "platform/files.h"
#include "platform/log.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {
namespace {

constexpr int64_t kDiskBytesPerReading = 64;  // log row + index entry + b-tree overhead

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

// max_bytes is checked against the pages in use (free pages are reused
// before the file grows), before a batch is written.
Status SqliteStore::CheckSpace(size_t n, int64_t* to_drop) {
  *to_drop = 0;
  const bool drop = options_.disk_policy == StoreOptions::DiskPolicy::kDropOldest;
  if (options_.max_bytes <= 0 && !drop) return Status::Ok();  // the filesystem will say so
  int64_t pages = 0, free_pages = 0, page_size = 0;
  ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA page_count", &pages));
  ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA freelist_count", &free_pages));
  ES_RETURN_IF_ERROR(write_db_.QueryInt("PRAGMA page_size", &page_size));
  int64_t used = (pages - free_pages) * page_size;
  int64_t need = static_cast<int64_t>(n) * kDiskBytesPerReading;
  int64_t limit = options_.max_bytes > 0 ? options_.max_bytes : INT64_MAX;
  if (drop) {
    // Under drop-oldest, room must be made before the filesystem is full:
    // once it is, neither a new row nor the checkpoint that would recycle
    // the WAL can be written. Deleted rows free pages inside the file (which
    // new rows reuse), not bytes on the filesystem, so the file may grow
    // only into what the WAL does not still need.
    Result<uint64_t> fs_free = FreeBytes(options_.path);
    struct stat wal;
    int64_t wal_size = ::stat((options_.path + "-wal").c_str(), &wal) == 0 ? wal.st_size : 0;
    if (fs_free.ok()) {
      int64_t wal_room = std::max<int64_t>(0, wal_max_bytes_ - wal_size) + 2 * need + 65536;
      int64_t fs_limit = pages * page_size + static_cast<int64_t>(*fs_free) - wal_room;
      limit = std::min(limit, fs_limit);
    }
    struct rlimit lim;  // a per-file size limit caps the file the same way
    if (::getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
      limit = std::min(limit, static_cast<int64_t>(lim.rlim_cur) - 2 * need - 65536);
    }
  }
  if (used + need <= limit) return Status::Ok();
  if (!drop) {
    return Status::NoSpace("store " + options_.path + " is full: " + std::to_string(used) + " bytes used, limit " +
                           std::to_string(options_.max_bytes) +
                           " (store.max_bytes); new readings rejected (disk policy reject-new)");
  }
  *to_drop = std::max<int64_t>(static_cast<int64_t>(n), (used + need - limit) / kDiskBytesPerReading);
  return Status::Ok();
}

// Inside the caller's transaction. Drops the n oldest readings; counts those
// not yet acknowledged upstream (those are data lost by policy).
Status SqliteStore::DropOldest(int64_t n, int64_t* dropped_unacked) {
  *dropped_unacked = 0;
  int64_t acked = 0, high = 0;
  ES_RETURN_IF_ERROR(write_db_.QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &acked));
  uint64_t next = 0;
  ES_RETURN_IF_ERROR(NextLsn(&next));
  high = static_cast<int64_t>(next) - 1;
  Stmt bound;
  ES_RETURN_IF_ERROR(bound.Prepare(&write_db_,
                                   "SELECT max(lsn) FROM (SELECT lsn FROM log WHERE kind = 0 ORDER BY lsn LIMIT ?)"));
  bound.Bind(1, n);
  Status st;
  int64_t upto = bound.Step(&st) ? bound.Int(0) : 0;
  ES_RETURN_IF_ERROR(st);
  bound.Reset();
  if (upto <= 0) return Status::Ok();
  Stmt count;
  ES_RETURN_IF_ERROR(count.Prepare(&write_db_, "SELECT count(*) FROM log WHERE kind = 0 AND lsn > ? AND lsn <= ?"));
  count.Bind(1, acked);
  count.Bind(2, upto);
  int64_t unacked = count.Step(&st) ? count.Int(0) : 0;
  ES_RETURN_IF_ERROR(st);
  count.Reset();
  ES_RETURN_IF_ERROR(SetMetaInt("high_lsn", high));  // the high LSN outlives its rows
  Stmt del;
  ES_RETURN_IF_ERROR(del.Prepare(&write_db_, "DELETE FROM log WHERE kind = 0 AND lsn <= ?"));
  del.Bind(1, upto);
  ES_RETURN_IF_ERROR(del.Run());
  if (unacked > 0) {
    int64_t total = 0;
    ES_RETURN_IF_ERROR(GetMetaInt(&write_db_, "dropped_oldest", &total));
    ES_RETURN_IF_ERROR(SetMetaInt("dropped_oldest", total + unacked));
    // Once full, every batch drops some: say so every 10 s, not per batch.
    drop_log_pending_ += unacked;
    int64_t now = clock_->MonotonicMillis();
    if (last_drop_log_ms_ == 0 || now - last_drop_log_ms_ >= 10000) {
      ES_LOG(kWarn, "store {}: full, dropped {} unacknowledged oldest readings (disk policy drop-oldest)",
             options_.path, drop_log_pending_);
      drop_log_pending_ = 0;
      last_drop_log_ms_ = now;
    }
  }
  *dropped_unacked = unacked;
  return Status::Ok();
}

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

Status SqliteStore::AcquireLease(uint32_t range_id, const std::string& owner, Lease* lease) {
  ES_RETURN_IF_ERROR(ValidateName("lease owner", owner));
  std::lock_guard<std::mutex> lock(write_mu_);
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
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(&write_db_,
                                "UPDATE leases SET owner=?, renewed_at=?, boot_id=?, renewed_mono=?, version=version+1 "
                                "WHERE range_id=? AND version=?"));
  up.Bind(1, std::string_view(owner));
  up.Bind(2, now);
  up.Bind(3, std::string_view(boot));
  up.Bind(4, mono);
  up.Bind(5, static_cast<int64_t>(range_id));
  up.Bind(6, cur.version);
  ES_RETURN_IF_ERROR(up.Run());
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
  std::lock_guard<std::mutex> lock(write_mu_);
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
  std::lock_guard<std::mutex> lock(write_mu_);
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

Status SqliteStore::ListLeases(std::vector<Lease>* leases) {
  std::lock_guard<std::mutex> lock(read_mu_);
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
  std::lock_guard<std::mutex> lock(read_mu_);
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
  std::lock_guard<std::mutex> lock(write_mu_);
  return MoveCheckpoint(mark);
}

Status SqliteStore::AppendReadingsMarked(const std::vector<Reading>& readings, const CheckpointMark& mark,
                                         AppendResult* result) {
  ES_RETURN_IF_ERROR(ValidateMark(mark));
  return AppendWithMark(readings, &mark, result);
}

Status SqliteStore::AckUpstream(const std::string& target, uint64_t lsn) {
  ES_RETURN_IF_ERROR(ValidateName("upstream target", target));
  std::lock_guard<std::mutex> lock(write_mu_);
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
  std::lock_guard<std::mutex> lock(write_mu_);
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
  std::lock_guard<std::mutex> lock(read_mu_);
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

Status SqliteStore::Prune(PruneResult* result) {
  *result = PruneResult{};
  const int64_t now = clock_->WallMillis();
  const int64_t cutoff = now - options_.retention_age_ms;
  int64_t limit = 0, lo = 0;
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    Txn txn(&write_db_);
    ES_RETURN_IF_ERROR(txn.Begin());
    uint64_t next = 0;
    ES_RETURN_IF_ERROR(NextLsn(&next));
    int64_t high = static_cast<int64_t>(next) - 1;
    ES_RETURN_IF_ERROR(SetMetaInt("high_lsn", high));  // LSNs are never reused, even with an empty log
    int64_t acked = 0;
    ES_RETURN_IF_ERROR(write_db_.QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &acked));
    // Everything before the first batch written after the cutoff is old
    // enough (batch-grained; a clock stepped back only delays pruning).
    Stmt y;
    ES_RETURN_IF_ERROR(y.Prepare(&write_db_,
                                 "SELECT ifnull((SELECT first_lsn - 1 FROM batches WHERE written_at >= ? "
                                 "ORDER BY first_lsn LIMIT 1), ?)"));
    y.Bind(1, cutoff);
    y.Bind(2, high);
    Status st;
    int64_t young = y.Step(&st) ? y.Int(0) : 0;
    ES_RETURN_IF_ERROR(st);
    y.Reset();
    limit = std::min(acked, young);
    ES_RETURN_IF_ERROR(write_db_.QueryInt("SELECT ifnull(min(lsn), 1) - 1 FROM log", &lo));
    ES_RETURN_IF_ERROR(txn.Commit());
  }
  // Readings go in chunks, each its own short transaction: ingest waits at
  // most one chunk, and the WAL stays small.
  constexpr int64_t kChunk = 20000;
  while (lo < limit) {
    int64_t upper = std::min(limit, lo + kChunk);
    std::lock_guard<std::mutex> lock(write_mu_);
    Txn txn(&write_db_);
    ES_RETURN_IF_ERROR(txn.Begin());
    Stmt del;
    ES_RETURN_IF_ERROR(del.Prepare(&write_db_, "DELETE FROM log WHERE lsn > ? AND lsn <= ? AND kind = 0"));
    del.Bind(1, lo);
    del.Bind(2, upper);
    ES_RETURN_IF_ERROR(del.Run());
    result->readings += write_db_.changes();
    Stmt b;
    ES_RETURN_IF_ERROR(b.Prepare(&write_db_,
                                 "DELETE FROM batches WHERE first_lsn < (SELECT max(first_lsn) FROM batches "
                                 "WHERE first_lsn <= ?)"));
    b.Bind(1, upper + 1);
    ES_RETURN_IF_ERROR(b.Run());
    ES_RETURN_IF_ERROR(txn.Commit());
    lo = upper;
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  Txn txn(&write_db_);
  ES_RETURN_IF_ERROR(txn.Begin());
  Status st;
  // Tombstones past their retention leave the log and the device table.
  Stmt tomb;
  ES_RETURN_IF_ERROR(tomb.Prepare(&write_db_, "SELECT lsn FROM devices WHERE deleted = 1 AND updated_at < ?"));
  tomb.Bind(1, now - options_.tombstone_retention_ms);
  std::vector<int64_t> tomb_lsns;
  while (tomb.Step(&st)) tomb_lsns.push_back(tomb.Int(0));
  ES_RETURN_IF_ERROR(st);
  tomb.Reset();
  if (!tomb_lsns.empty()) {
    Stmt dl, dd;
    ES_RETURN_IF_ERROR(dl.Prepare(&write_db_, "DELETE FROM log WHERE lsn = ?"));
    ES_RETURN_IF_ERROR(dd.Prepare(&write_db_, "DELETE FROM devices WHERE lsn = ? AND deleted = 1"));
    for (int64_t l : tomb_lsns) {
      dl.Bind(1, l);
      ES_RETURN_IF_ERROR(dl.Run());
      dd.Bind(1, l);
      ES_RETURN_IF_ERROR(dd.Run());
    }
    result->tombstones = static_cast<int64_t>(tomb_lsns.size());
  }
  // Read view and region feed: by age. A region feed reader behind the
  // pruned point gets an explicit reset (region_pruned_seq).
  // Rows before the first one applied after the cutoff are old enough (the
  // read view is in apply order, like the log).
  Stmt rb;
  ES_RETURN_IF_ERROR(rb.Prepare(&write_db_,
                                "SELECT ifnull((SELECT rid FROM remote WHERE at >= ? ORDER BY rid LIMIT 1), "
                                "ifnull((SELECT max(rid) FROM remote), 0) + 1)"));
  rb.Bind(1, cutoff);
  int64_t bound = rb.Step(&st) ? rb.Int(0) : 0;
  ES_RETURN_IF_ERROR(st);
  rb.Reset();
  int64_t removed = 0;
  if (bound > 0) {
    std::string b = std::to_string(bound);
    // The region feed follows the read view's order: what it served from
    // pruned rows is gone, and a reader behind it gets an explicit reset.
    int64_t pruned_seq = 0;
    ES_RETURN_IF_ERROR(write_db_.QueryInt("SELECT ifnull(max(seq), 0) FROM region_feed WHERE rid < " + b, &pruned_seq));
    if (pruned_seq > 0) {
      ES_RETURN_IF_ERROR(write_db_.Exec("DELETE FROM region_feed WHERE seq <= " + std::to_string(pruned_seq)));
      int64_t old = 0;
      ES_RETURN_IF_ERROR(GetMetaInt(&write_db_, "region_pruned_seq", &old));
      ES_RETURN_IF_ERROR(SetMetaInt("region_pruned_seq", std::max(old, pruned_seq)));
    }
    ES_RETURN_IF_ERROR(write_db_.Exec("DELETE FROM remote WHERE rid < " + b));
    removed = write_db_.changes();
    ES_RETURN_IF_ERROR(write_db_.Exec("DELETE FROM remote_devices WHERE rid < " + b));
  }
  result->remote = removed;
  return txn.Commit();
}

Status SqliteStore::Stats(StoreStats* stats) {
  *stats = StoreStats{};
  stats->last_lsn = last_lsn_.load();
  stats->rejected_full = rejected_full_.load();
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t v = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &v));
  stats->acked_lsn = static_cast<uint64_t>(v);
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT count(*) FROM log", &stats->entries));
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT count(*) FROM remote", &stats->remote_entries));
  ES_RETURN_IF_ERROR(GetMetaInt(&read_db_, "dropped_oldest", &stats->dropped_oldest));
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

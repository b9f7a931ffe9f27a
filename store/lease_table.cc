#include "store/lease_table.h"

#include "platform/log.h"
#include "store/token.h"
#include "store/types.h"

namespace edgesync {
namespace lease_table {
namespace {

constexpr char kLeaseColumns[] = "range_id, owner, continuation, renewed_at, version, boot_id, renewed_mono";

void ReadLease(const Stmt& s, Lease* l) {
  l->range_id = static_cast<uint32_t>(s.Int(0));
  l->owner = s.Text(1);
  l->continuation = s.Text(2);
  l->renewed_at_ms = s.Int(3);
  l->version = s.Int(4);
}

// How long ago, on this boot's monotonic clock, the lease in s's row was
// renewed; INT64_MAX when it was renewed in another boot (or the clock says
// it was in the future, which only a reboot with an unknown boot id can
// cause).
int64_t SinceRenewal(const Stmt& s, const Clock& clock) {
  if (s.Text(5) != clock.BootId()) return INT64_MAX;
  int64_t age = clock.MonotonicMillis() - s.Int(6);
  return age < 0 ? INT64_MAX : age;
}

Status Load(Db* db, const Clock& clock, uint32_t range_id, bool* found, Lease* lease, int64_t* since_renewal_ms) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, (std::string("SELECT ") + kLeaseColumns + " FROM leases WHERE range_id=?").c_str()));
  s.Bind(1, static_cast<int64_t>(range_id));
  Status st;
  *found = s.Step(&st);
  if (*found) {
    ReadLease(s, lease);
    if (since_renewal_ms != nullptr) *since_renewal_ms = SinceRenewal(s, clock);
  }
  return st;
}

// Gives the lease on range_id to owner if its version is still `version`,
// stamped like every renewal; *moved tells whether it was (else another
// holder got there first).
Status SetOwner(Db* db, const Clock& clock, uint32_t range_id, const std::string& owner, int64_t version,
                int64_t now_ms, bool* moved) {
  const std::string boot = clock.BootId();  // bound as SQLITE_STATIC: must outlive Run
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(db,
                                "UPDATE leases SET owner=?, renewed_at=?, boot_id=?, renewed_mono=?, version=version+1 "
                                "WHERE range_id=? AND version=?"));
  up.Bind(1, std::string_view(owner));
  up.Bind(2, now_ms);
  up.Bind(3, std::string_view(boot));
  up.Bind(4, clock.MonotonicMillis());
  up.Bind(5, static_cast<int64_t>(range_id));
  up.Bind(6, version);
  ES_RETURN_IF_ERROR(up.Run());
  *moved = db->changes() == 1;
  return Status::Ok();
}

}  // namespace

Status ValidateOwner(const std::string& owner) { return ValidateName("lease owner", owner); }

Status Acquire(Db* db, const Clock& clock, uint32_t range_id, const std::string& owner,
               const std::vector<uint32_t>& ancestors, int64_t expiry_ms, Lease* lease) {
  const int64_t now = clock.WallMillis();
  bool found = false;
  Lease cur;
  int64_t since = 0;
  ES_RETURN_IF_ERROR(Load(db, clock, range_id, &found, &cur, &since));
  if (!found) {
    std::string cont;
    for (uint32_t p : ancestors) {
      bool pf = false;
      Lease pl;
      ES_RETURN_IF_ERROR(Load(db, clock, p, &pf, &pl, nullptr));
      if (pf) cont = pl.continuation;
      if (!cont.empty()) break;
    }
    const std::string boot = clock.BootId();
    Stmt ins;
    ES_RETURN_IF_ERROR(ins.Prepare(
        db, (std::string("INSERT INTO leases(") + kLeaseColumns + ") VALUES(?, ?, ?, ?, 1, ?, ?)").c_str()));
    ins.Bind(1, static_cast<int64_t>(range_id));
    ins.Bind(2, std::string_view(owner));
    ins.Bind(3, std::string_view(cont));
    ins.Bind(4, now);
    ins.Bind(5, std::string_view(boot));
    ins.Bind(6, clock.MonotonicMillis());
    ES_RETURN_IF_ERROR(ins.Run());
    *lease = Lease{range_id, owner, cont, now, 1};
    return Status::Ok();
  }
  const bool expired = since >= expiry_ms;
  if (!cur.owner.empty() && cur.owner != owner && !expired) {
    return Status::Conflict("range " + std::to_string(range_id) + " is leased by " + cur.owner + " (renewed " +
                            std::to_string(since) + " ms ago, expires after " + std::to_string(expiry_ms) + " ms)");
  }
  // Inside the caller's transaction the version read above cannot have moved.
  bool moved = false;
  ES_RETURN_IF_ERROR(SetOwner(db, clock, range_id, owner, cur.version, now, &moved));
  if (!moved) return Status::Conflict("lease on range " + std::to_string(range_id) + " moved while taken");
  if (!cur.owner.empty() && cur.owner != owner) {
    ES_LOG(kInfo, "store: lease on range {} taken over from {} by {} ({})", range_id, cur.owner, owner,
           since == INT64_MAX ? "renewed in an earlier boot" : "not renewed for " + std::to_string(since) + " ms");
  }
  *lease = Lease{range_id, owner, cur.continuation, now, cur.version + 1};
  return Status::Ok();
}

Status Checkpoint(Db* db, const Clock& clock, const Lease& held, const std::string& continuation, Lease* lease) {
  if (!continuation.empty()) {
    FeedToken t;
    ES_RETURN_IF_ERROR(DecodeFeedToken(continuation, &t));
  }
  const int64_t now = clock.WallMillis();
  const std::string boot = clock.BootId();  // bound as SQLITE_STATIC: must outlive Run
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(db,
                                "UPDATE leases SET continuation=?, renewed_at=?, boot_id=?, renewed_mono=?, "
                                "version=version+1 WHERE range_id=? AND owner=? AND version=?"));
  up.Bind(1, std::string_view(continuation));
  up.Bind(2, now);
  up.Bind(3, std::string_view(boot));
  up.Bind(4, clock.MonotonicMillis());
  up.Bind(5, static_cast<int64_t>(held.range_id));
  up.Bind(6, std::string_view(held.owner));
  up.Bind(7, held.version);
  ES_RETURN_IF_ERROR(up.Run());
  if (db->changes() != 1) {
    return Status::Conflict("lease on range " + std::to_string(held.range_id) + " is no longer held by " + held.owner +
                            " at version " + std::to_string(held.version) + " (taken over or released)");
  }
  *lease = Lease{held.range_id, held.owner, continuation, now, held.version + 1};
  return Status::Ok();
}

Status Release(Db* db, const Lease& held) {
  Stmt up;
  ES_RETURN_IF_ERROR(
      up.Prepare(db, "UPDATE leases SET owner='', version=version+1 WHERE range_id=? AND owner=? AND version=?"));
  up.Bind(1, static_cast<int64_t>(held.range_id));
  up.Bind(2, std::string_view(held.owner));
  up.Bind(3, held.version);
  ES_RETURN_IF_ERROR(up.Run());
  if (db->changes() != 1) {
    return Status::Conflict("lease on range " + std::to_string(held.range_id) + " is no longer held by " + held.owner);
  }
  return Status::Ok();
}

Status Take(Db* db, const Clock& clock, const Lease& seen, const std::string& owner, Lease* lease) {
  if (owner.empty() || owner.size() > 128) return Status::InvalidArgument("lease owner must be 1..128 bytes");
  const int64_t now = clock.WallMillis();
  bool moved = false;
  ES_RETURN_IF_ERROR(SetOwner(db, clock, seen.range_id, owner, seen.version, now, &moved));
  if (!moved) {
    return Status::Conflict("lease on range " + std::to_string(seen.range_id) + " moved past version " +
                            std::to_string(seen.version));
  }
  *lease = Lease{seen.range_id, owner, seen.continuation, now, seen.version + 1};
  return Status::Ok();
}

Status List(Db* db, std::vector<Lease>* leases) {
  leases->clear();
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, (std::string("SELECT ") + kLeaseColumns + " FROM leases ORDER BY range_id").c_str()));
  Status st;
  while (s.Step(&st)) {
    Lease l;
    ReadLease(s, &l);
    leases->push_back(std::move(l));
  }
  return st;
}

}  // namespace lease_table
}  // namespace edgesync

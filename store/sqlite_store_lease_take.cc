// TakeLease: a consumer takes a range from another (rebalancing); see
// store.h. Kept apart from the lease basics in sqlite_store_coord.cc.
#include "store/sqlite_store.h"

namespace edgesync {

Status SqliteStore::TakeLease(const Lease& seen, const std::string& owner, Lease* lease) {
  if (owner.empty() || owner.size() > 128) return Status::InvalidArgument("lease owner must be 1..128 bytes");
  std::lock_guard<std::mutex> lock(write_mu_);
  const int64_t now = clock_->WallMillis();
  // Stamped like every renewal: expiry is judged on this boot's monotonic
  // clock (sqlite_store_coord.cc), never on the wall clock.
  const std::string boot = clock_->BootId();  // bound as SQLITE_STATIC: must outlive Run
  Stmt up;
  ES_RETURN_IF_ERROR(up.Prepare(&write_db_,
                                "UPDATE leases SET owner=?, renewed_at=?, boot_id=?, renewed_mono=?, "
                                "version=version+1 WHERE range_id=? AND version=?"));
  up.Bind(1, std::string_view(owner));
  up.Bind(2, now);
  up.Bind(3, std::string_view(boot));
  up.Bind(4, clock_->MonotonicMillis());
  up.Bind(5, static_cast<int64_t>(seen.range_id));
  up.Bind(6, seen.version);
  ES_RETURN_IF_ERROR(up.Run());
  if (write_db_.changes() != 1) {
    return Status::Conflict("lease on range " + std::to_string(seen.range_id) + " moved past version " +
                            std::to_string(seen.version));
  }
  *lease = Lease{seen.range_id, owner, seen.continuation, now, seen.version + 1};
  return Status::Ok();
}

}  // namespace edgesync

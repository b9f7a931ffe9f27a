// TakeLease: a consumer takes a range from another (rebalancing); see
// store.h. Kept apart from the lease basics in sqlite_store_coord.cc.
#include "store/sqlite_store.h"

namespace edgesync {

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

}  // namespace edgesync

// store/lease_table.h: the leases feed consumers hold on a store's ranges
// (table `leases`): who reads a range, from which continuation, and the
// version every change moves (compare-and-set).
//
// Expiry runs on the monotonic clock of the renewing host's boot: every
// process of one boot reads the same monotonic clock, which no wall-clock
// step (NTP, an RTC reset, `date -s`) moves, and a renewal from another
// boot belongs to a process that cannot be running any more, so its lease
// has expired. The wall time is kept for people (renewed_at_ms).
//
// Thread safety: no state of its own. Each call runs on the connection it
// is given (the writer's, except List), inside the caller's transaction
// where it says so; the caller holds that connection's mutex.
#ifndef EDGESYNC_STORE_LEASE_TABLE_H_
#define EDGESYNC_STORE_LEASE_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "platform/clock.h"
#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {
namespace lease_table {

// InvalidArgument unless the owner is 1..256 bytes of UTF-8.
Status ValidateOwner(const std::string& owner);

// Inside the caller's transaction (the range exists and is active):
// gives range_id to owner when it is free, already owner's or expired
// (not renewed for expiry_ms on this boot's clock); Conflict naming the
// holder otherwise. A range never leased before starts from the nearest
// of `ancestors` (parent first) that holds a continuation, so a split
// neither loses nor repeats the parent consumer's progress.
Status Acquire(Db* db, const Clock& clock, uint32_t range_id, const std::string& owner,
               const std::vector<uint32_t>& ancestors, int64_t expiry_ms, Lease* lease);
// Renews `held` with a new continuation (a feed token, or "" for none);
// Conflict when it is no longer held at that version.
Status Checkpoint(Db* db, const Clock& clock, const Lease& held, const std::string& continuation, Lease* lease);
// Frees it; Conflict when it is no longer held at that version.
Status Release(Db* db, const Lease& held);
// Gives the lease `seen` to owner if its version has not moved (a consumer
// rebalancing); Conflict otherwise.
Status Take(Db* db, const Clock& clock, const Lease& seen, const std::string& owner, Lease* lease);
// Every lease, by range.
Status List(Db* db, std::vector<Lease>* leases);

}  // namespace lease_table
}  // namespace edgesync

#endif  // EDGESYNC_STORE_LEASE_TABLE_H_

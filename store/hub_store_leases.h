// store/hub_store_leases.h: which hub of a region applies which shard of
// its origins.
//
// A region's origins fall into a fixed number of shards (the protocol's
// kRegionShards, by a hash of the gateway id: sync/wire.h); several hubs share
// a region by holding leases on shards, kept in the hub store's database
// (the change-feed-processor model):
//   - membership: a hub joins under its id (`[hub] id`) with an instance
//     token of its own; a second live process with the same id is refused
//     (two hubs under one id would each believe they hold the same leases
//     and share one MQTT session). A killed hub's membership ends at its
//     expiry, after which the same id may join again; the same instance
//     (the hub program passes its host and data folder, which a lock file
//     keeps to one process) may join again at once.
//   - a lease is (shard, owner, expiry, version). Every expiry is a time on
//     the database's clock (PostgreSQL clock_timestamp()), never a hub's
//     wall clock: hubs whose clocks disagree, or step, still agree on who
//     holds what.
//   - Balance (every ttl / 3): renews the hub's leases and its membership,
//     takes free and expired shards up to its fair share (ceil(shards /
//     live hubs)), and steals from the most loaded hub while below the
//     floor of that share (a compare-and-set on the lease's version). A new
//     hub thus takes a fair share within a few rounds; a hub that lost a
//     lease learns it at its own next round.
//   - Release (SIGTERM): every lease of the hub is freed at once and its
//     membership ends, so the others take the shards at their next round
//     instead of after the expiry.
// A lease decides who *listens* to a shard, not who may write: for the
// moments two hubs both believe they hold a shard (a steal not yet seen, a
// paused hub), the hub store's high-water compare-and-set still makes sure
// that no span of an origin is applied twice.
//
// SQLite is one hub per file: its "leases" are every shard, held by the one
// hub (NewSoleOwnerLeases); the hub program refuses a second hub on the same
// file (agent/region_hub.cc).
//
// Thread safety: one caller at a time (the hub's lease thread).
#ifndef EDGESYNC_STORE_HUB_STORE_LEASES_H_
#define EDGESYNC_STORE_HUB_STORE_LEASES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/status.h"
#include "store/hub_store.h"

namespace edgesync {

struct ShardLeaseOptions {
  std::string hub_id;       // [A-Za-z0-9_-], unique among the region's live hubs
  int shards = 32;          // the protocol's kRegionShards
  int64_t ttl_ms = 10000;   // a lease and a membership last this long without renewal
  // Who this process is among restarts: the same instance may take its
  // id's membership back at once (a hub restarted after a crash), another
  // only after it expired. "" = a random one (every start is another).
  std::string instance;
};

struct ShardLeaseStats {
  int live_hubs = 0;        // members whose membership has not expired
  int taken = 0;            // free or expired shards taken in the last round
  int stolen = 0;           // shards taken from a busier hub in the last round
};

class ShardLeases {
 public:
  virtual ~ShardLeases() = default;
  // Registers the hub. Conflict while another live process holds the id.
  virtual Status Join() = 0;
  // One round: renew, take the fair share, steal below it. *owned: the
  // shards this hub holds after it, ascending. Rejected when the membership
  // was lost (expired and taken by another process with the same id): the
  // hub must stop.
  virtual Status Balance(std::vector<int>* owned, ShardLeaseStats* stats) = 0;
  // Frees every lease of this hub and ends its membership.
  virtual Status Release() = 0;
};

// Every shard, held for good: the single hub of a SQLite store.
std::unique_ptr<ShardLeases> NewSoleOwnerLeases(int shards);

// Leases in the PostgreSQL hub store's database at options.location (the
// schema OpenPostgresHubStore migrated), over a connection of their own so
// that a renewal never waits behind a long apply.
Status OpenPostgresShardLeases(const HubStoreOptions& options, const ShardLeaseOptions& lease_options,
                               std::unique_ptr<ShardLeases>* leases);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_HUB_STORE_LEASES_H_

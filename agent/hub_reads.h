// agent/hub_reads.h: what the read-only commands (`query`, `devices`,
// `feed`, `status`) see of a region hub's store, through the HubStore
// interface whichever backend holds it: the SQLite store file or the
// PostgreSQL store of `[hub] store` (loaded as a module, store/pg_module.h,
// as the region role does). A PostgreSQL region keeps its readings as
// compressed chunks that only the hub store can read, so the commands read
// the region feed and answer from it: the same rows, in the same order, as
// the SQLite store's own query and device list give for the same data.
//
// Thread safety: functions over the caller's objects; one thread.
#ifndef EDGESYNC_AGENT_HUB_READS_H_
#define EDGESYNC_AGENT_HUB_READS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "firmware-config/config.h"
#include "platform/status.h"
#include "store/hub_store.h"
#include "store/store.h"

namespace edgesync {

// True when the config names a hub store other than the SQLite file.
bool HubStoreIsRemote(const Config& config);

// A hub store opened for reading, owned: the SQLite hub store (with the
// gateway side of its file, sqlite(), which it owns) or a PostgreSQL store.
class HubStoreHandle {
 public:
  // sqlite: the SQLite store the hub store owns; nullptr for PostgreSQL.
  void Own(std::unique_ptr<HubStore> store, Store* sqlite) {
    hub_ = std::move(store);
    sqlite_ = sqlite;
  }
  void reset() { Own(nullptr, nullptr); }
  HubStore* get() const { return hub_.get(); }
  HubStore* operator->() const { return hub_.get(); }
  explicit operator bool() const { return hub_ != nullptr; }
  // The SQLite store file's gateway side (figures, queries); nullptr for
  // PostgreSQL.
  Store* sqlite() const { return sqlite_; }

 private:
  std::unique_ptr<HubStore> hub_;
  Store* sqlite_ = nullptr;
};

// The hub's store for reading. SQLite: the store file opened read only
// (never created), hub.sqlite() its gateway side; PostgreSQL: the hub
// store alone. The PostgreSQL store is opened as the hub opens it, so its
// schema must exist or be creatable (docs/REGION.md).
Status OpenHubStoreForReading(const Config& config, HubStoreHandle* hub);

// Every entry of the region feed from the beginning (what retention left),
// in the feed's order, to `visit`; stops at the first non-ok it returns.
Status ScanRegionFeed(HubStore* hub, const std::function<Status(const RegionFeedEntry&)>& visit);

// Store::Query and Store::ListDevices answered from the region feed: every
// row remote (local false), ordered as the SQLite store orders them.
Status QueryRegionFeed(HubStore* hub, const QueryRequest& request, std::vector<QueryRow>* rows);
Status ListRegionFeedDevices(HubStore* hub, std::vector<DeviceSummary>* devices);

// A region feed reader's continuation as `feed` prints and takes it:
// "region:<epoch>:<hex of EncodeShardPositions>". A token of another epoch
// (the hub store was replaced) is InvalidArgument.
std::string RegionFeedToken(const std::string& epoch, const ShardPositions& positions);
Status ParseRegionFeedToken(const std::string& token, const std::string& epoch, ShardPositions* positions);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_HUB_READS_H_

// tests/support/sqlite_hub.h: a SQLite hub store (store/sqlite_hub_store.h)
// in the shapes the store's tests use: one origin's batch whose refusal (a
// gap, an entry) is an InvalidArgument, and the region feed read in its one
// sequence.
#ifndef EDGESYNC_TESTS_SUPPORT_SQLITE_HUB_H_
#define EDGESYNC_TESTS_SUPPORT_SQLITE_HUB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/sqlite_hub_store.h"
#include "store/store.h"

namespace edgesync {
namespace test {

// The hub store behind a raw or an owning pointer.
inline SqliteHubStore* Raw(SqliteHubStore* hub) { return hub; }
inline SqliteHubStore* Raw(const std::unique_ptr<SqliteHubStore>& hub) { return hub.get(); }

// Applies entries of one origin after base_lsn through HubStore::Apply;
// *high_water is the origin's mark after it.
inline Status ApplyOriginBatch(HubStore* hub, const Origin& origin, uint64_t base_lsn,
                               const std::vector<ChangeEntry>& entries, uint64_t* high_water) {
  OriginBatch batch;
  batch.origin = origin;
  batch.base_lsn = base_lsn;
  batch.entries = &entries;
  ApplyResult r;
  ES_RETURN_IF_ERROR(hub->Apply(batch, &r));
  *high_water = r.high_water;
  if (r.outcome == ApplyOutcome::kInvalid || r.outcome == ApplyOutcome::kGap ||
      r.outcome == ApplyOutcome::kRegressed) {
    return Status::InvalidArgument(r.detail);
  }
  return Status::Ok();
}

inline Status GetHighWater(HubStore* hub, const Origin& origin, uint64_t* high_water) {
  return hub->HighWater(origin, high_water);
}

inline Status ReadRegionFeed(SqliteHubStore* hub, uint64_t after_seq, size_t max_entries,
                             std::vector<RegionFeedEntry>* entries, uint64_t* head_seq, bool* reset) {
  return hub->ReadRegionFeed(after_seq, max_entries, entries, head_seq, reset);
}

inline Status RegionFeedBounds(SqliteHubStore* hub, uint64_t* oldest_seq, uint64_t* head_seq) {
  return hub->RegionFeedBounds(oldest_seq, head_seq);
}

}  // namespace test
}  // namespace edgesync

#endif  // EDGESYNC_TESTS_SUPPORT_SQLITE_HUB_H_

// tests/support/sqlite_hub.h: a SQLite store's region hub tables (its
// HubStore side, SqliteHubStore) in the shapes the store's tests use: one
// origin's batch whose refusal (a gap, an entry) is an InvalidArgument, and
// the region feed read in its one sequence.
#ifndef EDGESYNC_TESTS_SUPPORT_SQLITE_HUB_H_
#define EDGESYNC_TESTS_SUPPORT_SQLITE_HUB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/sqlite_store.h"
#include "store/store.h"

namespace edgesync {
namespace test {

// A HubStore that forwards to a SQLite store's own (not owned; the store
// outlives it): for tests that hold every backend as std::unique_ptr<HubStore>.
class SqliteHubView : public HubStore {
 public:
  explicit SqliteHubView(Store* store) : hub_(SqliteHubStore(store)) {}
  std::string epoch() const override { return hub_->epoch(); }
  std::string backend() const override { return hub_->backend(); }
  Status ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) override {
    return hub_->ApplyBatches(batches, results);
  }
  Status HighWater(const Origin& origin, uint64_t* high_water) override { return hub_->HighWater(origin, high_water); }
  Status ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) override {
    return hub_->ReadFeed(after, max_entries, page);
  }
  Status FeedBounds(FeedBoundsInfo* bounds) override { return hub_->FeedBounds(bounds); }
  Status PruneStep(int64_t max_rows, PruneResult* result) override { return hub_->PruneStep(max_rows, result); }
  Status CompactFeedStep(CompactResult* result) override { return hub_->CompactFeedStep(result); }
  Status Stats(HubStoreStats* stats) override { return hub_->Stats(stats); }
  Status FeedWatermarks(std::vector<OriginWatermark>* watermarks) override { return hub_->FeedWatermarks(watermarks); }

 private:
  HubStore* hub_;
};

inline std::unique_ptr<HubStore> NewSqliteHubView(Store* store) { return std::make_unique<SqliteHubView>(store); }

// The store behind a raw or an owning pointer.
inline Store* Raw(Store* store) { return store; }
inline Store* Raw(const std::unique_ptr<Store>& store) { return store.get(); }

// Applies entries of one origin after base_lsn through HubStore::Apply;
// *high_water is the origin's mark after it.
inline Status ApplyOriginBatch(Store* store, const Origin& origin, uint64_t base_lsn,
                               const std::vector<ChangeEntry>& entries, uint64_t* high_water) {
  HubStore* hub = SqliteHubStore(store);
  if (hub == nullptr) return Status::InvalidArgument("not a SQLite store");
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

inline Status GetHighWater(Store* store, const Origin& origin, uint64_t* high_water) {
  HubStore* hub = SqliteHubStore(store);
  if (hub == nullptr) return Status::InvalidArgument("not a SQLite store");
  return hub->HighWater(origin, high_water);
}

inline Status ReadRegionFeed(Store* store, uint64_t after_seq, size_t max_entries,
                             std::vector<RegionFeedEntry>* entries, uint64_t* head_seq, bool* reset) {
  auto* sqlite = dynamic_cast<SqliteStore*>(store);
  if (sqlite == nullptr) return Status::InvalidArgument("not a SQLite store");
  return sqlite->ReadRegionFeed(after_seq, max_entries, entries, head_seq, reset);
}

inline Status RegionFeedBounds(Store* store, uint64_t* oldest_seq, uint64_t* head_seq) {
  auto* sqlite = dynamic_cast<SqliteStore*>(store);
  if (sqlite == nullptr) return Status::InvalidArgument("not a SQLite store");
  return sqlite->RegionFeedBounds(oldest_seq, head_seq);
}

}  // namespace test
}  // namespace edgesync

#endif  // EDGESYNC_TESTS_SUPPORT_SQLITE_HUB_H_

// store/sqlite_hub_store.h: the SQLite implementation of HubStore
// (store/hub_store.h): a region hub's tables in a SQLite store file.
//
// It owns the store it was opened on (store/sqlite_store.h) and works on
// that store's two connections under their mutexes, so a file keeps one
// writer connection whoever writes: the hub's applies and feed compaction
// go through the store's writer, its feed reads through the store's
// reader. The tables' work is store/hub_feed.h's (HubFeedWriter,
// HubFeedReader) and store/region_feed_compactor.h's. A batch is decided
// once, against the mark read inside the transaction that applies it
// (PlanApply), as the PostgreSQL store does. The hub's figures and its
// retention are the store's: a hub's region feed is the store's remote
// entries (store(): maintenance, figures, leases).
//
// One hub is the file's only writer (agent/region_hub.cc locks it).
//
// Thread safety: all public methods may be called from any thread. Which
// mutex guards what is declared with the members (GUARDED_BY, REQUIRES:
// platform/thread_annotations.h) and checked by `make thread-safety`.
#ifndef EDGESYNC_STORE_SQLITE_HUB_STORE_H_
#define EDGESYNC_STORE_SQLITE_HUB_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/mutex.h"
#include "platform/status.h"
#include "store/hub_feed.h"
#include "store/hub_store.h"
#include "store/region_feed_compactor.h"
#include "store/sqlite_store.h"
#include "store/store.h"

namespace edgesync {

class SqliteHubStore : public HubStore {
 public:
  explicit SqliteHubStore(std::unique_ptr<SqliteStore> store);
  ~SqliteHubStore() override;

  Status Init();  // the store is open; prepares the feed reader

  // The store the hub tables are in: its gateway side (maintenance,
  // figures, leases, queries). Owned by this object.
  Store* store() const { return store_; }

  std::string epoch() const override { return store_->origin().epoch; }
  std::string backend() const override { return "sqlite"; }
  Status ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) override;
  Status HighWater(const Origin& origin, uint64_t* high_water) override;
  // One writer commits the feed in its sequence order, so every shard uses
  // the region's one sequence as its own.
  Status ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) override;
  Status FeedBounds(FeedBoundsInfo* bounds) override;
  // The store's own retention step (the region feed is its remote entries).
  Status PruneStep(int64_t max_rows, PruneResult* result) override;
  // Merges a run of small region feed rows applied longer ago than
  // compact_after_ms (store/region_feed_compactor.h): read under the
  // store's read mutex, built under neither, swapped in under its write
  // mutex in one transaction.
  Status CompactFeedStep(CompactResult* result) override;
  Status Stats(HubStoreStats* stats) override;
  Status FeedWatermarks(std::vector<OriginWatermark>* watermarks) override;

  // The region feed in its one sequence, under ReadFeed and FeedBounds (and
  // the store's tests): entries with seq > after_seq (*reset when after_seq
  // was pruned: never a silent rewind or skip), and the oldest sequence
  // still served and the head ((0, head) when empty).
  Status ReadRegionFeed(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries,
                        uint64_t* head_seq, bool* reset);
  Status RegionFeedBounds(uint64_t* oldest_seq, uint64_t* head_seq);

 private:
  // The writer's statements, prepared on the first apply after the store's
  // own (SqliteStore::PrepareApply) and kept for the connection's life.
  Status PrepareWriter() REQUIRES(store_->write_mu_);

  const std::unique_ptr<SqliteStore> owned_;
  SqliteStore* const store_;  // owned_.get(): the lock rules below name its mutexes

  // Region feed compaction (CompactFeedStep): one step at a time; it reads
  // under the store's read mutex, builds the merged row under neither, and
  // swaps it in under its write mutex.
  Mutex feed_compact_mu_ ACQUIRED_BEFORE(store_->read_mu_, store_->write_mu_);
  RegionFeedCompactor feed_compactor_ GUARDED_BY(feed_compact_mu_);
  HubFeedWriter writer_ GUARDED_BY(store_->write_mu_);  // store/hub_feed.h
  bool writer_prepared_ GUARDED_BY(store_->write_mu_) = false;
  HubFeedReader reader_ GUARDED_BY(store_->read_mu_);  // store/hub_feed.h
};

// Opens (or creates) the store file as Store::Open does, with the same
// checks and the same error context, and the hub's tables in it.
Status OpenSqliteHubStore(const StoreOptions& options, std::unique_ptr<SqliteHubStore>* store);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SQLITE_HUB_STORE_H_

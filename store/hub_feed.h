// store/hub_feed.h: a SQLite region hub's tables (HubStore on SQLite):
// per-origin high-water marks (`high_water`, with the priority marks beside
// each), the spans held above them (`held_spans`) and the region feed (`region_chunks`), remote chunks
// numbered by the region's one sequence.
//
// The writer decides each batch once, against the origin's mark and spans
// read inside the transaction that applies it: they alone decide what is
// new (everything at or below the mark or inside a span is held, whatever
// a resend overlaps; store/hub_store.h PlanApply), the new entries become
// feed rows at the head and the mark and the spans move in the same
// transaction. A batch that completes
// its origin through a time (complete_through_ms) records the feed
// sequence from which that watermark holds.
//
// The reader serves the feed by sequence: entries after a position, each
// once; a position below what retention pruned gets an explicit reset
// (meta region_pruned_seq), never a silent rewind or skip. Rows merged by
// feed compaction (store/region_feed_compactor.h) are read like any other.
//
// Thread safety: HubFeedWriter belongs to the store's writer, HubFeedReader
// to its read connection; each is used under its connection's mutex
// (SqliteHubStore declares them GUARDED_BY it). The writer runs inside the
// caller's transaction; each reader call is a read transaction of its own.
#ifndef EDGESYNC_STORE_HUB_FEED_H_
#define EDGESYNC_STORE_HUB_FEED_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/status.h"
#include "store/hub_store.h"
#include "store/origin_catalog.h"
#include "store/remote_rows.h"
#include "store/series_catalog.h"
#include "store/sqlite_util.h"

namespace edgesync {

class HubFeedWriter {
 public:
  Status Open(Db* write_db, SeriesWriter* series, OriginCatalog* origins, OriginCatalog::Statements* origin_stmts);
  // Decides and applies the batches marked valid (one result each) at wall
  // time now, in order, in the caller's transaction.
  Status Apply(const std::vector<OriginBatch>& batches, const std::vector<bool>& valid, int64_t now,
               std::vector<ApplyResult>* results);

 private:
  struct Mark {
    uint64_t high_water = 0;
    int64_t complete_ms = 0;
    int64_t complete_seq = 0;  // the feed sequence the watermark is valid from
    std::vector<LsnSpan> spans;  // held above high_water, ascending
    PriorityMarks priority = {};  // P[k] per level (store/hub_store.h)
  };
  // One batch against its origin's mark (marks: origin -> mark after the
  // batches decided so far in this transaction); *head is the feed's head,
  // advanced by what it appends.
  Status ApplyBatch(const OriginBatch& batch, int64_t now, int64_t* head, std::unordered_map<std::string, Mark>* marks,
                    ApplyResult* result);
  Status PutMark(int64_t origin_id, const Mark& mark);
  Status PutSpans(int64_t origin_id, const std::vector<LsnSpan>& spans);

  Db* db_ = nullptr;
  SeriesWriter* series_ = nullptr;
  OriginCatalog* origins_ = nullptr;
  OriginCatalog::Statements* origin_stmts_ = nullptr;
  Stmt head_;
  Stmt get_mark_;
  Stmt put_mark_;
  Stmt get_spans_;
  Stmt delete_spans_;
  Stmt put_span_;
  Stmt insert_chunk_;
  std::vector<RemoteChunkEntry> chunk_;
  std::string block_;
};

class HubFeedReader {
 public:
  Status Open(Db* read_db, SeriesReader* series, OriginCatalog* origins, OriginCatalog::Statements* origin_stmts,
              RemoteRows* rows);
  // The origin's high-water mark (0 for an origin never seen).
  Status HighWater(const Origin& origin, uint64_t* high_water);
  // The oldest sequence still served and the head ((0, head) when empty).
  Status Bounds(uint64_t* oldest_seq, uint64_t* head_seq);
  // Entries with seq > after_seq, at most max_entries; *reset when
  // after_seq was pruned.
  Status Read(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries, uint64_t* head_seq,
              bool* reset);
  // The origins' completeness watermarks with the sequence each holds from.
  Status FeedWatermarks(std::vector<OriginWatermark>* watermarks);

 private:
  Db* db_ = nullptr;
  SeriesReader* series_ = nullptr;
  OriginCatalog* origins_ = nullptr;
  OriginCatalog::Statements* origin_stmts_ = nullptr;
  RemoteRows* rows_ = nullptr;
  Stmt high_water_;
  std::vector<RemoteChunkEntry> chunk_;  // Read's, reused
  std::vector<int64_t> chunk_origins_;   // their origin ids
};

// A hub's marks and a read view's kept watermarks (a store may be both),
// the higher of the two per origin; self's is left out. One statement on
// the caller's connection (the store's Store::ListWatermarks, whether or
// not a hub store was opened on it).
Status ListStoreWatermarks(Db* db, const Origin& self, std::vector<OriginWatermark>* watermarks);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_HUB_FEED_H_

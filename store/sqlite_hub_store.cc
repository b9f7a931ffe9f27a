// The SQLite hub store (store/sqlite_hub_store.h): a region hub's applies,
// feed reads and feed compaction on the store's connections, each under
// the mutex of the connection it uses.
#include "store/sqlite_hub_store.h"

#include <algorithm>
#include <string>
#include <utility>

namespace edgesync {
namespace {

// A feed page scans at most this many pages' worth of entries (positions
// that differ per shard, or a hostile reader's, are scanned from the lowest).
constexpr size_t kFeedScanFactor = 4;

}  // namespace

Status OpenSqliteHubStore(const StoreOptions& options, std::unique_ptr<SqliteHubStore>* store) {
  std::unique_ptr<SqliteStore> sqlite;
  ES_RETURN_IF_ERROR(OpenSqliteStore(options, &sqlite));
  auto hub = std::make_unique<SqliteHubStore>(std::move(sqlite));
  ES_RETURN_IF_ERROR(hub->Init().Annotate("opening store " + options.path));
  *store = std::move(hub);
  return Status::Ok();
}

SqliteHubStore::SqliteHubStore(std::unique_ptr<SqliteStore> store)
    : owned_(std::move(store)), store_(owned_.get()) {}

// The feed's statements are finalized (members, in reverse order) before
// owned_, the store and its connections, goes.
SqliteHubStore::~SqliteHubStore() = default;

Status SqliteHubStore::Init() {
  MutexLock lock(&store_->read_mu_);
  return reader_.Open(&store_->read_db_, &store_->series_reader_, &store_->origin_catalog_, &store_->r_origin_,
                      &store_->remote_rows_);
}

// After the store's own: the origin statements the writer uses are the
// store's (w_origin_), shared with the read view.
Status SqliteHubStore::PrepareWriter() {
  ES_RETURN_IF_ERROR(store_->PrepareApply());
  if (writer_prepared_) return Status::Ok();
  ES_RETURN_IF_ERROR(
      writer_.Open(&store_->write_db_, &store_->series_writer_, &store_->origin_catalog_, &store_->w_origin_));
  writer_prepared_ = true;
  return Status::Ok();
}

Status SqliteHubStore::PruneStep(int64_t max_rows, PruneResult* result) { return store_->PruneStep(max_rows, result); }

Status SqliteHubStore::ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) {
  results->assign(batches.size(), ApplyResult{});
  // Refused before the write lock: an invalid batch writes nothing and its
  // refusal stays its own, whatever the batches beside it.
  std::vector<bool> valid(batches.size(), false);
  bool any = false;
  for (size_t i = 0; i < batches.size(); ++i) {
    Status v = ValidateOriginBatch(batches[i]);
    if (v.ok()) {
      valid[i] = true;
      any = true;
      continue;
    }
    ApplyResult& r = (*results)[i];
    r.outcome = ApplyOutcome::kInvalid;
    r.detail = v.message();
    if (ValidateOrigin(batches[i].origin).ok()) ES_RETURN_IF_ERROR(HighWater(batches[i].origin, &r.high_water));
    r.before = r.high_water;
  }
  if (!any) return Status::Ok();
  MutexLock lock(&store_->write_mu_);
  ES_RETURN_IF_ERROR(PrepareWriter());
  Txn txn(&store_->write_db_);
  store_->series_writer_.Commit();
  Status s = [&]() REQUIRES(store_->write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    ES_RETURN_IF_ERROR(writer_.Apply(batches, valid, store_->clock_->WallMillis(), results));
    return txn.Commit();
  }();
  return store_->EndRemoteWrite(&txn, s);
}

Status SqliteHubStore::HighWater(const Origin& origin, uint64_t* high_water) {
  ES_RETURN_IF_ERROR(ValidateOrigin(origin));
  MutexLock lock(&store_->read_mu_);
  return reader_.HighWater(origin, high_water);
}

Status SqliteHubStore::RegionFeedBounds(uint64_t* oldest_seq, uint64_t* head_seq) {
  MutexLock lock(&store_->read_mu_);
  return reader_.Bounds(oldest_seq, head_seq);
}

Status SqliteHubStore::ReadRegionFeed(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries,
                                      uint64_t* head_seq, bool* reset) {
  MutexLock lock(&store_->read_mu_);
  return reader_.Read(after_seq, max_entries, entries, head_seq, reset);
}

Status SqliteHubStore::FeedWatermarks(std::vector<OriginWatermark>* watermarks) {
  MutexLock lock(&store_->read_mu_);
  return reader_.FeedWatermarks(watermarks);
}

Status SqliteHubStore::CompactFeedStep(CompactResult* result) {
  *result = CompactResult{};
  if (store_->options_.read_only) return Status::InvalidArgument("region feed compaction: the store is open read-only");
  const int64_t cutoff = store_->clock_->WallMillis() - store_->options_.compact_after_ms;
  MutexLock compact(&feed_compact_mu_);
  RegionFeedMergePlan plan;
  {
    MutexLock lock(&store_->read_mu_);
    Txn snapshot(&store_->read_db_);
    ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
    ES_RETURN_IF_ERROR(feed_compactor_.Read(&store_->read_db_, cutoff, &plan));
  }
  // Decoding and encoding a few thousand entries holds neither lock: feed
  // reads and applies go on meanwhile.
  Status built = feed_compactor_.Build(&plan);
  if (!built.ok()) {
    if (built.code() == Status::Code::kCorruption) store_->remote_rows_.NoteCorrupt();
    return built;
  }
  RegionFeedMergeResult m;
  if (plan.merge || plan.mark_after != plan.mark_before || !plan.rows.empty()) {
    MutexLock lock(&store_->write_mu_);
    Txn txn(&store_->write_db_);
    Status s = [&]() REQUIRES(store_->write_mu_, feed_compact_mu_) -> Status {
      ES_RETURN_IF_ERROR(txn.Begin());
      ES_RETURN_IF_ERROR(feed_compactor_.Write(&store_->write_db_, plan, &m));
      return txn.Commit();
    }();
    if (!s.ok()) return s;
  }
  result->spans = m.merged_rows;
  result->readings = m.entries;
  result->bytes_before = m.bytes_before;
  result->bytes_after = m.bytes_after;
  result->kept = m.left_rows > 0 ? 1 : 0;
  if (m.left_rows > 0) {
    for (const RegionFeedMergePlan::SourceRow& row : plan.rows) result->kept_readings += row.n;
  }
  result->more = plan.more;
  return Status::Ok();
}

Status SqliteHubStore::ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) {
  *page = FeedRead{};
  FeedBoundsInfo bounds;
  ES_RETURN_IF_ERROR(FeedBounds(&bounds));
  page->head = bounds.head;
  page->next = after;
  bool reset = false;
  for (int s = 0; s < kRegionShards; ++s) {
    if (after[s] < bounds.pruned[s]) {
      reset = true;
      page->next[s] = bounds.pruned[s];
    }
  }
  if (reset) {
    page->reset = true;
    return Status::Ok();
  }
  // Each read below is a snapshot of its own, maybe newer than the
  // bounds': the head moves with them, so no entry lies past it.
  uint64_t head = bounds.head[0];
  uint64_t scanned = *std::min_element(after.begin(), after.end());
  // Positions that differ (a reader's own, or skewed by a hostile one)
  // are scanned from the lowest; the scan is bounded so a page costs at
  // most kScanFactor pages' reading.
  const size_t max = std::max<size_t>(1, std::min<size_t>(max_entries, 100000));
  size_t budget = max * kFeedScanFactor;
  // Sized once: grown entry by entry, moving entries and faulting in fresh
  // memory were the largest part of a 5,000-entry page's cost.
  page->entries.reserve(static_cast<size_t>(std::min<uint64_t>(max, head - scanned)));
  std::vector<RegionFeedEntry> chunk;
  chunk.reserve(page->entries.capacity());
  while (page->entries.size() < max && scanned < head && budget > 0) {
    uint64_t chunk_head = 0;
    bool chunk_reset = false;
    ES_RETURN_IF_ERROR(ReadRegionFeed(scanned, std::min(budget, max), &chunk, &chunk_head, &chunk_reset));
    if (chunk_reset) {  // pruned meanwhile: the next read resets the reader
      page->entries.clear();
      page->next = after;
      return Status::Ok();
    }
    head = std::max(head, chunk_head);
    if (chunk.empty()) break;
    budget -= std::min(budget, chunk.size());
    for (RegionFeedEntry& e : chunk) {
      if (page->entries.size() == max) break;
      scanned = e.seq;
      e.shard = RegionShardOf(e.remote.origin.gateway_id);
      if (e.seq > after[e.shard]) page->entries.push_back(std::move(e));
    }
  }
  // Everything up to `scanned` was either on this page or at or below the
  // reader's position in its shard.
  page->head.fill(head);
  for (uint64_t& n : page->next) n = std::min(std::max(n, scanned), head);
  return Status::Ok();
}

Status SqliteHubStore::FeedBounds(FeedBoundsInfo* bounds) {
  *bounds = FeedBoundsInfo{};
  uint64_t oldest = 0, head = 0;
  ES_RETURN_IF_ERROR(RegionFeedBounds(&oldest, &head));
  bounds->oldest = oldest;
  bounds->numbered = head;
  bounds->head.fill(head);
  bounds->pruned.fill(oldest > 0 ? oldest - 1 : head);
  return Status::Ok();
}

Status SqliteHubStore::Stats(HubStoreStats* stats) {
  stats->backend = backend();
  return RegionFeedBounds(&stats->feed_oldest, &stats->feed_head);
}

}  // namespace edgesync

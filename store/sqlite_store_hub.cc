// The region hub's tables of a SQLite store (HubStore): per-origin
// high-water marks and the region feed, as remote chunks numbered by one
// sequence. Decides each batch once, inside the transaction that applies it.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "store/chunk_codec.h"
#include "store/clock_period_table.h"
#include "store/region_feed_chunk_codec.h"
#include "store/schema.h"
#include "store/sqlite_store.h"

namespace edgesync {
namespace {

// A feed page scans at most this many pages' worth of entries (positions
// that differ per shard, or a hostile reader's, are scanned from the lowest).
constexpr size_t kFeedScanFactor = 4;

}  // namespace

Status SqliteStore::ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) {
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
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  pending_series_.clear();
  // A busy hub's group is one transaction: its commit, not the batches, was
  // the cost (WAL pages of the feed, the marks and the origins written once
  // per group instead of once per batch).
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    int64_t head = 0;
    {
      Status st;
      StmtScope scope(&w_region_head_);
      head = w_region_head_.Step(&st) ? w_region_head_.Int(0) : 0;
      ES_RETURN_IF_ERROR(st);
    }
    const int64_t now = clock_->WallMillis();
    std::unordered_map<std::string, HubMark> marks;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (valid[i]) ES_RETURN_IF_ERROR(ApplyHubBatch(batches[i], now, &head, &marks, &(*results)[i]));
    }
    return txn.Commit();
  }();
  return EndRemoteWrite(&txn, s);
}

Status SqliteStore::FindOriginForWrite(const Origin& origin, int64_t* id) {
  {
    MutexLock lock(&origins_mu_);
    auto it = origin_ids_.find(origin.ToString());
    if (it != origin_ids_.end()) {
      *id = it->second;
      return Status::Ok();
    }
  }
  Stmt& s = w_find_origin_;
  StmtScope scope(&s);
  s.Bind(1, std::string_view(origin.gateway_id));
  s.Bind(2, std::string_view(origin.epoch));
  Status st;
  *id = s.Step(&st) ? s.Int(0) : 0;
  return st;
}

Status SqliteStore::ApplyHubBatch(const OriginBatch& batch, int64_t now, int64_t* head,
                                  std::unordered_map<std::string, HubMark>* marks, ApplyResult* r) {
  const std::string key = batch.origin.ToString();
  HubMark mark;
  auto found = marks->find(key);
  int64_t known_id = 0;
  if (found != marks->end()) {
    mark = found->second;
  } else {
    ES_RETURN_IF_ERROR(FindOriginForWrite(batch.origin, &known_id));
    if (known_id != 0) {
      Status st;
      StmtScope scope(&w_get_high_water_);
      w_get_high_water_.Bind(1, known_id);
      if (w_get_high_water_.Step(&st)) {
        mark.high_water = static_cast<uint64_t>(w_get_high_water_.Int(0));
        mark.complete_ms = w_get_high_water_.Int(1);
        mark.complete_seq = w_get_high_water_.Int(2);
      }
      ES_RETURN_IF_ERROR(st);
    }
  }
  const uint64_t held = mark.high_water;
  // The high-water mark alone decides what is new: everything at or below
  // it is held (whatever a resend overlaps), everything above it is not.
  const ApplyPlan plan = PlanApply(batch, held);
  r->before = held;
  r->high_water = plan.new_high_water;
  r->base_lsn = plan.base;
  r->outcome = plan.outcome;
  r->detail = plan.detail;
  const bool completes = (plan.outcome == ApplyOutcome::kApplied || plan.outcome == ApplyOutcome::kAlreadyHeld) &&
                         BatchCompletes(batch, plan.new_high_water) && batch.complete_through_ms > mark.complete_ms;
  if (completes) {
    mark.complete_ms = batch.complete_through_ms;
    // Everything of the origin it covers is at or below the feed's head
    // (after this batch's entries, appended below).
    mark.complete_seq = *head + static_cast<int64_t>(plan.outcome == ApplyOutcome::kApplied
                                                          ? batch.entries->size() - plan.first_new
                                                          : 0);
  }
  mark.high_water = plan.new_high_water;
  (*marks)[key] = mark;
  if (plan.outcome == ApplyOutcome::kApplied || plan.outcome == ApplyOutcome::kAlreadyHeld) {
    r->complete_through_ms = mark.complete_ms;
  }
  if (plan.outcome == ApplyOutcome::kAlreadyHeld && completes) {
    // A resend whose answer was lost carries the watermark again: kept
    // without touching the mark or the feed.
    if (known_id == 0) ES_RETURN_IF_ERROR(FindOriginForWrite(batch.origin, &known_id));
    if (known_id != 0) {
      w_put_high_water_.Bind(1, known_id);
      w_put_high_water_.Bind(2, static_cast<int64_t>(plan.new_high_water));
      w_put_high_water_.Bind(3, mark.complete_ms);
      w_put_high_water_.Bind(4, mark.complete_seq);
      ES_RETURN_IF_ERROR(w_put_high_water_.Run());
    }
  }
  if (plan.outcome != ApplyOutcome::kApplied) return Status::Ok();
  int64_t origin_id = 0;
  ES_RETURN_IF_ERROR(OriginId(batch.origin, &w_find_origin_, &w_insert_origin_, &origin_id));
  const std::vector<ChangeEntry>& entries = *batch.entries;
  std::vector<RemoteChunkEntry>& chunk = remote_buffer_;
  chunk.clear();
  for (size_t i = plan.first_new; i < entries.size(); ++i) {
    if (entries[i].kind == ChangeEntry::Kind::kTimeCorrection) {
      ES_RETURN_IF_ERROR(clock_period_table::KeepOriginCorrection(&write_db_, origin_id, entries[i].correction));
    }
    chunk.emplace_back();
    ES_RETURN_IF_ERROR(ToChunkEntry(entries[i], &chunk.back()));
    if (chunk.size() >= kMaxRemoteChunkEntries || i + 1 == entries.size()) {
      ES_RETURN_IF_ERROR(
          InsertRemoteChunkRow(&w_insert_region_chunk_, *head + 1, origin_id, chunk, now, &block_buffer_));
      *head += static_cast<int64_t>(chunk.size());
      chunk.clear();
    }
  }
  w_put_high_water_.Bind(1, origin_id);
  w_put_high_water_.Bind(2, static_cast<int64_t>(plan.new_high_water));
  w_put_high_water_.Bind(3, mark.complete_ms);
  w_put_high_water_.Bind(4, mark.complete_seq);
  ES_RETURN_IF_ERROR(w_put_high_water_.Run());
  r->applied = entries.size() - plan.first_new;
  return Status::Ok();
}

Status SqliteStore::HighWater(const Origin& origin, uint64_t* high_water) {
  ES_RETURN_IF_ERROR(ValidateOrigin(origin));
  MutexLock lock(&read_mu_);
  if (r_get_high_water_.get() == nullptr) {
    ES_RETURN_IF_ERROR(r_find_origin_.Prepare(&read_db_, kFindOriginSql));
    ES_RETURN_IF_ERROR(r_get_high_water_.Prepare(&read_db_, "SELECT lsn FROM high_water WHERE origin=?"));
  }
  int64_t id = 0;
  ES_RETURN_IF_ERROR(OriginId(origin, &r_find_origin_, nullptr, &id));
  *high_water = 0;
  if (id == 0) return Status::Ok();
  Stmt& s = r_get_high_water_;
  StmtScope scope(&s);
  s.Bind(1, id);
  Status st;
  if (s.Step(&st)) *high_water = static_cast<uint64_t>(s.Int(0));
  return st;
}

Status SqliteStore::RegionFeedBounds(uint64_t* oldest_seq, uint64_t* head_seq) {
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t oldest = 0, head = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull((SELECT seq FROM region_chunks ORDER BY seq LIMIT 1), 0)",
                                       &oldest));
  ES_RETURN_IF_ERROR(read_db_.QueryInt(kRegionHeadSql, &head));
  *oldest_seq = static_cast<uint64_t>(oldest);
  *head_seq = static_cast<uint64_t>(head);
  return Status::Ok();
}

Status SqliteStore::ReadRegionFeed(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries,
                                   uint64_t* head_seq, bool* reset) {
  entries->clear();
  *reset = false;
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t head = 0, pruned = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt(kRegionHeadSql, &head));
  ES_RETURN_IF_ERROR(GetMetaInt(&read_db_, "region_pruned_seq", &pruned));
  *head_seq = static_cast<uint64_t>(head);
  if (after_seq < static_cast<uint64_t>(pruned)) {
    *reset = true;  // never a silent rewind or skip
    return Status::Ok();
  }
  if (after_seq >= static_cast<uint64_t>(head)) return Status::Ok();
  const size_t max = std::min<size_t>(max_entries, 100000);
  // From the chunk holding after_seq + 1 (the last one starting at or
  // before it), chunk by chunk in sequence order.
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_,
                               "SELECT seq, origin, data FROM region_chunks WHERE seq >= ifnull((SELECT max(seq) "
                               "FROM region_chunks WHERE seq <= ?1), 0) ORDER BY seq"));
  s.Bind(1, static_cast<int64_t>(after_seq + 1));
  Status st;
  std::vector<RemoteChunkEntry>& chunk = region_decoded_;
  std::vector<int64_t>& origins = region_origins_;
  // A merged row (feed compaction) is read like any other: entry i has
  // sequence seq + i, so a position inside it skips what is at or below.
  int64_t origin_id = 0;
  Origin origin;
  while (entries->size() < max && s.Step(&st)) {
    const int64_t seq = s.Int(0);
    ES_RETURN_IF_ERROR(DecodeRegionChunk(s.Blob(2), seq, s.Int(1), &chunk, &origins));
    for (size_t i = 0; i < chunk.size() && entries->size() < max; ++i) {
      const uint64_t e_seq = static_cast<uint64_t>(seq) + i;
      if (e_seq <= after_seq) continue;
      const RemoteChunkEntry& c = chunk[i];
      if (origins[i] != origin_id) {
        ES_RETURN_IF_ERROR(OriginById(origins[i], &origin));
        origin_id = origins[i];
      }
      RegionFeedEntry e;
      e.seq = e_seq;
      e.remote.origin = origin;
      e.remote.origin_lsn = c.olsn;
      ES_RETURN_IF_ERROR(FromChunkEntry(c, &e.remote.entry));
      entries->push_back(std::move(e));
    }
  }
  return st;
}

Status SqliteStore::DecodeRegionChunk(std::string_view block, int64_t seq, int64_t row_origin,
                                      std::vector<RemoteChunkEntry>* entries, std::vector<int64_t>* origins) {
  // The row's origin column says which layout it has (0: merged), and so
  // does the block's format byte: they must agree.
  Status d = (row_origin == 0) != IsMergedRegionChunk(block)
                 ? Status::Corruption(row_origin == 0 ? "a one-origin block under origin 0"
                                                      : "a merged block under origin " + std::to_string(row_origin))
                 : DecodeRegionRow(block, row_origin, kMaxRemoteChunkEntries, entries, origins);
  if (d.ok()) return d;
  corrupt_chunks_.fetch_add(1);
  return Status::Corruption("region chunk at sequence " + std::to_string(seq) + ": " + d.message());
}

Status SqliteStore::CompactFeedStep(CompactResult* result) {
  *result = CompactResult{};
  if (options_.read_only) return Status::InvalidArgument("region feed compaction: the store is open read-only");
  const int64_t cutoff = clock_->WallMillis() - options_.compact_after_ms;
  MutexLock compact(&feed_compact_mu_);
  RegionFeedMergePlan plan;
  {
    MutexLock lock(&read_mu_);
    Txn snapshot(&read_db_);
    ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
    ES_RETURN_IF_ERROR(feed_compactor_.Read(&read_db_, cutoff, &plan));
  }
  // Decoding and encoding a few thousand entries holds neither lock: feed
  // reads and applies go on meanwhile.
  Status built = feed_compactor_.Build(&plan);
  if (!built.ok()) {
    if (built.code() == Status::Code::kCorruption) corrupt_chunks_.fetch_add(1);
    return built;
  }
  RegionFeedMergeResult m;
  if (plan.merge || plan.mark_after != plan.mark_before || !plan.rows.empty()) {
    MutexLock lock(&write_mu_);
    Txn txn(&write_db_);
    Status s = [&]() REQUIRES(write_mu_, feed_compact_mu_) -> Status {
      ES_RETURN_IF_ERROR(txn.Begin());
      ES_RETURN_IF_ERROR(feed_compactor_.Write(&write_db_, plan, &m));
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

Status SqliteStore::ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) {
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

Status SqliteStore::FeedWatermarks(std::vector<OriginWatermark>* watermarks) {
  watermarks->clear();
  MutexLock lock(&read_mu_);
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_,
                               "SELECT o.gateway_id, o.epoch, h.complete_ms, h.complete_seq FROM high_water h JOIN "
                               "origins o ON o.id = h.origin WHERE h.complete_ms > 0"));
  Status st;
  while (s.Step(&st)) {
    watermarks->push_back(
        OriginWatermark{Origin{s.Text(0), s.Text(1)}, s.Int(2), static_cast<uint64_t>(std::max<int64_t>(0, s.Int(3)))});
  }
  return st;
}

Status SqliteStore::ListWatermarks(std::vector<OriginWatermark>* watermarks) {
  watermarks->clear();
  MutexLock lock(&read_mu_);
  Stmt s;
  // A hub's marks and a read view's kept watermarks (a store may be both).
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_,
                               "SELECT o.gateway_id, o.epoch, max(w.c) FROM (SELECT origin, complete_ms AS c FROM "
                               "view_watermarks UNION ALL SELECT origin, complete_ms FROM high_water WHERE complete_ms "
                               "> 0) w JOIN origins o ON o.id = w.origin GROUP BY w.origin"));
  Status st;
  while (s.Step(&st)) {
    Origin origin{s.Text(0), s.Text(1)};
    if (origin == origin_) continue;
    watermarks->push_back(OriginWatermark{std::move(origin), s.Int(2), 0});
  }
  return st;
}

Status SqliteStore::KeepWatermarks(const std::vector<OriginWatermark>& watermarks) {
  for (const OriginWatermark& w : watermarks) ES_RETURN_IF_ERROR(ValidateOrigin(w.origin));
  if (watermarks.empty()) return Status::Ok();
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    Stmt put;
    ES_RETURN_IF_ERROR(put.Prepare(&write_db_,
                                   "INSERT INTO view_watermarks VALUES(?1, ?2) ON CONFLICT(origin) DO UPDATE SET "
                                   "complete_ms = max(complete_ms, excluded.complete_ms)"));
    for (const OriginWatermark& w : watermarks) {
      if (w.complete_through_ms <= 0 || w.origin == origin_) continue;
      int64_t id = 0;
      ES_RETURN_IF_ERROR(OriginId(w.origin, &w_find_origin_, &w_insert_origin_, &id));
      put.Bind(1, id);
      put.Bind(2, w.complete_through_ms);
      ES_RETURN_IF_ERROR(put.Run());
    }
    return txn.Commit();
  }();
  return EndRemoteWrite(&txn, s);
}

Status SqliteStore::FeedBounds(FeedBoundsInfo* bounds) {
  *bounds = FeedBoundsInfo{};
  uint64_t oldest = 0, head = 0;
  ES_RETURN_IF_ERROR(RegionFeedBounds(&oldest, &head));
  bounds->oldest = oldest;
  bounds->numbered = head;
  bounds->head.fill(head);
  bounds->pruned.fill(oldest > 0 ? oldest - 1 : head);
  return Status::Ok();
}

Status SqliteStore::Stats(HubStoreStats* stats) {
  stats->backend = backend();
  return RegionFeedBounds(&stats->feed_oldest, &stats->feed_head);
}

}  // namespace edgesync

// The hub store's shared rules (what is invalid, what is a gap) and its
// SQLite backend: an adapter over Store's hub methods.
#include "store/hub_store.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

namespace edgesync {

const char* ApplyOutcomeName(ApplyOutcome outcome) {
  switch (outcome) {
    case ApplyOutcome::kApplied:
      return "applied";
    case ApplyOutcome::kAlreadyHeld:
      return "already held";
    case ApplyOutcome::kGap:
      return "gap";
    case ApplyOutcome::kInvalid:
      return "invalid";
    case ApplyOutcome::kRegressed:
      return "regressed";
  }
  return "?";
}

Status HubStore::Apply(const OriginBatch& batch, ApplyResult* result) {
  std::vector<ApplyResult> results;
  ES_RETURN_IF_ERROR(ApplyBatches({batch}, &results));
  *result = results.front();
  return Status::Ok();
}

Status ValidateBatchShape(const OriginBatch& batch) {
  ES_RETURN_IF_ERROR(ValidateOrigin(batch.origin));
  if (batch.entries == nullptr) return Status::InvalidArgument("batch without entries");
  const std::vector<ChangeEntry>& entries = *batch.entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].lsn == 0 || entries[i].lsn > static_cast<uint64_t>(INT64_MAX)) {
      return Status::InvalidArgument("entry " + std::to_string(i) + ": entry LSN out of range");
    }
    if (i > 0 && entries[i].lsn <= entries[i - 1].lsn) {
      return Status::InvalidArgument("entries of origin " + batch.origin.ToString() +
                                     " are not in LSN order at entry " + std::to_string(i));
    }
  }
  if (batch.base_lsn > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("base LSN out of range");
  if (!entries.empty() && batch.first_lsn > entries.front().lsn) {
    return Status::InvalidArgument("the batch's span starts after its first entry");
  }
  return Status::Ok();
}

Status ValidateOriginBatch(const OriginBatch& batch) {
  ES_RETURN_IF_ERROR(ValidateBatchShape(batch));
  const std::vector<ChangeEntry>& entries = *batch.entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    Status v = ValidateChangeEntry(entries[i]);
    if (!v.ok()) return v.Annotate("entry " + std::to_string(i));
  }
  return Status::Ok();
}

ApplyPlan PlanApply(const OriginBatch& batch, uint64_t held) {
  const std::vector<ChangeEntry>& entries = *batch.entries;
  ApplyPlan plan;
  plan.base = batch.base_lsn;
  if (held < batch.held_claim) {
    // Checked before the jump below: base_lsn would otherwise move the mark
    // over what this store lost, and nobody would resend it.
    plan.outcome = ApplyOutcome::kRegressed;
    plan.new_high_water = held;
    plan.detail = "origin " + batch.origin.ToString() + ": high-water " + std::to_string(held) +
                  ", below the " + std::to_string(batch.held_claim) + " this store acknowledged to it";
    return plan;
  }
  // The span may open with LSNs the gateway's log compacted away: when it
  // joins what is held (here, or elsewhere per base_lsn), they are no gap.
  if (!entries.empty() && batch.first_lsn > 0 && entries.front().lsn > batch.first_lsn &&
      std::max(held, plan.base) >= batch.first_lsn - 1) {
    plan.base = std::max(plan.base, entries.front().lsn - 1);
  }
  while (plan.first_new < entries.size() && entries[plan.first_new].lsn <= held) ++plan.first_new;
  const uint64_t start = std::max(held, plan.base);
  if (plan.first_new < entries.size() && entries[plan.first_new].lsn != start + 1) {
    plan.outcome = ApplyOutcome::kGap;
    plan.new_high_water = held;
    plan.detail = "gap in origin " + batch.origin.ToString() + ": high-water " + std::to_string(held) +
                  (plan.base > held ? ", base " + std::to_string(plan.base) : std::string()) + ", batch starts at " +
                  std::to_string(entries[plan.first_new].lsn);
    return plan;
  }
  plan.new_high_water = plan.first_new < entries.size() ? entries.back().lsn : start;
  plan.outcome = plan.new_high_water > held ? ApplyOutcome::kApplied : ApplyOutcome::kAlreadyHeld;
  return plan;
}

namespace {

class SqliteHubStore : public HubStore {
 public:
  explicit SqliteHubStore(Store* store) : store_(store) {}

  std::string epoch() const override { return store_->origin().epoch; }
  std::string backend() const override { return "sqlite"; }

  Status ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) override {
    results->assign(batches.size(), ApplyResult{});
    if (batches.size() > 1) {
      if (ApplyGroup(batches, results)) return Status::Ok();
      results->assign(batches.size(), ApplyResult{});
    }
    // One batch, or a group the Store refused as a whole (an entry it
    // refused; rare): one transaction per batch, so a batch's refusal or
    // failure stays its own.
    for (size_t i = 0; i < batches.size(); ++i) ES_RETURN_IF_ERROR(ApplyOne(batches[i], &(*results)[i]));
    return Status::Ok();
  }

  Status HighWater(const Origin& origin, uint64_t* high_water) override {
    return store_->GetHighWater(origin, high_water);
  }
  // One writer commits the feed in its sequence order, so every shard can
  // use the region's one sequence as its own: a shard's numbers are visible
  // in order, and every shard's position moves over what a page scanned.
  Status ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) override {
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
    size_t budget = max * kScanFactor;
    // Sized once: grown entry by entry, moving entries and faulting in fresh
    // memory were the largest part of a 5,000-entry page's cost.
    page->entries.reserve(static_cast<size_t>(std::min<uint64_t>(max, head - scanned)));
    std::vector<RegionFeedEntry> chunk;
    chunk.reserve(page->entries.capacity());
    while (page->entries.size() < max && scanned < head && budget > 0) {
      uint64_t chunk_head = 0;
      bool chunk_reset = false;
      ES_RETURN_IF_ERROR(store_->ReadRegionFeed(scanned, std::min(budget, max), &chunk, &chunk_head, &chunk_reset));
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
  Status FeedBounds(FeedBoundsInfo* bounds) override {
    *bounds = FeedBoundsInfo{};
    uint64_t oldest = 0, head = 0;
    ES_RETURN_IF_ERROR(store_->RegionFeedBounds(&oldest, &head));
    bounds->oldest = oldest;
    bounds->numbered = head;
    bounds->head.fill(head);
    bounds->pruned.fill(oldest > 0 ? oldest - 1 : head);
    return Status::Ok();
  }
  Status PruneStep(int64_t max_rows, PruneResult* result) override { return store_->PruneStep(max_rows, result); }
  Status Stats(HubStoreStats* stats) override {
    stats->backend = backend();
    return store_->RegionFeedBounds(&stats->feed_oldest, &stats->feed_head);
  }

  static constexpr size_t kScanFactor = 4;

 private:
  // Only the batch's shape is checked here: Store::ApplyOriginBatch checks
  // every entry before it writes anything, and checking them twice would
  // cost the hub's hot path a second pass over each reading's keys.
  Status ApplyOne(const OriginBatch& b, ApplyResult* r) {
    Status v = ValidateBatchShape(b);
    if (!v.ok()) return Invalid(b, v, r);
    // The mark read here is the one the Store applies against: the mutex
    // keeps other appliers of this adapter out, and one hub is the only
    // writer of its SQLite file.
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t held = 0;
    ES_RETURN_IF_ERROR(store_->GetHighWater(b.origin, &held));
    ApplyPlan plan = PlanApply(b, held);
    r->before = held;
    r->high_water = held;
    r->base_lsn = plan.base;
    r->outcome = plan.outcome;
    r->detail = plan.detail;
    if (plan.outcome != ApplyOutcome::kApplied) return Status::Ok();
    Status st = store_->ApplyOriginBatch(b.origin, plan.base, *b.entries, &r->high_water);
    // The gap was ruled out above under the mutex, with this adapter the
    // file's one writer: an InvalidArgument is an entry the Store refused.
    if (st.code() == Status::Code::kInvalidArgument) return Invalid(b, st, r);
    ES_RETURN_IF_ERROR(st);
    r->applied = b.entries->size() - plan.first_new;
    return Status::Ok();
  }

  // A busy hub's group in one transaction (Store::ApplyOriginBatches): its
  // commit, not the batches, was the cost (WAL pages of the feed, the marks
  // and the origins written once per group instead of once per batch).
  // Each batch is decided here first, in order, against the mark the ones
  // before it leave; only those that apply go to the Store, which decides
  // them again against the same marks (this adapter is the file's one
  // writer, under mu_). False: nothing was written (a batch the Store
  // refused, or a failed write); the caller applies them one by one.
  bool ApplyGroup(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) {
    std::lock_guard<std::mutex> lock(mu_);
    std::unordered_map<std::string, uint64_t> marks;  // origin -> its mark after the batches decided so far
    std::vector<Store::OriginBatchWrite> writes;
    std::vector<size_t> written;  // writes[k] is batches[written[k]]
    std::vector<size_t> first_new(batches.size(), 0);
    for (size_t i = 0; i < batches.size(); ++i) {
      const OriginBatch& b = batches[i];
      ApplyResult& r = (*results)[i];
      if (!ValidateBatchShape(b).ok()) return false;  // decided, with its reason, one by one
      std::string key = b.origin.ToString();
      auto found = marks.find(key);
      uint64_t held = 0;
      if (found != marks.end()) {
        held = found->second;
      } else if (!store_->GetHighWater(b.origin, &held).ok()) {
        return false;
      }
      ApplyPlan plan = PlanApply(b, held);
      r.before = held;
      r.high_water = plan.new_high_water;
      r.base_lsn = plan.base;
      r.outcome = plan.outcome;
      r.detail = plan.detail;
      marks[key] = plan.new_high_water;
      if (plan.outcome != ApplyOutcome::kApplied) continue;
      first_new[i] = plan.first_new;
      writes.push_back(Store::OriginBatchWrite{&b.origin, plan.base, b.entries});
      written.push_back(i);
    }
    std::vector<uint64_t> high_waters;
    if (!writes.empty() && !store_->ApplyOriginBatches(writes, &high_waters).ok()) return false;
    for (size_t k = 0; k < written.size(); ++k) {
      const size_t i = written[k];
      (*results)[i].high_water = high_waters[k];
      (*results)[i].applied = batches[i].entries->size() - first_new[i];
    }
    return true;
  }

  Status Invalid(const OriginBatch& b, const Status& why, ApplyResult* r) {
    *r = ApplyResult{};
    r->outcome = ApplyOutcome::kInvalid;
    r->detail = why.message();
    if (ValidateOrigin(b.origin).ok()) store_->GetHighWater(b.origin, &r->high_water);
    r->before = r->high_water;
    return Status::Ok();
  }

  Store* store_;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<HubStore> NewSqliteHubStore(Store* store) { return std::make_unique<SqliteHubStore>(store); }

bool IsPostgresLocation(const std::string& location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

#ifndef EDGESYNC_HAVE_POSTGRESQL
bool HavePostgres() { return false; }
Status OpenPostgresHubStore(const HubStoreOptions&, std::unique_ptr<HubStore>*) {
  return Status::Unsupported(
      "this edgesync was built without PostgreSQL support (libpq was not found at build time); "
      "use the embedded SQLite store or a build with libpq-dev");
}
#endif

}  // namespace edgesync

// The hub store's shared rules (what is invalid, what is a gap); the SQLite
// backend is the SQLite store itself (store/hub_feed.h, reached through
// hub_store_sqlite.cc). Nothing here needs SQLite: the PostgreSQL module
// links this file.
#include "store/hub_store.h"

#include <algorithm>
#include <string>

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

std::vector<OriginWatermark> PageWatermarks(const std::vector<OriginWatermark>& all, const ShardPositions& after,
                                            const ShardPositions& next) {
  std::vector<OriginWatermark> out;
  const bool every = all.size() <= kAllPageWatermarks;
  for (const OriginWatermark& w : all) {
    if (out.size() >= kMaxPageWatermarks) break;
    const int shard = RegionShardOf(w.origin.gateway_id);
    if (w.complete_through_ms <= 0 || w.seq > next[shard]) continue;
    if (every || w.seq > after[shard]) out.push_back(OriginWatermark{w.origin, w.complete_through_ms, 0});
  }
  return out;
}

bool BatchCompletes(const OriginBatch& batch, uint64_t high_water) {
  if (batch.complete_through_ms <= 0 || batch.entries == nullptr || batch.entries->empty()) return false;
  return batch.entries->back().lsn <= high_water;
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

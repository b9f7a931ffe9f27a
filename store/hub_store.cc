// The hub store's shared rules (what is invalid, what is a gap); the SQLite
// backend is store/sqlite_hub_store.cc. Nothing here needs SQLite: the
// PostgreSQL module links this file.
#include "store/hub_store.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

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
  if (batch.priority == 0) {
    if (batch.last_lsn != 0 && (entries.empty() || batch.last_lsn != entries.back().lsn)) {
      return Status::InvalidArgument("a lane batch's span ends at its last entry");
    }
    return Status::Ok();
  }
  // A priority batch: its span is declared, its entries are its level's.
  const std::string level = "priority " + std::to_string(batch.priority) + " batch";
  if (batch.priority > kMaxPriorityLevel) return Status::InvalidArgument("a " + level + ": no such level");
  if (batch.live) return Status::InvalidArgument("a " + level + " marked live");
  const uint64_t last = batch.last_lsn != 0 ? batch.last_lsn : (entries.empty() ? 0 : entries.back().lsn);
  if (batch.first_lsn == 0 || last < batch.first_lsn || last > static_cast<uint64_t>(INT64_MAX)) {
    return Status::InvalidArgument("a " + level + " without a valid span");
  }
  for (const ChangeEntry& e : entries) {
    if (e.lsn > last) return Status::InvalidArgument("a " + level + "'s entry past its span");
    if (e.kind != ChangeEntry::Kind::kReading || QualityPriority(e.reading.quality) != batch.priority) {
      return Status::InvalidArgument("entry " + std::to_string(e.lsn) + " of a " + level +
                                     " is not a reading of that level");
    }
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
  if (batch.priority != 0) return false;
  if (batch.complete_through_ms <= 0 || batch.entries == nullptr || batch.entries->empty()) return false;
  return batch.entries->back().lsn <= high_water;
}

namespace {

bool InSpans(uint64_t lsn, const std::vector<LsnSpan>& spans) {
  for (const LsnSpan& s : spans) {
    if (lsn < s.first) return false;  // ascending: none further holds it
    if (lsn <= s.last) return true;
  }
  return false;
}

// Sorts the spans and merges those that overlap or touch.
void Coalesce(std::vector<LsnSpan>* spans) {
  std::sort(spans->begin(), spans->end(), [](const LsnSpan& a, const LsnSpan& b) { return a.first < b.first; });
  size_t out = 0;
  for (size_t i = 0; i < spans->size(); ++i) {
    if (out > 0 && (*spans)[i].first <= (*spans)[out - 1].last + 1) {
      (*spans)[out - 1].last = std::max((*spans)[out - 1].last, (*spans)[i].last);
    } else {
      (*spans)[out++] = (*spans)[i];
    }
  }
  spans->resize(out);
}

// Every span that starts at or below mark + 1 joins the mark (repeatedly:
// they are ascending); what is left lies above mark + 1.
void FoldIntoMark(uint64_t* mark, std::vector<LsnSpan>* spans) {
  size_t joined = 0;
  while (joined < spans->size() && (*spans)[joined].first <= *mark + 1) {
    *mark = std::max(*mark, (*spans)[joined].last);
    ++joined;
  }
  spans->erase(spans->begin(), spans->begin() + static_cast<std::ptrdiff_t>(joined));
}

// A lane batch's entry that a priority batch brought already.
bool HeldByPriority(const ChangeEntry& e, const PriorityMarks& priority) {
  if (e.kind != ChangeEntry::Kind::kReading) return false;
  const uint32_t level = QualityPriority(e.reading.quality);
  return level >= 1 && e.lsn <= priority[level - 1];
}

std::string SpansText(const std::vector<LsnSpan>& spans) {
  std::string out;
  for (const LsnSpan& s : spans) {
    if (!out.empty()) out += ' ';
    out += std::to_string(s.first) + ".." + std::to_string(s.last);
  }
  return out;
}

// A priority batch against mark (after the regressed check), the spans
// before it and the origin's priority marks already in plan.
void PlanPriority(const OriginBatch& batch, uint64_t mark, const std::vector<LsnSpan>& before, ApplyPlan* plan) {
  const std::vector<ChangeEntry>& entries = *batch.entries;
  const size_t k = batch.priority - 1;
  const uint64_t p = plan->new_priority[k];
  const uint64_t f = batch.first_lsn;
  const uint64_t last = batch.last_lsn != 0 ? batch.last_lsn : (entries.empty() ? f : entries.back().lsn);
  // base_lsn opens no way here: P says its level's entries are held by this
  // store, which a lane batch then skips; what another region holds below
  // the base is not. A sender after a failover resumes once its backlog's
  // first batch has taken the mark to the base.
  plan->base = 0;
  if (f > std::max(p, mark) + 1) {
    plan->outcome = ApplyOutcome::kGap;
    plan->detail = "gap in origin " + batch.origin.ToString() + " priority " + std::to_string(batch.priority) +
                   ": held through " + std::to_string(p) + " (high-water " + std::to_string(mark) +
                   "), batch starts at " + std::to_string(f);
    return;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const uint64_t lsn = entries[i].lsn;
    if (lsn > p && lsn > mark && !InSpans(lsn, before)) plan->fresh.push_back(i);
  }
  plan->new_priority[k] = std::max(p, last);
  const bool changed = !plan->fresh.empty() || plan->new_priority[k] != p;
  plan->outcome = changed ? ApplyOutcome::kApplied : ApplyOutcome::kAlreadyHeld;
}

}  // namespace

ApplyPlan PlanApply(const OriginBatch& batch, uint64_t held, const std::vector<LsnSpan>& spans,
                    const PriorityMarks& priority) {
  const std::vector<ChangeEntry>& entries = *batch.entries;
  ApplyPlan plan;
  plan.base = batch.base_lsn;
  plan.new_high_water = held;
  plan.new_spans = spans;
  plan.new_priority = priority;
  // What a store kept is taken as it is, merely put in order: a span at or
  // below the mark (none should be) is held by the mark already.
  Coalesce(&plan.new_spans);
  FoldIntoMark(&plan.new_high_water, &plan.new_spans);
  const std::vector<LsnSpan> before = plan.new_spans;
  const uint64_t mark = plan.new_high_water;
  if (mark < batch.held_claim) {
    // Checked before the jump below: base_lsn would otherwise move the mark
    // over what this store lost, and nobody would resend it.
    plan.outcome = ApplyOutcome::kRegressed;
    plan.detail = "origin " + batch.origin.ToString() + ": high-water " + std::to_string(mark) +
                  ", below the " + std::to_string(batch.held_claim) + " this store acknowledged to it";
    return plan;
  }
  if (batch.priority != 0) {
    PlanPriority(batch, mark, before, &plan);
    return plan;
  }
  // The span may open with LSNs the gateway's log compacted away: when it
  // joins what is held (here, or elsewhere per base_lsn), they are no gap.
  if (!entries.empty() && batch.first_lsn > 0 && entries.front().lsn > batch.first_lsn &&
      std::max(mark, plan.base) >= batch.first_lsn - 1) {
    plan.base = std::max(plan.base, entries.front().lsn - 1);
  }
  size_t first_above = 0;
  while (first_above < entries.size() && entries[first_above].lsn <= mark) ++first_above;
  const uint64_t start = std::max(mark, plan.base);
  const bool joins = first_above == entries.size() || entries[first_above].lsn == start + 1;
  std::vector<LsnSpan> after = before;
  uint64_t new_mark = start;
  if (joins) {
    if (first_above < entries.size()) new_mark = std::max(start, entries.back().lsn);
  } else {
    // Entries lie above the mark and do not follow it: they may join a held
    // span, or (a live lane's) open one.
    const uint64_t f = batch.first_lsn > 0 ? batch.first_lsn : entries.front().lsn;
    const uint64_t last = entries.back().lsn;
    FoldIntoMark(&new_mark, &after);  // the base may have reached a span
    auto touching = std::find_if(after.begin(), after.end(),
                                 [f](const LsnSpan& s) { return s.first <= f && f <= s.last + 1; });
    const bool above = f > new_mark + 1;
    if (above && touching != after.end()) {
      touching->last = std::max(touching->last, last);
    } else if (above && batch.live) {
      after.push_back(LsnSpan{f, last});
    } else {
      plan.outcome = ApplyOutcome::kGap;
      plan.detail = "gap in origin " + batch.origin.ToString() + ": high-water " + std::to_string(mark) +
                    (plan.base > mark ? ", base " + std::to_string(plan.base) : std::string()) +
                    (before.empty() ? std::string() : ", holding " + SpansText(before)) + ", batch starts at " +
                    std::to_string(entries[first_above].lsn);
      return plan;
    }
    Coalesce(&after);
    if (after.size() > kMaxHeldRanges) {
      plan.outcome = ApplyOutcome::kGap;
      plan.detail = "origin " + batch.origin.ToString() + " holds " + std::to_string(before.size()) +
                    " spans above its high-water " + std::to_string(mark) + " (" + SpansText(before) +
                    "), the most a store keeps (" + std::to_string(kMaxHeldRanges) + "): the live batch at " +
                    std::to_string(f) + " would open another; send one lane until the backlog joins them";
      return plan;
    }
  }
  FoldIntoMark(&new_mark, &after);
  // New: above the mark as it stood and in no span held before the batch.
  plan.fresh.reserve(entries.size() - first_above);
  for (size_t i = first_above; i < entries.size(); ++i) {
    if (!InSpans(entries[i].lsn, before) && !HeldByPriority(entries[i], priority)) plan.fresh.push_back(i);
  }
  plan.new_high_water = new_mark;
  plan.new_spans = std::move(after);
  const bool changed = new_mark > mark || !plan.fresh.empty() || plan.new_spans != before;
  plan.outcome = changed ? ApplyOutcome::kApplied : ApplyOutcome::kAlreadyHeld;
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

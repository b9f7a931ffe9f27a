#include "store/retention.h"

#include <algorithm>
#include <chrono>

#include "platform/log.h"

namespace edgesync {

Retention::Retention(StoreMaintenance* store, RetentionOptions options, Clock* clock)
    : step_([store](int64_t rows, PruneResult* r) { return store->PruneStep(rows, r); }),
      compact_([store](CompactResult* r) { return store->CompactStep(r); }),
      options_(options),
      clock_(clock ? clock : SystemClock()) {}

Retention::Retention(HubStore* store, RetentionOptions options, Clock* clock)
    : step_([store](int64_t rows, PruneResult* r) { return store->PruneStep(rows, r); }),
      compact_([store](CompactResult* r) { return store->CompactFeedStep(r); }),
      options_(options),
      clock_(clock ? clock : SystemClock()) {}

Retention::~Retention() { Stop(); }

Status Retention::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (options_.interval_ms <= 0 || options_.step_rows <= 0 || options_.pause_ms < 0) {
    return Status::InvalidArgument("retention: interval and step rows must be positive");
  }
  {
    MutexLock lock(&mu_);
    stop_ = false;
  }
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void Retention::Stop() {
  if (!worker_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.notify_all();
  }
  worker_.join();
}

RetentionStats Retention::stats() const {
  MutexLock lock(&stats_mu_);
  return stats_;
}

bool Retention::Pause(int64_t ms) {
  MutexLock lock(&mu_);
  if (ms > 0) lock.WaitFor(&cv_, std::chrono::milliseconds(ms), [this]() REQUIRES(mu_) { return stop_; });
  return !stop_;
}

bool Retention::Stopping() {
  MutexLock lock(&mu_);
  return stop_;
}

Status Retention::CompactPass(CompactResult* pass) {
  *pass = CompactResult{};
  if (!compact_) return Status::Ok();
  for (;;) {
    CompactResult step;
    int64_t t0 = clock_->MonotonicNanos();
    Status s = compact_(&step);
    int64_t took_ms = (clock_->MonotonicNanos() - t0) / 1000000;
    {
      MutexLock lock(&stats_mu_);
      ++stats_.compaction_steps;
      if (!s.ok()) ++stats_.errors;
      stats_.compacted.Add(step);
      stats_.longest_step_ms = std::max(stats_.longest_step_ms, took_ms);
    }
    if (!s.ok()) return s.Annotate("compaction");
    pass->Add(step);
    if (step.spans + step.kept == 0 || !step.more || Stopping()) break;
    if (!Pause(options_.pause_ms)) break;
  }
  return Status::Ok();
}

Status Retention::RunPass(PruneResult* pass, CompactResult* compacted) {
  *pass = PruneResult{};
  if (compacted) *compacted = CompactResult{};
  for (;;) {
    PruneResult step;
    int64_t t0 = clock_->MonotonicNanos();
    Status s = step_(options_.step_rows, &step);
    int64_t held_ms = (clock_->MonotonicNanos() - t0) / 1000000;
    {
      MutexLock lock(&stats_mu_);
      ++stats_.steps;
      if (!s.ok()) ++stats_.errors;
      stats_.pruned.Add(step);
      stats_.pruned.more = step.more;
      stats_.pruned.space_low = step.space_low;
      stats_.longest_step_ms = std::max(stats_.longest_step_ms, held_ms);
    }
    if (!s.ok()) return s;
    pass->Add(step);
    pass->space_low = pass->space_low || step.space_low;
    if (!step.more || Stopping()) break;
    // A yield between steps: commits waiting for the write lock go first.
    if (!Pause(options_.pause_ms)) break;
  }
  CompactResult c;
  Status cs = Stopping() ? Status::Ok() : CompactPass(&c);
  if (compacted) *compacted = c;
  MutexLock lock(&stats_mu_);
  ++stats_.passes;
  return cs;
}

void Retention::Run() {
  do {
    PruneResult pass;
    CompactResult compacted;
    Status s = RunPass(&pass, &compacted);
    if (!s.ok()) {
      ES_LOG(kWarn, "retention: {}", s.ToString());
    } else if (pass.readings + pass.tombstones + pass.remote > 0) {
      ES_LOG(kInfo, "retention: pruned {} acknowledged readings ({} early for space), {} tombstones, {} remote entries",
             pass.readings, pass.early, pass.tombstones, pass.remote);
    }
    if (compacted.spans > 0) {
      ES_LOG(kInfo, "retention: compacted {} readings in {} spans, {} bytes to {}", compacted.readings,
             compacted.spans, compacted.bytes_before, compacted.bytes_after);
    }
    if (compacted.kept > 0) {
      ES_LOG(kInfo, "retention: kept {} readings in {} spans as commit chunks (not smaller as series blocks)",
             compacted.kept_readings, compacted.kept);
    }
  } while (Pause(options_.interval_ms));
}

}  // namespace edgesync

// Retention's steps (store/log_retention.h) and compaction's
// (store/chunk_compactor.h), each in transactions of its own.
#include "store/chunk_compactor.h"
#include "store/sqlite_store.h"

namespace edgesync {

Status SqliteStore::PruneStep(int64_t max_rows, PruneResult* result) {
  *result = PruneResult{};
  if (max_rows <= 0) return Status::InvalidArgument("prune step: max_rows must be positive");
  const int64_t now = clock_->WallMillis();
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    uint64_t next = 0;
    ES_RETURN_IF_ERROR(NextLsn(&next));
    ES_RETURN_IF_ERROR(retention_.Step(&write_db_, static_cast<int64_t>(next) - 1, max_rows, now, result));
    return txn.Commit();
  }();
  if (!s.ok()) {
    txn.Rollback();
    *result = PruneResult{};
    // The rows, LSNs and caches of this connection are what they were; the
    // next data_version check reloads ranges if anything else changed.
    cached_high_lsn_ = -1;
  }
  return s;
}

Status SqliteStore::Prune(PruneResult* result) {
  *result = PruneResult{};
  constexpr int64_t kStep = 20000;
  for (;;) {
    PruneResult step;
    ES_RETURN_IF_ERROR(PruneStep(kStep, &step));
    result->Add(step);
    result->space_low = result->space_low || step.space_low;
    if (!step.more) return Status::Ok();
  }
}

// Compaction's step (store/chunk_compactor.h): the run read from a
// snapshot, encoded without a lock, swapped in under the writer's.
Status SqliteStore::CompactStep(CompactResult* result) {
  *result = CompactResult{};
  if (options_.read_only) return Status::InvalidArgument("compaction: the store is open read-only");
  const chunk_compactor::Options options{options_.compact_span_readings, options_.compact_after_ms,
                                         options_.compact_only_smaller};
  chunk_compactor::Plan plan;
  {
    MutexLock lock(&read_mu_);
    Txn snapshot(&read_db_);
    ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
    ES_RETURN_IF_ERROR(chunk_compactor::FindRun(&read_db_, options, clock_->WallMillis(), &plan));
  }
  if (plan.run.empty()) return Status::Ok();
  ES_RETURN_IF_ERROR(chunk_compactor::Encode(options, &plan));
  bool swapped = false;
  {
    MutexLock lock(&write_mu_);
    Status s = chunk_compactor::Swap(&write_db_, &plan, &swapped);
    if (!s.ok()) {
      cached_high_lsn_ = -1;
      return s;
    }
  }
  if (!swapped) return Status::Ok();  // raced with retention: the next pass reads again
  if (plan.keep) {
    result->kept = 1;
    result->kept_readings = plan.result.readings;
    result->more = true;
    return Status::Ok();
  }
  *result = plan.result;
  result->spans = 1;
  result->more = true;  // the next span may be due already; a step that finds none says so
  return Status::Ok();
}

}  // namespace edgesync

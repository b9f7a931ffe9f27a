// store/retention.h: runs the store's retention in the background, in both
// roles, in small steps.
//
// Every interval_ms (and at once after Start) a pass calls PruneStep (Store or HubStore)
// with step_rows until nothing is due, pausing pause_ms between steps: each
// step is one short write transaction, so ingest waits at most one step for
// the write lock, and the pauses let queued commits through. What a pass
// prunes: see Store::Prune (acknowledged readings past the retention age or,
// when space is low, oldest first; tombstones; read view / region feed).
// A pass then compacts, step by step with the same pause between steps,
// until nothing is due: a gateway's store span by span (Store::CompactStep),
// a hub's region feed run by run (HubStore::CompactFeedStep; a backend
// that keeps its feed as it is finds nothing to do). Pruning goes first, so
// nothing about to be pruned is compacted.
//
// Thread safety: Start/Stop from one thread; RunPass (tests, simulations)
// must not overlap a running worker; stats() from any thread.
#ifndef EDGESYNC_STORE_RETENTION_H_
#define EDGESYNC_STORE_RETENTION_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <thread>

#include "platform/clock.h"
#include "platform/mutex.h"
#include "platform/status.h"
#include "store/hub_store.h"
#include "store/store.h"
#include "store/store_defaults.h"

namespace edgesync {

struct RetentionOptions {
  int64_t interval_ms = retention_options::kIntervalS * 1000;
  int64_t step_rows = retention_options::kStepRows;
  int64_t pause_ms = 10;        // between steps of one pass
};

struct RetentionStats {
  int64_t passes = 0;
  int64_t steps = 0;
  int64_t errors = 0;
  PruneResult pruned;           // totals since start (more/space_low: last step's)
  CompactResult compacted;      // totals since start (spans, or a hub's merged feed rows)
  int64_t compaction_steps = 0; // CompactStep calls (not in steps)
  int64_t longest_step_ms = 0;  // the longest one step took (prune or compaction)
};

class Retention {
 public:
  Retention(StoreMaintenance* store, RetentionOptions options, Clock* clock = nullptr);
  // A region hub's store (its region feed; PostgreSQL or SQLite).
  Retention(HubStore* store, RetentionOptions options, Clock* clock = nullptr);
  ~Retention();
  Retention(const Retention&) = delete;
  Retention& operator=(const Retention&) = delete;

  Status Start();
  void Stop();
  // One pass, on the caller's thread (the worker calls it every interval);
  // *compacted (may be null): what the pass compacted.
  Status RunPass(PruneResult* pass, CompactResult* compacted = nullptr);
  RetentionStats stats() const;

 private:
  void Run();
  // Waits up to ms (real time) unless stopping; false = stop.
  bool Pause(int64_t ms) EXCLUDES(mu_);
  bool Stopping() EXCLUDES(mu_);
  // Compaction steps until none is due.
  Status CompactPass(CompactResult* pass);

  std::function<Status(int64_t, PruneResult*)> step_;  // the store's PruneStep
  std::function<Status(CompactResult*)> compact_;      // its CompactStep, or the hub's CompactFeedStep
  RetentionOptions options_;
  Clock* clock_;
  std::thread worker_;
  Mutex mu_;
  std::condition_variable cv_;
  bool stop_ GUARDED_BY(mu_) = false;
  mutable Mutex stats_mu_;
  RetentionStats stats_ GUARDED_BY(stats_mu_);
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_RETENTION_H_

// platform/liveness.h: which worker threads are alive, for the watchdog.
//
// systemd's watchdog (WatchdogSec= in the units) restarts the service when the
// main loop stops petting it. The main loop alone proves little: it only
// sleeps and writes the status file, so a wedged worker (a committer stuck in
// a store call, an uplink stuck on a lock) would go unnoticed. Each worker
// thread therefore owns a Heartbeat in a registry:
//   - Beat() says "making progress now";
//   - Idle() says "waiting for work by design" (an empty queue), which is not a
//     stall however long it lasts; the next Beat() ends it.
// A worker that is neither idle nor has beaten within the deadline is stalled,
// and WatchdogGate (called by the main loop instead of petting directly) stops
// petting while any worker is stalled, so systemd restarts the service one
// WatchdogSec later. The deadline is the watchdog period itself: a worker gets
// as long to show progress as the main loop does.
//
// Test hook: EDGESYNC_TEST_STALL=WORKER[:AFTER_MS] makes WORKER's Beat() block
// (as a wedged thread would) from AFTER_MS after it registered, until the
// process is asked to stop (platform/signals.h). Integration tests use it to
// check that a stalled worker stops the watchdog; nothing else sets it.
//
// Thread safety: Beat() and Idle() are called by the owning thread only and
// are lock-free (one clock read, two atomic stores), so they may sit in hot
// loops; the registry and WatchdogGate may be used from any thread.
#ifndef EDGESYNC_PLATFORM_LIVENESS_H_
#define EDGESYNC_PLATFORM_LIVENESS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/clock.h"
#include "platform/mutex.h"
#include "platform/systemd.h"

namespace edgesync {

class LivenessRegistry {
 public:
  explicit LivenessRegistry(Clock* clock);
  // The registry of this process, the one workers and the main loop share.
  static LivenessRegistry* Process();

  struct Stalled {
    std::string worker;
    int64_t silent_ms = 0;  // since its last beat
  };
  // Workers neither idle nor heard from within deadline_ms, oldest first.
  std::vector<Stalled> StalledWorkers(int64_t deadline_ms) const;
  // Names of the registered workers (several may share a name).
  std::vector<std::string> Workers() const;
  Clock* clock() const { return clock_; }

 private:
  friend class Heartbeat;
  struct Entry {
    std::string worker;
    std::atomic<int64_t> last_beat_ms{0};
    std::atomic<bool> idle{false};
  };
  void Add(const std::shared_ptr<Entry>& entry);
  void Remove(const Entry* entry);

  Clock* clock_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<Entry>> entries_ GUARDED_BY(mu_);
};

// One worker thread's heartbeat: registered for its lifetime, idle until its
// first Beat() (a worker fed by callbacks may wait long for its first work).
// Worker names: ingest, committer, uplink, feed-puller, hub-applier, hub-feed.
class Heartbeat {
 public:
  explicit Heartbeat(std::string worker, LivenessRegistry* registry = LivenessRegistry::Process());
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  void Beat();
  void Idle();

 private:
  void MaybeStallForTest();

  LivenessRegistry* registry_;
  std::shared_ptr<LivenessRegistry::Entry> entry_;
  int64_t stall_at_ms_ = -1;  // the test hook; -1: never
};

// Idle for the scope of a wait for work, busy again (a beat) after it.
class IdleScope {
 public:
  explicit IdleScope(Heartbeat* beat) : beat_(beat) { beat_->Idle(); }
  ~IdleScope() { beat_->Beat(); }
  IdleScope(const IdleScope&) = delete;
  IdleScope& operator=(const IdleScope&) = delete;

 private:
  Heartbeat* beat_;
};

// Busy for the scope of one piece of work (a message callback), idle after it.
class BusyScope {
 public:
  explicit BusyScope(Heartbeat* beat) : beat_(beat) { beat_->Beat(); }
  ~BusyScope() { beat_->Idle(); }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  Heartbeat* beat_;
};

// The main loop's watchdog petting, conditional on the workers' liveness.
class WatchdogGate {
 public:
  // Without a systemd watchdog, stalls are still detected (and logged) with
  // this deadline, the units' WatchdogSec.
  static constexpr int64_t kDefaultDeadlineMs = 30000;

  explicit WatchdogGate(SystemdNotifier* systemd, LivenessRegistry* registry = LivenessRegistry::Process());
  // Call from the main loop at least every watchdog period / 2. Pets the
  // watchdog when no worker is stalled; otherwise withholds it, logs the
  // stalled workers once when the stall starts (and when it ends) and sets
  // systemd's STATUS= to name them. Returns true when no worker is stalled.
  bool Tick();
  int64_t deadline_ms() const { return deadline_ms_; }

 private:
  SystemdNotifier* systemd_;
  LivenessRegistry* registry_;
  int64_t deadline_ms_;
  bool stalled_ = false;
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_LIVENESS_H_

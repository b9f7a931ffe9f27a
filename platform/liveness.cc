#include "platform/liveness.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "platform/log.h"
#include "platform/signals.h"

namespace edgesync {

namespace {

// EDGESYNC_TEST_STALL=WORKER[:AFTER_MS]: when this worker's Beat() starts to
// block, in ms after registration; -1 when the hook is not aimed at it.
int64_t StallDelayForTest(const std::string& worker) {
  const char* v = std::getenv("EDGESYNC_TEST_STALL");
  if (v == nullptr) return -1;
  std::string spec = v;
  size_t colon = spec.find(':');
  if (spec.substr(0, colon) != worker) return -1;
  if (colon == std::string::npos) return 0;
  char* end = nullptr;
  long long ms = std::strtoll(spec.c_str() + colon + 1, &end, 10);
  return (end != nullptr && *end == '\0' && ms >= 0) ? ms : 0;
}

}  // namespace

LivenessRegistry::LivenessRegistry(Clock* clock) : clock_(clock) {}

LivenessRegistry* LivenessRegistry::Process() {
  static LivenessRegistry* registry = new LivenessRegistry(SystemClock());
  return registry;
}

void LivenessRegistry::Add(const std::shared_ptr<Entry>& entry) {
  MutexLock lock(&mu_);
  entries_.push_back(entry);
}

void LivenessRegistry::Remove(const Entry* entry) {
  MutexLock lock(&mu_);
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [entry](const std::shared_ptr<Entry>& e) { return e.get() == entry; }),
                 entries_.end());
}

std::vector<LivenessRegistry::Stalled> LivenessRegistry::StalledWorkers(int64_t deadline_ms) const {
  const int64_t now = clock_->MonotonicMillis();
  std::vector<Stalled> out;
  {
    MutexLock lock(&mu_);
    for (const auto& e : entries_) {
      if (e->idle.load(std::memory_order_acquire)) continue;
      int64_t silent = now - e->last_beat_ms.load(std::memory_order_acquire);
      if (silent > deadline_ms) out.push_back({e->worker, silent});
    }
  }
  std::sort(out.begin(), out.end(), [](const Stalled& a, const Stalled& b) { return a.silent_ms > b.silent_ms; });
  return out;
}

std::vector<std::string> LivenessRegistry::Workers() const {
  MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e->worker);
  return names;
}

Heartbeat::Heartbeat(std::string worker, LivenessRegistry* registry)
    : registry_(registry), entry_(std::make_shared<LivenessRegistry::Entry>()) {
  entry_->worker = std::move(worker);
  const int64_t now = registry_->clock()->MonotonicMillis();
  entry_->last_beat_ms.store(now);
  entry_->idle.store(true);
  int64_t delay = StallDelayForTest(entry_->worker);
  if (delay >= 0) stall_at_ms_ = now + delay;
  registry_->Add(entry_);
}

Heartbeat::~Heartbeat() { registry_->Remove(entry_.get()); }

void Heartbeat::Beat() {
  if (stall_at_ms_ >= 0) MaybeStallForTest();
  // Time before state: a scan between the two stores must not see a busy
  // worker with an old beat.
  entry_->last_beat_ms.store(registry_->clock()->MonotonicMillis(), std::memory_order_release);
  entry_->idle.store(false, std::memory_order_release);
}

void Heartbeat::Idle() {
  entry_->last_beat_ms.store(registry_->clock()->MonotonicMillis(), std::memory_order_release);
  entry_->idle.store(true, std::memory_order_release);
}

void Heartbeat::MaybeStallForTest() {
  if (registry_->clock()->MonotonicMillis() < stall_at_ms_) return;
  stall_at_ms_ = -1;
  ES_LOG(kWarn, "{}: stalled by EDGESYNC_TEST_STALL until asked to stop", entry_->worker);
  // Busy and silent, as a wedged thread is; released by a stop request so
  // the test's process still ends cleanly.
  entry_->idle.store(false, std::memory_order_release);
  while (!Signals::StopRequested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

WatchdogGate::WatchdogGate(SystemdNotifier* systemd, LivenessRegistry* registry)
    : systemd_(systemd),
      registry_(registry),
      deadline_ms_(systemd->watchdog_interval_ms() > 0 ? systemd->watchdog_interval_ms() : kDefaultDeadlineMs) {}

bool WatchdogGate::Tick() {
  std::vector<LivenessRegistry::Stalled> stalled = registry_->StalledWorkers(deadline_ms_);
  if (stalled.empty()) {
    if (stalled_) {
      ES_LOG(kInfo, "watchdog: every worker is making progress again");
      systemd_->Status("running");
      stalled_ = false;
    }
    systemd_->WatchdogPing();
    return true;
  }
  if (!stalled_) {
    std::string names;
    for (const auto& s : stalled) {
      names += (names.empty() ? "" : ", ") + s.worker + " (silent " + std::to_string(s.silent_ms / 1000) + " s)";
    }
    // Not petting lets systemd restart the service after WatchdogSec; the
    // worker may still recover before that, and then petting resumes.
    ES_LOG(kError, "watchdog: not petting, stalled worker(s): {}", names);
    systemd_->Status("stalled: " + names);
    stalled_ = true;
  }
  return false;
}

}  // namespace edgesync

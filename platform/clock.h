// platform/clock.h: the two clocks edgesync reads, behind one interface.
//
// Monotonic time drives timers, backoff, batching deadlines and lease expiry;
// wall time only stamps readings and is never trusted for ordering (a Pi
// without an RTC boots in 1970 and jumps when NTP arrives). Monotonic time is
// one clock for every process of a boot and starts again at a reboot; the
// boot id tells boots apart, so a monotonic time kept in a shared file (a
// lease's renewal) is compared only within its boot. Tests and simulations
// replace the clock with ManualClock to jump the wall clock or reboot.
//
// Thread safety: SystemClock is stateless; ManualClock is safe to read and
// set from several threads.
#ifndef EDGESYNC_PLATFORM_CLOCK_H_
#define EDGESYNC_PLATFORM_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "platform/mutex.h"

namespace edgesync {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since an arbitrary start; never goes back.
  virtual int64_t MonotonicNanos() const = 0;
  // Milliseconds since the Unix epoch, as the system believes it; may jump.
  virtual int64_t WallMillis() const = 0;
  // Names this boot of the machine (Linux: /proc/sys/kernel/random/boot_id);
  // "" when unknown.
  virtual std::string BootId() const = 0;

  int64_t MonotonicMillis() const { return MonotonicNanos() / 1000000; }
};

// The process-wide real clock (CLOCK_MONOTONIC, CLOCK_REALTIME).
Clock* SystemClock();

// A clock that moves only when told to.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t wall_ms = 0, int64_t mono_ns = 0) : wall_ms_(wall_ms), mono_ns_(mono_ns) {}
  int64_t MonotonicNanos() const override { return mono_ns_.load(); }
  int64_t WallMillis() const override { return wall_ms_.load(); }
  std::string BootId() const override {
    MutexLock lock(&boot_mu_);
    return boot_id_;
  }
  // Moves both clocks forward by the same amount.
  void Advance(int64_t ms) {
    mono_ns_ += ms * 1000000;
    wall_ms_ += ms;
  }
  // Jumps the wall clock only (NTP step, RTC reset); monotonic time is untouched.
  void SetWall(int64_t wall_ms) { wall_ms_ = wall_ms; }
  // A reboot: a new boot id, monotonic time back near zero.
  void Reboot(const std::string& boot_id, int64_t mono_ns = 0) {
    MutexLock lock(&boot_mu_);
    boot_id_ = boot_id;
    mono_ns_ = mono_ns;
  }

 private:
  std::atomic<int64_t> wall_ms_;
  std::atomic<int64_t> mono_ns_;
  mutable Mutex boot_mu_;
  std::string boot_id_ GUARDED_BY(boot_mu_) = "manual-boot-1";
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_CLOCK_H_

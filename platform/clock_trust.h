// platform/clock_trust.h: whether the wall clock may stamp readings.
//
// A board without a real-time clock (a Raspberry Pi) boots with the time
// fake-hwclock saved at the last shutdown, hours or days behind, and keeps
// it until NTP reaches a server: on an offline site, maybe never. A floor
// (no time before a fixed date is real) catches a clock in 1970 but not one
// three days behind. So the clock is trusted only once the system says it is
// synchronised, and from then on for the rest of the boot:
//   - kKernel: the kernel's NTP status, read with adjtimex(2) (modes 0, no
//     privilege needed): synchronised while STA_UNSYNC is clear and the
//     call does not answer TIME_ERROR. chrony, ntpd and systemd-timesyncd
//     clear the flag once they discipline the clock; the kernel sets it
//     again when nobody has for a while (maximum error past 16 s).
//   - kFile: a file that exists once the clock is synchronised, e.g.
//     /run/systemd/timesync/synchronized (systemd-timesyncd touches it on
//     each synchronisation) or one a GPS daemon writes.
//   - kFloor: the floor alone (a board with a battery-backed RTC, or a clock
//     set by something that sets no flag).
// Under every source the wall clock must also be past the floor.
//
// Trust is kept per boot: once synchronised, a clock stays trusted until the
// machine reboots (a daemon that stops for a while leaves the clock a few
// seconds off at worst, not days). A marker file (optional) keeps that
// across restarts of the process within the boot.
//
// Thread safety: Trusted() and Snapshot() may be called from any thread.
#ifndef EDGESYNC_PLATFORM_CLOCK_TRUST_H_
#define EDGESYNC_PLATFORM_CLOCK_TRUST_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "platform/clock.h"
#include "platform/mutex.h"
#include "platform/status.h"

namespace edgesync {

enum class ClockSync { kSynchronized, kUnsynchronized, kUnknown };
const char* ClockSyncName(ClockSync sync);

// adjtimex's answer (its return value and timex.status) as a state.
ClockSync ClockSyncFromTimex(int result, int status);
// The kernel's state now (adjtimex); kUnknown when the call fails.
ClockSync KernelClockSync();

struct ClockTrustOptions {
  enum class Source { kKernel, kFile, kFloor };
  Source source = Source::kKernel;
  std::string file;               // kFile: the file whose existence means synchronised
  int64_t epoch_floor_ms = 0;     // wall times before this are never trusted
  std::string marker_path;        // "" = none: trust is kept in memory only
};

// Parses the option's text: "kernel", "floor" or "file:<absolute path>".
Status ParseClockTrustSource(const std::string& text, ClockTrustOptions* options);

class ClockTrust {
 public:
  // sync_probe: the kernel's state (KernelClockSync unless a test gives one).
  ClockTrust(ClockTrustOptions options, Clock* clock, std::function<ClockSync()> sync_probe = KernelClockSync);

  // Whether a time stamped now is trusted. Asks the source at most once a
  // second while not yet trusted, never again once trusted in this boot.
  bool Trusted();

  struct State {
    bool trusted = false;
    const char* source = "";      // "kernel", "file" or "floor"
    ClockSync last = ClockSync::kUnknown;  // what the source said last
    int64_t trusted_since_ms = 0; // wall time trust began (0 = not trusted)
  };
  State Snapshot() const;

 private:
  bool AskSource() REQUIRES(mu_);

  const ClockTrustOptions options_;
  Clock* clock_;
  std::function<ClockSync()> probe_;
  std::atomic<bool> synced_{false};  // synchronised at some point in this boot
  mutable Mutex mu_;
  int64_t next_ask_ms_ GUARDED_BY(mu_) = INT64_MIN;  // monotonic
  ClockSync last_ GUARDED_BY(mu_) = ClockSync::kUnknown;
  int64_t trusted_since_ms_ GUARDED_BY(mu_) = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_CLOCK_TRUST_H_

// store/time_correction.h: readings stamped while the wall clock was not
// trusted, moved to their true time once it is.
//
// A board without a real-time clock that boots offline runs on a restored
// clock (fake-hwclock), days behind, until NTP (or GPS) sets it. Readings
// the gateway stamps on arrival meanwhile carry kQualityUntrustedClock. The
// monotonic clock runs on unchanged across the step, so within one boot the
// error is known once the clock is trusted: for a reading stamped at wall
// time w while wall - monotonic was `offset`, its true time is w + delta with
// delta = (wall - monotonic once trusted) - offset.
//
// An untrusted period is a stretch of one boot with one offset: it begins
// with the first reading stamped untrusted and a new one begins whenever
// the untrusted clock steps (its offset moves by more than
// kPeriodStepMs). Each gets a small number (per origin, from 1), carried in
// the quality's high bits (kQualityPeriodShift, store/types.h) of every
// reading stamped in it, so every storage form keeps which period a
// reading belongs to without a column of its own.
//
// Rather than rewriting timestamps inside compressed chunks (five storage
// forms), a correction is an overlay: (period, delta, the period's span of
// stamped times). A query applies it to the readings of that period that
// still carry the untrusted flag: time + delta, untrusted cleared,
// kQualityCorrectedTime set; and it scans the span's times that the shift
// brings into its window as well, so the chunks' time indexes still find
// them. A period whose boot ended before the clock was trusted cannot be
// corrected (the monotonic clock started again): its readings keep the flag.
//
// Thread safety: values; TimeOverlay is not locked (build, then read).
#ifndef EDGESYNC_STORE_TIME_CORRECTION_H_
#define EDGESYNC_STORE_TIME_CORRECTION_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/types.h"

namespace edgesync {

// An untrusted clock whose wall-minus-monotonic offset moves by more than
// this has stepped: a new period begins. NTP slews by far less; a restart
// of the process in the same boot reads the same offset to a few ms.
constexpr int64_t kPeriodStepMs = 1000;

// One period of this store's own origin (the gateway store's clock_periods).
struct ClockPeriod {
  uint32_t id = 0;
  std::string boot_id;
  int64_t offset_ms = 0;        // wall - monotonic while it lasted
  int64_t opened_at_ms = 0;     // untrusted wall time it began
  int64_t readings = 0;         // readings committed in it
  int64_t first_ts_ms = 0;      // their stamped (untrusted) times; 0 when readings == 0
  int64_t last_ts_ms = 0;
  bool corrected = false;
  int64_t delta_ms = 0;         // corrected: true time - stamped time
  int64_t corrected_at_ms = 0;  // corrected: trusted wall time of the correction
};

// TimeCorrection (store/types.h) is what the overlay applies: readings of
// `period` whose stamped time lies in [from_ms, to_ms] move by delta_ms.

// The corrections of one origin.
class TimeOverlay {
 public:
  // A second correction of the same period replaces the first (an upsert:
  // applying one twice changes nothing).
  void Add(const TimeCorrection& correction);
  bool empty() const { return by_period_.empty(); }
  size_t size() const { return by_period_.size(); }

  // The windows of stamped times, [first, second), that a query of shown
  // times [from, to) must read: the window itself and, per correction, the
  // part of its span that delta brings into the window. Sorted, disjoint.
  std::vector<std::pair<int64_t, int64_t>> ScanWindows(int64_t from, int64_t to) const;

  // A reading as a query shows it: stamped in a corrected period and still
  // flagged untrusted, its time moves by delta and its flags say corrected.
  // Anything else stays as it is.
  void Apply(int64_t* ts_ms, uint32_t* quality) const;

 private:
  std::unordered_map<uint32_t, TimeCorrection> by_period_;
};

// The union of windows [first, second): sorted, disjoint.
std::vector<std::pair<int64_t, int64_t>> MergeWindows(std::vector<std::pair<int64_t, int64_t>> windows);

// a - b without overflow (clamped to the int64 range).
int64_t SaturatingSub(int64_t a, int64_t b);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_TIME_CORRECTION_H_

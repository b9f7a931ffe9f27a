#include "store/time_correction.h"

#include <algorithm>
#include <climits>

#include "store/types.h"

namespace edgesync {

int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return b > 0 ? INT64_MIN : INT64_MAX;
  return out;
}

void TimeOverlay::Add(const TimeCorrection& correction) {
  if (correction.period == 0) return;
  by_period_[correction.period] = correction;
}

std::vector<std::pair<int64_t, int64_t>> TimeOverlay::ScanWindows(int64_t from, int64_t to) const {
  std::vector<std::pair<int64_t, int64_t>> windows;
  if (from >= to) return windows;
  windows.emplace_back(from, to);
  for (const auto& [period, c] : by_period_) {
    // Stamped times t with from <= t + delta < to, within [c.from_ms, c.to_ms].
    const int64_t lo = std::max(SaturatingSub(from, c.delta_ms), c.from_ms);
    const int64_t hi = std::min(SaturatingSub(to, c.delta_ms), c.to_ms == INT64_MAX ? INT64_MAX : c.to_ms + 1);
    if (lo < hi) windows.emplace_back(lo, hi);
  }
  return MergeWindows(std::move(windows));
}

std::vector<std::pair<int64_t, int64_t>> MergeWindows(std::vector<std::pair<int64_t, int64_t>> windows) {
  std::sort(windows.begin(), windows.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& w : windows) {
    if (w.first >= w.second) continue;
    if (!merged.empty() && w.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, w.second);
    } else {
      merged.push_back(w);
    }
  }
  return merged;
}

void TimeOverlay::Apply(int64_t* ts_ms, uint32_t* quality) const {
  if (by_period_.empty() || (*quality & kQualityUntrustedClock) == 0) return;
  const uint32_t period = QualityPeriod(*quality);
  if (period == 0) return;
  auto it = by_period_.find(period);
  if (it == by_period_.end()) return;
  const TimeCorrection& c = it->second;
  if (*ts_ms < c.from_ms || *ts_ms > c.to_ms) return;
  int64_t moved = 0;
  if (__builtin_add_overflow(*ts_ms, c.delta_ms, &moved)) return;
  *ts_ms = moved;
  *quality = (*quality & ~kQualityUntrustedClock) | kQualityCorrectedTime;
}

}  // namespace edgesync

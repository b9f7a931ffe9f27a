#include "platform/progress.h"

#include <algorithm>
#include <cmath>

#include "platform/log.h"

namespace edgesync {

ProgressLog::ProgressLog(std::string what, std::string unit, int64_t every_ms, uint64_t threshold)
    : what_(std::move(what)), unit_(std::move(unit)), every_ms_(every_ms), threshold_(threshold) {}

std::string ProgressLog::Line(const std::string& what, const std::string& unit, uint64_t done, uint64_t remaining,
                              double rate_per_s) {
  std::string eta = "unknown (no progress)";
  if (rate_per_s > 0) {
    double s = static_cast<double>(remaining) / rate_per_s;
    eta = s < 120 ? fmt::format("{:.0f} s", s) : s < 7200 ? fmt::format("{:.1f} min", s / 60)
                                                            : fmt::format("{:.1f} h", s / 3600);
  }
  return fmt::format("{}: {} {} done, {} remaining, {:.0f} {}/s, done in {}", what, done, unit, remaining,
                     rate_per_s, unit, eta);
}

void ProgressLog::Update(uint64_t position, uint64_t remaining, int64_t now_ms) {
  if (!active_) {
    if (remaining <= threshold_) return;
    active_ = true;
    logged_ = false;
    start_position_ = position;
    start_ms_ = now_ms;
    last_log_ms_ = now_ms;
    last_position_ = position;
    return;
  }
  uint64_t done = position - std::min(position, start_position_);
  if (remaining == 0) {
    if (logged_) {
      double secs = std::max<int64_t>(now_ms - start_ms_, 1) / 1000.0;
      ES_LOG(kInfo, "{}: caught up, {} {} in {:.1f} s", what_, done, unit_, secs);
    }
    active_ = false;
    return;
  }
  if (now_ms - last_log_ms_ < every_ms_) return;
  // The rate over the last interval: after a link comes back it says more
  // about the time left than the average since the start.
  double secs = static_cast<double>(now_ms - last_log_ms_) / 1000.0;
  double rate = static_cast<double>(position - std::min(position, last_position_)) / secs;
  ES_LOG(kInfo, "{}", Line(what_, unit_, done, remaining, rate));
  logged_ = true;
  last_log_ms_ = now_ms;
  last_position_ = position;
}

}  // namespace edgesync

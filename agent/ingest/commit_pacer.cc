#include "agent/ingest/commit_pacer.h"

#include <algorithm>
#include <cmath>

namespace edgesync {

CommitPacer::CommitPacer(int64_t cap_ms, size_t batch_max, bool synced)
    : cap_ms_(std::max<int64_t>(0, cap_ms)),
      batch_max_(std::max<size_t>(1, batch_max)),
      group_(static_cast<size_t>((synced ? kSyncedCommitBytes : kCommitBytes) / kFixedBytesPerReading)) {}

void CommitPacer::Committed(size_t readings, int64_t now_ms) {
  if (!started_) {
    started_ = true;
    window_start_ms_ = now_ms;
  }
  window_readings_ += static_cast<int64_t>(readings);
  const int64_t span = now_ms - window_start_ms_;
  if (span < kRateWindowMs) return;
  rate_ = static_cast<double>(window_readings_) * 1000.0 / static_cast<double>(span);
  busy_ = rate_ > kBusyRate || (busy_ && rate_ > kBusyRate * 2 / 3);
  window_start_ms_ = now_ms;
  window_readings_ = 0;
}

size_t CommitPacer::TargetGroup() const { return busy_ ? batch_max_ : std::min(group_, batch_max_); }

int64_t CommitPacer::DelayMs() const {
  const int64_t floor = std::min(kMinDelayMs, cap_ms_);
  if (busy_) return std::max(cap_ms_, floor);
  if (rate_ <= 0) return std::min(kFirstDelayMs, cap_ms_);
  // Fewer than two readings expected within the cap: nothing to gather.
  if (rate_ * static_cast<double>(cap_ms_) < 2000.0) return floor;
  const double gather_ms = static_cast<double>(TargetGroup()) * 1000.0 / rate_;
  return std::clamp<int64_t>(static_cast<int64_t>(std::ceil(gather_ms)), floor, cap_ms_);
}

}  // namespace edgesync

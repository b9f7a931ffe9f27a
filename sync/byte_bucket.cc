#include "sync/byte_bucket.h"

#include <algorithm>
#include <cmath>

namespace edgesync {

ByteBucket::ByteBucket(int64_t rate_bytes_per_s, int64_t depth_bytes, Clock* clock)
    : rate_(std::max<int64_t>(1, rate_bytes_per_s)),
      depth_(std::max<int64_t>(1, depth_bytes)),
      clock_(clock),
      tokens_(static_cast<double>(depth_)),
      at_ns_(clock->MonotonicNanos()) {}

void ByteBucket::Refill() {
  const int64_t now = clock_->MonotonicNanos();
  if (now <= at_ns_) return;
  tokens_ = std::min(static_cast<double>(depth()), tokens_ + static_cast<double>(now - at_ns_) * 1e-9 * rate_);
  at_ns_ = now;
}

double ByteBucket::tokens() {
  Refill();
  return tokens_;
}

bool ByteBucket::CanTake(int64_t bytes) {
  Refill();
  return tokens_ >= static_cast<double>(std::min(bytes, depth()));
}

void ByteBucket::Take(int64_t bytes) {
  Refill();
  tokens_ -= static_cast<double>(bytes);
}

int64_t ByteBucket::WaitMs(int64_t bytes) {
  Refill();
  const double missing = static_cast<double>(std::min(bytes, depth())) - tokens_;
  if (missing <= 0) return 0;
  return static_cast<int64_t>(std::ceil(missing * 1000.0 / static_cast<double>(rate_)));
}

}  // namespace edgesync

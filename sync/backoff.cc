#include "sync/backoff.h"

#include <algorithm>

namespace edgesync {

Backoff::Backoff(int64_t base_ms, int64_t cap_ms, uint64_t seed)
    : base_ms_(std::max<int64_t>(1, base_ms)),
      cap_ms_(std::max(cap_ms, std::max<int64_t>(1, base_ms))),
      previous_ms_(base_ms_),
      rng_(seed) {}

int64_t Backoff::Next() {
  int64_t high = std::max(base_ms_, std::min(cap_ms_, previous_ms_ * 3));
  std::uniform_int_distribution<int64_t> dist(base_ms_, high);
  previous_ms_ = std::min(cap_ms_, dist(rng_));
  return previous_ms_;
}

}  // namespace edgesync

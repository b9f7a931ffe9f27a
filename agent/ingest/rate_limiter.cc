#include "agent/ingest/rate_limiter.h"

#include <algorithm>

namespace edgesync {

RateLimiter::RateLimiter(double rate_per_s, double burst, size_t max_devices)
    : rate_(rate_per_s), burst_(burst), max_devices_(std::max<size_t>(1, max_devices)) {}

void RateLimiter::Refill(Bucket* b, int64_t now_ns) const {
  if (now_ns > b->last_ns) {
    b->tokens = std::min(burst_, b->tokens + rate_ * static_cast<double>(now_ns - b->last_ns) / 1e9);
    b->last_ns = now_ns;
  }
}

void RateLimiter::EvictOne(int64_t now_ns) {
  // Look at a few of the least recently seen: a full bucket is free to drop.
  auto victim = std::prev(lru_.end());
  int looked = 0;
  for (auto it = lru_.rbegin(); it != lru_.rend() && looked < 16; ++it, ++looked) {
    Bucket& b = buckets_[*it];
    Refill(&b, now_ns);
    if (b.tokens >= burst_) {
      victim = std::prev(it.base());
      break;
    }
  }
  auto found = buckets_.find(*victim);
  evicted_rejections_ += found->second.rejected;
  buckets_.erase(found);
  lru_.erase(victim);
}

bool RateLimiter::Allow(const std::string& device_id, int64_t now_ns, double n) {
  auto it = buckets_.find(device_id);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_devices_) EvictOne(now_ns);
    lru_.push_front(device_id);
    it = buckets_.emplace(device_id, Bucket{burst_, now_ns, 0, lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  Bucket& b = it->second;
  Refill(&b, now_ns);
  if (b.tokens >= n) {
    b.tokens -= n;
    return true;
  }
  ++b.rejected;
  return false;
}

std::vector<std::pair<std::string, int64_t>> RateLimiter::TopRejected(size_t n) const {
  std::vector<std::pair<std::string, int64_t>> all;
  for (const auto& [id, b] : buckets_) {
    if (b.rejected > 0) all.emplace_back(id, b.rejected);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (all.size() > n) all.resize(n);
  return all;
}

}  // namespace edgesync

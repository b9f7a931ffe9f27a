#include "agent/ingest/rate_limiter.h"

#include <algorithm>

namespace edgesync {

RateLimiter::RateLimiter(double rate_per_s, double burst, size_t max_devices, int64_t max_lag_ms,
                         int64_t report_interval_ms, int64_t max_away_ms)
    : rate_(rate_per_s),
      burst_(burst),
      max_devices_(std::max<size_t>(1, max_devices)),
      max_lag_ms_(std::max<int64_t>(0, max_lag_ms)),
      report_interval_ms_(report_interval_ms),
      max_away_ms_(std::max<int64_t>(0, max_away_ms)) {}

void RateLimiter::Away(int64_t mono_ms) {
  if (!absences_.empty() && absences_.back().to_ms == kOngoing) return;
  if (absences_.size() >= kMaxAbsences) absences_.erase(absences_.begin());
  absences_.push_back(Absence{mono_ms, kOngoing});
}

void RateLimiter::Back(int64_t mono_ms, bool queued) {
  if (absences_.empty() || absences_.back().to_ms != kOngoing) return;
  if (!queued) {
    absences_.pop_back();
    return;
  }
  Absence& a = absences_.back();
  a.to_ms = std::max(mono_ms, a.from_ms);
  // Longer than a session lives: the broker kept only its last part.
  a.from_ms = std::max(a.from_ms, a.to_ms - max_away_ms_);
}

int64_t RateLimiter::away_ms(int64_t mono_ms) const {
  if (absences_.empty() || absences_.back().to_ms != kOngoing) return 0;
  return std::max<int64_t>(0, mono_ms - absences_.back().from_ms);
}

void RateLimiter::ForgetOldAbsences(int64_t mono_ms) {
  auto expired = [&](const Absence& a) {
    if (a.to_ms == kOngoing) return false;
    const int64_t window = std::max(a.to_ms - a.from_ms, kMinCreditWindowMs);
    return mono_ms - a.to_ms > window;
  };
  absences_.erase(std::remove_if(absences_.begin(), absences_.end(), expired), absences_.end());
}

int64_t RateLimiter::Credit(Bucket* b, int64_t mono_ms) {
  if (mono_ms == kNoMono) return 0;
  ForgetOldAbsences(mono_ms);
  int64_t away = 0;
  if (absences_.empty()) {
    b->credit = 0;
  } else {
    for (const Absence& a : absences_) {
      // An ongoing absence counts up to now, and at most max_away_ms back.
      const int64_t to = std::min(a.to_ms, mono_ms);
      const int64_t from = std::max({a.from_ms, b->credited_to_ms, to - max_away_ms_});
      if (to > from) away += to - from;
    }
    b->credit += rate_ * static_cast<double>(away) / 1e3;
  }
  b->credited_to_ms = std::max(b->credited_to_ms, mono_ms);
  return away;
}

void RateLimiter::Refill(Bucket* b, int64_t clock_ms, int64_t arrival_ms, int64_t credited_ms) const {
  // Time away already credited does not refill the bucket again (a bucket
  // would otherwise win its burst back at every pause). Bare readings' time
  // is their arrival, so both clocks have moved by it; a device's own clock
  // moves over a backlog message by message, so it still refills across the
  // absence after its first message: such a device gets up to twice its rate
  // over the time away.
  const int64_t moved = std::max<int64_t>(
      {0, clock_ms - b->clock_ms - credited_ms, arrival_ms - b->arrival_ms - credited_ms});
  b->tokens = std::min(burst_, b->tokens + rate_ * static_cast<double>(moved) / 1e3);
  b->clock_ms = std::max(b->clock_ms, clock_ms);
  // Our clock stepping back must not freeze this refill until it catches up.
  b->arrival_ms = arrival_ms;
}

void RateLimiter::EvictOne(int64_t now_ms) {
  // Look at a few of the least recently seen: a full bucket is free to drop.
  auto victim = std::prev(lru_.end());
  int looked = 0;
  for (auto it = lru_.rbegin(); it != lru_.rend() && looked < 16; ++it, ++looked) {
    Bucket& b = buckets_[*it];
    Refill(&b, b.clock_ms, now_ms, 0);
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

bool RateLimiter::Allow(const std::string& device_id, int64_t device_ms, int64_t now_ms, double n, int64_t* report,
                        int64_t mono_ms) {
  if (report != nullptr) *report = 0;
  // A time past the drift allowance is a wrong clock: it counts as arriving
  // now. One older than the lag window counts at the window's edge, so it
  // never moves the bucket clock back.
  int64_t t = device_ms > now_ms + kMaxAheadMs ? now_ms : std::max(device_ms, now_ms - max_lag_ms_);
  auto it = buckets_.find(device_id);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_devices_) EvictOne(now_ms);
    lru_.push_front(device_id);
    it = buckets_.emplace(device_id, Bucket{burst_, t, now_ms, 0, 0, INT64_MIN, lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  Bucket& b = it->second;
  // The gateway's clock stepped back: the bucket clock must not stay ahead
  // of every time it will be given, or it would refill no more until the
  // wall clock caught up.
  if (b.clock_ms > now_ms + kMaxAheadMs) b.clock_ms = t;
  const int64_t credited = Credit(&b, mono_ms);
  Refill(&b, t, now_ms, credited);
  // The credit first: it expires, the tokens do not.
  if (b.credit + b.tokens >= n) {
    const double from_credit = std::min(b.credit, n);
    b.credit -= from_credit;
    b.tokens -= n - from_credit;
    return true;
  }
  const int64_t refused = static_cast<int64_t>(n);
  b.rejected += refused;
  b.unreported += refused;
  if (report != nullptr && (b.reported_ms == INT64_MIN || now_ms - b.reported_ms >= report_interval_ms_ ||
                            now_ms < b.reported_ms)) {
    *report = b.unreported;
    b.unreported = 0;
    b.reported_ms = now_ms;
  }
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

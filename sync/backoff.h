// sync/backoff.h: reconnect and resend delays with decorrelated jitter.
//
// The "decorrelated jitter" schedule from Marc Brooker's AWS Architecture
// Blog post "Exponential Backoff And Jitter" (2015):
//   sleep = min(cap, random_between(base, previous_sleep * 3))
// Many gateways that lost the same region at once do not come back in
// lockstep, and a retry is driven by this timer, never by the next local
// write (a stalled backlog must drain without new readings).
//
// Thread safety: not thread-safe; one per link.
#ifndef EDGESYNC_SYNC_BACKOFF_H_
#define EDGESYNC_SYNC_BACKOFF_H_

#include <cstdint>
#include <random>

namespace edgesync {

class Backoff {
 public:
  Backoff(int64_t base_ms, int64_t cap_ms, uint64_t seed = std::random_device{}());
  // The next delay in ms, always within [base, cap].
  int64_t Next();
  // After a success: the next failure starts from base again.
  void Reset() { previous_ms_ = base_ms_; }

 private:
  int64_t base_ms_;
  int64_t cap_ms_;
  int64_t previous_ms_;
  std::mt19937_64 rng_;
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_BACKOFF_H_

// sync/byte_bucket.h: a token bucket in bytes, the uplink's cap on what it
// sends over a metered link (uplink.max_bytes_per_s).
//
// Tokens accrue at rate bytes per second up to depth bytes (the burst the
// bucket lets through after an idle spell). A packet may go when the bucket
// holds min(its size, depth) tokens and then takes its whole size, so the
// bucket may go into debt: a packet larger than the depth (a batch no
// smaller split would fit, or sized on a wrong estimate) still goes once
// the bucket is full, and what follows waits until the debt is paid. Over
// any span T the packets taken thus total at most rate x T + depth, plus
// the part of the last one above the depth when that one alone was larger.
//
// Thread safety: not thread-safe; the uplink's worker owns one.
#ifndef EDGESYNC_SYNC_BYTE_BUCKET_H_
#define EDGESYNC_SYNC_BYTE_BUCKET_H_

#include <cstdint>

#include "platform/clock.h"

namespace edgesync {

class ByteBucket {
 public:
  // rate_bytes_per_s >= 1, depth_bytes >= 1 (smaller values count as 1).
  // Starts full.
  ByteBucket(int64_t rate_bytes_per_s, int64_t depth_bytes, Clock* clock);

  // Whether a packet of `bytes` may go now.
  bool CanTake(int64_t bytes);
  // Takes a packet's bytes (CanTake first; this never refuses).
  void Take(int64_t bytes);
  // Milliseconds until CanTake(bytes) (0 when it already can), rounded up.
  int64_t WaitMs(int64_t bytes);

  int64_t rate() const { return rate_; }
  int64_t depth() const { return depth_; }
  // Tokens now (negative while in debt).
  double tokens();

 private:
  void Refill();

  int64_t rate_;
  int64_t depth_;
  Clock* clock_;
  double tokens_;
  int64_t at_ns_;
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_BYTE_BUCKET_H_

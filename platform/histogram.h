// platform/histogram.h: a latency histogram with fixed bucket bounds, in
// the cumulative shape Prometheus expects (le buckets, sum, count), so a
// part can record a distribution and the metrics endpoint render it without
// either knowing the other.
//
// Contract: Observe takes seconds; bounds are fixed at construction and
// increasing. Snapshot copies the counts (per bucket, not cumulative; the
// last bucket is +Inf).
//
// Thread safety: Observe and Snapshot from any thread (one mutex; an
// observation is a few adds, far below the cost of what it times).
#ifndef EDGESYNC_PLATFORM_HISTOGRAM_H_
#define EDGESYNC_PLATFORM_HISTOGRAM_H_

#include <cstdint>
#include <vector>

#include "platform/mutex.h"

namespace edgesync {

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bounds in seconds, increasing
  std::vector<uint64_t> counts;  // bounds.size() + 1 buckets; the last is +Inf
  uint64_t count = 0;
  double sum = 0;                // seconds
};

class Histogram {
 public:
  // Bounds for the latencies edgesync records: a store commit (ms on an SD
  // card, up to seconds when fsync stalls) and an uplink acknowledgement
  // (tens of ms on loopback, seconds over a cellular link).
  static std::vector<double> LatencyBounds();

  explicit Histogram(std::vector<double> bounds = LatencyBounds());
  void Observe(double seconds);
  HistogramSnapshot Snapshot() const;

 private:
  mutable Mutex mu_;
  HistogramSnapshot data_ GUARDED_BY(mu_);
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_HISTOGRAM_H_

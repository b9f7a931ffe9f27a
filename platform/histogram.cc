#include "platform/histogram.h"

#include <algorithm>

namespace edgesync {

std::vector<double> Histogram::LatencyBounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

Histogram::Histogram(std::vector<double> bounds) {
  data_.bounds = std::move(bounds);
  data_.counts.assign(data_.bounds.size() + 1, 0);
}

void Histogram::Observe(double seconds) {
  MutexLock lock(&mu_);
  size_t i = static_cast<size_t>(std::lower_bound(data_.bounds.begin(), data_.bounds.end(), seconds) -
                                 data_.bounds.begin());
  ++data_.counts[i];
  ++data_.count;
  data_.sum += seconds;
}

HistogramSnapshot Histogram::Snapshot() const {
  MutexLock lock(&mu_);
  return data_;
}

}  // namespace edgesync

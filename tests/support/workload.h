// tests/support/workload.h: the reference sensor workload used by the demo's
// simulator and the benchmarks: N devices x 8 metrics sampled every period,
// values random-walking and quantised to each sensor's resolution (what real
// sensors report: 21.4 degC, not 21.4371...).
//
// Thread safety: one generator per thread.
#ifndef EDGESYNC_TESTS_SUPPORT_WORKLOAD_H_
#define EDGESYNC_TESTS_SUPPORT_WORKLOAD_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "store/types.h"

namespace edgesync::test {

struct MetricModel {
  const char* name;
  const char* unit;
  double start;       // typical value
  double step;        // random-walk step (standard deviation per sample)
  double resolution;  // quantum the sensor reports in
  double min, max;
};

// temperature, humidity, pressure, co2, pm25, battery, rssi, light.
const std::vector<MetricModel>& ReferenceMetrics();

class SensorWorkload {
 public:
  SensorWorkload(int devices, int64_t start_ms, int64_t period_ms = 1000, uint64_t seed = 1,
                 std::string device_prefix = "dev-");
  // Readings in time order: every metric of every device for one tick, then
  // the next tick.
  Reading Next();
  std::vector<Reading> Take(size_t n);
  int devices() const { return devices_; }
  std::string DeviceId(int i) const;

 private:
  int devices_;
  int64_t start_ms_;
  int64_t period_ms_;
  std::string prefix_;
  std::mt19937_64 rng_;
  std::vector<double> state_;  // devices x metrics
  uint64_t index_ = 0;
};

// One JSON message per reading, as a naive uplink would send it.
std::string ReadingAsJson(const Reading& r);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_WORKLOAD_H_

#include "tests/support/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace edgesync::test {

const std::vector<MetricModel>& ReferenceMetrics() {
  static const std::vector<MetricModel> kMetrics = {
      {"temperature", "Cel", 21.0, 0.05, 0.1, -40, 85},
      {"humidity", "%RH", 45.0, 0.2, 0.1, 0, 100},
      {"pressure", "hPa", 1013.0, 0.05, 0.1, 870, 1085},
      {"co2", "ppm", 600.0, 3.0, 1.0, 400, 5000},
      {"pm25", "ug/m3", 8.0, 0.3, 0.1, 0, 500},
      {"battery", "V", 3.9, 0.002, 0.01, 3.0, 4.2},
      {"rssi", "dBm", -70.0, 0.7, 1.0, -120, -30},
      {"light", "lx", 300.0, 8.0, 1.0, 0, 100000},
  };
  return kMetrics;
}

SensorWorkload::SensorWorkload(int devices, int64_t start_ms, int64_t period_ms, uint64_t seed,
                               std::string device_prefix)
    : devices_(devices), start_ms_(start_ms), period_ms_(period_ms), prefix_(std::move(device_prefix)), rng_(seed) {
  const auto& m = ReferenceMetrics();
  std::uniform_real_distribution<double> spread(-1.0, 1.0);
  for (int d = 0; d < devices_; ++d) {
    for (const auto& model : m) state_.push_back(model.start + spread(rng_) * model.step * 20);
  }
}

std::string SensorWorkload::DeviceId(int i) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%05d", i);
  return prefix_ + buf;
}

Reading SensorWorkload::Next() {
  const auto& metrics = ReferenceMetrics();
  const uint64_t per_tick = static_cast<uint64_t>(devices_) * metrics.size();
  uint64_t tick = index_ / per_tick;
  uint64_t within = index_ % per_tick;
  int device = static_cast<int>(within / metrics.size());
  size_t metric = within % metrics.size();
  ++index_;
  const MetricModel& model = metrics[metric];
  double& v = state_[static_cast<size_t>(device) * metrics.size() + metric];
  std::normal_distribution<double> step(0.0, model.step);
  v = std::clamp(v + step(rng_), model.min, model.max);
  Reading r;
  r.device_id = DeviceId(device);
  r.metric = model.name;
  r.unit = model.unit;
  // Sensors sample within their tick, not all at the same millisecond.
  r.ts_ms = start_ms_ + static_cast<int64_t>(tick) * period_ms_ + (device * 7) % std::max<int64_t>(1, period_ms_ / 10);
  r.value = std::round(v / model.resolution) * model.resolution;
  // Keep the decimal form short (21.400000000000002 -> 21.4), as a sensor prints it.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", r.value);
  r.value = std::strtod(buf, nullptr);
  return r;
}

std::vector<Reading> SensorWorkload::Take(size_t n) {
  std::vector<Reading> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(Next());
  return out;
}

std::string ReadingAsJson(const Reading& r) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "{\"deviceId\":\"%s\",\"metric\":\"%s\",\"t\":%lld,\"v\":%.6g,\"u\":\"%s\"}",
                r.device_id.c_str(), r.metric.c_str(), static_cast<long long>(r.ts_ms), r.value, r.unit.c_str());
  return buf;
}

}  // namespace edgesync::test

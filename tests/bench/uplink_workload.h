// tests/bench/uplink_workload.h: the reference sensor workload of the uplink
// figures: 1000 devices x 8 metrics at 1 Hz, each series a random walk
// quantised to its sensor's resolution, values as a JSON parser would produce
// them (mantissa / 10^decimals), each device on its own phase within the
// second, readings in arrival order.
//
// Thread safety: one generator per thread.
#ifndef EDGESYNC_TESTS_BENCH_UPLINK_WORKLOAD_H_
#define EDGESYNC_TESTS_BENCH_UPLINK_WORKLOAD_H_

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "store/types.h"

namespace edgesync::bench {

struct MetricSpec {
  const char* name;
  const char* unit;
  int decimals;       // sensor resolution 10^-decimals
  double low, high;   // range of starting values
  double step_sigma;  // random-walk step, in resolution units
};

inline const std::vector<MetricSpec>& ReferenceMetrics() {
  static const std::vector<MetricSpec> kMetrics = {
      {"temperature", "C", 2, 15, 30, 1.5},  {"humidity", "%", 1, 30, 70, 1.0},
      {"pressure", "hPa", 2, 990, 1030, 2.0}, {"co2", "ppm", 0, 400, 1200, 2.0},
      {"voltage", "V", 3, 3.0, 3.6, 1.0},     {"current", "mA", 1, 10, 500, 3.0},
      {"light", "lx", 0, 0, 1000, 2.0},       {"battery", "%", 0, 20, 100, 0.05},
  };
  return kMetrics;
}

class ReferenceWorkload {
 public:
  explicit ReferenceWorkload(int devices = 1000, uint64_t seed = 42, int64_t start_ms = 1780000000000)
      : rng_(seed), start_ms_(start_ms) {
    const auto& metrics = ReferenceMetrics();
    std::uniform_int_distribution<int> phase(0, 999);
    for (int d = 0; d < devices; ++d) {
      char id[32];
      std::snprintf(id, sizeof id, "sensor-%05d", d);
      Device dev{id, phase(rng_), {}};
      for (const auto& m : metrics) {
        std::uniform_real_distribution<double> start(m.low, m.high);
        dev.mantissa.push_back(std::llround(start(rng_) * std::pow(10.0, m.decimals)));
      }
      devices_.push_back(std::move(dev));
    }
    std::sort(devices_.begin(), devices_.end(), [](const Device& a, const Device& b) { return a.phase < b.phase; });
  }

  // The readings of the next second, in arrival order.
  std::vector<Reading> NextSecond() {
    const auto& metrics = ReferenceMetrics();
    std::vector<Reading> out;
    out.reserve(devices_.size() * metrics.size());
    std::uniform_int_distribution<int> jitter(0, 3);
    for (Device& dev : devices_) {
      int64_t ts = start_ms_ + second_ * 1000 + dev.phase + jitter(rng_);
      for (size_t i = 0; i < metrics.size(); ++i) {
        std::normal_distribution<double> step(0.0, metrics[i].step_sigma);
        dev.mantissa[i] += std::llround(step(rng_));
        Reading r;
        r.device_id = dev.id;
        r.metric = metrics[i].name;
        r.unit = metrics[i].unit;
        r.ts_ms = ts;
        r.value = static_cast<double>(dev.mantissa[i]) / std::pow(10.0, metrics[i].decimals);
        out.push_back(std::move(r));
      }
    }
    ++second_;
    return out;
  }

  // One JSON message per reading, as a sensor would publish it: the payload.
  static std::string Json(const Reading& r) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "{\"deviceId\":\"%s\",\"metric\":\"%s\",\"ts\":%lld,\"value\":%.17g,\"unit\":\"%s\"}",
                  r.device_id.c_str(), r.metric.c_str(), static_cast<long long>(r.ts_ms), r.value, r.unit.c_str());
    // %.17g prints 21.370000000000001; sensors print the shortest form.
    std::string text = buf;
    for (int precision = 1; precision <= 17; ++precision) {
      char v[64];
      std::snprintf(v, sizeof v, "%.*g", precision, r.value);
      if (std::strtod(v, nullptr) == r.value) {
        std::snprintf(buf, sizeof buf, "{\"deviceId\":\"%s\",\"metric\":\"%s\",\"ts\":%lld,\"value\":%s,\"unit\":\"%s\"}",
                      r.device_id.c_str(), r.metric.c_str(), static_cast<long long>(r.ts_ms), v, r.unit.c_str());
        text = buf;
        break;
      }
    }
    return text;
  }

  // Bytes of an MQTT 3.1.1 QoS 1 PUBLISH packet carrying payload on topic.
  static size_t PublishPacketBytes(size_t topic_bytes, size_t payload_bytes) {
    size_t remaining = 2 + topic_bytes + 2 + payload_bytes;
    size_t length_bytes = 1;
    for (size_t r = remaining; r >= 128; r >>= 7) ++length_bytes;
    return 1 + length_bytes + remaining;
  }

 private:
  struct Device {
    std::string id;
    int phase;
    std::vector<int64_t> mantissa;
  };
  std::mt19937_64 rng_;
  int64_t start_ms_;
  int64_t second_ = 0;
  std::vector<Device> devices_;
};

}  // namespace edgesync::bench

#endif  // EDGESYNC_TESTS_BENCH_UPLINK_WORKLOAD_H_

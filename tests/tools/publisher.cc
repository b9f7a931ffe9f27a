// es_publisher: a load generator playing many sensors, run by integration
// tests and benchmarks as a separate process. Publishes devices x readings
// messages at QoS 1 through MqttLink (its own in-flight window), round-robin
// over devices; reading i of a device carries value i and time
// base + i x step ms, so a test can check every reading landed exactly once.
//
//   es_publisher URI CLIENT_ID DEVICES READINGS [DEVICE_PREFIX] [BASE_MS] [RATE] [FORMAT] [STEP_MS]
//   RATE: messages/s over all devices, 0 = as fast as the broker takes them.
//   FORMAT: json (default, sensors/<dev>/m {"v","t"}), senml (sensors/<dev>),
//   bare (sensors/<dev>/m, the value alone: a sensor without a clock, whose
//   readings the gateway stamps on arrival),
//   or reference: the reference workload (tests/support/workload.h: DEVICES
//   x 8 metrics, READINGS rounds, values random-walking at each sensor's
//   resolution) as sensors/<dev>/<metric> {"v","t","u"}, one reading each.
//   STEP_MS: the devices' own time between two readings (default 1); with
//   RATE = DEVICES x 1000 / STEP_MS and BASE_MS = now, each reading's time is
//   when it was published, as a sensor with a synchronised clock stamps it.
// Prints "published N" when every message was acknowledged by the broker.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "sync/mqtt_link.h"
#include "tests/support/workload.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: es_publisher URI CLIENT_ID DEVICES READINGS [PREFIX] [BASE_MS] [RATE] [FORMAT] [STEP_MS]\n");
    return 2;
  }
  edgesync::MqttLinkOptions o;
  o.uri = argv[1];
  o.client_id = argv[2];
  o.clean_start = true;
  o.max_inflight = 500;
  int devices = std::atoi(argv[3]);
  int readings = std::atoi(argv[4]);
  std::string prefix = argc > 5 ? argv[5] : "dev";
  long long base = argc > 6 ? std::atoll(argv[6]) : 1800000000000LL;
  double rate = argc > 7 ? std::atof(argv[7]) : 0;
  std::string format = argc > 8 ? argv[8] : "json";
  long long step = argc > 9 ? std::atoll(argv[9]) : 1;
  std::unique_ptr<edgesync::MqttLink> link;
  edgesync::Status s = edgesync::NewPahoMqttLink(o, &link);
  if (s.ok()) s = link->Connect(10000);
  if (!s.ok()) {
    std::fprintf(stderr, "es_publisher: %s\n", s.ToString().c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  long long sent = 0;
  char payload[160];
  auto publish = [&](const std::string& topic) {
    while (true) {
      s = link->Publish(topic, payload, 1, false, 1000);
      if (s.ok()) break;
      // Disconnected or window full for long: wait and retry the same message.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ++sent;
    if (rate > 0) {
      auto due = start + std::chrono::microseconds(static_cast<long long>(sent * 1e6 / rate));
      std::this_thread::sleep_until(due);
    }
  };
  if (format == "reference") {
    edgesync::test::SensorWorkload w(devices, base, step, 1, prefix);
    const long long total = static_cast<long long>(devices) * 8 * readings;
    for (long long n = 0; n < total; ++n) {
      edgesync::Reading r = w.Next();
      // The shortest decimal that reads back as the value (as a sensor
      // prints 21.4, not 21.399999999999999).
      char value[32];
      for (int digits = 6; digits <= 17; ++digits) {
        std::snprintf(value, sizeof value, "%.*g", digits, r.value);
        if (std::strtod(value, nullptr) == r.value) break;
      }
      std::snprintf(payload, sizeof payload, "{\"v\":%s,\"t\":%lld.%03lld,\"u\":\"%s\"}", value,
                    static_cast<long long>(r.ts_ms / 1000), static_cast<long long>(r.ts_ms % 1000), r.unit.c_str());
      publish("sensors/" + r.device_id + "/" + r.metric);
    }
    readings = 0;
  }
  for (int i = 0; i < readings; ++i) {
    for (int d = 0; d < devices; ++d) {
      long long ts = base + i * step;
      std::string device = prefix + std::to_string(d);
      std::string topic;
      if (format == "bare") {
        topic = "sensors/" + device + "/m";
        std::snprintf(payload, sizeof payload, "%d", i);
      } else if (format == "senml") {
        topic = "sensors/" + device;
        std::snprintf(payload, sizeof payload, "[{\"n\":\"m\",\"v\":%d,\"t\":%lld.%03lld}]", i, ts / 1000, ts % 1000);
      } else {
        topic = "sensors/" + device + "/m";
        std::snprintf(payload, sizeof payload, "{\"v\":%d,\"t\":%lld.%03lld}", i, ts / 1000, ts % 1000);
      }
      publish(topic);
    }
  }
  s = link->Flush(120000);
  if (!s.ok()) {
    std::fprintf(stderr, "es_publisher: %s\n", s.ToString().c_str());
    return 1;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("published %lld in %.3f s\n", sent, secs);
  link->Disconnect(2000);
  return 0;
}

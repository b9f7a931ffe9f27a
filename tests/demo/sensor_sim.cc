// sensor_sim: simulated sensors for the demo and the field tests. Publishes
// the reference workload (drifting, quantised values) at QoS 1 to a broker,
// in the formats real devices use: most devices publish one bare number per
// topic (sensors/<device>/<metric>), every fifth device publishes a SenML
// pack of all its metrics (sensors/<device>).
//
//   sensor_sim --uri tcp://127.0.0.1:1883 --devices 200 --rate 800 --seconds 120 --count-file F
//
// The count file holds the number of readings the broker acknowledged
// (PUBACK), rewritten every second and at exit, so a demo or test can compare
// it with what arrived downstream.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "platform/files.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/workload.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

struct Args {
  std::string uri = "tcp://127.0.0.1:1883";
  std::string client_id = "sensor-sim";
  int devices = 200;
  double rate = 800;  // readings per second, all devices together
  double seconds = 60;
  std::string count_file;
  uint64_t seed = 1;
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--uri") a->uri = v;
    else if (k == "--client-id") a->client_id = v;
    else if (k == "--devices") a->devices = std::atoi(v.c_str());
    else if (k == "--rate") a->rate = std::atof(v.c_str());
    else if (k == "--seconds") a->seconds = std::atof(v.c_str());
    else if (k == "--count-file") a->count_file = v;
    else if (k == "--seed") a->seed = std::strtoull(v.c_str(), nullptr, 10);
    else return false;
  }
  return (argc % 2) == 1 && a->devices > 0 && a->rate > 0;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!Parse(argc, argv, &args)) {
    std::fprintf(stderr, "usage: sensor_sim [--uri U] [--devices N] [--rate R] [--seconds S] [--count-file F] [--seed N]\n");
    return 2;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  using edgesync::test::ReferenceMetrics;
  const size_t metrics = ReferenceMetrics().size();
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  // One tick = every metric of every device; its period follows from the rate.
  int64_t period_ms = static_cast<int64_t>(1000.0 * args.devices * metrics / args.rate);
  edgesync::test::SensorWorkload workload(args.devices, now_ms(), std::max<int64_t>(1, period_ms), args.seed);
  edgesync::test::TestMqttClient client(args.uri, args.client_id, true);
  while (!client.Connect() && !g_stop) std::this_thread::sleep_for(std::chrono::seconds(1));

  uint64_t published = 0;
  auto start = std::chrono::steady_clock::now();
  auto last_write = start;
  auto write_count = [&] {
    if (!args.count_file.empty()) edgesync::WriteFileAtomic(args.count_file, std::to_string(published) + "\n");
  };
  std::vector<edgesync::Reading> pack;
  while (!g_stop) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= args.seconds) break;
    uint64_t due = static_cast<uint64_t>(elapsed * args.rate);
    if (published >= due) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    // One device's metrics for this tick.
    pack.clear();
    for (size_t m = 0; m < metrics; ++m) pack.push_back(workload.Next());
    const std::string& device = pack[0].device_id;
    bool senml = (std::atoi(device.c_str() + device.size() - 5) % 5) == 4;
    bool ok = true;
    if (senml) {
      // The base time in full milliseconds: "%.6g" would round it to 10,000 s,
      // and a device clock that never moves refills no rate-limit tokens.
      char bt[32];
      std::snprintf(bt, sizeof bt, "%lld.%03lld", static_cast<long long>(pack[0].ts_ms / 1000),
                    static_cast<long long>(pack[0].ts_ms % 1000));
      std::string j = "[{\"bn\":\"" + device + ":\",\"bt\":" + bt + "}";
      for (const auto& r : pack) {
        j += ",{\"n\":\"" + r.metric + "\",\"u\":\"" + r.unit + "\",\"v\":" + Number(r.value) + "}";
      }
      j += "]";
      ok = client.PublishAsync("sensors/" + device, j, 1);
    } else {
      for (const auto& r : pack) ok = ok && client.PublishAsync("sensors/" + device + "/" + r.metric, Number(r.value), 1);
    }
    if (!ok) {
      // The broker is gone: wait until it is back and resend this tick.
      client.Flush(5000);
      client.Connect();
      continue;
    }
    published += pack.size();
    if (std::chrono::steady_clock::now() - last_write > std::chrono::seconds(1)) {
      last_write = std::chrono::steady_clock::now();
      write_count();
    }
  }
  client.Flush(30000);
  write_count();
  std::printf("sensor_sim: published %llu readings\n", static_cast<unsigned long long>(published));
  return 0;
}

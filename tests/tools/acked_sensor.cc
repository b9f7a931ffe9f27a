// es_acked_sensor: sensors that remember exactly which readings their broker
// acknowledged, run as a separate process by the soak and the convergence
// test. A reading counts as accepted only on its PUBACK: that is the promise
// a gateway makes to a sensor, so it is what the checks downstream hold the
// system to.
//
//   es_acked_sensor URI CLIENT_ID PREFIX DEVICES RATE ACK_LOG
//
// Publishes one reading per message at QoS 1, round-robin over devices
// PREFIX0..PREFIX<DEVICES-1>, RATE messages/s in all, until SIGTERM/SIGINT.
// Reading i of a device carries value i and its own time base + i x step
// (step = DEVICES x 1000 / RATE ms, base = the start's wall time), on topic
// sensors/<device>/m. A reading is published once, never again: one whose
// publish fails or is never acknowledged (the broker is down or was killed)
// is simply not accepted, and if it arrives anyway it is an extra, not a
// duplicate of a resend.
//
// ACK_LOG gets one line per acknowledged reading, "<device index> <value>
// <CLOCK_MONOTONIC ms of the PUBACK>", appended every 100 ms and at exit.
// On SIGTERM it stops publishing, waits up to 10 s for the acknowledgements
// still due, writes them and exits 0. The log is append-only, so a restarted
// sensor would keep the earlier lines (the tools never restart one).
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sync/mqtt_link.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int64_t MonotonicMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Acknowledged readings waiting to be written to the log.
class AckLog {
 public:
  explicit AckLog(const std::string& path) : file_(std::fopen(path.c_str(), "a")) {}
  ~AckLog() {
    if (file_ != nullptr) std::fclose(file_);
  }
  bool ok() const { return file_ != nullptr; }
  void Add(int device, int64_t value) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back({device, value, MonotonicMs()});
  }
  void Write() {
    std::vector<Ack> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      out.swap(pending_);
    }
    for (const Ack& a : out) std::fprintf(file_, "%d %lld %lld\n", a.device, static_cast<long long>(a.value),
                                          static_cast<long long>(a.at_ms));
    std::fflush(file_);
  }

 private:
  struct Ack {
    int device;
    int64_t value;
    int64_t at_ms;
  };
  std::FILE* file_;
  std::mutex mu_;
  std::vector<Ack> pending_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: es_acked_sensor URI CLIENT_ID PREFIX DEVICES RATE ACK_LOG\n");
    return 2;
  }
  const std::string prefix = argv[3];
  const int devices = std::atoi(argv[4]);
  const double rate = std::atof(argv[5]);
  if (devices <= 0 || rate <= 0) {
    std::fprintf(stderr, "es_acked_sensor: DEVICES and RATE must be positive\n");
    return 2;
  }
  AckLog log(argv[6]);
  if (!log.ok()) {
    std::fprintf(stderr, "es_acked_sensor: cannot open %s\n", argv[6]);
    return 1;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);

  edgesync::MqttLinkOptions o;
  o.uri = argv[1];
  o.client_id = argv[2];
  o.clean_start = true;
  o.max_inflight = 200;
  o.reconnect_min_ms = 100;
  o.reconnect_max_ms = 1000;
  std::unique_ptr<edgesync::MqttLink> link;
  edgesync::Status s = edgesync::NewPahoMqttLink(o, &link);
  if (s.ok()) s = link->Start();
  if (!s.ok()) {
    std::fprintf(stderr, "es_acked_sensor: %s\n", s.ToString().c_str());
    return 1;
  }

  const int64_t step_ms = std::max<int64_t>(1, static_cast<int64_t>(devices * 1000.0 / rate));
  const int64_t base_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const auto start = std::chrono::steady_clock::now();
  auto last_write = start;
  int64_t attempted = 0, refused = 0;
  char payload[96];
  while (!g_stop) {
    const int64_t i = attempted / devices;
    const int d = static_cast<int>(attempted % devices);
    const int64_t ts = base_ms + i * step_ms;
    std::snprintf(payload, sizeof payload, "{\"v\":%lld,\"t\":%lld.%03lld}", static_cast<long long>(i),
                  static_cast<long long>(ts / 1000), static_cast<long long>(ts % 1000));
    AckLog* l = &log;
    s = link->Publish("sensors/" + prefix + std::to_string(d) + "/m", payload, 1, false, 100,
                      [l, d, i](const edgesync::Status& st) {
                        if (st.ok()) l->Add(d, i);
                      });
    if (!s.ok()) ++refused;
    ++attempted;
    auto now = std::chrono::steady_clock::now();
    if (now - last_write > std::chrono::milliseconds(100)) {
      last_write = now;
      log.Write();
    }
    std::this_thread::sleep_until(start + std::chrono::microseconds(static_cast<int64_t>(attempted * 1e6 / rate)));
  }
  link->Flush(10000);
  link->Disconnect(2000);
  log.Write();
  std::printf("es_acked_sensor: %lld attempted, %lld refused at once\n", static_cast<long long>(attempted),
              static_cast<long long>(refused));
  return 0;
}

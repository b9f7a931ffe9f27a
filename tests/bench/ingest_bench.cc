// Ingest throughput: readings committed per second by edgesync while a
// separate load generator (es_publisher) publishes at QoS 1 through the
// local Mosquitto, against the rate at which a plain subscriber doing no
// work receives the same load from the same broker in the same run (the
// broker's limit). Also edgesync's peak RSS (VmHWM) during its run.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "agent/gateway.h"
#include "agent/options.h"
#include "firmware-config/config.h"
#include "platform/files.h"
#include "store/store.h"
#include "sync/mqtt_link.h"
#include "tests/bench/report.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"

namespace edgesync {
namespace {

using Steady = std::chrono::steady_clock;

constexpr int kDevices = 100;
constexpr int kReadings = 500;  // per device
constexpr int64_t kTotal = int64_t{kDevices} * kReadings;

bool StartPublisher(test::Process* p, const test::Broker& broker, const std::string& dir, const std::string& id) {
  return p->Start({EDGESYNC_PUBLISHER, broker.uri(), id, std::to_string(kDevices), std::to_string(kReadings), "b",
                   "1800000000000", "0", "json"},
                  dir + "/" + id + ".log");
}

// A subscriber that only counts: the broker's delivery rate of the load.
double PlainSubscriberRate(const test::Broker& broker, const std::string& dir) {
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "plain-subscriber";
  o.clean_start = true;
  std::unique_ptr<MqttLink> link;
  if (!NewPahoMqttLink(o, &link).ok()) return 0;
  std::atomic<int64_t> n{0};
  link->SetMessageHandler([&n](MqttMessage&&) { n++; });
  link->Subscribe("sensors/#", 1);
  if (!link->Connect(10000).ok()) return 0;
  test::Process pub;
  auto t0 = Steady::now();
  if (!StartPublisher(&pub, broker, dir, "pub-baseline")) return 0;
  if (!test::WaitFor([&] { return n.load() >= kTotal; }, 300000)) return 0;
  double secs = std::chrono::duration<double>(Steady::now() - t0).count();
  pub.Wait(10000);
  link->Disconnect(2000);
  return static_cast<double>(kTotal) / secs;
}

struct GatewayRun {
  double rate = 0;
  uint64_t peak_rss = 0;
};

GatewayRun EdgesyncRate(const test::Broker& broker, const std::string& dir, const std::string& ack) {
  GatewayRun run;
  std::string data = dir + "/data-" + ack;
  std::string config_path = dir + "/edgesync-" + ack + ".toml";
  test::WriteAll(config_path, "[gateway]\nid = \"bench\"\ndata_dir = \"" + data + "\"\n[ingest]\nbroker_uri = \"" +
                                  broker.uri() + "\"\nclient_id = \"edgesync-" + ack + "\"\nack = \"" + ack +
                                  "\"\ndevice_rate = 1000000.0\ndevice_burst = 1000000\n");
  test::Process gw;
  if (!gw.Start({EDGESYNC_BINARY, "gateway", "--config", config_path}, dir + "/gateway-" + ack + ".log")) return run;
  // Connected (and subscribed) once the status file says so.
  test::WaitFor([&] {
    std::string s;
    return ReadFile(data + "/status.json", &s).ok() && s.find("\"connected\": true") != std::string::npos;
  }, 10000);
  Config config;
  std::vector<ConfigError> errors;
  if (!LoadConfig(config_path, ConfigRole::kGateway, &config, &errors).ok()) return run;
  std::unique_ptr<Store> store;
  if (!Store::Open(StoreOptionsFromConfig(config), &store).ok()) return run;
  uint64_t start_lsn = store->LastLsn();
  test::Process pub;
  auto t0 = Steady::now();
  if (!StartPublisher(&pub, broker, dir, "pub-" + ack)) return run;
  // Done once the last LSN exists: one index lookup per poll (Stats would
  // count the whole log every 20 ms, load that is not edgesync's).
  std::vector<ChangeEntry> last;
  bool done = test::WaitFor([&] {
    last.clear();
    return store->ReadLog(start_lsn + static_cast<uint64_t>(kTotal) - 1, 1, &last).ok() && !last.empty();
  }, 300000);
  double secs = std::chrono::duration<double>(Steady::now() - t0).count();
  run.peak_rss = ReadProcessStats(gw.pid()).peak_rss_bytes;
  pub.Wait(10000);
  gw.Stop();
  if (done) run.rate = static_cast<double>(kTotal) / secs;
  return run;
}

}  // namespace
}  // namespace edgesync

int main() {
  using namespace edgesync;
  test::TempDir dir;
  test::Broker broker(dir.File("broker"));
  if (!broker.Start()) {
    std::fprintf(stderr, "bench_ingest: mosquitto did not start\n");
    return 1;
  }
  bench::Report report("ingest");
  double plain = PlainSubscriberRate(broker, dir.path());
  GatewayRun after = EdgesyncRate(broker, dir.path(), "after-commit");
  double plain2 = PlainSubscriberRate(broker, dir.path());
  GatewayRun receipt = EdgesyncRate(broker, dir.path(), "on-receipt");
  // The baseline is measured before and after; their mean is the broker's limit in this run.
  double baseline = (plain + plain2) / 2;
  report.Add("ingest committed/s (ack after commit)", after.rate, "readings/s", "plain subscriber received/s",
             baseline);
  report.Add("ingest committed/s (ack on receipt, group commit)", receipt.rate, "readings/s",
             "plain subscriber received/s", baseline);
  report.Add("edgesync peak RSS (ack after commit)", after.peak_rss / 1048576.0, "MiB", "target", 20);
  report.Add("edgesync peak RSS (ack on receipt)", receipt.peak_rss / 1048576.0, "MiB", "target", 20);
  return report.Write() && after.rate > 0 && receipt.rate > 0 ? 0 : 1;
}

// Ingest throughput: readings committed per second by edgesync while a
// separate load generator (es_publisher) publishes at QoS 1 through the
// local Mosquitto, against the rate at which a plain subscriber doing no
// work receives the same load from the same broker in the same run (the
// broker's limit). Also edgesync's peak RSS (VmHWM) during its run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/gateway.h"
#include "agent/options.h"
#include "firmware-config/config.h"
#include "platform/files.h"
#include "store/store.h"
#include "sync/mqtt_link.h"
#include "tests/bench/report.h"
#include "tests/bench/subscriber.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"

namespace edgesync {
namespace {

using Steady = std::chrono::steady_clock;

constexpr int kDevices = 100;
constexpr int kReadings = 1500;  // per device: a few seconds per run at the broker's rate
constexpr int kRounds = 3;      // each figure is the median of the rounds
constexpr int64_t kTotal = int64_t{kDevices} * kReadings;

bool StartPublisher(test::Process* p, const test::Broker& broker, const std::string& dir, const std::string& id) {
  return p->Start({EDGESYNC_PUBLISHER, broker.uri(), id, std::to_string(kDevices), std::to_string(kReadings), "b",
                   "1800000000000", "0", "json"},
                  dir + "/" + id + ".log");
}

// A subscriber that only counts: the broker's delivery rate of the load.
double PlainSubscriberRate(const test::Broker& broker, const std::string& dir) {
  test::Process pub;
  double rate = bench::CountingSubscriberRate(broker.uri(), kTotal,
                                              [&] { return StartPublisher(&pub, broker, dir, "pub-baseline"); });
  pub.Wait(10000);
  return rate;
}

// Ends edgesync's persistent session: left behind, it would make the broker
// queue every later run's messages for it, load the next runs do not cause.
void ForgetSession(const test::Broker& broker, const std::string& client_id) {
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = client_id;
  o.clean_start = true;
  o.session_expiry_s = 0;
  std::unique_ptr<MqttLink> link;
  if (!NewPahoMqttLink(o, &link).ok() || !link->Connect(10000).ok()) {
    std::fprintf(stderr, "bench_ingest: could not end the session of %s\n", client_id.c_str());
    return;
  }
  link->Disconnect(2000);
}

struct GatewayRun {
  double rate = 0;
  double peak_rss = 0;
  double write_bytes_per_reading = 0;  // what the process caused to be written to storage
};

// program: the edgesync to run (a previous build's for the comparison rows).
GatewayRun EdgesyncRate(const test::Broker& broker, const std::string& dir, const std::string& ack, int round,
                        const std::string& program = EDGESYNC_BINARY, const std::string& tag = "") {
  GatewayRun run;
  const std::string name = ack + tag + "-" + std::to_string(round);
  std::string data = dir + "/data-" + name;
  std::string config_path = dir + "/edgesync-" + name + ".toml";
  test::WriteAll(config_path, "[gateway]\nid = \"bench\"\ndata_dir = \"" + data + "\"\n[ingest]\nbroker_uri = \"" +
                                  broker.uri() + "\"\nclient_id = \"edgesync-" + name + "\"\nack = \"" + ack +
                                  "\"\ndevice_rate = 1000000.0\ndevice_burst = 1000000\n");
  test::Process gw;
  if (!gw.Start({program, "gateway", "--config", config_path}, dir + "/gateway-" + name + ".log")) return run;
  // Connected (and subscribed) once the status file says so.
  test::WaitFor([&] {
    std::string s;
    return ReadFile(data + "/status.json", &s).ok() && s.find("\"connected\": true") != std::string::npos;
  }, 10000);
  // Read with plain SQL: the store may be of a previous build's schema.
  const std::string store_path = data + "/store.db";
  const int64_t start_lsn = bench::StoreLastLsn(store_path);
  test::Process pub;
  auto t0 = Steady::now();
  if (!StartPublisher(&pub, broker, dir, "pub-" + name)) return run;
  // Done once the last LSN is committed: one index lookup per poll.
  bool done = test::WaitFor([&] { return bench::StoreLastLsn(store_path) >= start_lsn + kTotal; }, 300000);
  double secs = std::chrono::duration<double>(Steady::now() - t0).count();
  ProcessStats ps = ReadProcessStats(gw.pid());
  run.peak_rss = ps.peak_rss_bytes;
  run.write_bytes_per_reading = static_cast<double>(ps.write_bytes) / static_cast<double>(kTotal);
  pub.Wait(10000);
  gw.Stop();
  ForgetSession(broker, "edgesync-" + name);
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
  // Rounds of the baseline and the three modes in turn, so that drift in
  // the machine's other load reaches them alike; medians are reported.
  std::vector<double> plain;
  std::vector<GatewayRun> journal, commit, receipt, previous;
  // EDGESYNC_BENCH_PREVIOUS=<a previous build's edgesync> (make
  // bench-previous): its default mode in every round too, the baseline of
  // rows that say whether this build made ingest worse.
  const char* previous_program = std::getenv("EDGESYNC_BENCH_PREVIOUS");
  for (int round = 0; round < kRounds; ++round) {
    plain.push_back(PlainSubscriberRate(broker, dir.path()));
    journal.push_back(EdgesyncRate(broker, dir.path(), "after-journal", round));
    if (previous_program) {
      previous.push_back(EdgesyncRate(broker, dir.path(), "after-journal", round, previous_program, "-previous"));
    }
    commit.push_back(EdgesyncRate(broker, dir.path(), "after-commit", round));
    receipt.push_back(EdgesyncRate(broker, dir.path(), "on-receipt", round));
    std::printf("round %d: plain %.0f/s, after-journal %.0f/s, after-commit %.0f/s, on-receipt %.0f/s\n", round + 1,
                plain.back(), journal.back().rate, commit.back().rate, receipt.back().rate);
  }
  const double baseline = bench::Median(plain);
  auto median = [](const std::vector<GatewayRun>& runs, double GatewayRun::*field) {
    std::vector<double> v;
    for (const GatewayRun& r : runs) v.push_back(static_cast<double>(r.*field));
    return bench::Median(v);
  };
  auto rss = [&](const std::vector<GatewayRun>& runs) {
    double most = 0;
    for (const GatewayRun& r : runs) most = std::max(most, r.peak_rss);
    return most / 1048576.0;
  };
  const char* kPlain = "plain subscriber received/s";
  const double j = median(journal, &GatewayRun::rate), c = median(commit, &GatewayRun::rate),
               r = median(receipt, &GatewayRun::rate);
  report.Add("ingest committed/s (ack after journal, default)", j, "readings/s", kPlain, baseline);
  report.Add("ingest committed/s (ack after commit)", c, "readings/s", kPlain, baseline);
  report.Add("ingest committed/s (ack on receipt)", r, "readings/s", kPlain, baseline);
  report.Add("edgesync peak RSS (ack after journal)", rss(journal), "MiB", "target", 20);
  report.Add("edgesync peak RSS (ack after commit)", rss(commit), "MiB", "target", 20);
  report.Add("edgesync peak RSS (ack on receipt)", rss(receipt), "MiB", "target", 20);
  // SD card wear: the journal's writes against the store's alone.
  const double receipt_bytes = median(receipt, &GatewayRun::write_bytes_per_reading);
  const char* kReceiptBytes = "storage bytes written/reading (ack on receipt)";
  report.Add("storage bytes written/reading (ack after journal)", median(journal, &GatewayRun::write_bytes_per_reading),
             "bytes", kReceiptBytes, receipt_bytes);
  report.Add("storage bytes written/reading (ack after commit)", median(commit, &GatewayRun::write_bytes_per_reading),
             "bytes", kReceiptBytes, receipt_bytes);
  bool previous_ok = true;
  if (previous_program) {
    const char* kPrev = "the previous binary, same run";
    const double p = median(previous, &GatewayRun::rate);
    report.Add("ingest committed/s (ack after journal) against the previous binary", j, "readings/s", kPrev, p);
    report.Add("edgesync peak RSS (ack after journal) against the previous binary", rss(journal), "MiB", kPrev,
               rss(previous));
    report.Add("storage bytes written/reading (ack after journal) against the previous binary",
               median(journal, &GatewayRun::write_bytes_per_reading), "bytes", kPrev,
               median(previous, &GatewayRun::write_bytes_per_reading));
    previous_ok = p > 0;
  }
  return report.Write() && j > 0 && c > 0 && r > 0 && previous_ok ? 0 : 1;
}

// bench_region: what one region absorbs from 10,000 simulated gateways
// (tests/tools/fleet.h: each its own origin, 5 devices x 4 metrics, one
// batch of 20 readings per sampling tick, real batches, real answers) over 4
// MQTT connections to one Mosquitto broker, against a do-nothing subscriber
// on the same broker in the same run.
//
// For every hub setup (its own broker, started fresh):
//   1. baseline capacity: the fleet with every gateway's window full (a
//      backlog drain) and the sink (FleetSink) standing in for the hub: a
//      delivery counts as the answer. Batches/s and readings/s delivered.
//   2. baseline latency: the same at half that rate: publish to delivery,
//      p50 and p99.
//   3. hub capacity: `edgesync region` process(es) started, the fleet
//      again with windows full: acknowledged batches/s and readings/s; the
//      hubs' CPU time (utime + stime of /proc/<pid>/stat) per applied
//      reading, against the broker's CPU time per reading in the same phase.
//   4. hub latency at half the hub's capacity: publish to answer, p50, p99.
// Each phase: a warm-up (5 s, and until every gateway has had an answer:
// the first batch of each new gateway creates its origin and its series at
// the hub, a one-off that is not the sustained rate), then a measured
// window (EDGESYNC_BENCH_REGION_SECONDS, default 15 s). The simulator, the broker and the hub share this machine's
// cores, so the capacity is that of the whole region on one machine.
// Setups: 1 hub on SQLite; where the PostgreSQL backend is built, 1 hub on
// a PostgreSQL server started here (fsync on, as in production), whose
// processes' CPU time per reading is reported too, and 2 hubs sharing that
// region by leased shards (store/hub_store_leases.h) on a fresh database of
// the same server: both hubs' CPU time together per applied reading. All
// setups run on this one machine, so 2 hubs add no cores: the figure says
// what sharing costs and whether it holds, not how far it scales.
//
// Environment: EDGESYNC_BENCH_REGION_GATEWAYS (default 10000).
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "platform/files.h"
#include "platform/log.h"
#include "tests/bench/report.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/tools/fleet.h"
#ifdef EDGESYNC_HAVE_POSTGRESQL
#include "tests/support/postgres.h"
#endif

namespace edgesync {
namespace {

using test::Broker;
using test::BrokerOptions;
using test::Fleet;
using test::FleetOptions;
using test::FleetSink;
using test::Process;
using test::TempDir;

// User + system CPU seconds a process has used so far (0 if it is gone).
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {  // field 3 is the state; 14 utime, 15 stime
    if (i == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(f.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The first process whose command line contains `needle` and all its
// descendants (a PostgreSQL server: the postmaster and its backends).
std::vector<pid_t> ProcessTree(const std::string& needle) {
  std::vector<std::pair<pid_t, pid_t>> all;  // (pid, parent)
  pid_t root = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return {};
  while (dirent* d = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(d->d_name));
    if (pid <= 0) continue;
    std::string cmd = test::ReadAll("/proc/" + std::to_string(pid) + "/cmdline");
    if (root == 0 && cmd.find(needle) != std::string::npos) root = pid;
    std::string stat = test::ReadAll("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string state;
    long parent = 0;
    fields >> state >> parent;
    all.emplace_back(pid, static_cast<pid_t>(parent));
  }
  closedir(proc);
  std::vector<pid_t> out;
  if (root == 0) return out;
  out.push_back(root);
  for (size_t i = 0; i < out.size(); ++i) {  // every descendant (a wrapper such as runuser may sit on top)
    for (const auto& [pid, parent] : all) {
      if (parent == out[i]) out.push_back(pid);
    }
  }
  return out;
}

double CpuSeconds(const std::vector<pid_t>& pids) {
  double s = 0;
  for (pid_t p : pids) s += CpuSeconds(p);
  return s;
}

struct Phase {
  double batches_per_s = 0;
  double readings_per_s = 0;
  double p50_ms = -1, p99_ms = -1;
  double hub_cpu_s = 0, broker_cpu_s = 0, database_cpu_s = 0;
  double readings = 0;
  double seconds = 0;
  uint64_t resends = 0;
};

struct Setup {
  FleetOptions fleet;
  double warmup_s = 5;
  double measure_s = 15;
};

// Runs the fleet (with a sink when answers are deliveries) and measures
// what was answered inside the window after the warm-up.
// database: a command-line fragment naming the database server ("" = none).
Phase RunPhase(const Setup& setup, FleetOptions o, const std::vector<pid_t>& hubs, pid_t broker,
               const std::string& database = "") {
  Fleet fleet(o);
  std::unique_ptr<FleetSink> sink;
  if (o.answers == FleetOptions::Answers::kDeliveries) {
    sink = std::make_unique<FleetSink>(o.uri, o.region, o.topic_prefix, &fleet);
    Status st = sink->Start();
    if (!st.ok()) {
      std::fprintf(stderr, "bench_region: sink: %s\n", st.ToString().c_str());
      std::abort();
    }
  }
  Status st = fleet.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "bench_region: fleet: %s\n", st.ToString().c_str());
    std::abort();
  }
  // Sustained, not first contact: the warm-up lasts until every gateway
  // has had an answer. A gateway's first batch creates its origin and
  // interns its series at the hub, and a fixed 5 s window with 10,000
  // fresh gateways measured only those (20,000 first batches queued).
  test::SleepMs(static_cast<int64_t>(setup.warmup_s * 1000));
  const auto warm_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600);
  while (fleet.stats().gateways_answered < o.gateways && std::chrono::steady_clock::now() < warm_deadline) {
    test::SleepMs(200);
  }
  if (fleet.stats().gateways_answered < o.gateways) {
    std::fprintf(stderr, "bench_region: %d of %d gateways answered after the warm-up\n",
                 fleet.stats().gateways_answered, o.gateways);
  }
  test::FleetStats a = fleet.stats();
  double hub_a = CpuSeconds(hubs), broker_a = CpuSeconds(broker);
  // Backends live as long as the hubs' connections: the same set at both ends.
  std::vector<pid_t> db = database.empty() ? std::vector<pid_t>{} : ProcessTree(database);
  double db_a = CpuSeconds(db);
  auto start = std::chrono::steady_clock::now();
  fleet.TakeLatencies();
  test::SleepMs(static_cast<int64_t>(setup.measure_s * 1000));
  test::FleetStats b = fleet.stats();
  double hub_b = CpuSeconds(hubs), broker_b = CpuSeconds(broker), db_b = CpuSeconds(db);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> lat = fleet.TakeLatencies();
  // The next phase starts with nothing queued at the broker or the hub.
  if (!fleet.Quiesce(300000)) std::fprintf(stderr, "bench_region: answers still missing after 300 s\n");
  fleet.Stop();
  if (sink) sink->Stop();
  Phase p;
  p.seconds = secs;
  p.batches_per_s = static_cast<double>(b.batches_acked - a.batches_acked) / secs;
  p.readings = static_cast<double>(b.readings_acked - a.readings_acked);
  p.readings_per_s = p.readings / secs;
  p.p50_ms = bench::Median(lat);
  p.p99_ms = bench::Percentile(lat, 0.99);
  p.hub_cpu_s = hub_b - hub_a;
  p.broker_cpu_s = broker_b - broker_a;
  p.database_cpu_s = db_b - db_a;
  p.resends = b.resends;
  std::printf("  %-10s %s: %9.0f batches/s %10.0f readings/s  p50 %8.1f ms  p99 %8.1f ms  hub cpu %.2f s  "
              "broker cpu %.2f s  resends %llu\n",
              o.answers == FleetOptions::Answers::kHub ? "hub" : "subscriber",
              o.batches_per_s > 0 ? "paced" : "drain", p.batches_per_s, p.readings_per_s, p.p50_ms, p.p99_ms,
              p.hub_cpu_s, p.broker_cpu_s, static_cast<unsigned long long>(p.resends));
  std::fflush(stdout);
  return p;
}

// One region setup: which store the hubs use and how many hubs run.
struct HubSetup {
  std::string name;          // row prefix: region_<name>_...
  int hubs = 1;
  std::string store_toml;    // extra [hub] lines ("" = the embedded SQLite store)
  std::string database;      // a command-line fragment of the database server ("" = none)
  std::string program = EDGESYNC_BINARY;  // the hubs' edgesync (a previous build's for the comparison)
};

struct HubFigures {
  Phase cap, lat;
};

// baseline: this build's figures, measured before in the same run: the rows
// then compare them against these hubs' (a previous build's), and the
// subscriber phases are not run.
HubFigures RunSetup(const Setup& base, const HubSetup& hs, bench::Report* report,
                    const HubFigures* baseline = nullptr) {
  std::printf("== %s: %d hub(s), %d gateways\n", hs.name.c_str(), hs.hubs, base.fleet.gateways);
  TempDir tmp;
  BrokerOptions bo;
  // As firmware-config/region/mosquitto-region.conf (persistence with
  // Mosquitto's default autosave); no ACL: the simulator speaks for every
  // gateway over shared connections (tests/tools/fleet.h).
  bo.autosave_interval_s = 1800;
  MakeDirs(tmp.path() + "/broker");
  Broker broker(tmp.path() + "/broker", bo);
  if (!broker.Start()) std::abort();
  Setup s = base;
  s.fleet.uri = broker.uri();

  FleetOptions o = s.fleet;
  Phase sink_cap, sink_lat;
  if (baseline == nullptr) {
    o.answers = FleetOptions::Answers::kDeliveries;
    sink_cap = RunPhase(s, o, {}, broker.pid());
    o.batches_per_s = sink_cap.batches_per_s / 2;
    sink_lat = RunPhase(s, o, {}, broker.pid());
  }

  std::vector<std::unique_ptr<Process>> hubs;
  std::vector<pid_t> pids;
  for (int h = 0; h < hs.hubs; ++h) {
    std::string dir = tmp.path() + "/hub" + std::to_string(h);
    MakeDirs(dir);
    std::string config = dir + "/hub.toml";
    std::ofstream(config) << "[gateway]\ndata_dir = \"" << dir << "/data\"\nlog_level = \"info\"\n\n"
                          << "[metrics]\nlisten = \"\"\n\n[hub]\nregion = \"" << s.fleet.region << "\"\nid = \"h"
                          << h << "\"\nbroker_uri = \"" << broker.uri() << "\"\n"
                          // Room for all the fleet can have in flight (docs/REGION.md, known limits).
                          << "max_queued_messages = " << s.fleet.gateways * s.fleet.window + 1024 << "\n"
                          << hs.store_toml;
    hubs.push_back(std::make_unique<Process>());
    if (!hubs.back()->Start({hs.program, "region", "--config", config}, dir + "/hub.log")) std::abort();
    pids.push_back(hubs.back()->pid());
    if (!test::WaitFor([&] { return test::ReadAll(dir + "/hub.log").find("connected as") != std::string::npos; },
                       60000)) {
      std::fprintf(stderr, "bench_region: hub %d did not connect:\n%s\n", h, test::ReadAll(dir + "/hub.log").c_str());
      std::abort();
    }
  }
  if (hs.hubs > 1) {
    // Each later hub took its share at its start; the first learns what it
    // lost at its next lease round (every third of lease_ttl_s, 10 s).
    std::this_thread::sleep_for(std::chrono::seconds(4));
  }
  o = s.fleet;
  o.answers = FleetOptions::Answers::kHub;
  Phase hub_cap = RunPhase(s, o, pids, broker.pid(), hs.database);
  // At half of this build's capacity when comparing, so both builds carry
  // the same load.
  o.batches_per_s = (baseline ? baseline->cap.batches_per_s : hub_cap.batches_per_s) / 2;
  Phase hub_lat = RunPhase(s, o, pids, broker.pid(), hs.database);
  for (auto& h : hubs) h->Stop(10000);
  const HubFigures figures{hub_cap, hub_lat};

  if (baseline != nullptr) {
    // This build (measured first) against the previous one (this run).
    const std::string p = "region_" + hs.name + "_";
    const char* kPrev = "the previous binary, same run";
    report->Add(p + "batches_per_s against the previous binary", baseline->cap.batches_per_s, "batches/s", kPrev,
                hub_cap.batches_per_s);
    report->Add(p + "ack_latency_p99_at_half_capacity against the previous binary", baseline->lat.p99_ms, "ms", kPrev,
                hub_lat.p99_ms);
    const double now_cpu = baseline->cap.readings > 0 ? baseline->cap.hub_cpu_s * 1e6 / baseline->cap.readings : -1;
    const double before_cpu = hub_cap.readings > 0 ? hub_cap.hub_cpu_s * 1e6 / hub_cap.readings : -1;
    report->Add(p + "hub_cpu_us_per_reading against the previous binary", now_cpu, "us/reading", kPrev, before_cpu);
    return figures;
  }
  const std::string p = "region_" + hs.name + "_";
  report->Add(p + "batches_per_s", hub_cap.batches_per_s, "batches/s", "subscriber_batches_per_s",
              sink_cap.batches_per_s);
  report->Add(p + "readings_per_s", hub_cap.readings_per_s, "readings/s", "subscriber_readings_per_s",
              sink_cap.readings_per_s);
  report->Add(p + "ack_latency_p50_at_half_capacity", hub_lat.p50_ms, "ms",
              "subscriber_delivery_latency_p50_at_half_capacity", sink_lat.p50_ms);
  report->Add(p + "ack_latency_p99_at_half_capacity", hub_lat.p99_ms, "ms",
              "subscriber_delivery_latency_p99_at_half_capacity", sink_lat.p99_ms);
  double per = hub_cap.readings > 0 ? hub_cap.hub_cpu_s * 1e6 / hub_cap.readings : -1;
  double broker_per = hub_cap.readings > 0 ? hub_cap.broker_cpu_s * 1e6 / hub_cap.readings : -1;
  report->Add(p + "hub_cpu_us_per_reading", per, "us/reading", "broker_cpu_us_per_reading", broker_per);
  report->Add(p + "hub_cores_busy_at_capacity", hub_cap.hub_cpu_s / hub_cap.seconds, "cores",
              "broker_cores_busy_at_capacity", hub_cap.broker_cpu_s / hub_cap.seconds);
  if (!hs.database.empty()) {
    report->Add(p + "database_cpu_us_per_reading",
                hub_cap.readings > 0 ? hub_cap.database_cpu_s * 1e6 / hub_cap.readings : -1, "us/reading",
                "broker_cpu_us_per_reading", broker_per);
  }
  return figures;
}

}  // namespace
}  // namespace edgesync

int main() {
  edgesync::InitLogging(edgesync::LogLevel::kWarn, "bench_region");
  edgesync::Setup setup;
  setup.fleet.gateways = 10000;
  if (const char* v = std::getenv("EDGESYNC_BENCH_REGION_GATEWAYS")) setup.fleet.gateways = std::atoi(v);
  if (const char* v = std::getenv("EDGESYNC_BENCH_REGION_SECONDS")) setup.measure_s = std::atof(v);
  setup.fleet.connections = 4;
  setup.fleet.devices = 5;
  setup.fleet.metrics = 4;
  // Two batches in flight per gateway keep the hub's queue full with 10,000
  // gateways; the timeout is long because a drain's answers queue behind
  // 20,000 batches on a loaded machine (a resend would only add load).
  setup.fleet.window = 2;
  setup.fleet.ack_timeout_ms = 300000;
  edgesync::bench::Report report("region");
  const edgesync::HubFigures sqlite = edgesync::RunSetup(setup, {"sqlite_1hub", 1, "", ""}, &report);
  // EDGESYNC_BENCH_PREVIOUS=<a previous build's edgesync> (make
  // bench-previous): the SQLite hub once more with that program, the
  // baseline of rows that say whether this build made the hub worse.
  if (const char* previous = std::getenv("EDGESYNC_BENCH_PREVIOUS")) {
    edgesync::HubSetup before{"sqlite_1hub", 1, "", ""};
    before.program = previous;
    edgesync::RunSetup(setup, before, &report, &sqlite);
  }
#ifdef EDGESYNC_HAVE_POSTGRESQL
  {
    edgesync::test::TempDir dir;
    edgesync::test::PostgresOptions po;
    po.fsync = true;  // as a production server: a commit is on disk
    edgesync::test::Postgres pg(dir.path() + "/pg", po);
    if (!pg.Start() || !pg.CreateDatabase("region1")) {
      std::fprintf(stderr, "bench_region: PostgreSQL did not start:\n%s\n", pg.log().c_str());
      return 1;
    }
    std::string toml = "store = \"" + pg.Uri("region1") + "\"\npassword_file = \"" + pg.password_file() + "\"\n";
    edgesync::RunSetup(setup, {"postgresql_1hub", 1, toml, dir.path() + "/pg"}, &report);
    if (!pg.CreateDatabase("region2")) return 1;
    toml = "store = \"" + pg.Uri("region2") + "\"\npassword_file = \"" + pg.password_file() + "\"\n";
    edgesync::RunSetup(setup, {"postgresql_2hubs", 2, toml, dir.path() + "/pg"}, &report);
  }
#endif
  return report.Write() ? 0 : 1;
}

// edgesync_soak (`make soak`): a seeded fault soak of a whole deployment.
// 3 regions (a Mosquitto broker and an `edgesync region` hub each) and 6
// gateways (a local Mosquitto, `edgesync gateway`, es_acked_sensor), every
// gateway->region link through its own TCP proxy (tests/support/world.h).
// For SOAK_SECONDS the faults of a schedule drawn from SOAK_SEED
// (tests/soak/schedule.h) hit it together: SIGKILL of gateways, hubs, local
// and region brokers; link cuts, stalls and throttling; wall-clock steps of
// a gateway and a hub (libfaketime); one gateway's disk (a tmpfs) filled up;
// one hub's store deleted; SIGKILL of the PostgreSQL server of a region whose
// hub keeps its store there (region0 by default; SOAK_PG_REGIONS=0..3 says
// how many, from region0 on, the others on SQLite). Then everything is
// healed, the sensors stop, the world drains, every process is stopped and
// every store is audited (tests/support/world_audit.cc). Prints a summary
// and writes <out>/report.json; exits 0 only if the audit passes.
//
//   edgesync_soak [--seconds N] [--seed N] [--out DIR] [--rate R] [--pg-regions N]
//   edgesync_soak --schedule-only [...]   prints the schedule and exits
//   (environment: SOAK_SECONDS, SOAK_SEED, SOAK_PG_REGIONS)
//
// Needs root (the tmpfs mount), except --schedule-only.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/soak/schedule.h"
#include "tests/support/process.h"
#include "tests/support/world.h"

namespace edgesync::test {
namespace {

struct Args {
  int64_t seconds = 600;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string out = "build/soak";
  double rate = 40;
  int pg_regions = 1;
  bool schedule_only = false;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  if (const char* s = std::getenv("SOAK_SECONDS"); s && *s) a.seconds = std::atoll(s);
  if (const char* s = std::getenv("SOAK_SEED"); s && *s) {
    a.seed = std::strtoull(s, nullptr, 10);
    a.seed_given = true;
  }
  if (const char* s = std::getenv("SOAK_REGION_STORE"); s && *s) {
    std::fprintf(stderr, "edgesync_soak: SOAK_REGION_STORE is replaced by SOAK_PG_REGIONS=0..3 (regions on "
                         "PostgreSQL, from region0 on; the others on SQLite)\n");
    std::exit(2);
  }
  if (const char* s = std::getenv("SOAK_PG_REGIONS"); s && *s) a.pg_regions = std::atoi(s);
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--schedule-only") {
      a.schedule_only = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) std::fprintf(stderr, "edgesync_soak: %s needs a value\n", k.c_str()), std::exit(2);
    std::string v = argv[i + 1];
    if (k == "--seconds") a.seconds = std::atoll(v.c_str());
    else if (k == "--seed") a.seed = std::strtoull(v.c_str(), nullptr, 10), a.seed_given = true;
    else if (k == "--out") a.out = v;
    else if (k == "--rate") a.rate = std::atof(v.c_str());
    else if (k == "--pg-regions") a.pg_regions = std::atoi(v.c_str());
    else std::fprintf(stderr, "edgesync_soak: unknown option %s\n", k.c_str()), std::exit(2);
  }
  if (a.pg_regions < 0 || a.pg_regions > 3) {
    std::fprintf(stderr, "edgesync_soak: SOAK_PG_REGIONS / --pg-regions is 0..3, not %d\n", a.pg_regions);
    std::exit(2);
  }
  if (!a.seed_given) a.seed = std::random_device{}() % 1000000;
  return a;
}

// Carries out one fault's start.
void Begin(World& w, const Fault& f, WipedEntries* wiped) {
  switch (f.kind) {
    case FaultKind::kKillGateway: w.KillGateway(f.gateway); break;
    case FaultKind::kKillHub: w.KillHub(f.region); break;
    case FaultKind::kKillLocalBroker: w.KillLocalBroker(f.gateway); break;
    case FaultKind::kKillRegionBroker: w.KillRegionBroker(f.region); break;
    case FaultKind::kLinkCut: w.link(f.gateway, f.region).Cut(); break;
    case FaultKind::kLinkStall: w.link(f.gateway, f.region).Blackhole(); break;
    case FaultKind::kLinkThrottle: w.link(f.gateway, f.region).SetRateBytesPerSec(2048); break;
    case FaultKind::kClockGateway: w.SetGatewayClock(f.clock); break;
    case FaultKind::kClockHub: w.SetHubClock(f.clock); break;
    case FaultKind::kDiskFull:
      if (!w.FillDisk()) std::fprintf(stderr, "soak: could not fill the disk of gw%d\n", f.gateway);
      break;
    case FaultKind::kWipeHubStore: *wiped = w.WipeHubStore(f.region); break;
    case FaultKind::kKillDatabase: w.KillDatabase(f.region); break;
  }
}

// Carries out its heal; a clock step ends with a restart under the new clock
// (a boot with a stepped clock), the live step having run meanwhile.
bool End(World& w, const Fault& f) {
  switch (f.kind) {
    case FaultKind::kKillGateway: return w.StartGateway(f.gateway);
    case FaultKind::kKillHub: return w.StartHub(f.region);
    case FaultKind::kKillLocalBroker: return w.StartLocalBroker(f.gateway);
    case FaultKind::kKillRegionBroker: return w.StartRegionBroker(f.region);
    case FaultKind::kLinkCut:
    case FaultKind::kLinkStall:
      w.link(f.gateway, f.region).Restore();
      return true;
    case FaultKind::kLinkThrottle:
      w.link(f.gateway, f.region).SetRateBytesPerSec(0);
      return true;
    case FaultKind::kClockGateway:
      w.KillGateway(f.gateway);
      return w.StartGateway(f.gateway);
    case FaultKind::kClockHub:
      w.KillHub(f.region);
      return w.StartHub(f.region);
    case FaultKind::kDiskFull:
      w.FreeDisk();
      return true;
    case FaultKind::kWipeHubStore: return true;
    case FaultKind::kKillDatabase: return w.StartDatabase(f.region);
  }
  return true;
}

constexpr int kRegions = 3;

int Run(const Args& args) {
  std::printf("soak: seed %llu (replay: make soak SOAK_SEED=%llu SOAK_SECONDS=%lld SOAK_PG_REGIONS=%d)\n",
              static_cast<unsigned long long>(args.seed), static_cast<unsigned long long>(args.seed),
              static_cast<long long>(args.seconds), args.pg_regions);

  std::mt19937_64 pick(args.seed);
  ScheduleParams sp;
  sp.seed = args.seed;
  sp.duration_ms = args.seconds * 1000;
  sp.clock_gateway = static_cast<int>(pick() % 6);
  sp.clock_hub = static_cast<int>(pick() % 3);
  sp.disk_gateway = static_cast<int>((sp.clock_gateway + 1 + pick() % 5) % 6);
  sp.database_regions = args.pg_regions;
  std::vector<Fault> schedule = MakeSchedule(sp);
  std::printf("soak: %zu faults; clock steps on gw%d and region%d's hub; gw%d's disk fills up\n", schedule.size(),
              sp.clock_gateway, sp.clock_hub, sp.disk_gateway);
  if (args.schedule_only) {
    for (const Fault& f : schedule) std::printf("%s\n", f.ToString().c_str());
    return 0;
  }
  if (::geteuid() != 0) {
    std::fprintf(stderr, "edgesync_soak: needs root (it mounts a tmpfs as one gateway's small disk)\n");
    return 2;
  }
  std::string mk = "rm -rf '" + args.out + "/run' && mkdir -p '" + args.out + "/run'";
  if (std::system(mk.c_str()) != 0) return 2;
  char real[4096];
  std::string root = realpath((args.out + "/run").c_str(), real) ? real : args.out + "/run";
  {
    std::ofstream s(args.out + "/schedule.txt");
    for (const Fault& f : schedule) s << f.ToString() << "\n";
  }

  WorldOptions o;
  o.root = root;
  o.readings_per_s = args.rate;
  o.faketime_gateway = sp.clock_gateway;
  o.faketime_hub = sp.clock_hub;
  o.tmpfs_gateway = sp.disk_gateway;
  o.tmpfs_mib = 64;
  o.regions = kRegions;
  o.postgres_regions = args.pg_regions;
  World world(o);
  std::string stores;
  for (int r = 0; r < kRegions; ++r) stores += std::string(r ? ", " : "") + world.store_backend(r);
  std::printf("soak: region stores %s\n", stores.c_str());
  if (!world.Start()) {
    std::fprintf(stderr, "soak: %s\n", world.error().c_str());
    return 2;
  }

  // The schedule: starts and ends in time order.
  struct Step {
    int64_t at;
    bool begin;
    size_t fault;
  };
  std::vector<Step> steps;
  for (size_t i = 0; i < schedule.size(); ++i) {
    steps.push_back({schedule[i].at_ms, true, i});
    steps.push_back({schedule[i].at_ms + schedule[i].length_ms, false, i});
  }
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.at < b.at; });
  std::map<std::string, int64_t> faults_by_kind;
  WipedEntries wiped;
  const int64_t t0 = NowMs();
  int64_t last_print = t0;
  int restart_failures = 0;
  int64_t faults_done = 0;
  for (const Step& s : steps) {
    while (NowMs() - t0 < s.at) {
      SleepMs(50);
      if (NowMs() - last_print >= 10000) {
        last_print = NowMs();
        world.SampleRss();
        std::printf("soak: %3lld s, %lld faults so far\n", static_cast<long long>((NowMs() - t0) / 1000),
                    static_cast<long long>(faults_done));
        std::fflush(stdout);
      }
    }
    const Fault& f = schedule[s.fault];
    if (s.begin) {
      ++faults_by_kind[FaultName(f.kind)];
      ++faults_done;
      Begin(world, f, &wiped);
    } else if (!End(world, f)) {
      ++restart_failures;
      std::fprintf(stderr, "soak: healing '%s' failed: %s\n", f.ToString().c_str(), world.error().c_str());
    }
  }
  while (NowMs() - t0 < args.seconds * 1000) {
    SleepMs(200);
    world.SampleRss();
  }

  // Heal, stop the sensors, drain.
  world.SetGatewayClock("+0");
  world.SetHubClock("+0");
  const int64_t healed = NowMs();
  if (!world.HealAll()) ++restart_failures;
  world.StopSensors();
  bool drained = WaitFor(
      [&] {
        world.SampleRss();
        return world.Drained(3000);
      },
      600000);
  // The quiet period is part of the check, not of the drain.
  const double drain_s = (NowMs() - healed - (drained ? 3000 : 0)) / 1000.0;
  world.StopAll();
  world.SampleRss();  // the database servers, still up for the audit
  AuditResult audit = Audit(world, wiped);
  world.StopDatabases();

  nlohmann::json report;
  report["seed"] = args.seed;
  report["seconds"] = args.seconds;
  nlohmann::json region_stores;
  for (int r = 0; r < kRegions; ++r) region_stores[world.region_name(r)] = world.store_backend(r);
  report["region_stores"] = region_stores;
  report["regions"] = kRegions;
  report["gateways"] = 6;
  report["readings_per_s_per_gateway"] = args.rate;
  report["faults_by_kind"] = faults_by_kind;
  report["faults"] = schedule.size();
  report["drained"] = drained;
  report["drain_s_after_last_fault"] = drain_s;
  report["restart_failures"] = restart_failures;
  report["peak_rss_bytes"] = world.peak_rss();
  report["audit"] = audit.ToJson();
  bool ok = audit.ok() && drained && restart_failures == 0;
  report["passed"] = ok;
  std::ofstream(args.out + "/report.json") << report.dump(2) << "\n";

  std::printf("\n=== soak summary (seed %llu, %lld s, %zu faults) ===\n", static_cast<unsigned long long>(args.seed),
              static_cast<long long>(args.seconds), schedule.size());
  std::printf("  region stores: %s\n", stores.c_str());
  for (const auto& [k, n] : faults_by_kind) std::printf("  %-22s %lld\n", k.c_str(), static_cast<long long>(n));
  std::printf("  readings accepted (PUBACKed to a sensor): %lld\n", static_cast<long long>(audit.accepted));
  std::printf("  stored by their gateway: %lld; lost: %lld; duplicated: %lld; LSN gaps: %lld\n",
              static_cast<long long>(audit.stored), static_cast<long long>(audit.lost),
              static_cast<long long>(audit.duplicated), static_cast<long long>(audit.lsn_gaps));
  std::printf("  pruned by the gateway whose disk filled, after a region acknowledged them (held there): %lld\n",
              static_cast<long long>(audit.pruned_after_ack));
  std::printf("  lost by a SIGKILLed local broker before it handed them on (Mosquitto's PUBACK is in memory): %lld\n",
              static_cast<long long>(audit.lost_at_local_broker_kill));
  std::printf("  held by no region because only the wiped hub store had them: %lld still held by their gateway "
              "(must be 0: refilled); %lld pruned by it before the refill (and so missing from %lld read views)\n",
              static_cast<long long>(audit.only_in_wiped_hub), static_cast<long long>(audit.pruned_before_refill),
              static_cast<long long>(audit.read_view_missing_wiped));
  std::printf("  missing from a read view: %lld; integrity failures: %lld; extras (stored, never acknowledged): %lld\n",
              static_cast<long long>(audit.read_view_missing), static_cast<long long>(audit.integrity_failures),
              static_cast<long long>(audit.extras));
  for (const auto& [role, bytes] : world.peak_rss()) {
    std::printf("  peak RSS %-14s %.1f MiB\n", role.c_str(), bytes / 1048576.0);
  }
  std::printf("  drain after the last fault: %.1f s%s\n", drain_s, drained ? "" : " (NOT drained)");
  for (const std::string& p : audit.problems) std::printf("  ! %s\n", p.c_str());
  std::printf("soak: %s (report: %s/report.json)\n", ok ? "PASSED" : "FAILED", args.out.c_str());
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace edgesync::test

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  return edgesync::test::Run(edgesync::test::ParseArgs(argc, argv));
}

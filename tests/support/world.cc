#include "tests/support/sqlite_hub.h"
#include "tests/support/world.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "platform/files.h"
#include "store/store.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"

namespace edgesync::test {
namespace {

// A "Key: N kB" line of a /proc file, in bytes; 0 if absent (the process gone).
int64_t ProcKb(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + key.size()) * 1024;
  }
  return 0;
}

// VmHWM of a live process in bytes; 0 if gone.
int64_t PeakRssOf(pid_t pid) { return ProcKb("/proc/" + std::to_string(pid) + "/status", "VmHWM:"); }

// Pss (proportional set size: shared pages divided among their users) of a
// live process in bytes; 0 if gone.
int64_t PssOf(pid_t pid) { return ProcKb("/proc/" + std::to_string(pid) + "/smaps_rollup", "Pss:"); }

// The pids whose parent is `parent` (a PostgreSQL postmaster's backends).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (struct dirent* e = ::readdir(d)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces, so from the last ')'.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

}  // namespace

World::World(WorldOptions options) : options_(std::move(options)) {
  const int R = options_.regions, G = options_.gateways;
  for (int r = 0; r < R; ++r) {
    RegionOptions o;
    o.backend = on_postgres(r) ? HubBackend::kPostgresql : HubBackend::kSqlite;
    o.extra_toml = "[metrics]\nlisten = \"\"\n";
    if (r == options_.faketime_hub) o.faketime_file = options_.root + "/hub.faketime";
    regions_.push_back(std::make_unique<RegionSite>(options_.root, region_name(r), o));
  }
  for (int g = 0; g < G; ++g) {
    MakeDirs(options_.root + "/" + gateway_id(g) + "/local");
    local_brokers_.push_back(std::make_unique<Broker>(options_.root + "/" + gateway_id(g) + "/local"));
    sensors_.push_back(std::make_unique<Process>());
    local_started_ms_.push_back(0);
    local_kills_.emplace_back();
    quiet_.emplace_back(-1, 0);
  }
  for (int g = 0; g < G; ++g) {
    for (int r = 0; r < R; ++r) proxies_.push_back(std::make_unique<TcpProxy>(region(r).broker().port()));
  }
  // Gateway g writes preferably to region g mod R, each region through the
  // gateway's own proxy in front of it.
  for (int g = 0; g < G; ++g) {
    GatewayProgramOptions o;
    o.data_subdir = "data";
    o.extra_toml = "[metrics]\nlisten = \"\"\n\n[store]\ndisk_policy = \"reject-new\"\n";
    // The card that fills up must not prune its read view early for space:
    // the audit checks that every read view holds every reading.
    if (g == options_.tmpfs_gateway) o.extra_toml += "min_free_bytes = 0\n";
    o.uplink.batch_max_delay_ms = 50;
    o.uplink.ack_timeout_ms = 3000;
    o.uplink.backoff_base_ms = 100;
    o.uplink.backoff_max_ms = 2000;
    o.uplink.probe_interval_ms = 500;
    o.uplink.failback_after_s = 5;
    if (g == options_.faketime_gateway) o.faketime_file = options_.root + "/gateway.faketime";
    std::vector<RegionSite*> order;
    for (int k = 0; k < R; ++k) {
      const int r = (g + k) % R;
      order.push_back(&region(r));
      o.region_uris.push_back(link(g, r).uri());
    }
    gateways_.push_back(std::make_unique<GatewayProgram>(options_.root, gateway_id(g), local_broker_uri(g), order, o));
  }
}

World::~World() {
  StopAll();
  StopDatabases();
  if (tmpfs_mounted_) ::umount2(gateway_dir(options_.tmpfs_gateway).c_str(), MNT_DETACH);
}

std::string World::ack_log(int g) const { return options_.root + "/" + gateway_id(g) + "/acks.log"; }

bool World::Start() {
  if (options_.faketime_gateway >= 0 || options_.faketime_hub >= 0) {
    if (FakeTimeLibrary().empty()) {
      error_ = "libfaketime not found: install the faketime package (firmware-config/deps.sh test)";
      return false;
    }
    WriteAll(options_.root + "/gateway.faketime", "+0\n");
    WriteAll(options_.root + "/hub.faketime", "+0\n");
  }
  if (options_.postgres_regions > 0 && !HavePostgres()) {
    error_ = "a region on PostgreSQL needs the PostgreSQL hub store: build with libpq-dev (EDGESYNC_POSTGRESQL)";
    return false;
  }
  if (options_.postgres_regions > 0 && !Postgres::Installed()) {
    error_ = "a region on PostgreSQL needs Debian's server: install postgresql (firmware-config/deps.sh test)";
    return false;
  }
  if (options_.tmpfs_gateway >= 0) {
    const std::string dir = gateway_dir(options_.tmpfs_gateway);
    std::string opts = "size=" + std::to_string(options_.tmpfs_mib) + "m,mode=0700";
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      error_ = "mounting a tmpfs on " + dir + " (needs root): " + std::strerror(errno);
      return false;
    }
    tmpfs_mounted_ = true;
  }
  for (int r = 0; r < options_.regions; ++r) {
    if (!StartDatabase(r) || !StartRegionBroker(r) || !StartHub(r)) return false;
  }
  for (int g = 0; g < options_.gateways; ++g) {
    if (!StartLocalBroker(g) || !StartGateway(g)) return false;
  }
  for (int g = 0; g < options_.gateways; ++g) {
    if (!WaitFor([&] { return gateway(g).IngestConnected(); }, 60000)) {
      error_ = gateway_id(g) + " did not connect to its local broker within 60 s:\n" + gateway(g).log();
      return false;
    }
  }
  // A moment for the first run's subscriptions (a broker keeps nothing for
  // a session without one): the sensors publish only into sessions that
  // will be delivered.
  SleepMs(1000);
  for (int g = 0; g < options_.gateways; ++g) {
    if (!StartSensor(g)) return false;
  }
  return true;
}

bool World::StartSensor(int g) {
  std::vector<std::string> argv = {EDGESYNC_ACKED_SENSOR, local_brokers_[g]->uri(), "sensors-" + gateway_id(g),
                                   device_prefix(g), std::to_string(options_.devices_per_gateway),
                                   std::to_string(options_.readings_per_s), ack_log(g)};
  if (!sensors_[g]->Start(argv, options_.root + "/" + gateway_id(g) + "/sensor.log")) {
    error_ = "starting the sensors of " + gateway_id(g);
    return false;
  }
  return true;
}

void World::Sample(const std::string& role, Process* p) {
  if (!p->running()) return;
  int64_t rss = PeakRssOf(p->pid());
  int64_t& peak = peak_rss_[role];
  peak = std::max(peak, rss);
}

void World::SampleDatabase(int r) {
  Postgres* db = database(r);
  if (db == nullptr || !db->running()) return;
  int64_t sum = PssOf(db->pid());
  for (pid_t child : ChildrenOf(db->pid())) sum += PssOf(child);
  int64_t& peak = peak_rss_["postgresql_server"];
  peak = std::max(peak, sum);
}

void World::SampleRss() {
  for (int r = 0; r < options_.regions; ++r) {
    Sample(hub_role(r), &region(r).hub_process());
    SampleDatabase(r);
  }
  for (auto& g : gateways_) Sample("gateway", &g->process());
  for (auto& s : sensors_) Sample("sensors", s.get());
  for (auto& r : regions_) {
    if (r->broker().running()) peak_rss_["region_broker"] = std::max(peak_rss_["region_broker"], PeakRssOf(r->broker().pid()));
  }
  for (auto& b : local_brokers_) {
    if (b->running()) peak_rss_["local_broker"] = std::max(peak_rss_["local_broker"], PeakRssOf(b->pid()));
  }
}

void World::KillGateway(int g) {
  Sample("gateway", &gateway(g).process());
  gateway(g).Kill9();
}

bool World::StartGateway(int g) {
  if (gateway(g).running()) return true;
  if (!gateway(g).Start()) {
    error_ = "starting " + gateway_id(g);
    return false;
  }
  return true;
}

void World::KillHub(int r) {
  Sample(hub_role(r), &region(r).hub_process());
  region(r).KillHub();
}

// The hub alone: a database the schedule killed stays down until its own
// heal (the hub waits for it).
bool World::StartHub(int r) {
  if (region(r).hub_running()) return true;
  if (!region(r).StartHubProcess()) {
    error_ = region(r).error();
    return false;
  }
  return true;
}

void World::KillDatabase(int r) {
  SampleDatabase(r);
  if (database(r) != nullptr) database(r)->Kill9();
}

bool World::StartDatabase(int r) {
  if (!region(r).StartDatabase()) {
    error_ = region(r).error();
    return false;
  }
  return true;
}

void World::KillLocalBroker(int g) {
  if (!local_brokers_[g]->running()) return;
  peak_rss_["local_broker"] = std::max(peak_rss_["local_broker"], PeakRssOf(local_brokers_[g]->pid()));
  local_brokers_[g]->Kill9();
  local_kills_[g].push_back({local_started_ms_[g], NowMs()});
}

bool World::StartLocalBroker(int g) {
  if (local_brokers_[g]->running()) return true;
  local_started_ms_[g] = NowMs();
  if (!local_brokers_[g]->Start(20000)) {
    error_ = "starting the local broker of " + gateway_id(g) + ":\n" + local_brokers_[g]->log();
    return false;
  }
  return true;
}

void World::KillRegionBroker(int r) {
  Broker& b = region(r).broker();
  if (!b.running()) return;
  peak_rss_["region_broker"] = std::max(peak_rss_["region_broker"], PeakRssOf(b.pid()));
  b.Kill9();
}

bool World::StartRegionBroker(int r) {
  Broker& b = region(r).broker();
  if (b.running()) return true;
  if (!b.Start(20000)) {
    error_ = "starting the broker of " + region_name(r) + ":\n" + b.log();
    return false;
  }
  return true;
}

void World::SetGatewayClock(const std::string& offset) { WriteAll(options_.root + "/gateway.faketime", offset + "\n"); }
void World::SetHubClock(const std::string& offset) { WriteAll(options_.root + "/hub.faketime", offset + "\n"); }

bool World::FillDisk() {
  if (!tmpfs_mounted_) return false;
  return FillFilesystem(gateway_dir(options_.tmpfs_gateway) + "/ballast");
}

void World::FreeDisk() {
  if (tmpfs_mounted_) ::unlink((gateway_dir(options_.tmpfs_gateway) + "/ballast").c_str());
}

WipedEntries World::WipeHubStore(int r) {
  KillHub(r);
  WipedEntries held;
  {
    std::unique_ptr<HubStore> hub;
    if (on_postgres(r)) StartDatabase(r);
    if (region(r).OpenHubStore(HubOpen::kReadOnly, &hub).ok()) {
      ForEachFeedEntry(hub.get(), [&](const RegionFeedEntry& e) {
        const bool reading = e.remote.entry.kind == ChangeEntry::Kind::kReading;
        held[{e.remote.origin.ToString(), e.remote.origin_lsn}] = {reading ? e.remote.entry.reading.device_id : "",
                                                                   reading ? e.remote.entry.reading.value : 0.0};
      });
    }
  }
  // The region's store lost (PostgreSQL: an empty database in its place,
  // which the hub fills with its schema and a new epoch when it starts).
  if (!region(r).WipeHubStore()) error_ = region(r).error();
  StartHub(r);
  return held;
}

bool World::HealAll() {
  for (auto& p : proxies_) {
    p->SetRateBytesPerSec(0);
    p->Restore();
  }
  FreeDisk();
  bool ok = true;
  for (int r = 0; r < options_.regions; ++r) {
    ok = StartDatabase(r) && ok;
    ok = StartRegionBroker(r) && StartHub(r) && ok;
  }
  for (int g = 0; g < options_.gateways; ++g) ok = StartLocalBroker(g) && StartGateway(g) && ok;
  return ok;
}

void World::StopSensors() {
  for (auto& s : sensors_) s->Signal(SIGTERM);
  for (auto& s : sensors_) {
    Sample("sensors", s.get());
    s->Stop(20000);
  }
}

bool World::Drained(int64_t quiet_ms) {
  for (int g = 0; g < options_.gateways; ++g) {
    nlohmann::json s = GatewayStatus(g);
    if (!s.value("running", false) || StatusField(s, metrics::kBacklogReadings) != 0) return false;
    // A region that lost what it acknowledged is refilled from the
    // gateways' logs, also with no backlog.
    if (StatusField(s, metrics::kUplinkRefillsPending) != 0) return false;
    // Nothing new committed for quiet_ms: the local broker's queue is empty.
    int64_t committed = StatusField(s, metrics::kIngestReadingsCommitted);
    auto& [seen, since] = quiet_[static_cast<size_t>(g)];
    if (committed != seen || since == 0) {
      seen = committed;
      since = NowMs();
      return false;
    }
    if (NowMs() - since < quiet_ms) return false;
    auto views = s["read_view"]["regions"];
    if (!views.is_array() || static_cast<int>(views.size()) != options_.regions) return false;
    for (const auto& v : views) {
      if (v.value("lag", int64_t{1}) != 0) return false;
    }
  }
  return true;
}

void World::StopAll() {
  for (auto& s : sensors_) s->Stop(20000);
  for (auto& g : gateways_) {
    Sample("gateway", &g->process());
    g->Signal(SIGTERM);
  }
  for (auto& g : gateways_) g->Stop(30000);
  for (int r = 0; r < options_.regions; ++r) {
    Sample(hub_role(r), &region(r).hub_process());
    region(r).StopHub(30000);
  }
  for (auto& b : local_brokers_) {
    if (b->running()) b->Stop();
  }
  for (auto& r : regions_) {
    if (r->broker().running()) r->broker().Stop();
  }
}

void World::StopDatabases() {
  for (auto& r : regions_) {
    if (r->postgres() && r->postgres()->running()) r->postgres()->Stop();
  }
}

}  // namespace edgesync::test

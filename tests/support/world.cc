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

std::string Q(const std::string& s) { return "\"" + s + "\""; }

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

void RemoveStoreFiles(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

}  // namespace

World::World(WorldOptions options) : options_(std::move(options)) {
  const int R = options_.regions, G = options_.gateways;
  for (int r = 0; r < R; ++r) {
    MakeDirs(hub_dir(r));
    MakeDirs(options_.root + "/" + region_name(r) + "/broker");
    region_brokers_.push_back(std::make_unique<Broker>(options_.root + "/" + region_name(r) + "/broker"));
    hubs_.push_back(std::make_unique<Process>());
    databases_.push_back(on_postgres(r) ? std::make_unique<Postgres>(options_.root + "/" + region_name(r) + "/postgres")
                                        : nullptr);
  }
  for (int g = 0; g < G; ++g) {
    MakeDirs(options_.root + "/" + gateway_id(g) + "/local");
    local_brokers_.push_back(std::make_unique<Broker>(options_.root + "/" + gateway_id(g) + "/local"));
    gateways_.push_back(std::make_unique<Process>());
    sensors_.push_back(std::make_unique<Process>());
    local_started_ms_.push_back(0);
    local_kills_.emplace_back();
    quiet_.emplace_back(-1, 0);
  }
  for (int g = 0; g < G; ++g) {
    for (int r = 0; r < R; ++r) proxies_.push_back(std::make_unique<TcpProxy>(region_brokers_[r]->port()));
  }
}

World::~World() {
  StopAll();
  StopDatabases();
  if (tmpfs_mounted_) ::umount2(gateway_dir(options_.tmpfs_gateway).c_str(), MNT_DETACH);
}

std::string World::gateway_dir(int g) const { return options_.root + "/" + gateway_id(g) + "/data"; }
std::string World::ack_log(int g) const { return options_.root + "/" + gateway_id(g) + "/acks.log"; }
std::string World::hub_dir(int r) const { return options_.root + "/" + region_name(r) + "/hub"; }

nlohmann::json World::GatewayStatus(int g) const { return ReadStatusFile(gateway_dir(g) + "/status.json"); }
nlohmann::json World::HubStatus(int r) const { return ReadStatusFile(hub_dir(r) + "/status.json"); }

std::vector<std::string> World::ClockEnv(const std::string& spec_file) const {
  return {"LD_PRELOAD=" + faketime_lib_, "FAKETIME_TIMESTAMP_FILE=" + spec_file, "FAKETIME_NO_CACHE=1",
          "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

void World::WriteHubConfig(int r) {
  std::ofstream c(hub_dir(r) + ".toml");
  c << "[gateway]\ndata_dir = " << Q(hub_dir(r)) << "\nlog_level = \"info\"\n\n"
    << "[metrics]\nlisten = \"\"\n\n"
    << "[hub]\nregion = " << Q(region_name(r)) << "\nbroker_uri = " << Q(region_brokers_[r]->uri()) << "\n";
  if (on_postgres(r)) {
    c << "store = " << Q(database(r)->Uri("hub")) << "\npassword_file = " << Q(database(r)->password_file()) << "\n";
  }
}

Status World::OpenHubStore(int r, std::unique_ptr<Store>* file, std::unique_ptr<HubStore>* hub) const {
  if (on_postgres(r)) {
    HubStoreOptions o;
    o.location = database(r)->Uri("hub");
    o.password_file = database(r)->password_file();
    o.application_name = "edgesync-world-audit";
    return OpenPostgresHubStore(o, hub);
  }
  StoreOptions o;
  o.path = hub_store(r);
  o.create_if_missing = false;
  o.read_only = true;
  Status st = Store::Open(o, file);
  if (st.ok()) *hub = test::NewSqliteHubView(file->get());
  return st;
}

void World::WriteGatewayConfig(int g) {
  std::ofstream c(gateway_config(g));
  c << "[gateway]\nid = " << Q(gateway_id(g)) << "\ndata_dir = " << Q(gateway_dir(g)) << "\nlog_level = \"info\"\n\n"
    << "[metrics]\nlisten = \"\"\n\n"
    << "[store]\ndisk_policy = \"reject-new\"\n"
    // The card that fills up must not prune its read view early for space:
    // the audit checks that every read view holds every reading.
    << (g == options_.tmpfs_gateway ? "min_free_bytes = 0\n" : "") << "\n"
    << "[ingest]\nbroker_uri = " << Q(local_brokers_[g]->uri()) << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
    << "[uplink]\nbatch_max_delay_ms = 50\nack_timeout_ms = 3000\nbackoff_base_ms = 100\nbackoff_max_ms = 2000\n"
    << "probe_interval_ms = 500\nfailback_after_s = 5\n";
  const int R = options_.regions;
  for (int k = 0; k < R; ++k) {
    int r = (g + k) % R;
    c << "\n[[region]]\nname = " << Q(region_name(r)) << "\nuri = " << Q(link(g, r).uri()) << "\npreference = " << k
      << "\n";
  }
}

bool World::Start() {
  if (options_.faketime_gateway >= 0 || options_.faketime_hub >= 0) {
    faketime_lib_ = FakeTimeLibrary();
    if (faketime_lib_.empty()) {
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
  for (int g = 0; g < options_.gateways; ++g) {
    MakeDirs(gateway_dir(g));
    if (g == options_.tmpfs_gateway) {
      std::string opts = "size=" + std::to_string(options_.tmpfs_mib) + "m,mode=0700";
      if (::mount("tmpfs", gateway_dir(g).c_str(), "tmpfs", 0, opts.c_str()) != 0) {
        error_ = "mounting a tmpfs on " + gateway_dir(g) + " (needs root): " + std::strerror(errno);
        return false;
      }
      tmpfs_mounted_ = true;
    }
  }
  for (int r = 0; r < options_.regions; ++r) {
    if (on_postgres(r)) {
      if (!StartDatabase(r)) return false;
      if (!database(r)->CreateDatabase("hub")) {
        error_ = "creating the database of " + region_name(r) + ":\n" + database(r)->log();
        return false;
      }
    }
    if (!StartRegionBroker(r) || !StartHub(r)) return false;
  }
  for (int g = 0; g < options_.gateways; ++g) {
    if (!StartLocalBroker(g) || !StartGateway(g)) return false;
  }
  for (int g = 0; g < options_.gateways; ++g) {
    if (!WaitFor([&] { return StatusField(GatewayStatus(g), metrics::kIngestMqttConnected) == 1; }, 60000)) {
      error_ = gateway_id(g) + " did not connect to its local broker within 60 s:\n" + ReadAll(gateway_dir(g) + ".log");
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
    Sample(on_postgres(r) ? "hub_postgresql" : "hub_sqlite", hubs_[r].get());
    SampleDatabase(r);
  }
  for (auto& g : gateways_) Sample("gateway", g.get());
  for (auto& s : sensors_) Sample("sensors", s.get());
  for (auto& b : region_brokers_) {
    if (b->running()) peak_rss_["region_broker"] = std::max(peak_rss_["region_broker"], PeakRssOf(b->pid()));
  }
  for (auto& b : local_brokers_) {
    if (b->running()) peak_rss_["local_broker"] = std::max(peak_rss_["local_broker"], PeakRssOf(b->pid()));
  }
}

void World::KillGateway(int g) {
  Sample("gateway", gateways_[g].get());
  gateways_[g]->Kill9();
}

bool World::StartGateway(int g) {
  if (gateways_[g]->running()) return true;
  WriteGatewayConfig(g);
  std::vector<std::string> env;
  if (g == options_.faketime_gateway) env = ClockEnv(options_.root + "/gateway.faketime");
  if (!gateways_[g]->Start({EDGESYNC_BINARY, "gateway", "--config", gateway_config(g)}, gateway_dir(g) + ".log", env)) {
    error_ = "starting " + gateway_id(g);
    return false;
  }
  return true;
}

void World::KillHub(int r) {
  Sample(on_postgres(r) ? "hub_postgresql" : "hub_sqlite", hubs_[r].get());
  hubs_[r]->Kill9();
}

bool World::StartHub(int r) {
  if (hubs_[r]->running()) return true;
  WriteHubConfig(r);
  std::vector<std::string> env;
  if (r == options_.faketime_hub) env = ClockEnv(options_.root + "/hub.faketime");
  if (!hubs_[r]->Start({EDGESYNC_BINARY, "region", "--config", hub_dir(r) + ".toml"}, hub_dir(r) + ".log", env)) {
    error_ = "starting the hub of " + region_name(r);
    return false;
  }
  return true;
}

void World::KillDatabase(int r) {
  SampleDatabase(r);
  if (database(r) != nullptr) database(r)->Kill9();
}

bool World::StartDatabase(int r) {
  Postgres* db = database(r);
  if (db->running()) return true;
  // A SIGKILLed postmaster's backends exit when they notice it gone; a
  // start before the last one has refuses ("pre-existing shared memory
  // block is still in use") and exits at once, so try again for a while.
  const int64_t deadline = NowMs() + 120000;
  while (!db->Start(60000)) {
    if (db->running()) db->Kill9();  // up but not answering within a minute
    if (NowMs() >= deadline) {
      error_ = "starting the PostgreSQL server of " + region_name(r) + ":\n" + db->log().substr(0, 4000);
      return false;
    }
    SleepMs(500);
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
  if (!region_brokers_[r]->running()) return;
  peak_rss_["region_broker"] = std::max(peak_rss_["region_broker"], PeakRssOf(region_brokers_[r]->pid()));
  region_brokers_[r]->Kill9();
}

bool World::StartRegionBroker(int r) {
  if (region_brokers_[r]->running()) return true;
  if (!region_brokers_[r]->Start(20000)) {
    error_ = "starting the broker of " + region_name(r) + ":\n" + region_brokers_[r]->log();
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
    std::unique_ptr<Store> file;
    std::unique_ptr<HubStore> hub;
    if (on_postgres(r) && !database(r)->running()) StartDatabase(r);
    if (OpenHubStore(r, &file, &hub).ok()) {
      ShardPositions after{};
      FeedRead read;
      std::vector<RegionFeedEntry>& page = read.entries;
      do {
        if (!hub->ReadFeed(after, 10000, &read).ok() || read.reset) break;
        after = read.next;
        for (const auto& e : page) {
          const bool reading = e.remote.entry.kind == ChangeEntry::Kind::kReading;
          held[{e.remote.origin.ToString(), e.remote.origin_lsn}] = {reading ? e.remote.entry.reading.device_id : "",
                                                                     reading ? e.remote.entry.reading.value : 0.0};
        }
      } while (!page.empty());
    }
  }
  if (on_postgres(r)) {
    // The region's database lost: an empty one in its place, which the
    // hub fills with its schema and a new epoch when it starts.
    if (!database(r)->DropDatabase("hub") || !database(r)->CreateDatabase("hub")) {
      error_ = "re-creating the database of " + region_name(r) + ":\n" + database(r)->log().substr(0, 4000);
    }
  } else {
    RemoveStoreFiles(hub_store(r));
  }
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
    if (on_postgres(r)) ok = StartDatabase(r) && ok;
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
    if (s.contains("uplink") && s["uplink"].value("refills_pending", int64_t{0}) != 0) return false;
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
    Sample("gateway", g.get());
    g->Signal(SIGTERM);
  }
  for (auto& g : gateways_) g->Stop(30000);
  for (int r = 0; r < options_.regions; ++r) {
    Sample(on_postgres(r) ? "hub_postgresql" : "hub_sqlite", hubs_[r].get());
    hubs_[r]->Stop(30000);
  }
  for (auto& b : local_brokers_) {
    if (b->running()) b->Stop();
  }
  for (auto& b : region_brokers_) {
    if (b->running()) b->Stop();
  }
}

void World::StopDatabases() {
  for (auto& db : databases_) {
    if (db && db->running()) db->Stop();
  }
}

}  // namespace edgesync::test

#include "tests/support/sync_sites.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "platform/log.h"
#include "platform/signals.h"
#include "tests/support/status_file.h"

namespace edgesync::test {
namespace {

RegionOptions WithBroker(BrokerOptions broker) {
  RegionOptions o;
  o.broker = std::move(broker);
  return o;
}

}  // namespace

void ForEachFeedEntry(HubStore* hub, const std::function<void(const RegionFeedEntry&)>& each) {
  ShardPositions after{};
  FeedRead read;
  std::vector<RegionFeedEntry>& page = read.entries;
  do {
    if (!hub->ReadFeed(after, 10000, &read).ok() || read.reset) break;
    after = read.next;
    for (const RegionFeedEntry& e : page) each(e);
  } while (!page.empty());
}

RegionSite::RegionSite(const std::string& root, std::string name, BrokerOptions broker_options)
    : RegionSite(root, std::move(name), WithBroker(std::move(broker_options))) {}

RegionSite::RegionSite(const std::string& root, std::string name, RegionOptions options)
    : name_(std::move(name)), dir_(root + "/" + name_), options_(std::move(options)) {
  MakeDir(dir_);
  MakeDir(dir_ + "/broker");
  broker_ = std::make_unique<Broker>(dir_ + "/broker", options_.broker);
  const bool postgres = options_.backend == HubBackend::kPostgresql ||
                        (options_.backend == HubBackend::kFromEnvironment && HubOnPostgres());
  if (postgres) postgres_ = std::make_unique<Postgres>(dir_ + "/postgres");
}

RegionSite::~RegionSite() { hub_.Stop(2000); }

bool RegionSite::Start(const std::string& hub_uri, const std::string& hub_extra) {
  if (!broker_->running() && !broker_->Start()) {
    error_ = "the broker of region " + name_ + " did not start:\n" + broker_->log();
    return false;
  }
  return StartHub(hub_uri, hub_extra);
}

bool RegionSite::StartHub(const std::string& hub_uri, const std::string& hub_extra) {
  return StartDatabase() && StartHubProcess(hub_uri, hub_extra);
}

bool RegionSite::StartDatabase() {
  if (!postgres_ || postgres_->running()) return true;
  const int64_t deadline = NowMs() + 120000;
  while (!postgres_->Start(60000)) {
    if (postgres_->running()) postgres_->Kill9();  // up but not answering within a minute
    if (NowMs() >= deadline) {
      error_ = "PostgreSQL for region " + name_ + " did not start:\n" + postgres_->log().substr(0, 4000);
      ADD_FAILURE() << error_;
      return false;
    }
    SleepMs(500);
  }
  if (!database_made_ && !(database_made_ = postgres_->CreateDatabase("hub"))) {
    error_ = "creating the database of region " + name_ + ":\n" + postgres_->log().substr(0, 4000);
    return false;
  }
  return true;
}

bool RegionSite::StartHubProcess(const std::string& hub_uri, const std::string& hub_extra) {
  if (!hub_uri.empty()) hub_uri_ = hub_uri;
  if (!hub_extra.empty()) hub_extra_ = hub_extra;
  std::string store_lines;
  if (postgres_) {
    store_lines = "store = " + Q(postgres_->Uri("hub")) + "\npassword_file = " + Q(postgres_->password_file()) + "\n";
  }
  std::ofstream(config()) << "[gateway]\ndata_dir = " << Q(hub_dir()) << "\nlog_level = \"info\"\n\n"
                          << options_.extra_toml << (options_.extra_toml.empty() ? "" : "\n") << "[hub]\nregion = "
                          << Q(name_) << "\nbroker_uri = " << Q(hub_uri_.empty() ? broker_->uri() : hub_uri_) << "\n"
                          << store_lines << hub_extra_ << "\n";
  std::vector<std::string> env;
  if (!options_.faketime_file.empty()) env = FakeTimeEnv(options_.faketime_file);
  if (!hub_.Start({EDGESYNC_BINARY, "region", "--config", config()}, dir_ + "/hub.log", env)) {
    error_ = "starting the hub of region " + name_;
    return false;
  }
  return true;
}

nlohmann::json RegionSite::StatusJson() const { return ReadStatusFile(hub_dir() + "/status.json"); }

std::unique_ptr<HubStore> RegionSite::OpenHubStore() {
  std::unique_ptr<HubStore> hub;
  Status st = OpenHubStore(HubOpen::kBesideHub, &hub);
  if (!st.ok()) ADD_FAILURE() << "opening region " << name_ << "'s hub store: " << st.ToString();
  return hub;
}

Status RegionSite::OpenHubStore(HubOpen how, std::unique_ptr<HubStore>* hub) const {
  if (postgres_) {
    HubStoreOptions o;
    o.location = postgres_->Uri("hub");
    o.password_file = postgres_->password_file();
    if (how == HubOpen::kReadOnly) o.application_name = "edgesync-world-audit";
    return OpenPostgresHubStore(o, hub);
  }
  StoreOptions o;
  o.path = store_path();
  o.create_if_missing = false;  // gateway id "" = whatever the hub's store says
  if (how == HubOpen::kReadOnly) {
    o.read_only = true;
  } else {
    o.open_check = StoreOptions::OpenCheck::kNone;
  }
  std::unique_ptr<SqliteHubStore> sqlite;
  ES_RETURN_IF_ERROR(OpenSqliteHubStore(o, &sqlite));
  *hub = std::move(sqlite);
  return Status::Ok();
}

std::pair<uint64_t, uint64_t> RegionSite::FeedBounds() {
  std::unique_ptr<HubStore> hub = OpenHubStore();
  FeedBoundsInfo bounds;
  if (hub) hub->FeedBounds(&bounds);
  return {bounds.oldest, bounds.numbered};
}

bool RegionSite::WipeHubStore() {
  bool ok = true;
  if (postgres_) {
    ok = postgres_->DropDatabase("hub") && postgres_->CreateDatabase("hub");
    if (!ok) error_ = "re-creating the database of region " + name_ + ":\n" + postgres_->log().substr(0, 4000);
    EXPECT_TRUE(ok) << error_;
  }
  std::filesystem::remove_all(hub_dir());
  return ok;
}

std::map<std::pair<std::string, uint64_t>, int> RegionSite::Contents() {
  std::map<std::pair<std::string, uint64_t>, int> out;
  std::unique_ptr<HubStore> store = OpenHubStore();
  if (!store) return out;
  ForEachFeedEntry(store.get(),
                   [&](const RegionFeedEntry& e) { ++out[{e.remote.origin.ToString(), e.remote.origin_lsn}]; });
  return out;
}

std::unique_ptr<Store> OpenGatewayStore(const std::string& path, const std::string& gateway_id) {
  StoreOptions o;
  o.path = path;
  o.gateway_id = gateway_id;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  EXPECT_OK(st);
  return store;
}

uint64_t Checkpoint(Store* store, const std::string& name) {
  uint64_t v = 0;
  store->GetCheckpoint(name, &v);
  return v;
}

void Fill(Store* store, SensorWorkload* workload, size_t n) {
  while (n > 0) {
    size_t k = std::min<size_t>(n, 5000);
    AppendResult r;
    Status st = store->AppendReadings(workload->Take(k), &r);
    ASSERT_OK(st);
    n -= k;
  }
}

UplinkOptions FastUplinkOptions(const std::string& gateway_id) {
  UplinkOptions o;
  o.gateway_id = gateway_id;
  o.batch_max_readings = 2000;
  o.batch_max_delay_ms = 20;
  o.window = 4;
  o.ack_timeout_ms = 2000;
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  o.probe_interval_ms = 200;
  o.failback_after_ms = 2000;
  return o;
}

UplinkRegion RegionAt(const std::string& name, const std::string& uri, int64_t preference) {
  UplinkRegion r;
  r.name = name;
  r.preference = preference;
  r.link.uri = uri;
  r.link.reconnect_min_ms = 50;
  r.link.reconnect_max_ms = 500;
  r.link.connect_timeout_ms = 2000;
  r.link.keep_alive_s = 2;
  return r;
}

void ExpectExactlyOnce(const std::vector<RegionSite*>& regions, const Origin& origin, uint64_t last) {
  std::set<uint64_t> seen;
  for (RegionSite* r : regions) {
    auto contents = r->Contents();
    int64_t twice = 0;
    for (const auto& [key, count] : contents) {
      if (count > 1) ++twice;
      if (key.first == origin.ToString()) seen.insert(key.second);
    }
    EXPECT_EQ(twice, 0) << "region " << r->name() << " holds readings twice";
  }
  EXPECT_EQ(seen.size(), last);
  EXPECT_TRUE(seen.empty() || (*seen.begin() == 1 && *seen.rbegin() == last));
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    size_t comma = text.find(',', at);
    out.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

int MaybeRunUplinkChild() {
  const char* store_path = std::getenv("EDGESYNC_UPLINK_CHILD");
  if (!store_path) return 0;
  InitLogging(LogLevel::kInfo, "uplink-child");
  Signals::Install();
  auto store = OpenGatewayStore(store_path);
  if (!store) _exit(2);
  UplinkOptions o = FastUplinkOptions();
  const char* regions = std::getenv("EDGESYNC_UPLINK_REGIONS");
  for (const std::string& item : SplitCommas(regions ? regions : "")) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    o.regions.push_back(RegionAt(item.substr(0, eq), item.substr(eq + 1), static_cast<int64_t>(o.regions.size())));
  }
  // EDGESYNC_UPLINK_TLS="ca,cert,key,credentials" (any may be empty) for every region.
  if (const char* tls = std::getenv("EDGESYNC_UPLINK_TLS")) {
    std::vector<std::string> f = SplitCommas(tls);
    f.resize(4);
    for (UplinkRegion& r : o.regions) {
      r.link.ca_file = f[0];
      r.link.cert_file = f[1];
      r.link.key_file = f[2];
      r.link.credentials_file = f[3];
    }
  }
  Uplink uplink(store.get(), o);
  Status started = uplink.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "uplink: %s\n", started.ToString().c_str());
    _exit(3);
  }
  while (!Signals::StopRequested()) Signals::WaitForSignal(200);
  uplink.Stop();
  _exit(0);
}

bool StartUplinkChild(Process* child, const std::string& store_path, const std::string& regions,
                      const std::string& log, const std::string& tls) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  std::vector<std::string> env = {"EDGESYNC_UPLINK_CHILD=" + store_path, "EDGESYNC_UPLINK_REGIONS=" + regions};
  if (!tls.empty()) env.push_back("EDGESYNC_UPLINK_TLS=" + tls);
  return child->Start({exe}, log, env);
}

}  // namespace edgesync::test

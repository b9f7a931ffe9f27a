// tests/support/sync_sites.h: the real parts of the sync tests: a region
// = a Mosquitto broker + an `edgesync region` process with its own hub store:
// SQLite, or with EDGESYNC_TEST_HUB_STORE=postgresql (ctest runs the sync
// suites both ways) a real PostgreSQL server of its own; a gateway = a SQLite store filled in the test process + the Uplink,
// in process or in a child process (this test binary re-executed in uplink
// mode, so it can be SIGKILLed); and the checks "no region holds a reading
// twice, the union holds every reading".
#ifndef EDGESYNC_TESTS_SUPPORT_SYNC_SITES_H_
#define EDGESYNC_TESTS_SUPPORT_SYNC_SITES_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "platform/files.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "store/hub_store.h"
#include "store/store.h"
#include "sync/uplink.h"
#include "tests/support/broker.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/workload.h"

namespace edgesync::test {

inline std::string Q(const std::string& s) { return "\"" + s + "\""; }

// The hub store backend the sync suites run against (ctest sets it).
inline bool HubOnPostgres() {
  const char* b = std::getenv("EDGESYNC_TEST_HUB_STORE");
  return b && std::string(b) == "postgresql";
}

class RegionSite {
 public:
  RegionSite(const std::string& root, std::string name, BrokerOptions broker_options = {})
      : name_(std::move(name)), dir_(root + "/" + name_) {
    MakeDir(dir_);
    MakeDir(dir_ + "/broker");
    broker_ = std::make_unique<Broker>(dir_ + "/broker", broker_options);
    if (HubOnPostgres()) postgres_ = std::make_unique<Postgres>(dir_ + "/postgres");
  }
  ~RegionSite() { hub_.Stop(2000); }

  static void MakeDir(const std::string& d) {
    Status st = MakeDirs(d);
    EXPECT_OK(st);
  }

  // hub_extra: more TOML lines for [hub] (TLS, credentials); uri: what the hub connects to.
  bool Start(const std::string& hub_uri = "", const std::string& hub_extra = "") {
    if (!broker_->running() && !broker_->Start()) return false;
    return StartHub(hub_uri, hub_extra);
  }
  bool StartHub(const std::string& hub_uri = "", const std::string& hub_extra = "") {
    if (!hub_uri.empty()) hub_uri_ = hub_uri;
    if (!hub_extra.empty()) hub_extra_ = hub_extra;
    std::string store_lines;
    if (postgres_) {
      if (!postgres_->running()) {
        bool fresh = !database_made_;
        if (!postgres_->Start()) {
          ADD_FAILURE() << "PostgreSQL for region " << name_ << " did not start: " << postgres_->log();
          return false;
        }
        if (fresh && !(database_made_ = postgres_->CreateDatabase("hub"))) return false;
      }
      store_lines = "store = " + Q(postgres_->Uri("hub")) + "\npassword_file = " + Q(postgres_->password_file()) + "\n";
    }
    std::ofstream(config()) << "[gateway]\ndata_dir = " << Q(dir_ + "/hub") << "\nlog_level = \"info\"\n\n"
                            << "[hub]\nregion = " << Q(name_) << "\nbroker_uri = "
                            << Q(hub_uri_.empty() ? broker_->uri() : hub_uri_) << "\n"
                            << store_lines << hub_extra_ << "\n";
    if (!hub_.Start({EDGESYNC_BINARY, "region", "--config", config()}, dir_ + "/hub.log")) return false;
    return true;
  }
  void KillHub() { hub_.Kill9(); }
  int StopHub() { return hub_.Stop(5000); }
  bool hub_running() { return hub_.running(); }
  Broker& broker() { return *broker_; }
  const std::string& name() const { return name_; }
  std::string config() const { return dir_ + "/hub.toml"; }
  std::string store_path() const { return dir_ + "/hub/store.db"; }
  std::string hub_log() const { return ReadAll(dir_ + "/hub.log"); }
  Postgres* postgres() { return postgres_.get(); }

  // The hub's store, opened beside the running hub (SQLite: its file;
  // PostgreSQL: its database). *store holds the SQLite Store the hub store
  // reads through.
  std::unique_ptr<HubStore> OpenHubStore(std::unique_ptr<Store>* store) {
    std::unique_ptr<HubStore> hub;
    Status st;
    if (postgres_) {
      HubStoreOptions o;
      o.location = postgres_->Uri("hub");
      o.password_file = postgres_->password_file();
      st = OpenPostgresHubStore(o, &hub);
    } else {
      StoreOptions o;
      o.path = store_path();
      o.create_if_missing = false;  // gateway id "" = whatever the hub's store says
      o.open_check = StoreOptions::OpenCheck::kNone;
      st = Store::Open(o, store);
      if (st.ok()) hub = test::NewSqliteHubView(store->get());
    }
    if (!st.ok()) ADD_FAILURE() << "opening region " << name_ << "'s hub store: " << st.ToString();
    return hub;
  }

  // (oldest, numbered) of the hub's feed (FeedBoundsInfo).
  std::pair<uint64_t, uint64_t> FeedBounds() {
    std::unique_ptr<Store> store;
    std::unique_ptr<HubStore> hub = OpenHubStore(&store);
    FeedBoundsInfo bounds;
    if (hub) hub->FeedBounds(&bounds);
    return {bounds.oldest, bounds.numbered};
  }

  // The hub (stopped) loses its store: the next start makes a new one.
  void WipeHubStore() {
    if (postgres_) {
      EXPECT_TRUE(postgres_->DropDatabase("hub") && postgres_->CreateDatabase("hub"));
    }
    std::filesystem::remove_all(dir_ + "/hub");
  }

  // Every (origin, LSN) the region's feed holds, with the number of times.
  std::map<std::pair<std::string, uint64_t>, int> Contents() {
    std::map<std::pair<std::string, uint64_t>, int> out;
    std::unique_ptr<Store> sqlite;
    std::unique_ptr<HubStore> store = OpenHubStore(&sqlite);
    if (!store) return out;
    ShardPositions after{};
    FeedRead read;
    std::vector<RegionFeedEntry>& page = read.entries;
    do {
      if (!store->ReadFeed(after, 10000, &read).ok() || read.reset) break;
      after = read.next;
      for (const auto& e : page) {
        ++out[{e.remote.origin.ToString(), e.remote.origin_lsn}];
      }
    } while (!page.empty());
    return out;
  }

 private:
  std::string name_;
  std::string dir_;
  std::string hub_uri_;
  std::string hub_extra_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<Postgres> postgres_;  // EDGESYNC_TEST_HUB_STORE=postgresql only
  bool database_made_ = false;
  Process hub_;
};

inline std::unique_ptr<Store> OpenGatewayStore(const std::string& path, const std::string& gateway_id = "gw-1") {
  StoreOptions o;
  o.path = path;
  o.gateway_id = gateway_id;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  EXPECT_OK(st);
  return store;
}

// A checkpoint's value, 0 while unset: "upstream" is what the regions acknowledged.
inline uint64_t Checkpoint(Store* store, const std::string& name = "upstream") {
  uint64_t v = 0;
  store->GetCheckpoint(name, &v);
  return v;
}

// Appends n readings of the reference workload (1000 devices x 8 metrics).
inline void Fill(Store* store, SensorWorkload* workload, size_t n) {
  while (n > 0) {
    size_t k = std::min<size_t>(n, 5000);
    AppendResult r;
    Status st = store->AppendReadings(workload->Take(k), &r);
    ASSERT_OK(st);
    n -= k;
  }
}

inline UplinkOptions FastUplinkOptions(const std::string& gateway_id = "gw-1") {
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

inline UplinkRegion RegionAt(const std::string& name, const std::string& uri, int64_t preference = 0) {
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

// Asserts: no region holds an (origin, LSN) twice; together they hold
// exactly LSNs 1..last of origin.
inline void ExpectExactlyOnce(const std::vector<RegionSite*>& regions, const Origin& origin, uint64_t last) {
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

// "a,,b" -> {"a", "", "b"}.
inline std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    size_t comma = text.find(',', at);
    out.push_back(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

// The child mode of this test binary: `EDGESYNC_UPLINK_CHILD=<store path>`
// plus EDGESYNC_UPLINK_REGIONS="name=uri,..." runs an Uplink over that store
// until SIGTERM or SIGKILL. Called from a static initialiser, before gtest.
inline int MaybeRunUplinkChild() {
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

// Starts this binary in uplink mode.
inline bool StartUplinkChild(Process* child, const std::string& store_path, const std::string& regions,
                             const std::string& log, const std::string& tls = "") {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  std::vector<std::string> env = {"EDGESYNC_UPLINK_CHILD=" + store_path, "EDGESYNC_UPLINK_REGIONS=" + regions};
  if (!tls.empty()) env.push_back("EDGESYNC_UPLINK_TLS=" + tls);
  return child->Start({exe}, log, env);
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_SYNC_SITES_H_

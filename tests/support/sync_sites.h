// tests/support/sync_sites.h: the real parts of the sync tests and of
// whole deployments (tests/support/world.h): a region = a Mosquitto broker +
// an `edgesync region` process with its own hub store: SQLite, or with
// EDGESYNC_TEST_HUB_STORE=postgresql (ctest runs the sync suites both ways)
// or RegionOptions::backend a real PostgreSQL server of its own; a gateway =
// a SQLite store filled in the test process + the Uplink, in process or in a
// child process (this test binary re-executed in uplink mode, so it can be
// SIGKILLed); and the checks "no region holds a reading twice, the union
// holds every reading". The gateway program itself is
// tests/support/gateway_program.h. Code in sync_sites.cc.
#ifndef EDGESYNC_TESTS_SUPPORT_SYNC_SITES_H_
#define EDGESYNC_TESTS_SUPPORT_SYNC_SITES_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

// Which store a region's hub keeps its feed in.
enum class HubBackend {
  kFromEnvironment,  // PostgreSQL with EDGESYNC_TEST_HUB_STORE=postgresql, else SQLite
  kSqlite,
  kPostgresql,
};

// How RegionSite::OpenHubStore opens the hub's store: beside the running hub
// (a SQLite file read and written, no open check), or read only with the
// store's quick check, for an audit of a stopped hub.
enum class HubOpen { kBesideHub, kReadOnly };

struct RegionOptions {
  BrokerOptions broker;
  HubBackend backend = HubBackend::kFromEnvironment;
  // More TOML sections of the hub's config, before [hub] ("[metrics]\nlisten = \"\"\n").
  std::string extra_toml;
  // The hub runs under libfaketime with this timestamp file ("" = the real
  // clock; FakeTimeEnv says how).
  std::string faketime_file;
};

// Calls each(entry) for every entry of a hub's region feed, in feed order,
// until the feed ends, a read fails or the feed was pruned under the reader.
void ForEachFeedEntry(HubStore* hub, const std::function<void(const RegionFeedEntry&)>& each);

// A region: a Mosquitto broker and an `edgesync region` hub with its store
// (SQLite in <root>/<name>/hub, or a PostgreSQL server of its own in
// <root>/<name>/postgres, database "hub"), config <root>/<name>/hub.toml,
// log <root>/<name>/hub.log.
class RegionSite {
 public:
  RegionSite(const std::string& root, std::string name, BrokerOptions broker_options = {});
  RegionSite(const std::string& root, std::string name, RegionOptions options);
  ~RegionSite();
  RegionSite(const RegionSite&) = delete;
  RegionSite& operator=(const RegionSite&) = delete;

  static void MakeDir(const std::string& d) {
    Status st = MakeDirs(d);
    EXPECT_OK(st);
  }

  // The broker (unless it runs), then the hub (StartHub).
  // hub_extra: more TOML lines for [hub] (TLS, credentials); uri: what the hub connects to.
  bool Start(const std::string& hub_uri = "", const std::string& hub_extra = "");
  // The database server (StartDatabase), then the hub (StartHubProcess).
  bool StartHub(const std::string& hub_uri = "", const std::string& hub_extra = "");
  // The hub alone, with a config written afresh; its database is left as it
  // is, up or down (the hub waits for it).
  bool StartHubProcess(const std::string& hub_uri = "", const std::string& hub_extra = "");
  void KillHub() { hub_.Kill9(); }
  int StopHub(int64_t grace_ms = 5000) { return hub_.Stop(grace_ms); }
  bool hub_running() { return hub_.running(); }
  Process& hub_process() { return hub_; }

  // PostgreSQL only (true on SQLite): starts the region's server unless it
  // runs, making the database "hub" on its first start. A SIGKILLed
  // postmaster's backends exit when they notice it gone; a start before the
  // last one has refuses ("pre-existing shared memory block is still in
  // use") and exits at once, so it tries again for up to two minutes.
  bool StartDatabase();
  // Why the last start failed, for a caller that is no test.
  const std::string& error() const { return error_; }

  Broker& broker() { return *broker_; }
  const std::string& name() const { return name_; }
  std::string config() const { return dir_ + "/hub.toml"; }
  std::string hub_dir() const { return dir_ + "/hub"; }
  std::string store_path() const { return hub_dir() + "/store.db"; }
  std::string hub_log() const { return ReadAll(dir_ + "/hub.log"); }
  nlohmann::json StatusJson() const;
  bool on_postgres() const { return postgres_ != nullptr; }
  Postgres* postgres() const { return postgres_.get(); }

  // The hub's store, opened beside the running hub or for an audit (SQLite:
  // its file, OpenSqliteHubStore; PostgreSQL: its database).
  std::unique_ptr<HubStore> OpenHubStore();
  Status OpenHubStore(HubOpen how, std::unique_ptr<HubStore>* hub) const;

  // (oldest, numbered) of the hub's feed (FeedBoundsInfo).
  std::pair<uint64_t, uint64_t> FeedBounds();

  // The hub (stopped) loses its store: the next start makes a new one.
  // False if the database could not be made again.
  bool WipeHubStore();

  // Every (origin, LSN) the region's feed holds, with the number of times.
  std::map<std::pair<std::string, uint64_t>, int> Contents();

 private:
  std::string name_;
  std::string dir_;
  RegionOptions options_;
  std::string hub_uri_;
  std::string hub_extra_;
  std::string error_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<Postgres> postgres_;  // PostgreSQL backend only
  bool database_made_ = false;
  Process hub_;
};

std::unique_ptr<Store> OpenGatewayStore(const std::string& path, const std::string& gateway_id = "gw-1");

// A checkpoint's value, 0 while unset: "upstream" is what the regions acknowledged.
uint64_t Checkpoint(Store* store, const std::string& name = "upstream");

// Appends n readings of the reference workload (1000 devices x 8 metrics).
void Fill(Store* store, SensorWorkload* workload, size_t n);

UplinkOptions FastUplinkOptions(const std::string& gateway_id = "gw-1");

UplinkRegion RegionAt(const std::string& name, const std::string& uri, int64_t preference = 0);

// Asserts: no region holds an (origin, LSN) twice; together they hold
// exactly LSNs 1..last of origin.
void ExpectExactlyOnce(const std::vector<RegionSite*>& regions, const Origin& origin, uint64_t last);

// "a,,b" -> {"a", "", "b"}.
std::vector<std::string> SplitCommas(const std::string& text);

// The child mode of this test binary: `EDGESYNC_UPLINK_CHILD=<store path>`
// plus EDGESYNC_UPLINK_REGIONS="name=uri,..." runs an Uplink over that store
// until SIGTERM or SIGKILL. Called from a static initialiser, before gtest.
int MaybeRunUplinkChild();

// Starts this binary in uplink mode.
bool StartUplinkChild(Process* child, const std::string& store_path, const std::string& regions,
                      const std::string& log, const std::string& tls = "");

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_SYNC_SITES_H_

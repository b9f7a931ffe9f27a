// tests/support/world.h: a whole deployment of real processes on loopback,
// for the soak (tests/soak/) and the convergence test: R regions (a
// Mosquitto broker and an `edgesync region` hub each) and G gateways (a
// local Mosquitto, an `edgesync gateway` and es_acked_sensor playing its
// sensors), every gateway->region link through its own TcpProxy, so a test
// can cut, stall or throttle any one of them.
//
// Gateway g writes preferably to region g mod R (its [[region]] tables list
// the regions from there on), so every region takes writes; every gateway
// reads every region's feed. A gateway or hub may run under libfaketime with
// a timestamp file the world rewrites (a wall-clock step of a live process;
// the monotonic clock is left alone), and a gateway's data directory may be
// a small tmpfs of its own (a card that fills up).
//
// A region's hub keeps its store in SQLite (<hub dir>/store.db) or, for the
// first `postgres_regions` regions, in a PostgreSQL server of the region's
// own (tests/support/postgres.h, data under <root>/regionN/postgres, one
// database "hub"), which can be SIGKILLed and restarted like any process.
//
// The regions and gateway programs are those of the integration tests
// (RegionSite, GatewayProgram: tests/support/sync_sites.h,
// gateway_program.h), with the world's options: region N in <root>/regionN,
// gateway N's config and log in <root>/gwN and its data in <root>/gwN/data.
// The world adds what they lack: the local brokers, the sensors, the
// proxies, the faults, the resident-memory samples and the audit.
//
// The audit (world_audit.cc) stops nothing: call it once every edgesync
// process and broker is stopped (StopAll), then it reads every store: the
// SQLite files, and the databases, whose servers StopAll leaves running for
// it (the destructor stops them).
//
// Thread safety: one thread drives a World; the proxies move bytes on their
// own threads.
#ifndef EDGESYNC_TESTS_SUPPORT_WORLD_H_
#define EDGESYNC_TESTS_SUPPORT_WORLD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/hub_store.h"
#include "tests/support/broker.h"
#include "tests/support/gateway_program.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {

struct WorldOptions {
  std::string root;                 // every file of the world goes below it
  int regions = 3;
  int gateways = 6;
  int devices_per_gateway = 4;
  double readings_per_s = 40;       // per gateway, all its devices together
  // Indices of the gateway and the hub started under libfaketime (-1: none).
  int faketime_gateway = -1;
  int faketime_hub = -1;
  // A tmpfs of this many MiB is mounted on this gateway's data directory
  // (root only; unmounted by the destructor). -1: none.
  int tmpfs_gateway = -1;
  int tmpfs_mib = 64;
  // Regions 0..postgres_regions-1 keep their hub store on a PostgreSQL
  // server of their own; the others on SQLite. Needs a build with the
  // PostgreSQL backend (EDGESYNC_HAVE_POSTGRESQL) and Debian's server.
  int postgres_regions = 0;
};

// What a wiped hub store held: each entry's (origin, LSN), and for a reading
// its device id and value, so that the audit can still place a reading its
// gateway has since pruned.
using WipedEntries = std::map<std::pair<std::string, uint64_t>, std::pair<std::string, double>>;

// Peak resident memory seen per role, in bytes: VmHWM of each process
// ("hub_sqlite", "hub_postgresql", "gateway", ...), and for
// "postgresql_server" the largest sum of Pss (proportional set size, so the
// shared buffers count once) over a server's postmaster and backends.
using PeakRss = std::map<std::string, int64_t>;

class World {
 public:
  explicit World(WorldOptions options);
  ~World();  // stops what runs, unmounts a tmpfs
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Starts every broker, hub and gateway, waits until each gateway writes its
  // status, then starts the sensors. False (with why in error()) on failure.
  bool Start();
  const std::string& error() const { return error_; }
  const WorldOptions& options() const { return options_; }

  // Faults. Kill* = SIGKILL; Start* restarts what is down (no-op if up).
  void KillGateway(int g);
  bool StartGateway(int g);
  void KillHub(int r);
  bool StartHub(int r);
  void KillLocalBroker(int g);
  bool StartLocalBroker(int g);
  void KillRegionBroker(int r);
  bool StartRegionBroker(int r);
  TcpProxy& link(int g, int r) { return *proxies_[static_cast<size_t>(g * options_.regions + r)]; }
  // Rewrites the libfaketime offset ("+3h", "-90m", "+0") of the gateway or
  // hub running under it; the live process sees the step at its next clock read.
  void SetGatewayClock(const std::string& offset);
  void SetHubClock(const std::string& offset);
  // Fills the tmpfs gateway's filesystem (a ballast file) / frees it again.
  bool FillDisk();
  void FreeDisk();
  // SIGKILL of region r's PostgreSQL server (the postmaster; its backends
  // notice and exit) / a start on the same port and data, retried while the
  // killed server's last backends still hold its shared memory.
  void KillDatabase(int r);
  bool StartDatabase(int r);
  // SIGKILL of hub r, its store deleted (SQLite: the files; PostgreSQL: the
  // database dropped and created empty), hub started again: a new store, a
  // new epoch. Returns what the lost store held.
  WipedEntries WipeHubStore(int r);
  // Restores every link, frees the disk, restarts whatever is down.
  bool HealAll();

  // Stops the sensors (SIGTERM: they write their last acknowledgements).
  void StopSensors();
  // True once every gateway's status says: nothing ingested for quiet_ms,
  // backlog 0, and every region feed read to its head.
  bool Drained(int64_t quiet_ms);
  // SIGTERM to every process (gateways first), waits for each; the
  // database servers stay up for the audit.
  void StopAll();
  void StopDatabases();

  // Samples VmHWM of every running process and the Pss of every database
  // server into peak_rss(); call often (each Kill* samples its victim first).
  void SampleRss();
  const PeakRss& peak_rss() const { return peak_rss_; }

  // When each gateway's local broker was SIGKILLed (CLOCK_MONOTONIC ms) and
  // when the killed broker had started.
  struct BrokerLife {
    int64_t started_ms;
    int64_t killed_ms;
  };
  const std::vector<BrokerLife>& local_broker_kills(int g) const { return local_kills_[static_cast<size_t>(g)]; }

  // Gateway g's local broker, where its sensors (and devices describing
  // themselves) publish.
  std::string local_broker_uri(int g) const { return local_brokers_[static_cast<size_t>(g)]->uri(); }
  std::string gateway_id(int g) const { return "gw" + std::to_string(g); }
  std::string device_prefix(int g) const { return "gw" + std::to_string(g) + "-d"; }
  GatewayProgram& gateway(int g) const { return *gateways_[static_cast<size_t>(g)]; }
  std::string gateway_dir(int g) const { return gateway(g).data_dir(); }
  std::string gateway_store(int g) const { return gateway(g).store_path(); }
  std::string gateway_config(int g) const { return gateway(g).config(); }
  std::string ack_log(int g) const;
  RegionSite& region(int r) const { return *regions_[static_cast<size_t>(r)]; }
  std::string region_name(int r) const { return "region" + std::to_string(r); }
  std::string hub_dir(int r) const { return region(r).hub_dir(); }
  std::string hub_store(int r) const { return region(r).store_path(); }
  bool on_postgres(int r) const { return r < options_.postgres_regions; }
  const char* store_backend(int r) const { return on_postgres(r) ? "postgresql" : "sqlite"; }
  Postgres* database(int r) const { return region(r).postgres(); }
  nlohmann::json GatewayStatus(int g) const { return gateway(g).StatusJson(); }
  nlohmann::json HubStatus(int r) const { return region(r).StatusJson(); }

 private:
  bool StartSensor(int g);
  void Sample(const std::string& role, Process* p);
  void SampleDatabase(int r);
  std::string hub_role(int r) const { return on_postgres(r) ? "hub_postgresql" : "hub_sqlite"; }

  WorldOptions options_;
  std::string error_;
  std::vector<std::unique_ptr<RegionSite>> regions_;
  std::vector<std::unique_ptr<Broker>> local_brokers_;
  std::vector<std::unique_ptr<TcpProxy>> proxies_;  // [g * regions + r]
  std::vector<std::unique_ptr<GatewayProgram>> gateways_;
  std::vector<std::unique_ptr<Process>> sensors_;
  std::vector<int64_t> local_started_ms_;
  std::vector<std::vector<BrokerLife>> local_kills_;
  std::vector<std::pair<int64_t, int64_t>> quiet_;  // per gateway: committed readings, since when (Drained)
  bool tmpfs_mounted_ = false;
  PeakRss peak_rss_;
};

// What the audit found: every count is over readings (one per message).
struct AuditResult {
  int64_t accepted = 0;               // PUBACKed to a sensor
  int64_t stored = 0;                 // distinct accepted readings in their gateway's store
  int64_t lost = 0;                   // accepted, missing anywhere it must be, not explained below
  int64_t lost_at_local_broker_kill = 0;  // accepted by a local broker SIGKILLed before it handed them on
  // Held by their gateway, acknowledged by a region that then lost its
  // store, and in no region at the end: the gateway did not refill it.
  int64_t only_in_wiped_hub = 0;
  // Held by no region because the one that had them lost its store, and
  // pruned by their gateway (for space, after the acknowledgement) before
  // it could refill that region: nothing can serve them again.
  int64_t pruned_before_refill = 0;
  int64_t duplicated = 0;             // extra copies: in a gateway's store, a region, or a read view
  int64_t region_duplicates = 0;      // of those, (origin, LSN) or reading held twice by one region
  int64_t lsn_gaps = 0;               // LSNs missing from a gateway's change log (1..last), not pruned
  // Readings the gateway whose filesystem filled dropped to make room, each
  // after a region acknowledged it (the store's disk policy); each is still
  // checked in the regions and the read views.
  int64_t pruned_after_ack = 0;
  int64_t read_view_missing = 0;      // (reading, other gateway) pairs missing from a read view
  // Of the pruned_before_refill readings, (reading, other gateway) pairs
  // whose read view had not pulled them before the wipe: no region serves
  // them now.
  int64_t read_view_missing_wiped = 0;
  int64_t extras = 0;                 // stored readings no sensor saw acknowledged (allowed)
  int64_t integrity_failures = 0;     // stores failing their integrity check (see Audit)
  // Gateways whose (local + read view) set differs from the union of the
  // regions' sets (checked unless something a wiped hub store held is in
  // no region at the end).
  int64_t views_differ = 0;
  // Per store ("region0", "gw3") and for the union of the regions
  // ("regions"): entries per quarter of the partition hash space and an
  // order-independent checksum over its (origin, LSN) set.
  std::map<std::string, std::string> summaries;
  std::vector<std::string> problems;  // the first few findings, for people
  bool ok() const {
    return lost == 0 && only_in_wiped_hub == 0 && duplicated == 0 && lsn_gaps == 0 && read_view_missing == 0 &&
           integrity_failures == 0 && views_differ == 0;
  }
  nlohmann::json ToJson() const;
};

// Reads every store of a stopped world (StopAll; the database servers still
// up). Integrity: SQLite's PRAGMA integrity_check on every store file; on a
// region database, amcheck's B-tree check of every es_* index against its
// table (heapallindexed), no two chunks of one origin sharing an LSN, no
// feed chunk of an unknown origin or above its origin's high-water mark, a
// shard's chunks numbered apart, above its pruned mark and up to its
// counter.
// wiped: what a wiped hub store held
// (World::WipeHubStore), to tell "only the wiped hub had it" from a loss.
AuditResult Audit(const World& world, const WipedEntries& wiped = {});

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_WORLD_H_

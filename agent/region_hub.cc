// `edgesync region --config FILE`: the region hub role. Opens the region's
// hub store ([hub] store: the embedded SQLite store, or PostgreSQL), runs sync/region_hub.h until SIGTERM/SIGINT, then stops cleanly.
// Publishes its metrics snapshot like the gateway (status file, status page,
// /metrics): batches and readings applied per second, origins and their
// lag, the feed head, refusals by reason.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "agent/options.h"
#include "agent/role_support.h"
#include "agent/roles.h"
#include "agent/status_board.h"
#include "agent/store_figures.h"
#include "firmware-config/transport.h"
#include "platform/files.h"
#include "platform/liveness.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "platform/systemd.h"
#include "store/hub_store.h"
#include "store/hub_store_leases.h"
#include "store/pg_module.h"
#include "store/sqlite_hub_store.h"
#include "store/store.h"
#include "sync/mqtt_link_pool.h"
#include "sync/region_hub.h"

namespace edgesync {
namespace {

// Origins the status snapshot lists: all of them up to this many, else the
// most lagging this many (RegionHub::stats). Rendering every origin of a
// 10,000-gateway region as JSON each second took a fifth of the hub's CPU;
// the totals and origin_count stay complete.
constexpr size_t kSnapshotOrigins = 20;

class HubSnapshot {
 public:
  // store: the SQLite store, or nullptr when the hub store is elsewhere
  // (PostgreSQL): then the snapshot's store section is the hub store's own.
  HubSnapshot(const Config& config, std::string hub_id, Store* store, HubStore* hub_store, RegionHub* hub)
      : config_(config), hub_id_(std::move(hub_id)), store_(store), hub_store_(hub_store), hub_(hub) {}

  nlohmann::json Take(bool running) {
    using json = nlohmann::json;
    Clock* clock = SystemClock();
    int64_t now = clock->MonotonicMillis();
    RegionHubStats s = hub_->stats(kSnapshotOrigins);
    json j;
    j["role"] = "region";
    j["running"] = running;
    j["pid"] = static_cast<int64_t>(::getpid());
    j["time_ms"] = clock->WallMillis();
    j["started_ms"] = started_ms_;
    if (store_ != nullptr) {
      j.update(StoreFigures(store_, counts_.Get(store_, now, s.entries_applied), config_.data_dir, {}, clock->WallMillis()));
    } else {
      HubStoreStats hs;
      Status st = hub_store_->Stats(&hs);
      j["store"] = {{"backend", hs.backend}, {"ok", st.ok()}, {"feed_oldest", hs.feed_oldest}, {"feed_head", hs.feed_head}};
      if (!st.ok()) j["store"]["error"] = st.ToString();
    }
    json origins = json::array();
    for (const HubOriginStats& o : s.origins) {
      origins.push_back({{"origin", o.origin},
                         {"high_water", o.high_water},
                         {"batches", o.batches},
                         {"entries", o.entries},
                         {"last_batch_ms", o.last_batch_wall_ms},
                         {"lag_ms", o.lag_ms},
                         {"lost", o.lost},
                         {"complete_through_ms", o.complete_through_ms},
                         {"late_readings", o.late_readings},
                         {"complete_age_ms", o.complete_through_ms > 0 ? j["time_ms"].get<int64_t>() - o.complete_through_ms : 0}});
    }
    j["hub"] = {{"region", config_.hub_region},
                {"connected", hub_->connected()},
                {"batches_applied", s.batches_applied},
                {"entries_received", s.entries_received},
                {"entries_applied", s.entries_applied},
                {"feed_head", s.head_seq},
                {"feed_requests", s.feed_requests},
                {"feed_requests_superseded", s.feed_requests_superseded},
                {"feed_resets", s.feed_resets},
                {"feed_corrections_withheld", s.feed_corrections_withheld},
                {"hole_jumps", s.hole_jumps},
                {"regressed", s.regressed},
                {"lost_at_origin", s.lost_at_origin},
                {"late_readings", s.late_readings},
                {"priority_batches_applied", s.priority_batches_applied},
                {"priority_entries_applied", s.priority_entries_applied},
                {"pings", s.pings},
                {"already_held", s.batches_already_held},
                {"shed", s.batches_shed},
                {"hub_id", hub_id_},
                {"shards", s.shards},
                {"live_hubs", s.live_hubs},
                {"not_owned", s.not_owned},
                {"contexts", s.contexts},
                {"context_bytes", s.context_bytes},
                {"context_misses", s.context_misses},
                {"context_evictions", s.context_evictions},
                {"shards_taken", s.shards_taken},
                {"shards_stolen", s.shards_stolen},
                {"shards_handed_over", s.shards_handed_over},
                {"lease_errors", s.lease_errors},
                {"lease_renewed_ago_ms", s.lease_renewed_ago_ms},
                {"refusals",
                 {{"gap", s.gaps_refused},
                  {"invalid", s.batches_invalid},
                  {"sender", s.sender_refused},
                  {"store_error", s.store_errors},
                  {"bad_message", s.bad_messages},
                  {"bad_reply_address", s.bad_reply_addresses},
                  {"retained", s.retained_refused}}},
                {"origin_count", s.origin_count},
                {"origins", origins}};
    j["rates"] = {{"batches_per_s", batches_.Update(s.batches_applied, now)},
                  {"readings_per_s", readings_.Update(s.entries_applied, now)}};
    AddProcessFigures(&j);
    return j;
  }

  static std::map<std::string, double> ChartPoints(const nlohmann::json& s) {
    // Counters: the charts show their mean rates over each step (StatusBoard).
    return {{"applied_batches_total", s["hub"].value("batches_applied", 0.0)},
            {"applied_readings_total", s["hub"].value("entries_applied", 0.0)}};
  }

 private:
  const Config& config_;
  std::string hub_id_;
  Store* store_;
  HubStore* hub_store_;
  RegionHub* hub_;
  int64_t started_ms_ = SystemClock()->WallMillis();
  StoreCounts counts_;
  RateMeter batches_;
  RateMeter readings_;
};

// The hub's id: [hub] id, else the host name made a topic level (one hub
// per machine needs no setting; several on one machine need one each).
std::string HubId(const Config& config) {
  if (!config.hub_id.empty()) return config.hub_id;
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "hub";
  std::string id;
  for (const char* c = host; *c != '\0' && id.size() < 40; ++c) {
    const bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    id += ok ? *c : '-';
  }
  return id;
}

// One hub process per lock file: an exclusive lock the kernel drops when
// the process ends, kill -9 included. The descriptor stays open for the
// process's life. Used beside a SQLite store (one hub per file: a second hub
// on it would hold every shard too and apply every batch twice over, safely
// by the high-water mark, but for nothing) and in a PostgreSQL hub's data
// folder (which then names the hub's instance: see main below).
Status LockHubFile(const std::string& path, const std::string& why) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError("opening " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status::Conflict(why);
  }
  return Status::Ok();
}

}  // namespace

int RunRegionHub(const Config& config) {
  Signals::Install();
  Status transport = CheckTransport(config);
  if (!transport.ok()) {
    std::fprintf(stderr, "edgesync region: %s\n", transport.ToString().c_str());
    return 1;
  }
  Status st = MakePrivateDir(config.data_dir);
  std::unique_ptr<SqliteHubStore> sqlite_store;  // SQLite only
  std::unique_ptr<HubStore> pg_store;  // PostgreSQL only
  Store* store = nullptr;  // SQLite only: the file's gateway side (figures)
  HubStore* hub_store = nullptr;
  std::string where;
  HubStoreOptions ho;  // PostgreSQL
  const PgModuleApi* pg = nullptr;
  ho.location = config.hub_store;
  ho.password_file = config.hub_password_file;
  ho.feed_retention_ms = config.hub_feed_retention_s * 1000;
  ho.application_name = "edgesync-hub-" + config.hub_region;
  if (config.hub_store.empty()) {
    StoreOptions so = StoreOptionsFromConfig(config);
    // The hub's own origin is never sent anywhere; the region name keeps it readable.
    if (so.gateway_id.empty()) so.gateway_id = "hub-" + config.hub_region;
    so.remote_retention_ms = config.hub_feed_retention_s * 1000;  // a hub's remote entries are its region feed
    where = so.path;
    if (st.ok()) {
      st = LockHubFile(so.path + ".hub-lock", "another hub runs on the SQLite store " + so.path +
                                                  "; SQLite is one hub per store: to share a region among hubs, "
                                                  "give them a PostgreSQL store ([hub] store, docs/REGION.md)");
    }
    if (st.ok()) st = OpenSqliteHubStore(so, &sqlite_store);
    if (st.ok()) {
      hub_store = sqlite_store.get();
      store = sqlite_store->store();
    }
  } else {
    where = config.hub_store;  // never holds a password (refused at open)
    if (st.ok()) {
      st = LockHubFile(config.data_dir + "/hub.lock", "another hub runs with the data folder " + config.data_dir +
                                                          "; give every hub of a region its own [gateway] data_dir");
    }
    // The PostgreSQL store lives in a module (store/pg_module.h): this
    // program does not map libpq and its libraries unless a hub uses them.
    if (st.ok()) st = LoadPgModule(&pg);
    if (st.ok()) st = pg->open_hub_store(ho, &pg_store).Annotate("opening the hub store " + where);
    hub_store = pg_store.get();
  }
  if (!st.ok()) {
    // OpenSqliteHubStore names the SQLite store itself.
    std::fprintf(stderr, "edgesync region: %s\n", st.ToString().c_str());
    return 1;
  }
  ES_LOG(kInfo, "region {}: hub store {} ({}), epoch {}", config.hub_region, where, hub_store->backend(),
         hub_store->epoch());
  RegionHubOptions hub_options = RegionHubOptionsFromConfig(config);
  hub_options.hub_id = HubId(config);
  // PostgreSQL: feed pages are read on a connection of their own, so a page
  // never waits for an apply's transaction nor holds one up (the store
  // serialises its calls on its connection). SQLite reads on a connection of
  // its own already.
  std::unique_ptr<HubStore> feed_store;
  if (store == nullptr) {
    HubStoreOptions fo = ho;
    fo.application_name += "-feed";
    st = pg->open_hub_store(fo, &feed_store);
    if (!st.ok()) {
      std::fprintf(stderr, "edgesync region: opening the hub store %s for feed reads: %s\n", where.c_str(),
                   st.ToString().c_str());
      return 1;
    }
    hub_options.feed_store = feed_store.get();
  }
  std::unique_ptr<ShardLeases> leases;  // PostgreSQL: shared with the region's other hubs
  if (store == nullptr) {
    ShardLeaseOptions lo;
    lo.hub_id = hub_options.hub_id;
    lo.shards = kRegionShards;
    lo.ttl_ms = hub_options.lease_ttl_ms;
    // The data folder's lock keeps this (host, folder) to one process, so
    // a hub restarted there after a crash is the same instance and takes
    // its id back at once instead of waiting out its old membership.
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    lo.instance = std::string(host) + ":" + config.data_dir;
    st = pg->open_shard_leases(ho, lo, &leases);
    if (!st.ok()) {
      std::fprintf(stderr, "edgesync region: shard leases in %s: %s\n", where.c_str(), st.ToString().c_str());
      return 1;
    }
    hub_options.leases = leases.get();
  }
  // The region broker makes the hub's user its client id; with a
  // certificate the hub's CN is hub-<region> (docs/SECURITY.md).
  RegionHub hub(hub_store, hub_options, nullptr, IdentityBoundLinks("hub-" + config.hub_region));
  st = hub.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: %s\n", st.ToString().c_str());
    return 1;
  }
  Retention retention(hub_store, RetentionOptionsFromConfig(config));
  st = retention.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: retention: %s\n", st.ToString().c_str());
    hub.Stop();
    return 1;
  }
  HubSnapshot snapshot(config, hub_options.hub_id, store, hub_store, &hub);
  StatusBoard board(config.StatusPath());
  HttpStatusServer http(&board);
  StartHttp(config, &http);
  SystemdNotifier systemd;
  systemd.Ready();
  WatchdogGate watchdog(&systemd);
  int64_t tick_ms = systemd.watchdog_interval_ms() > 0 ? std::min<int64_t>(1000, systemd.watchdog_interval_ms() / 2)
                                                       : 1000;
  int64_t next_status = 0;
  while (!Signals::StopRequested()) {
    Signals::WaitForSignal(tick_ms);
    if (Signals::TakeReload()) {
      systemd.Reloading();
      ReloadLogLevel(config, ConfigRole::kRegion);
      systemd.Ready();
    }
    watchdog.Tick();
    int64_t now = SystemClock()->MonotonicMillis();
    if (now >= next_status) {
      next_status = now + 1000;
      nlohmann::json j = snapshot.Take(true);
      board.Publish(j, HubSnapshot::ChartPoints(j), SystemClock()->WallMillis());
    }
  }
  systemd.Stopping();
  http.Stop();
  retention.Stop();
  hub.Stop();
  board.Publish(snapshot.Take(false), {}, SystemClock()->WallMillis());
  RegionHubStats s = hub.stats(0);
  RetentionStats r = retention.stats();
  ES_LOG(kInfo, "region {}: retention pruned {} feed entries ({} early for space)", config.hub_region,
         r.pruned.remote, r.pruned.early);
  ES_LOG(kInfo,
         "region {}: {} batches applied, {} gaps refused, {} refused for naming another origin than their sender, "
         "{} invalid, {} jumps over a hole, {} feed resets, {} bad messages, head {}",
         config.hub_region, s.batches_applied, s.gaps_refused, s.sender_refused, s.batches_invalid, s.hole_jumps,
         s.feed_resets, s.bad_messages, s.head_seq);
  return 0;
}

}  // namespace edgesync

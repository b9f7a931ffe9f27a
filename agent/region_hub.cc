// `edgesync region --config FILE`: the region hub role. Opens the region's
// hub store ([hub] store: the embedded SQLite store, or PostgreSQL), runs sync/region_hub.h until SIGTERM/SIGINT, then stops cleanly.
// Publishes its metrics snapshot like the gateway (status file, status page,
// /metrics): batches and readings applied per second, origins and their
// lag, the feed head, refusals by reason.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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
#include "store/store.h"
#include "sync/region_hub.h"

namespace edgesync {
namespace {

class HubSnapshot {
 public:
  // store: the SQLite store, or nullptr when the hub store is elsewhere
  // (PostgreSQL): then the snapshot's store section is the hub store's own.
  HubSnapshot(const Config& config, Store* store, HubStore* hub_store, RegionHub* hub)
      : config_(config), store_(store), hub_store_(hub_store), hub_(hub) {}

  nlohmann::json Take(bool running) {
    using json = nlohmann::json;
    Clock* clock = SystemClock();
    int64_t now = clock->MonotonicMillis();
    RegionHubStats s = hub_->stats();
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
                         {"lag_ms", o.lag_ms}});
    }
    j["hub"] = {{"region", config_.hub_region},
                {"connected", hub_->connected()},
                {"batches_applied", s.batches_applied},
                {"entries_received", s.entries_received},
                {"entries_applied", s.entries_applied},
                {"feed_head", s.head_seq},
                {"feed_requests", s.feed_requests},
                {"feed_resets", s.feed_resets},
                {"hole_jumps", s.hole_jumps},
                {"pings", s.pings},
                {"already_held", s.batches_already_held},
                {"shed", s.batches_shed},
                {"refusals",
                 {{"gap", s.gaps_refused},
                  {"invalid", s.batches_invalid},
                  {"sender", s.sender_refused},
                  {"store_error", s.store_errors},
                  {"bad_message", s.bad_messages},
                  {"bad_reply_address", s.bad_reply_addresses}}},
                {"origins", origins}};
    j["rates"] = {{"batches_per_s", batches_.Update(s.batches_applied, now)},
                  {"readings_per_s", readings_.Update(s.entries_applied, now)}};
    AddProcessFigures(&j);
    return j;
  }

  static std::map<std::string, double> ChartPoints(const nlohmann::json& s) {
    return {{"applied_batches_per_s", s["rates"].value("batches_per_s", 0.0)},
            {"applied_readings_per_s", s["rates"].value("readings_per_s", 0.0)}};
  }

 private:
  const Config& config_;
  Store* store_;
  HubStore* hub_store_;
  RegionHub* hub_;
  int64_t started_ms_ = SystemClock()->WallMillis();
  StoreCounts counts_;
  RateMeter batches_;
  RateMeter readings_;
};

}  // namespace

int RunRegionHub(const Config& config) {
  Signals::Install();
  Status transport = CheckTransport(config);
  if (!transport.ok()) {
    std::fprintf(stderr, "edgesync region: %s\n", transport.ToString().c_str());
    return 1;
  }
  Status st = MakePrivateDir(config.data_dir);
  std::unique_ptr<Store> store;  // SQLite only
  std::unique_ptr<HubStore> hub_store;
  std::string where;
  if (config.hub_store.empty()) {
    StoreOptions so = StoreOptionsFromConfig(config);
    // The hub's own origin is never sent anywhere; the region name keeps it readable.
    if (so.gateway_id.empty()) so.gateway_id = "hub-" + config.hub_region;
    so.remote_retention_ms = config.hub_feed_retention_s * 1000;  // a hub's remote entries are its region feed
    where = so.path;
    if (st.ok()) st = Store::Open(so, &store);
    if (st.ok()) hub_store = NewSqliteHubStore(store.get());
  } else {
    HubStoreOptions ho;
    ho.location = config.hub_store;
    ho.password_file = config.hub_password_file;
    ho.feed_retention_ms = config.hub_feed_retention_s * 1000;
    ho.application_name = "edgesync-hub-" + config.hub_region;
    where = config.hub_store;  // never holds a password (refused at open)
    if (st.ok()) st = OpenPostgresHubStore(ho, &hub_store);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: opening the hub store %s: %s\n", where.c_str(), st.ToString().c_str());
    return 1;
  }
  ES_LOG(kInfo, "region {}: hub store {} ({}), epoch {}", config.hub_region, where, hub_store->backend(),
         hub_store->epoch());
  RegionHub hub(hub_store.get(), RegionHubOptionsFromConfig(config));
  st = hub.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: %s\n", st.ToString().c_str());
    return 1;
  }
  Retention retention(hub_store.get(), RetentionOptionsFromConfig(config));
  st = retention.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: retention: %s\n", st.ToString().c_str());
    hub.Stop();
    return 1;
  }
  HubSnapshot snapshot(config, store.get(), hub_store.get(), &hub);
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
  RegionHubStats s = hub.stats();
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

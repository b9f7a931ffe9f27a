// `edgesync region --config FILE`: the region hub role. Opens the region's
// store, runs sync/region_hub.h until SIGTERM/SIGINT, then stops cleanly.
#include <cstdio>
#include <memory>

#include "agent/roles.h"
#include "agent/options.h"
#include "platform/files.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "platform/systemd.h"
#include "store/store.h"
#include "sync/region_hub.h"

namespace edgesync {
int RunRegionHub(const Config& config) {
  Signals::Install();
  StoreOptions so = StoreOptionsFromConfig(config);
  // The hub's own origin is never sent anywhere; the region name keeps it readable.
  if (so.gateway_id.empty()) so.gateway_id = "hub-" + config.hub_region;
  so.remote_retention_ms = config.hub_feed_retention_s * 1000;  // a hub's remote entries are its region feed
  Status st = MakeDirs(config.data_dir);
  std::unique_ptr<Store> store;
  if (st.ok()) st = Store::Open(so, &store);
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: opening the store %s: %s\n", so.path.c_str(), st.ToString().c_str());
    return 1;
  }
  RegionHub hub(store.get(), RegionHubOptionsFromConfig(config));
  st = hub.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: %s\n", st.ToString().c_str());
    return 1;
  }
  Retention retention(store.get(), RetentionOptionsFromConfig(config));
  st = retention.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: retention: %s\n", st.ToString().c_str());
    hub.Stop();
    return 1;
  }
  SystemdNotifier systemd;
  systemd.Ready();
  int64_t pet_ms = systemd.watchdog_interval_ms() > 0 ? systemd.watchdog_interval_ms() / 2 : 1000;
  while (!Signals::StopRequested()) {
    Signals::WaitForSignal(pet_ms);
    systemd.WatchdogPing();
  }
  systemd.Stopping();
  retention.Stop();
  hub.Stop();
  RegionHubStats s = hub.stats();
  RetentionStats r = retention.stats();
  ES_LOG(kInfo, "region {}: retention pruned {} feed entries ({} early for space)", config.hub_region,
         r.pruned.remote, r.pruned.early);
  ES_LOG(kInfo, "region {}: {} batches applied, {} gaps refused, {} bad messages, head {}", config.hub_region,
         s.batches_applied, s.gaps_refused, s.bad_messages, s.head_seq);
  return 0;
}

}  // namespace edgesync

// `edgesync region --config FILE`: the region hub role. Opens the region's
// store, runs sync/region_hub.h until SIGTERM/SIGINT, then stops cleanly.
#include <cstdio>
#include <memory>

#include "agent/roles.h"
#include "agent/sync_config.h"
#include "platform/files.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "platform/systemd.h"
#include "store/store.h"
#include "sync/region_hub.h"

namespace edgesync {
namespace {

StoreOptions HubStoreOptions(const Config& c) {
  StoreOptions o;
  o.path = c.StorePath();
  // The hub's own origin is never sent anywhere; the region name keeps it readable.
  o.gateway_id = c.gateway_id.empty() ? "hub-" + c.hub_region : c.gateway_id;
  o.sync = c.store_sync == "full" ? StoreOptions::Sync::kFull : StoreOptions::Sync::kNormal;
  o.initial_ranges = static_cast<int>(c.store_initial_ranges);
  o.split_max_entries = c.store_split_max_entries;
  o.split_max_bytes = c.store_split_max_bytes;
  o.retention_age_ms = c.store_retention_age_s * 1000;
  o.disk_policy = c.store_disk_policy == "drop-oldest" ? StoreOptions::DiskPolicy::kDropOldest
                                                        : StoreOptions::DiskPolicy::kRejectNew;
  o.max_bytes = c.store_max_bytes;
  o.tombstone_retention_ms = c.store_tombstone_retention_s * 1000;
  o.dead_letter_cap = c.store_dead_letter_cap;
  o.lease_expiry_ms = c.store_lease_expiry_ms;
  return o;
}

}  // namespace

int RunRegionHub(const Config& config) {
  Signals::Install();
  StoreOptions so = HubStoreOptions(config);
  Status st = MakeDirs(config.data_dir);
  std::unique_ptr<Store> store;
  if (st.ok()) st = Store::Open(so, &store);
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: opening the store %s: %s\n", so.path.c_str(), st.ToString().c_str());
    return 1;
  }
  RegionHub hub(store.get(), MakeRegionHubOptions(config));
  st = hub.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "edgesync region: %s\n", st.ToString().c_str());
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
  hub.Stop();
  RegionHubStats s = hub.stats();
  ES_LOG(kInfo, "region {}: {} batches applied, {} gaps refused, {} bad messages, head {}", config.hub_region,
         s.batches_applied, s.gaps_refused, s.bad_messages, s.head_seq);
  return 0;
}

}  // namespace edgesync

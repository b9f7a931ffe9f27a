// agent/sync_config.h: the sync layer's options from the loaded Config
// ([uplink], [[region]], [hub]), so sync/ does not depend on the config
// schema and each role wires its parts in a few lines.
//
// Thread safety: pure functions.
#ifndef EDGESYNC_AGENT_SYNC_CONFIG_H_
#define EDGESYNC_AGENT_SYNC_CONFIG_H_

#include "firmware-config/config.h"
#include "sync/feed_puller.h"
#include "sync/region_hub.h"
#include "sync/uplink.h"

namespace edgesync {

UplinkOptions MakeUplinkOptions(const Config& config);
FeedPullerOptions MakeFeedPullerOptions(const Config& config);
RegionHubOptions MakeRegionHubOptions(const Config& config);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_SYNC_CONFIG_H_

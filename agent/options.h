// agent/options.h: each part's options from the loaded Config ([store],
// [ingest], [uplink], [[region]], [hub]), in one place, so store/ and sync/
// do not depend on the config schema and each role wires its parts in a few
// lines.
//
// Thread safety: pure functions.
#ifndef EDGESYNC_AGENT_OPTIONS_H_
#define EDGESYNC_AGENT_OPTIONS_H_

#include "agent/ingest/ingest.h"
#include "firmware-config/config.h"
#include "store/retention.h"
#include "store/store.h"
#include "sync/feed_puller.h"
#include "sync/region_hub.h"
#include "sync/uplink.h"

namespace edgesync {

StoreOptions StoreOptionsFromConfig(const Config& config);
RetentionOptions RetentionOptionsFromConfig(const Config& config);
IngestOptions IngestOptionsFromConfig(const Config& config);
MqttLinkOptions IngestLinkOptionsFromConfig(const Config& config);
UplinkOptions UplinkOptionsFromConfig(const Config& config);
FeedPullerOptions FeedPullerOptionsFromConfig(const Config& config);
RegionHubOptions RegionHubOptionsFromConfig(const Config& config);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_OPTIONS_H_

// sync/sync_defaults.h: the defaults (and the bounds sync itself relies on)
// of UplinkOptions, FeedPullerOptions, RegionHubOptions and the persistent
// session of MqttLinkOptions, each written once.
//
// The option structs start from these constants, and the option table
// (firmware-config/config.cc, which sits above sync/) shows, checks and
// documents the same ones: a default or bound is changed here and nowhere
// else. Values are in the unit the config file uses (seconds where the
// option's key ends in _s); the structs convert. Kept apart from the
// structs' headers so that firmware-config/config.h can include them
// without MQTT, FlatBuffers or the store.
//
// Thread safety: constants only.
#ifndef EDGESYNC_SYNC_SYNC_DEFAULTS_H_
#define EDGESYNC_SYNC_SYNC_DEFAULTS_H_

#include <cstdint>

namespace edgesync {

// Entries one batch may hold: a hub refuses to decode more
// (DecodeLimits::max_entries), so uplink.batch_max_readings stops here.
inline constexpr int64_t kMaxBatchEntries = 1000000;

// [uplink]: UplinkOptions; the feed puller shares the prefix, the answer
// timeout and the backoff, the region hub the prefix.
namespace uplink_options {

inline constexpr char kTopicPrefix[] = "edgesync";
inline constexpr int64_t kBatchMaxReadings = 5000;
inline constexpr int64_t kBatchMaxReadingsMax = kMaxBatchEntries;
// When a partial batch goes (sync/uplink.cc SendBatches): at once when
// nothing is in flight; while batches are in flight, once the region has
// answered them (Nagle's rule at the batch level), waiting at most
// kBatchMaxDelayMs; and never before it is kBatchMinDelayMs old.
// Batches thus grow with the rate times the round trip: low latency at a
// low rate, larger batches (fewer bytes per reading) at a high one
// (tests/bench/uplink_bench.cc; figures in docs/BENCHMARKS.md). Each batch
// carries a few hundred bytes of its own, so batch_min_delay_ms buys bytes
// with latency where a metered link costs more than a late reading.
inline constexpr int64_t kBatchMinDelayMs = 0;
inline constexpr int64_t kBatchMaxDelayMs = 200;
// A backlog batch's round trip is far longer than the hub needs to apply
// it, so the window must cover it: a drain on loopback stops getting faster
// at about 12 backlog batches in flight (~100 KB).
inline constexpr int64_t kWindow = 12;
// Batches refer to the series context the region holds (protocol 3):
// measured on the reference workload online (tests/bench/uplink_bench.cc,
// docs/BENCHMARKS.md) at default settings. false: every batch
// self-contained.
inline constexpr bool kSeriesContext = true;
inline constexpr int64_t kAckTimeoutMs = 10000;
// Bytes per second of MQTT packets the uplink sends its regions, at most
// (sync/uplink.h, docs/DEPLOY.md): 0 = no cap; for metered links.
inline constexpr int64_t kMaxBytesPerS = 0;
inline constexpr int64_t kMaxBytesPerSMax = int64_t{1} << 40;
// Readings committed during a backlog's drain go ahead of it (two lanes,
// sync/uplink.h): after a day's outage a reading taken now otherwise waits
// for the whole day to drain. false: strict LSN order.
inline constexpr bool kLiveLane = true;
// uplink.priority_topics: at most this many topic filters, one priority
// level each (the quality bits of store/types.h hold levels 1..3); the
// default is none (an empty list: strict lane order).
inline constexpr int64_t kMaxPriorityTopics = 3;
inline constexpr int64_t kBackoffBaseMs = 200;
inline constexpr int64_t kBackoffMaxMs = 30000;
inline constexpr int64_t kProbeIntervalMs = 5000;
inline constexpr int64_t kFailbackAfterS = 60;

}  // namespace uplink_options

// [hub]: RegionHubOptions.
namespace region_hub_options {

// Batches received and not yet applied; beyond it the hub stops reading
// its broker connection (sync/region_hub.h).
inline constexpr int64_t kMaxQueuedMessages = 1024;
// Series contexts of gateways held at most (bytes, estimated): ~0.8 MB for
// a gateway of 8,000 series, so 64 MiB keeps ~100 such gateways'
// (sync/series_context.h). Past it, the least recently used is dropped and
// its gateway's next batch is answered NoContext and resent
// self-contained.
inline constexpr int64_t kContextMaxBytes = int64_t{64} << 20;
inline constexpr int64_t kLeaseTtlS = 10;

}  // namespace region_hub_options

// [ingest] session_expiry_s: the persistent session of MqttLinkOptions.
namespace mqtt_link_options {

inline constexpr int64_t kSessionExpiryS = int64_t{7} * 86400;

}  // namespace mqtt_link_options

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_SYNC_DEFAULTS_H_

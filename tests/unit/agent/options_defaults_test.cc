// Every option default and every bound is one named constant. Where they
// live follows the layering (agent -> sync -> store -> platform, the option
// table of firmware-config above store/ and sync/, below agent/):
// - store/store_defaults.h: StoreOptions, RetentionOptions, HubStoreOptions;
// - sync/sync_defaults.h: UplinkOptions, FeedPullerOptions,
//   RegionHubOptions, the MQTT session (MqttLinkOptions), the batch size a
//   hub decodes (DecodeLimits);
// - firmware-config/ingest_defaults.h: IngestOptions (agent/ingest is above
//   the table, so its defaults sit in the table's layer instead).
// The runtime structs' initialisers and the table's rows (Config's
// initialisers, and the min/max of a row whose bound the runtime checks as
// well) both name these constants, in the config file's unit; no literal is
// written twice. A bound only the table knows stays a literal of its row;
// the runtime's own checks that are wider on purpose (positive split limits
// and retention steps: tests use tiny ones) are not table bounds.
//
// The tests hold all three together: a default-constructed struct equals
// the one filled from the default Config, field by field, wherever the table
// has the option; each row's default (as the table shows it: config
// example, docs/CONFIG.md) is the very constant; and where the runtime
// checks a bound, it refuses exactly outside the row's range.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "agent/ingest/intake_journal.h"
#include "agent/options.h"
#include "firmware-config/ingest_defaults.h"
#include "store/chunk_codec.h"
#include "store/hub_store.h"
#include "store/store_defaults.h"
#include "sync/sync_defaults.h"
#include "sync/wire.h"
#include "tests/support/process.h"

namespace edgesync {
namespace {

TEST(OptionsDefaultsTest, StoreOptionsMatchTheTable) {
  const StoreOptions plain;
  const StoreOptions table = StoreOptionsFromConfig(Config());
  EXPECT_EQ(plain.sync, table.sync);
  EXPECT_EQ(plain.initial_ranges, table.initial_ranges);
  EXPECT_EQ(plain.split_max_entries, table.split_max_entries);
  EXPECT_EQ(plain.split_max_bytes, table.split_max_bytes);
  EXPECT_EQ(plain.retention_age_ms, table.retention_age_ms);
  EXPECT_EQ(plain.ack_grace_ms, table.ack_grace_ms);
  EXPECT_EQ(plain.disk_policy, table.disk_policy);
  EXPECT_EQ(plain.max_bytes, table.max_bytes);
  EXPECT_EQ(plain.tombstone_retention_ms, table.tombstone_retention_ms);
  EXPECT_EQ(plain.remote_retention_ms, table.remote_retention_ms);
  EXPECT_EQ(plain.min_free_bytes, table.min_free_bytes);
  EXPECT_EQ(plain.dead_letter_cap, table.dead_letter_cap);
  EXPECT_EQ(plain.lease_expiry_ms, table.lease_expiry_ms);
  EXPECT_EQ(plain.compact_after_ms, table.compact_after_ms);
}

TEST(OptionsDefaultsTest, RetentionOptionsMatchTheTable) {
  const RetentionOptions plain;
  const RetentionOptions table = RetentionOptionsFromConfig(Config());
  EXPECT_EQ(plain.interval_ms, table.interval_ms);
  EXPECT_EQ(plain.step_rows, table.step_rows);
}

// The hub roles fill HubStoreOptions from hub.feed_retention_s
// (agent/region_hub.cc, agent/hub_reads.cc).
TEST(OptionsDefaultsTest, HubStoreOptionsMatchTheTable) {
  EXPECT_EQ(HubStoreOptions().feed_retention_ms, Config().hub_feed_retention_s * 1000);
}

TEST(OptionsDefaultsTest, IngestOptionsMatchTheTable) {
  const IngestOptions plain;
  const IngestOptions table = IngestOptionsFromConfig(Config());
  EXPECT_EQ(plain.max_payload_bytes, table.max_payload_bytes);
  EXPECT_EQ(plain.patterns, table.patterns);
  EXPECT_EQ(plain.device_topic, table.device_topic);
  EXPECT_EQ(plain.priority_topics, table.priority_topics);
  EXPECT_EQ(plain.device_rate, table.device_rate);
  EXPECT_EQ(plain.device_burst, table.device_burst);
  EXPECT_EQ(plain.device_backlog_ms, table.device_backlog_ms);
  EXPECT_EQ(plain.max_away_ms, table.max_away_ms);
  EXPECT_EQ(plain.epoch_floor_ms, table.epoch_floor_ms);
  EXPECT_EQ(plain.clock_trust, table.clock_trust);
  EXPECT_EQ(plain.batch_max, table.batch_max);
  EXPECT_EQ(plain.batch_delay_ms, table.batch_delay_ms);
  EXPECT_EQ(plain.synced_commits, table.synced_commits);
  EXPECT_EQ(plain.ack, table.ack);
  EXPECT_EQ(plain.journal_segment_bytes, table.journal_segment_bytes);
  EXPECT_EQ(plain.journal_sync, table.journal_sync);
  // The journal Ingest opens takes its segment size from IngestOptions; a
  // journal opened on its own starts from the same one.
  EXPECT_EQ(IntakeJournalOptions().segment_bytes, table.journal_segment_bytes);
}

TEST(OptionsDefaultsTest, IngestLinkOptionsMatchTheTable) {
  const MqttLinkOptions plain;
  const MqttLinkOptions table = IngestLinkOptionsFromConfig(Config());
  EXPECT_EQ(plain.session_expiry_s, table.session_expiry_s);
  EXPECT_EQ(table.mqtt_version, ingest_options::kMqttVersion);
}

TEST(OptionsDefaultsTest, UplinkOptionsMatchTheTable) {
  const UplinkOptions plain;
  const UplinkOptions table = UplinkOptionsFromConfig(Config());
  EXPECT_EQ(plain.topic_prefix, table.topic_prefix);
  EXPECT_EQ(plain.batch_max_readings, table.batch_max_readings);
  EXPECT_EQ(plain.batch_min_delay_ms, table.batch_min_delay_ms);
  EXPECT_EQ(plain.batch_max_delay_ms, table.batch_max_delay_ms);
  EXPECT_EQ(plain.window, table.window);
  EXPECT_EQ(plain.series_context, table.series_context);
  EXPECT_EQ(plain.ack_timeout_ms, table.ack_timeout_ms);
  EXPECT_EQ(plain.backoff_base_ms, table.backoff_base_ms);
  EXPECT_EQ(plain.backoff_max_ms, table.backoff_max_ms);
  EXPECT_EQ(plain.probe_interval_ms, table.probe_interval_ms);
  EXPECT_EQ(plain.failback_after_ms, table.failback_after_ms);
  EXPECT_EQ(plain.max_bytes_per_s, table.max_bytes_per_s);
  EXPECT_EQ(plain.live_lane, table.live_lane);
  EXPECT_EQ(plain.priority_levels, table.priority_levels);
}

TEST(OptionsDefaultsTest, FeedPullerOptionsMatchTheTable) {
  const FeedPullerOptions plain;
  const FeedPullerOptions table = FeedPullerOptionsFromConfig(Config());
  EXPECT_EQ(plain.topic_prefix, table.topic_prefix);
  EXPECT_EQ(plain.answer_timeout_ms, table.answer_timeout_ms);
  EXPECT_EQ(plain.backoff_base_ms, table.backoff_base_ms);
  EXPECT_EQ(plain.backoff_max_ms, table.backoff_max_ms);
}

TEST(OptionsDefaultsTest, RegionHubOptionsMatchTheTable) {
  const RegionHubOptions plain;
  const RegionHubOptions table = RegionHubOptionsFromConfig(Config());
  EXPECT_EQ(plain.topic_prefix, table.topic_prefix);
  EXPECT_EQ(plain.max_queued_messages, table.max_queued_messages);
  EXPECT_EQ(plain.context_max_bytes, table.context_max_bytes);
  EXPECT_EQ(plain.lease_ttl_ms, table.lease_ttl_ms);
}

// Each table row with a runtime counterpart: the default the table shows
// (ListOptions: `config example`, `config check`, docs/CONFIG.md) is the
// module's constant, not a value that merely happens to equal the struct's.
TEST(OptionsDefaultsTest, EachRowsDefaultIsTheNamedConstant) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  const auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  const auto s = [](const char* v) { return "\"" + std::string(v) + "\""; };
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"store.initial_ranges", n(store_options::kInitialRanges)},
      {"store.split_max_entries", n(store_options::kSplitMaxEntries)},
      {"store.split_max_bytes", n(store_options::kSplitMaxBytes)},
      {"store.retention_age_s", n(store_options::kRetentionAgeS)},
      {"store.ack_grace_s", n(store_options::kAckGraceS)},
      {"store.max_bytes", n(store_options::kMaxBytes)},
      {"store.tombstone_retention_s", n(store_options::kTombstoneRetentionS)},
      {"store.read_view_retention_s", n(store_options::kReadViewRetentionS)},
      {"store.min_free_bytes", n(store_options::kMinFreeBytes)},
      {"store.retention_interval_s", n(retention_options::kIntervalS)},
      {"store.prune_step_rows", n(retention_options::kStepRows)},
      {"store.compact_after_s", n(store_options::kCompactAfterS)},
      {"store.dead_letter_cap", n(store_options::kDeadLetterCap)},
      {"store.lease_expiry_ms", n(store_options::kLeaseExpiryMs)},
      {"ingest.session_expiry_s", n(mqtt_link_options::kSessionExpiryS)},
      {"ingest.batch_max", n(ingest_options::kBatchMax)},
      {"ingest.batch_delay_ms", n(ingest_options::kBatchDelayMs)},
      {"ingest.max_payload_bytes", n(ingest_options::kMaxPayloadBytes)},
      {"ingest.device_rate", "100.0"},  // kDeviceRate as TOML shows it; checked below
      {"ingest.device_burst", n(ingest_options::kDeviceBurst)},
      {"ingest.device_backlog_s", n(ingest_options::kDeviceBacklogS)},
      {"ingest.epoch_floor", s(ingest_options::kEpochFloor)},
      {"ingest.clock_trust", s(ingest_options::kClockTrust)},
      {"ingest.mqtt_version", n(ingest_options::kMqttVersion)},
      {"ingest.journal_segment_bytes", n(ingest_options::kJournalSegmentBytes)},
      {"ingest.subscriptions", "[" + s(ingest_options::kSubscriptions[0]) + ", " +
                                   s(ingest_options::kSubscriptions[1]) + "]"},
      {"ingest.device_topic", s(ingest_options::kDeviceTopic)},
      {"uplink.topic_prefix", s(uplink_options::kTopicPrefix)},
      {"uplink.batch_max_readings", n(uplink_options::kBatchMaxReadings)},
      {"uplink.batch_min_delay_ms", n(uplink_options::kBatchMinDelayMs)},
      {"uplink.batch_max_delay_ms", n(uplink_options::kBatchMaxDelayMs)},
      {"uplink.series_context", b(uplink_options::kSeriesContext)},
      {"uplink.window", n(uplink_options::kWindow)},
      {"uplink.ack_timeout_ms", n(uplink_options::kAckTimeoutMs)},
      {"uplink.backoff_base_ms", n(uplink_options::kBackoffBaseMs)},
      {"uplink.backoff_max_ms", n(uplink_options::kBackoffMaxMs)},
      {"uplink.probe_interval_ms", n(uplink_options::kProbeIntervalMs)},
      {"uplink.failback_after_s", n(uplink_options::kFailbackAfterS)},
      {"uplink.priority_topics", "[]"},  // none by default; at most kMaxPriorityTopics
      {"hub.max_queued_messages", n(region_hub_options::kMaxQueuedMessages)},
      {"hub.context_max_bytes", n(region_hub_options::kContextMaxBytes)},
      {"hub.feed_retention_s", n(hub_store_options::kFeedRetentionS)},
      {"hub.lease_ttl_s", n(region_hub_options::kLeaseTtlS)},
  };
  static_assert(sizeof(ingest_options::kSubscriptions) / sizeof(ingest_options::kSubscriptions[0]) == 2,
                "the subscriptions row above lists each default pattern");
  EXPECT_EQ(Config().ingest_device_rate, ingest_options::kDeviceRate);
  const std::vector<OptionDoc> table = ListOptions();
  for (const auto& [key, constant] : rows) {
    const OptionDoc* row = nullptr;
    for (const OptionDoc& o : table) {
      if (o.key == key) row = &o;
    }
    ASSERT_NE(row, nullptr) << key << " is not in the table";
    EXPECT_EQ(row->default_toml, constant) << key;
  }
}

// The compile-time reading of the epoch floor agrees with the config's.
TEST(OptionsDefaultsTest, EpochFloorMillisAreTheFloorsText) {
  int64_t ms = 0;
  ASSERT_TRUE(ParseUtcMillis(ingest_options::kEpochFloor, &ms));
  EXPECT_EQ(ingest_options::kEpochFloorMs, ms);
  int64_t leap_day = 0;
  ASSERT_TRUE(ParseUtcMillis("2028-02-29T23:59:58Z", &leap_day));
  EXPECT_EQ(ingest_options::UtcMillisOf("2028-02-29T23:59:58Z"), leap_day);
  EXPECT_EQ(ingest_options::UtcMillisOf("1970-01-01T00:00:00Z"), 0);
}

// Whether the config check accepts `value` for [section] key.
bool TableAccepts(const std::string& section, const std::string& key, int64_t value) {
  Config config;
  std::vector<ConfigError> errors;
  const std::string text = "[" + section + "]\n" + key + " = " + std::to_string(value) + "\n";
  return ParseConfig(text, "bounds.toml", ConfigRole::kAny, &config, &errors).ok();
}

// The one bound both the table and the store check: the store refuses
// exactly what the config check refuses.
TEST(OptionsBoundsTest, StoreRefusesInitialRangesExactlyOutsideTheTablesRange) {
  test::TempDir dir;
  int n = 0;
  for (int64_t ranges : {store_options::kInitialRangesMin - 1, store_options::kInitialRangesMin,
                         store_options::kInitialRangesMax, store_options::kInitialRangesMax + 1}) {
    const bool inside = ranges >= store_options::kInitialRangesMin && ranges <= store_options::kInitialRangesMax;
    EXPECT_EQ(TableAccepts("store", "initial_ranges", ranges), inside) << ranges;
    StoreOptions o;
    o.path = dir.File("store-" + std::to_string(n++) + ".db");
    o.gateway_id = "gw";
    o.initial_ranges = static_cast<int>(ranges);
    std::unique_ptr<Store> store;
    Status s = Store::Open(o, &store);
    if (inside) {
      EXPECT_TRUE(s.ok()) << ranges << ": " << s.ToString();
    } else {
      EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << ranges;
    }
  }
}

// A compacted span is decoded as one chunk: the store's span size stays
// within what one chunk may hold.
TEST(OptionsBoundsTest, CompactSpanStopsAtWhatOneChunkMayHold) {
  EXPECT_EQ(store_options::kCompactSpanReadingsMax, static_cast<int64_t>(kMaxChunkReadings));
  EXPECT_LE(store_options::kCompactSpanReadings, store_options::kCompactSpanReadingsMax);
  EXPECT_EQ(StoreOptions().compact_span_readings, store_options::kCompactSpanReadings);
  EXPECT_TRUE(StoreOptions().compact_only_smaller);
}

// A hub decodes batches of at most DecodeLimits::max_entries entries: the
// largest batch the table lets a gateway send is one a hub takes.
TEST(OptionsBoundsTest, UplinkBatchStopsAtWhatAHubDecodes) {
  EXPECT_EQ(static_cast<int64_t>(DecodeLimits().max_entries), uplink_options::kBatchMaxReadingsMax);
  EXPECT_EQ(static_cast<int64_t>(RegionHubOptions().limits.max_entries), uplink_options::kBatchMaxReadingsMax);
  EXPECT_TRUE(TableAccepts("uplink", "batch_max_readings", uplink_options::kBatchMaxReadingsMax));
  EXPECT_FALSE(TableAccepts("uplink", "batch_max_readings", uplink_options::kBatchMaxReadingsMax + 1));
}

}  // namespace
}  // namespace edgesync

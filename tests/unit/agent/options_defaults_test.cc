// The option table (firmware-config/config.cc) is the one home of every
// default. The runtime option structs of store/, sync/ and agent/ keep
// initialisers of their own (those layers do not see the config schema, and
// tests build them directly), so this test holds them to the table: a
// default-constructed struct must equal the one filled from the default
// Config, field by field, wherever the table has the option.
#include <gtest/gtest.h>

#include "agent/options.h"

namespace edgesync {
namespace {

TEST(OptionsDefaultsTest, StoreOptionsMatchTheTable) {
  const StoreOptions plain;
  const StoreOptions table = StoreOptionsFromConfig(Config());
  EXPECT_EQ(plain.initial_ranges, table.initial_ranges);
  EXPECT_EQ(plain.split_max_entries, table.split_max_entries);
  EXPECT_EQ(plain.split_max_bytes, table.split_max_bytes);
  EXPECT_EQ(plain.retention_age_ms, table.retention_age_ms);
  EXPECT_EQ(plain.disk_policy, table.disk_policy);
  EXPECT_EQ(plain.max_bytes, table.max_bytes);
  EXPECT_EQ(plain.tombstone_retention_ms, table.tombstone_retention_ms);
  EXPECT_EQ(plain.remote_retention_ms, table.remote_retention_ms);
  EXPECT_EQ(plain.min_free_bytes, table.min_free_bytes);
  EXPECT_EQ(plain.dead_letter_cap, table.dead_letter_cap);
  EXPECT_EQ(plain.lease_expiry_ms, table.lease_expiry_ms);
  EXPECT_EQ(plain.compact_after_ms, table.compact_after_ms);
  EXPECT_EQ(plain.compact_span_readings, table.compact_span_readings);
  EXPECT_EQ(plain.compact_only_smaller, table.compact_only_smaller);
}

TEST(OptionsDefaultsTest, RetentionOptionsMatchTheTable) {
  const RetentionOptions plain;
  const RetentionOptions table = RetentionOptionsFromConfig(Config());
  EXPECT_EQ(plain.interval_ms, table.interval_ms);
  EXPECT_EQ(plain.step_rows, table.step_rows);
}

TEST(OptionsDefaultsTest, IngestOptionsMatchTheTable) {
  const IngestOptions plain;
  const IngestOptions table = IngestOptionsFromConfig(Config());
  EXPECT_EQ(plain.max_payload_bytes, table.max_payload_bytes);
  EXPECT_EQ(plain.patterns, table.patterns);
  EXPECT_EQ(plain.device_topic, table.device_topic);
  EXPECT_EQ(plain.device_rate, table.device_rate);
  EXPECT_EQ(plain.device_burst, table.device_burst);
  EXPECT_EQ(plain.device_backlog_ms, table.device_backlog_ms);
  EXPECT_EQ(plain.epoch_floor_ms, table.epoch_floor_ms);
  EXPECT_EQ(plain.clock_trust, table.clock_trust);
  EXPECT_EQ(plain.batch_max, table.batch_max);
  EXPECT_EQ(plain.batch_delay_ms, table.batch_delay_ms);
  EXPECT_EQ(plain.synced_commits, table.synced_commits);
  EXPECT_EQ(plain.ack, table.ack);
  EXPECT_EQ(plain.journal_segment_bytes, table.journal_segment_bytes);
  EXPECT_EQ(plain.journal_sync, table.journal_sync);
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

}  // namespace
}  // namespace edgesync

#include "agent/options.h"

#include <algorithm>

#include "firmware-config/transport.h"

namespace edgesync {
namespace {

// A broker connection as every role configures it: URI, credentials file, TLS
// (a CA or client certificate means TLS whatever the URI's scheme says).
MqttLinkOptions LinkOptions(const std::string& uri, const std::string& credentials_file, const TlsConfig& tls) {
  MqttLinkOptions o;
  o.uri = EffectiveBrokerUri(uri, tls);
  o.credentials_file = credentials_file;
  o.ca_file = tls.ca_file;
  o.cert_file = tls.cert_file;
  o.key_file = tls.key_file;
  return o;
}

std::vector<UplinkRegion> Regions(const Config& c) {
  std::vector<UplinkRegion> out;
  for (const RegionConfig& r : c.regions) {
    UplinkRegion u;
    u.name = r.name;
    u.preference = r.preference;
    u.link = LinkOptions(r.uri, r.credentials_file, r.tls);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace

IngestOptions IngestOptionsFromConfig(const Config& c) {
  IngestOptions o;
  o.patterns.clear();
  for (const auto& s : c.subscriptions) o.patterns.push_back(s.pattern);
  o.device_topic = c.ingest_device_topic;
  o.priority_topics = c.uplink_priority_topics;
  o.max_payload_bytes = c.ingest_max_payload_bytes;
  o.device_rate = c.ingest_device_rate;
  o.device_burst = static_cast<double>(c.ingest_device_burst);
  o.device_backlog_ms = c.ingest_device_backlog_s * 1000;
  // The broker keeps an MQTT 5 session this long after we leave (3.1.1
  // sessions never expire); a backlog counts at most device_backlog_s.
  o.max_away_ms = (c.ingest_mqtt_version == 5 ? std::min(c.ingest_session_expiry_s, c.ingest_device_backlog_s)
                                              : c.ingest_device_backlog_s) * 1000;
  ParseUtcMillis(c.ingest_epoch_floor, &o.epoch_floor_ms);
  o.clock_trust = c.ingest_clock_trust;
  o.clock_trust_marker = c.data_dir.empty() ? std::string() : c.data_dir + "/clock-trusted";
  o.batch_max = c.ingest_batch_max;
  o.batch_delay_ms = c.ingest_batch_delay_ms;
  o.synced_commits = c.store_sync != "normal";
  o.ack = c.ingest_ack == "on-receipt"     ? AckMode::kOnReceipt
          : c.ingest_ack == "after-commit" ? AckMode::kAfterCommit
                                           : AckMode::kAfterJournal;
  o.journal_dir = c.ingest_journal_dir.empty() ? c.data_dir : c.ingest_journal_dir;
  o.journal_segment_bytes = c.ingest_journal_segment_bytes;
  // "commit" syncs the store's commits but not the intake journal: a power
  // cut then loses at most the commit group being gathered.
  o.journal_sync = c.store_sync == "full";
  return o;
}

MqttLinkOptions IngestLinkOptionsFromConfig(const Config& c) {
  MqttLinkOptions o = LinkOptions(c.ingest_broker_uri, c.ingest_credentials_file, c.ingest_tls);
  o.client_id = c.ClientId();
  o.mqtt_version = static_cast<int>(c.ingest_mqtt_version);
  o.clean_start = false;
  o.session_expiry_s = c.ingest_session_expiry_s;
  return o;
}

StoreOptions StoreOptionsFromConfig(const Config& c) {
  StoreOptions o;
  o.path = c.StorePath();
  o.gateway_id = c.gateway_id;
  o.sync = c.store_sync == "normal" ? StoreOptions::Sync::kNormal : StoreOptions::Sync::kFull;
  o.initial_ranges = static_cast<int>(c.store_initial_ranges);
  o.split_max_entries = c.store_split_max_entries;
  o.split_max_bytes = c.store_split_max_bytes;
  o.retention_age_ms = c.store_retention_age_s * 1000;
  o.ack_grace_ms = c.store_ack_grace_s * 1000;
  o.disk_policy = c.store_disk_policy == "drop-oldest" ? StoreOptions::DiskPolicy::kDropOldest
                                                       : StoreOptions::DiskPolicy::kRejectNew;
  o.max_bytes = c.store_max_bytes;
  o.tombstone_retention_ms = c.store_tombstone_retention_s * 1000;
  o.remote_retention_ms = c.store_read_view_retention_s * 1000;  // the hub role sets its feed's
  o.min_free_bytes = c.store_min_free_bytes;
  o.dead_letter_cap = c.store_dead_letter_cap;
  o.lease_expiry_ms = c.store_lease_expiry_ms;
  o.compact_after_ms = c.store_compact_after_s * 1000;
  return o;
}

RetentionOptions RetentionOptionsFromConfig(const Config& c) {
  RetentionOptions o;
  o.interval_ms = c.store_retention_interval_s * 1000;
  o.step_rows = c.store_prune_step_rows;
  return o;
}

UplinkOptions UplinkOptionsFromConfig(const Config& c) {
  UplinkOptions o;
  o.gateway_id = c.gateway_id;
  o.topic_prefix = c.uplink_topic_prefix;
  o.regions = Regions(c);
  o.batch_max_readings = static_cast<size_t>(c.uplink_batch_max_readings);
  o.batch_min_delay_ms = c.uplink_batch_min_delay_ms;
  o.batch_max_delay_ms = c.uplink_batch_max_delay_ms;
  o.window = static_cast<size_t>(c.uplink_window);
  o.series_context = c.uplink_series_context;
  o.ack_timeout_ms = c.uplink_ack_timeout_ms;
  o.backoff_base_ms = c.uplink_backoff_base_ms;
  o.backoff_max_ms = c.uplink_backoff_max_ms;
  o.probe_interval_ms = c.uplink_probe_interval_ms;
  o.failback_after_ms = c.uplink_failback_after_s * 1000;
  o.max_bytes_per_s = c.uplink_max_bytes_per_s;
  o.live_lane = c.uplink_live_lane;
  o.priority_levels = c.uplink_priority_topics.size();
  return o;
}

FeedPullerOptions FeedPullerOptionsFromConfig(const Config& c) {
  FeedPullerOptions o;
  o.gateway_id = c.gateway_id;
  o.topic_prefix = c.uplink_topic_prefix;
  o.regions = Regions(c);
  o.answer_timeout_ms = c.uplink_ack_timeout_ms;
  o.backoff_base_ms = c.uplink_backoff_base_ms;
  o.backoff_max_ms = c.uplink_backoff_max_ms;
  return o;
}

RegionHubOptions RegionHubOptionsFromConfig(const Config& c) {
  RegionHubOptions o;
  o.region = c.hub_region;
  o.topic_prefix = c.uplink_topic_prefix;
  o.link = LinkOptions(c.hub_broker_uri, c.hub_credentials_file, c.hub_tls);
  o.max_queued_messages = static_cast<size_t>(c.hub_max_queued_messages);
  o.context_max_bytes = static_cast<size_t>(c.hub_context_max_bytes);
  o.lease_ttl_ms = c.hub_lease_ttl_s * 1000;
  return o;
}

}  // namespace edgesync

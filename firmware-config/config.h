// firmware-config/config.h: edgesync's configuration, one TOML file.
//
// Parsed with toml11 (Debian libtoml11-dev): it keeps each value's file and
// line, so every error names file, line and key. Every option is declared
// once in config.cc (key, type, default, range, one-line doc); the example
// file firmware-config/edgesync.example.toml lists those an operator decides
// at their defaults and docs/CONFIG.md lists them all, and tests keep both in
// step with the table. An option that a runtime
// option struct also holds takes its default (and any bound the runtime
// checks too) from that module's named constant (store/store_defaults.h,
// sync/sync_defaults.h, firmware-config/ingest_defaults.h), never from a
// literal of its own (tests/unit/agent/options_defaults_test.cc).
//
// Thread safety: Config is a value; load it once and copy it.
#ifndef EDGESYNC_FIRMWARE_CONFIG_CONFIG_H_
#define EDGESYNC_FIRMWARE_CONFIG_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "firmware-config/ingest_defaults.h"
#include "platform/status.h"
#include "platform/topic_id.h"
#include "store/store_defaults.h"
#include "sync/sync_defaults.h"

namespace edgesync {

// A ca_file or cert_file means TLS even beside a tcp:// URI (transport.h).
struct TlsConfig {
  std::string ca_file;    // verify the server against this CA
  std::string cert_file;  // client certificate (mutual TLS)
  std::string key_file;
};

struct RegionConfig {
  std::string name;
  std::string uri;
  int64_t preference = 0;             // lower is preferred when round trips tie
  std::string credentials_file;       // "user:password" on one line; never logged
  TlsConfig tls;
  bool allow_insecure = false;        // plaintext off loopback accepted (transport.h)
};

struct SubscriptionConfig {
  std::string pattern;  // topic with {deviceId} and {metric} placeholders
};

// ingest.subscriptions' default (ingest_options::kSubscriptions).
inline std::vector<SubscriptionConfig> DefaultSubscriptions() {
  std::vector<SubscriptionConfig> out;
  for (const char* pattern : ingest_options::kSubscriptions) out.push_back({pattern});
  return out;
}

struct Config {
  std::string source;  // file the config was read from ("" = defaults)
  // Retired options the file still sets, each "key: why it is ignored"
  // (logged at start and printed by `config check`).
  std::vector<std::string> retired_options;

  // [gateway]
  std::string gateway_id;
  std::string data_dir = "/var/lib/edgesync";
  std::string log_level = "info";
  std::string status_file;  // "" = <data_dir>/status.json

  // [store]
  std::string store_path;  // "" = <data_dir>/store.db
  std::string store_sync = "normal";
  // Defaults and why: store/store_defaults.h.
  int64_t store_initial_ranges = store_options::kInitialRanges;
  int64_t store_split_max_entries = store_options::kSplitMaxEntries;
  int64_t store_split_max_bytes = store_options::kSplitMaxBytes;
  int64_t store_retention_age_s = store_options::kRetentionAgeS;
  int64_t store_ack_grace_s = store_options::kAckGraceS;
  std::string store_disk_policy = "reject-new";
  int64_t store_max_bytes = store_options::kMaxBytes;
  int64_t store_tombstone_retention_s = store_options::kTombstoneRetentionS;
  int64_t store_read_view_retention_s = store_options::kReadViewRetentionS;
  int64_t store_min_free_bytes = store_options::kMinFreeBytes;
  int64_t store_retention_interval_s = retention_options::kIntervalS;
  int64_t store_prune_step_rows = retention_options::kStepRows;
  int64_t store_dead_letter_cap = store_options::kDeadLetterCap;
  int64_t store_lease_expiry_ms = store_options::kLeaseExpiryMs;
  int64_t store_compact_after_s = store_options::kCompactAfterS;

  // [ingest]
  std::string ingest_broker_uri = "tcp://127.0.0.1:1883";
  std::string ingest_client_id;  // "" = edgesync-<gateway id>
  std::string ingest_credentials_file;
  TlsConfig ingest_tls;
  // Defaults and why: firmware-config/ingest_defaults.h.
  int64_t ingest_session_expiry_s = mqtt_link_options::kSessionExpiryS;
  int64_t ingest_batch_max = ingest_options::kBatchMax;
  int64_t ingest_batch_delay_ms = ingest_options::kBatchDelayMs;
  int64_t ingest_max_payload_bytes = ingest_options::kMaxPayloadBytes;
  double ingest_device_rate = ingest_options::kDeviceRate;
  int64_t ingest_device_burst = ingest_options::kDeviceBurst;
  int64_t ingest_device_backlog_s = ingest_options::kDeviceBacklogS;
  std::string ingest_epoch_floor = ingest_options::kEpochFloor;
  std::string ingest_clock_trust = ingest_options::kClockTrust;
  int64_t ingest_mqtt_version = ingest_options::kMqttVersion;
  std::string ingest_ack = "after-journal";  // or "after-commit" (no journal), "on-receipt" (bounded loss window)
  std::string ingest_journal_dir;            // "" = data_dir
  int64_t ingest_journal_segment_bytes = ingest_options::kJournalSegmentBytes;
  std::vector<SubscriptionConfig> subscriptions = DefaultSubscriptions();
  std::string ingest_device_topic = ingest_options::kDeviceTopic;  // "" = none

  // [uplink]
  // Defaults and why: sync/sync_defaults.h.
  std::string uplink_topic_prefix = uplink_options::kTopicPrefix;
  int64_t uplink_batch_max_readings = uplink_options::kBatchMaxReadings;
  int64_t uplink_batch_min_delay_ms = uplink_options::kBatchMinDelayMs;
  bool uplink_series_context = uplink_options::kSeriesContext;
  int64_t uplink_batch_max_delay_ms = uplink_options::kBatchMaxDelayMs;
  int64_t uplink_window = uplink_options::kWindow;
  int64_t uplink_ack_timeout_ms = uplink_options::kAckTimeoutMs;
  int64_t uplink_backoff_base_ms = uplink_options::kBackoffBaseMs;
  int64_t uplink_backoff_max_ms = uplink_options::kBackoffMaxMs;
  int64_t uplink_probe_interval_ms = uplink_options::kProbeIntervalMs;
  int64_t uplink_failback_after_s = uplink_options::kFailbackAfterS;
  int64_t uplink_max_bytes_per_s = uplink_options::kMaxBytesPerS;
  bool uplink_live_lane = uplink_options::kLiveLane;
  // MQTT topic filters in priority order (at most
  // uplink_options::kMaxPriorityTopics); empty = none.
  std::vector<std::string> uplink_priority_topics;

  // [[region]]
  std::vector<RegionConfig> regions;

  // [metrics]: the status page and Prometheus endpoint of both roles
  std::string metrics_listen = "127.0.0.1:9464";  // host:port; "" = off

  // [hub]: only for `edgesync region`
  std::string hub_region;          // this hub's region name
  std::string hub_broker_uri = "tcp://127.0.0.1:1883";
  // Defaults and why: sync/sync_defaults.h, store/store_defaults.h.
  int64_t hub_max_queued_messages = region_hub_options::kMaxQueuedMessages;
  int64_t hub_context_max_bytes = region_hub_options::kContextMaxBytes;
  std::string hub_credentials_file;
  TlsConfig hub_tls;
  bool hub_allow_insecure = false;
  int64_t hub_feed_retention_s = hub_store_options::kFeedRetentionS;
  std::string hub_store;           // "" = SQLite at StorePath(); "postgresql://..." (store/hub_store.h)
  std::string hub_password_file;   // the PostgreSQL password, first line; never logged
  std::string hub_id;              // "" = the host name (agent/region_hub.cc)
  int64_t hub_lease_ttl_s = region_hub_options::kLeaseTtlS;

  std::string StorePath() const { return store_path.empty() ? data_dir + "/store.db" : store_path; }
  std::string StatusPath() const { return status_file.empty() ? data_dir + "/status.json" : status_file; }
  std::string ClientId() const { return ingest_client_id.empty() ? "edgesync-" + gateway_id : ingest_client_id; }
};

// One problem found in a config file: "file:line: key: message".
struct ConfigError {
  std::string file;
  int line = 0;  // 0 when the whole file is at fault
  std::string key;
  std::string message;
  std::string ToString() const;
};

enum class ConfigRole { kAny, kGateway, kRegion };

// Reads and checks a file. Collects every error it can (not just the first);
// returns InvalidArgument when there are any, with *errors filled.
Status LoadConfig(const std::string& path, ConfigRole role, Config* config, std::vector<ConfigError>* errors);
// Same, from text (tests); `name` stands in for the file name.
Status ParseConfig(const std::string& text, const std::string& name, ConfigRole role, Config* config,
                   std::vector<ConfigError>* errors);

// The effective configuration as TOML, every option shown; secrets are never
// printed (credential files are paths, not contents).
std::string DumpConfig(const Config& config);

// Every option's dotted key ("store.sync"), its default as TOML text and its
// doc line, for the example-file test and `edgesync config check`.
struct OptionDoc {
  std::string key;
  std::string default_toml;
  std::string doc;
  bool in_example = false;  // an option an operator decides: ExampleConfig lists it
};
std::vector<OptionDoc> ListOptions();

// A commented config listing the options an operator decides (identity,
// links, trust, retention, the power-cut loss window, limits) at their
// defaults with their doc lines; the rest are tuning, in docs/CONFIG.md
// (what firmware-config/edgesync.example.toml holds; a test keeps them equal).
std::string ExampleConfig();
// docs/CONFIG.md: every option of the table with its default, what it
// accepts and its meaning, as Markdown.
std::string ConfigReference();

// "2026-01-01T00:00:00Z" (UTC) to Unix ms; false if not of that form.
bool ParseUtcMillis(const std::string& text, int64_t* ms);

}  // namespace edgesync

#endif  // EDGESYNC_FIRMWARE_CONFIG_CONFIG_H_

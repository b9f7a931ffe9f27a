// firmware-config/config.h: edgesync's configuration, one TOML file.
//
// Parsed with toml11 (Debian libtoml11-dev): it keeps each value's file and
// line, so every error names file, line and key. Every option is declared
// once in config.cc (key, type, default, range, one-line doc); the example
// file firmware-config/edgesync.example.toml lists the same options at their
// defaults, and a test keeps the two in step.
//
// Thread safety: Config is a value; load it once and copy it.
#ifndef EDGESYNC_FIRMWARE_CONFIG_CONFIG_H_
#define EDGESYNC_FIRMWARE_CONFIG_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "platform/status.h"
#include "platform/topic_id.h"

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
  int64_t store_initial_ranges = 4;
  int64_t store_split_max_entries = 1000000;
  int64_t store_split_max_bytes = 64 << 20;
  int64_t store_retention_age_s = 7 * 86400;
  // Acknowledged readings are also kept this long after their
  // acknowledgement under normal space, so that a region whose store is lost
  // (a dead disk, a rebuilt machine, a restored backup) is refilled by its
  // gateways. 72 h: a hub lost on a Friday evening and rebuilt on Monday
  // morning; the cost is disk only where retention_age_s is shorter than
  // that or acknowledgements come late (space pressure prunes regardless).
  int64_t store_ack_grace_s = 72 * 3600;
  std::string store_disk_policy = "reject-new";
  int64_t store_max_bytes = 0;
  int64_t store_tombstone_retention_s = 30 * 86400;
  int64_t store_read_view_retention_s = 7 * 86400;
  int64_t store_min_free_bytes = 64 << 20;
  int64_t store_retention_interval_s = 10;
  // Rows one retention step deletes in one write transaction: ingest waits
  // at most one step for the write lock. The longest 2000-row step held it
  // about half as long as the longest 1000-reading ingest commit
  // (tests/bench/retention_bench.cc).
  int64_t store_prune_step_rows = 2000;
  int64_t store_dead_letter_cap = 1000;
  int64_t store_lease_expiry_ms = 15000;
  // Compaction (store/sqlite_store_compact.cc): acknowledged commit chunks
  // older than this become per-series blocks. Ten minutes keeps the recent
  // part (what a feed consumer following the head reads) in commit chunks.
  int64_t store_compact_after_s = 600;
  // Readings per compacted span: a reader by LSN of a span decodes it whole
  // (32 bytes a reading: 4 MiB at this size), and a one-series query reads
  // one block per span (tests/bench/storage_bench.cc measures both).
  int64_t store_compact_span_readings = 131072;
  // A span whose blocks would take more room than its chunks (8,000 series
  // in a span: 3.57 -> 8.94 bytes a reading in bench_retention) is left as
  // it is unless this is set.
  bool store_compact_always = false;

  // [ingest]
  std::string ingest_broker_uri = "tcp://127.0.0.1:1883";
  std::string ingest_client_id;  // "" = edgesync-<gateway id>
  std::string ingest_credentials_file;
  TlsConfig ingest_tls;
  int64_t ingest_session_expiry_s = 7 * 86400;
  int64_t ingest_batch_max = 2000;
  // The cap of the adaptive commit groups (agent/ingest/commit_pacer.h).
  int64_t ingest_batch_delay_ms = 500;
  int64_t ingest_max_payload_bytes = 65536;
  double ingest_device_rate = 100.0;
  int64_t ingest_device_burst = 200;
  int64_t ingest_device_backlog_s = 7 * 86400;
  std::string ingest_epoch_floor = "2026-01-01T00:00:00Z";
  std::string ingest_clock_trust = "kernel";
  int64_t ingest_mqtt_version = 5;          // 4 = MQTT 3.1.1, 5 = MQTT 5
  std::string ingest_ack = "after-journal";  // or "after-commit" (no journal), "on-receipt" (bounded loss window)
  std::string ingest_journal_dir;            // "" = data_dir
  // 4 MiB: each segment starts its series dictionary again (~25 bytes a
  // series, ~200 KB for the reference workload's 8,000 series).
  int64_t ingest_journal_segment_bytes = 4 << 20;
  std::vector<SubscriptionConfig> subscriptions = {{"sensors/{deviceId}/{metric}"}, {"sensors/{deviceId}"}};
  // Where devices publish their descriptions (docs/INGEST.md); "" = none.
  std::string ingest_device_topic = "devices/{deviceId}/meta";

  // [uplink]
  std::string uplink_topic_prefix = "edgesync";
  int64_t uplink_batch_max_readings = 5000;
  // When a partial batch goes (sync/uplink.cc SendBatches): at once when
  // nothing is in flight; while batches are in flight, once the region has
  // answered them (Nagle's rule at the batch level), waiting at most
  // batch_max_delay_ms; and never before it is batch_min_delay_ms old.
  // Batches thus grow with the rate times the round trip. Measured by
  // tests/bench/uplink_bench.cc on a shared 2-core machine (load ~12), with
  // TCP_NODELAY on every link (sync/mqtt_link.h): publish to region answer
  // at 1,000 readings/s p50 8 / p99 27 ms (79 ms at load ~16; the former
  // rule, a fixed 200 ms coalescing without TCP_NODELAY: 152 / 254 ms); at
  // the reference workload's 8,000 readings/s, batches of ~210-230
  // readings, 4.5-4.8 bytes per reading on the link (backlog batches 1.6). Each batch carries ~660 bytes
  // of its own, so 1.6 bytes per reading needs ~4,700-reading batches:
  // batch_min_delay_ms buys bytes with latency (600 ms: 2.0 bytes per
  // reading) where a metered link costs more than a late reading.
  int64_t uplink_batch_min_delay_ms = 0;
  // Batches refer to the series context the region holds (protocol 3):
  // measured on the reference workload online (tests/bench/uplink_bench.cc,
  // docs/BENCHMARKS.md) at default settings. false: every batch self-contained.
  bool uplink_series_context = true;
  int64_t uplink_batch_max_delay_ms = 200;
  // A backlog batch's round trip (~80 ms on loopback before the links set
  // TCP_NODELAY) is far longer than the hub needs to apply it (~7 ms), so
  // the window must cover it. 1M-reading drain on loopback:
  // window 4 4.2 s, 8 2.2 s, 12 1.7 s, 16 no faster. 12 backlog batches are
  // ~100 KB in flight.
  int64_t uplink_window = 12;
  int64_t uplink_ack_timeout_ms = 10000;
  int64_t uplink_backoff_base_ms = 200;
  int64_t uplink_backoff_max_ms = 30000;
  int64_t uplink_probe_interval_ms = 5000;
  int64_t uplink_failback_after_s = 60;

  // [[region]]
  std::vector<RegionConfig> regions;

  // [metrics]: the status page and Prometheus endpoint of both roles
  std::string metrics_listen = "127.0.0.1:9464";  // host:port; "" = off

  // [hub]: only for `edgesync region`
  std::string hub_region;          // this hub's region name
  std::string hub_broker_uri = "tcp://127.0.0.1:1883";
  // Batches received and not yet applied; beyond it the hub stops reading its
  // broker connection (sync/region_hub.h).
  int64_t hub_max_queued_messages = 1024;
  // Series contexts of gateways held at most (bytes, estimated): ~0.8 MB
  // for a gateway of 8,000 series, so 64 MiB keeps ~100 such gateways'
  // (sync/series_context.h). Past it, the least recently used is dropped
  // and its gateway's next batch is answered NoContext and resent
  // self-contained.
  int64_t hub_context_max_bytes = int64_t{64} << 20;
  std::string hub_credentials_file;
  TlsConfig hub_tls;
  bool hub_allow_insecure = false;
  int64_t hub_feed_retention_s = 7 * 86400;
  std::string hub_store;           // "" = SQLite at StorePath(); "postgresql://..." (store/hub_store.h)
  std::string hub_password_file;   // the PostgreSQL password, first line; never logged
  std::string hub_id;              // "" = the host name (agent/region_hub.cc)
  int64_t hub_lease_ttl_s = 10;

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
};
std::vector<OptionDoc> ListOptions();

// A commented config listing every option at its default with its doc line
// (what firmware-config/edgesync.example.toml holds; a test keeps them equal).
std::string ExampleConfig();
// docs/CONFIG.md: every option of the table with its default, what it
// accepts and its meaning, as Markdown.
std::string ConfigReference();

// "2026-01-01T00:00:00Z" (UTC) to Unix ms; false if not of that form.
bool ParseUtcMillis(const std::string& text, int64_t* ms);

}  // namespace edgesync

#endif  // EDGESYNC_FIRMWARE_CONFIG_CONFIG_H_

#include "firmware-config/config.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <toml.hpp>

#include "firmware-config/option_spec.h"
#include "firmware-config/transport.h"
#include "platform/clock_trust.h"
#include "platform/files.h"
#include "sync/mqtt_link_pool.h"

namespace edgesync {
namespace {

// [metrics] listen of the region role when the file does not set it (the
// gateway's is Config's default): a gateway and a hub on one machine must
// not reach for the same address.
constexpr char kRegionMetricsListen[] = "127.0.0.1:9465";

using config_internal::Bool;
using config_internal::Int;
using config_internal::Operator;
using config_internal::OptionSpec;
using config_internal::Real;
using config_internal::Str;
using config_internal::StrList;

const int64_t kBig = int64_t{1} << 50;

// ingest.device_topic: a string whose first rule (it names the device, not a
// metric) is checked here; TopicPattern (agent/ingest) checks the rest at
// start.
template <typename C>
OptionSpec<C> DeviceTopic() {
  OptionSpec<C> o = Str<C>("ingest", "device_topic", [](C& c) -> std::string& { return c.ingest_device_topic; },
                           "topic pattern where devices publish their description (a JSON object: name, "
                           "location, unit; empty payload = delete); {deviceId} names a level, {metric} is not "
                           "allowed; \"\" = none");
  auto read = o.read;
  o.read = [read](C& t, const toml::value& v) -> std::string {
    std::string error = read(t, v);
    if (!error.empty()) return error;
    const std::string& p = t.ingest_device_topic;
    if (!p.empty() && (p.find("{deviceId}") == std::string::npos || p.find("{metric}") != std::string::npos)) {
      return "pattern \"" + p + "\": needs {deviceId} and no {metric}";
    }
    return "";
  };
  return o;
}

// uplink.priority_topics: an ordered list of MQTT topic filters, each
// checked here (a filter the broker would refuse never reaches ingest), at
// most kMaxPriorityTopics of them.
template <typename C>
OptionSpec<C> PriorityTopics() {
  OptionSpec<C> o;
  o.section = "uplink";
  o.key = "priority_topics";
  o.doc = "MQTT topic filters (+ and # wildcards), most urgent first, at most " +
          std::to_string(uplink_options::kMaxPriorityTopics) +
          ": while a backlog drains, readings from a message whose topic matches filter i (the first that "
          "matches) go to the region ahead of the backlog and of the live lane, level by level, towards regions "
          "of protocol 8 or later. The level is stamped on each reading as it is committed, so readings "
          "committed before a filter was set keep none (docs/DEPLOY.md); [] = none";
  o.accepts = "up to " + std::to_string(uplink_options::kMaxPriorityTopics) + " topic filters";
  o.show = [](const C& t) {
    std::string s = "[";
    for (const std::string& f : t.uplink_priority_topics) s += (s.size() > 1 ? ", " : "") + config_internal::Quote(f);
    return s + "]";
  };
  o.read = [](C& t, const toml::value& v) -> std::string {
    if (!v.is_array()) return "expected an array of strings, found " + toml::stringize(v.type());
    std::vector<std::string> filters;
    for (const auto& item : v.as_array()) {
      if (!item.is_string()) return "expected an array of strings";
      std::string f = item.as_string().str;
      std::string error = TopicFilterError(f);
      if (!error.empty()) return "topic filter \"" + f + "\" " + error;
      if (std::find(filters.begin(), filters.end(), f) != filters.end()) {
        return "topic filter \"" + f + "\" is listed twice";
      }
      filters.push_back(std::move(f));
    }
    if (static_cast<int64_t>(filters.size()) > uplink_options::kMaxPriorityTopics) {
      return std::to_string(filters.size()) + " topic filters; at most " +
             std::to_string(uplink_options::kMaxPriorityTopics) + " (one per priority level)";
    }
    t.uplink_priority_topics = std::move(filters);
    return "";
  };
  return o;
}

const std::vector<OptionSpec<Config>>& ConfigOptions() {
  using C = Config;
  static const std::vector<OptionSpec<C>> kOptions = {
      Operator(Str<C>("gateway", "id", [](C& c) -> std::string& { return c.gateway_id; },
                      "this gateway's id ([A-Za-z0-9_-], 1..64); required for `edgesync gateway`")),
      Str<C>("gateway", "data_dir", [](C& c) -> std::string& { return c.data_dir; },
             "directory for the store and status file"),
      Str<C>("gateway", "log_level", [](C& c) -> std::string& { return c.log_level; },
             "trace, debug, info, warn, error or off", {"trace", "debug", "info", "warn", "error", "off"}),
      Str<C>("gateway", "status_file", [](C& c) -> std::string& { return c.status_file; },
             "where counters are written for `edgesync status`; \"\" = <data_dir>/status.json"),

      Str<C>("store", "path", [](C& c) -> std::string& { return c.store_path; },
             "SQLite store file; \"\" = <data_dir>/store.db"),
      Operator(Str<C>("store", "sync", [](C& c) -> std::string& { return c.store_sync; },
                      "full: every acknowledged reading survives power loss (fsync per message and per commit); "
                      "commit: every committed batch survives power loss (fsync per commit), a power cut loses "
                      "at most the commit group being gathered (ingest.batch_delay_ms); normal: everything "
                      "survives a crash of edgesync (kill -9) but the last commits before a power cut may be "
                      "lost, never corrupted",
                      {"full", "commit", "normal"})),
      Int<C>("store", "initial_ranges", [](C& c) -> int64_t& { return c.store_initial_ranges; },
             store_options::kInitialRangesMin, store_options::kInitialRangesMax,
             "partition key ranges a new store starts with"),
      Int<C>("store", "split_max_entries", [](C& c) -> int64_t& { return c.store_split_max_entries; }, 100, kBig,
             "a range splits in two past this many entries"),
      Int<C>("store", "split_max_bytes", [](C& c) -> int64_t& { return c.store_split_max_bytes; }, 4096, kBig,
             "a range splits in two past this many bytes of entries"),
      Operator(Int<C>("store", "retention_age_s", [](C& c) -> int64_t& { return c.store_retention_age_s; }, 0, kBig,
                      "readings acknowledged upstream and older than this may be pruned")),
      Int<C>("store", "ack_grace_s", [](C& c) -> int64_t& { return c.store_ack_grace_s; }, 0, kBig,
             "acknowledged readings are also kept this long after their acknowledgement (unless space runs "
             "low), so that a region that lost its store is refilled from them; 0 = no grace"),
      Operator(Str<C>("store", "disk_policy", [](C& c) -> std::string& { return c.store_disk_policy; },
                      "when the store is full: reject-new refuses new readings; drop-oldest drops the oldest "
                      "unacknowledged ones (each counted)",
                      {"reject-new", "drop-oldest"})),
      Operator(Int<C>("store", "max_bytes", [](C& c) -> int64_t& { return c.store_max_bytes; }, 0, kBig,
                      "size limit of the store file in bytes; 0 = only the filesystem limits it")),
      Int<C>("store", "tombstone_retention_s", [](C& c) -> int64_t& { return c.store_tombstone_retention_s; }, 0,
             kBig, "deleted device records stay in the feed at least this long"),
      Operator(Int<C>("store", "read_view_retention_s",
                      [](C& c) -> int64_t& { return c.store_read_view_retention_s; }, 0, kBig,
                      "other gateways' readings in the read view are pruned this long after they arrived")),
      Operator(Int<C>("store", "min_free_bytes", [](C& c) -> int64_t& { return c.store_min_free_bytes; }, 0, kBig,
                      "below this much free space on the filesystem (or past 90% of max_bytes) acknowledged readings "
                      "are pruned oldest first, before retention_age_s; 0 = do not watch the filesystem")),
      Int<C>("store", "retention_interval_s", [](C& c) -> int64_t& { return c.store_retention_interval_s; }, 1,
             86400, "how often retention runs (in both roles)"),
      Int<C>("store", "prune_step_rows", [](C& c) -> int64_t& { return c.store_prune_step_rows; }, 10, 1000000,
             "rows retention deletes per step (one short transaction; ingest waits at most one step)"),
      Int<C>("store", "compact_after_s", [](C& c) -> int64_t& { return c.store_compact_after_s; }, 0, kBig,
             "readings acknowledged upstream and written longer ago than this are compacted into one block per "
             "series (fast queries of one series, fewer bytes on the card); on a region hub's SQLite store, small "
             "batches of the region feed applied longer ago than this are merged into shared rows"),
      Int<C>("store", "dead_letter_cap", [](C& c) -> int64_t& { return c.store_dead_letter_cap; }, 0, 1000000,
             "rejected payloads kept for inspection; the oldest are dropped past this"),
      Int<C>("store", "lease_expiry_ms", [](C& c) -> int64_t& { return c.store_lease_expiry_ms; }, 100, kBig,
             "a feed consumer's lease not renewed for this long may be taken over"),

      Operator(Str<C>("ingest", "broker_uri", [](C& c) -> std::string& { return c.ingest_broker_uri; },
                      "the local broker the sensors publish to (tcp:// or ssl://)")),
      Str<C>("ingest", "client_id", [](C& c) -> std::string& { return c.ingest_client_id; },
             "MQTT client id of the persistent session; \"\" = edgesync-<gateway id>"),
      Operator(Str<C>("ingest", "credentials_file", [](C& c) -> std::string& { return c.ingest_credentials_file; },
                      "file holding user:password for the local broker; \"\" = anonymous")),
      Operator(Str<C>("ingest", "ca_file", [](C& c) -> std::string& { return c.ingest_tls.ca_file; },
                      "CA to verify the local broker's certificate; set, it means TLS even with a tcp:// URI")),
      Str<C>("ingest", "cert_file", [](C& c) -> std::string& { return c.ingest_tls.cert_file; },
             "client certificate for mutual TLS; \"\" = none"),
      Str<C>("ingest", "key_file", [](C& c) -> std::string& { return c.ingest_tls.key_file; },
             "private key of cert_file"),
      Int<C>("ingest", "session_expiry_s", [](C& c) -> int64_t& { return c.ingest_session_expiry_s; }, 0,
             4294967295LL, "how long the broker keeps our session and queues QoS 1 readings while we are down"),
      Int<C>("ingest", "batch_max", [](C& c) -> int64_t& { return c.ingest_batch_max; }, 1, 100000,
             "readings committed together in one transaction (group commit)"),
      Operator(Int<C>("ingest", "batch_delay_ms", [](C& c) -> int64_t& { return c.ingest_batch_delay_ms; }, 0,
                      10000,
                      "longest a received reading waits before its commit group commits; within it the groups "
                      "follow the arrival rate by themselves (docs/INGEST.md). With store.sync = \"commit\" it is "
                      "the power-cut loss window")),
      Int<C>("ingest", "max_payload_bytes", [](C& c) -> int64_t& { return c.ingest_max_payload_bytes; }, 16,
             16 << 20, "larger payloads are rejected and dead-lettered"),
      Operator(Real<C>("ingest", "device_rate", [](C& c) -> double& { return c.ingest_device_rate; }, 0.001, 1e9,
                       "readings per second one device may sustain (token bucket rate)")),
      Int<C>("ingest", "device_burst", [](C& c) -> int64_t& { return c.ingest_device_burst; }, 1, 1000000000,
             "readings one device may send at once above its rate (token bucket size)"),
      Int<C>("ingest", "device_backlog_s", [](C& c) -> int64_t& { return c.ingest_device_backlog_s; }, 0, kBig,
             "a device's rate is measured on its own reading times (when our clock is trusted) up to this far "
             "back, so a backlog the broker or the device kept while we were away is not refused as a flood"),
      Str<C>("ingest", "epoch_floor", [](C& c) -> std::string& { return c.ingest_epoch_floor; },
             "wall times before this (UTC) are untrusted: readings get the untrusted-clock quality flag"),
      Str<C>("ingest", "clock_trust", [](C& c) -> std::string& { return c.ingest_clock_trust; },
             "what makes the clock trusted after a boot (until then, times the gateway stamps get the "
             "untrusted-clock flag): \"kernel\" = the kernel says it is synchronised (adjtimex; chrony, ntpd, "
             "systemd-timesyncd), \"file:/path\" = that file exists (e.g. /run/systemd/timesync/synchronized), "
             "\"floor\" = epoch_floor alone (a board with a battery-backed clock)"),
      Int<C>("ingest", "mqtt_version", [](C& c) -> int64_t& { return c.ingest_mqtt_version; }, 4, 5,
             "MQTT version towards the local broker: 4 = 3.1.1 (sessions never expire), 5 = MQTT 5"),
      Str<C>("ingest", "ack", [](C& c) -> std::string& { return c.ingest_ack; },
             "when the broker gets the PUBACK. after-journal: once the readings are written to the intake "
             "journal in journal_dir (the store commits them in groups; nothing acknowledged is lost on kill -9); "
             "after-commit: once they are committed to the store (no journal; one commit per message, slower); "
             "on-receipt: at once (group commit; a kill -9 may lose at most one batch: batch_max readings, "
             "batch_delay_ms)",
             {"after-journal", "after-commit", "on-receipt"}),
      Str<C>("ingest", "journal_dir", [](C& c) -> std::string& { return c.ingest_journal_dir; },
             "where the intake journal lives (ack = after-journal); empty = data_dir. A tmpfs such as /run "
             "spares the SD card and still survives kill -9, but not a power cut"),
      Int<C>("ingest", "journal_segment_bytes", [](C& c) -> int64_t& { return c.ingest_journal_segment_bytes; },
             4096, 1 << 30, "the journal's two segments take turns at this size: it uses about twice this on disk"),
      Operator(StrList<C>("ingest", "subscriptions",
                          [](C& c) -> std::vector<SubscriptionConfig>& { return c.subscriptions; },
                          "topic patterns; {deviceId} and {metric} name topic levels")),
      DeviceTopic<C>(),

      Str<C>("uplink", "topic_prefix", [](C& c) -> std::string& { return c.uplink_topic_prefix; },
             "first topic level of every sync message"),
      Int<C>("uplink", "batch_max_readings", [](C& c) -> int64_t& { return c.uplink_batch_max_readings; }, 1,
             uplink_options::kBatchMaxReadingsMax, "entries in one upstream batch at most"),
      Int<C>("uplink", "batch_min_delay_ms", [](C& c) -> int64_t& { return c.uplink_batch_min_delay_ms; }, 0,
             600000, "a partial batch waits at least this long for more readings (fewer bytes on the wire per "
             "reading, more latency: see docs/BENCHMARKS.md)"),
      Int<C>("uplink", "batch_max_delay_ms", [](C& c) -> int64_t& { return c.uplink_batch_max_delay_ms; }, 0,
             600000, "a partial batch goes at once when nothing is in flight, else when the region has answered "
             "what is, waiting at most this long"),
      Bool<C>("uplink", "series_context", [](C& c) -> bool& { return c.uplink_series_context; },
              "batches refer to the series (dictionaries, last values and timestamps) the region already holds "
              "from this gateway's earlier batches; false = every batch self-contained (sync/PROTOCOL.md)"),
      Int<C>("uplink", "window", [](C& c) -> int64_t& { return c.uplink_window; }, 1, 1024,
             "batches sent and not yet acknowledged by the region, at most"),
      Int<C>("uplink", "ack_timeout_ms", [](C& c) -> int64_t& { return c.uplink_ack_timeout_ms; }, 100, 3600000,
             "a batch not acknowledged within this is resent from the checkpoint; after each such timeout the "
             "wait doubles (up to 8 times this) until answers come quickly again"),
      Int<C>("uplink", "backoff_base_ms", [](C& c) -> int64_t& { return c.uplink_backoff_base_ms; }, 1, 3600000,
             "first reconnect delay (decorrelated jitter grows it)"),
      Int<C>("uplink", "backoff_max_ms", [](C& c) -> int64_t& { return c.uplink_backoff_max_ms; }, 1, 3600000,
             "longest reconnect delay"),
      Int<C>("uplink", "probe_interval_ms", [](C& c) -> int64_t& { return c.uplink_probe_interval_ms; }, 100,
             3600000, "how often the round trip to each region is measured"),
      Int<C>("uplink", "failback_after_s", [](C& c) -> int64_t& { return c.uplink_failback_after_s; }, 0, 86400,
             "a nearer region must be healthy this long before writes move back to it"),
      Bool<C>("uplink", "live_lane", [](C& c) -> bool& { return c.uplink_live_lane; },
              "readings committed while a backlog drains go ahead of it (a live lane; sync/uplink.h), towards "
              "regions of protocol 7 or later; false = strict LSN order"),
      Operator(Int<C>("uplink", "max_bytes_per_s", [](C& c) -> int64_t& { return c.uplink_max_bytes_per_s; }, 0,
                      uplink_options::kMaxBytesPerSMax,
                      "bytes per second the uplink sends to the regions at most, counted as whole MQTT packets "
                      "(batches, resends and probes; framing included); batches are sized to about a quarter "
                      "second of it (at least 4 KB); 0 = no cap (docs/DEPLOY.md)")),
      Operator(PriorityTopics<C>()),

      Operator(Str<C>("metrics", "listen", [](C& c) -> std::string& { return c.metrics_listen; },
                      "host:port of the status page (/) and Prometheus metrics (/metrics); loopback by default "
                      "(the page has no login: expose it only where anyone may read it); a region hub's default is " +
                          std::string(kRegionMetricsListen) +
                          "; an address another process holds is an error at start (the process runs without the "
                          "page); \"\" = off")),

      Operator(Str<C>("hub", "region", [](C& c) -> std::string& { return c.hub_region; },
                      "this hub's region name; required for `edgesync region`")),
      Int<C>("hub", "max_queued_messages", [](C& c) -> int64_t& { return c.hub_max_queued_messages; }, 1, 1000000,
             "messages received and not yet applied (held in memory); beyond it a message is shed and counted, "
             "and its gateway resends it after uplink.ack_timeout_ms (docs/REGION.md)"),
      Int<C>("hub", "context_max_bytes", [](C& c) -> int64_t& { return c.hub_context_max_bytes; }, 0,
             int64_t{1} << 40,
             "memory for gateways' series contexts (about 0.8 MB for 8,000 series); the least recently used is "
             "dropped past it and its gateway resends self-contained; 0 = none kept"),
      Operator(Str<C>("hub", "broker_uri", [](C& c) -> std::string& { return c.hub_broker_uri; },
                      "the region's broker the hub listens on")),
      Operator(Str<C>("hub", "credentials_file", [](C& c) -> std::string& { return c.hub_credentials_file; },
                      "file holding user:password for the region broker; \"\" = anonymous")),
      Operator(Str<C>("hub", "ca_file", [](C& c) -> std::string& { return c.hub_tls.ca_file; },
                      "CA for the region broker; set, it means TLS even with a tcp:// URI")),
      Operator(Str<C>("hub", "cert_file", [](C& c) -> std::string& { return c.hub_tls.cert_file; },
                      "client certificate (also means TLS)")),
      Operator(Str<C>("hub", "key_file", [](C& c) -> std::string& { return c.hub_tls.key_file; }, "private key")),
      Bool<C>("hub", "allow_insecure", [](C& c) -> bool& { return c.hub_allow_insecure; },
              "accept a plaintext broker_uri that is not loopback (otherwise refused: use ssl:// or ca_file)"),
      Operator(Int<C>("hub", "feed_retention_s", [](C& c) -> int64_t& { return c.hub_feed_retention_s; }, 0, kBig,
                      "region feed entries are pruned this long after they were applied; a reader behind gets an "
                      "explicit reset")),
      Operator(Str<C>("hub", "store", [](C& c) -> std::string& { return c.hub_store; },
                      "where the hub keeps high-water marks and the region feed: \"\" = the embedded SQLite store "
                      "([store] path), or \"postgresql://user@host:port/db\" (no password in it: see password_file)")),
      Operator(Str<C>("hub", "password_file", [](C& c) -> std::string& { return c.hub_password_file; },
                      "file holding the PostgreSQL password on its first line; \"\" = none (peer or trust login)")),
      Str<C>("hub", "id", [](C& c) -> std::string& { return c.hub_id; },
             "this hub's name among its region's hubs (names its MQTT client and its shard leases; "
             "[A-Za-z0-9_-], at most 40); \"\" = the host name. Hubs sharing a PostgreSQL store need one each"),
      Int<C>("hub", "lease_ttl_s", [](C& c) -> int64_t& { return c.hub_lease_ttl_s; }, 1, 3600,
             "hubs sharing a PostgreSQL store: a shard lease not renewed this long (on the database's clock) "
             "is taken over by another hub; renewed every third of it"),
  };
  return kOptions;
}

const std::vector<OptionSpec<RegionConfig>>& RegionOptions() {
  using R = RegionConfig;
  static const std::vector<OptionSpec<R>> kOptions = {
      Operator(Str<R>("region", "name", [](R& r) -> std::string& { return r.name; }, "region name ([A-Za-z0-9_-])")),
      Operator(Str<R>("region", "uri", [](R& r) -> std::string& { return r.uri; }, "region broker (tcp:// or ssl://)")),
      Operator(Int<R>("region", "preference", [](R& r) -> int64_t& { return r.preference; }, 0, 1000,
                      "failover order, lowest first")),
      Operator(Str<R>("region", "credentials_file", [](R& r) -> std::string& { return r.credentials_file; },
                      "file holding user:password; \"\" = anonymous")),
      Operator(Str<R>("region", "ca_file", [](R& r) -> std::string& { return r.tls.ca_file; },
                      "CA to verify the region broker; set, it means TLS even with a tcp:// URI")),
      Operator(Str<R>("region", "cert_file", [](R& r) -> std::string& { return r.tls.cert_file; },
                      "client certificate for mutual TLS (also means TLS)")),
      Operator(Str<R>("region", "key_file", [](R& r) -> std::string& { return r.tls.key_file; },
                      "private key of cert_file")),
      Bool<R>("region", "allow_insecure", [](R& r) -> bool& { return r.allow_insecure; },
              "accept a plaintext uri that is not loopback (otherwise refused: use ssl:// or ca_file)"),
  };
  return kOptions;
}

// Options that no longer exist but that older config files may still set:
// read and ignored, each with the reason (so an upgrade never stops a
// gateway on its old file), where an unknown key is an error.
const char* RetiredOption(const std::string& key) {
  static const char* kCommitGroups = "no longer used: commit groups follow the arrival rate by themselves";
  static const char* kCompaction =
      "no longer used: the store sizes compacted spans itself and compacts a span only where that makes it "
      "smaller (store/chunk_compactor.h)";
  if (key == "ingest.busy_rate" || key == "ingest.batch_delay_busy_ms") return kCommitGroups;
  if (key == "store.compact_span_readings" || key == "store.compact_always") return kCompaction;
  return nullptr;
}

class Checker {
 public:
  Checker(std::string file, std::vector<ConfigError>* errors, std::vector<std::string>* retired)
      : file_(std::move(file)), errors_(errors), retired_(retired) {}

  void Error(const toml::value* v, const std::string& key, const std::string& message) {
    int line = 0;
    if (v != nullptr) {
      auto loc = v->location();
      line = static_cast<int>(loc.line());
    }
    errors_->push_back({file_, line, key, message});
  }

  template <typename Target>
  void ReadTable(const toml::value& table, const std::string& section, const std::string& prefix,
                 const std::vector<OptionSpec<Target>>& specs, Target* target) {
    for (const auto& [key, value] : table.as_table()) {
      const OptionSpec<Target>* spec = nullptr;
      for (const auto& s : specs) {
        if (s.section == section && s.key == key) spec = &s;
      }
      if (spec == nullptr) {
        const char* retired = RetiredOption(prefix + key);
        if (retired != nullptr) {
          retired_->push_back(prefix + key + ": " + retired);
          continue;
        }
        Error(&value, prefix + key, "unknown key");
        continue;
      }
      std::string msg = spec->read(*target, value);
      if (!msg.empty()) Error(&value, prefix + key, msg);
    }
  }

 private:
  std::string file_;
  std::vector<ConfigError>* errors_;
  std::vector<std::string>* retired_;
};

void CheckSemantics(const toml::value& root, ConfigRole role, Config* c, Checker* check) {
  auto at = [&](const char* section, const char* key) -> const toml::value* {
    if (!root.contains(section) || !root.at(section).is_table()) return nullptr;
    const auto& t = root.at(section);
    return t.contains(key) ? &t.at(key) : nullptr;
  };
  if (role == ConfigRole::kGateway && c->gateway_id.empty()) {
    check->Error(nullptr, "gateway.id",
                 "missing: every gateway needs an id of its own in the fleet; set [gateway] id (docs/DEPLOY.md)");
  }
  if (!c->gateway_id.empty() && !IsTopicId(c->gateway_id)) {
    check->Error(at("gateway", "id"), "gateway.id", "must be 1..64 of [A-Za-z0-9_-] (it goes into MQTT topics)");
  }
  if (!IsTopicId(c->uplink_topic_prefix)) {
    check->Error(at("uplink", "topic_prefix"), "uplink.topic_prefix", "must be 1..64 of [A-Za-z0-9_-]");
  }
  if (role == ConfigRole::kRegion && c->hub_region.empty()) {
    check->Error(nullptr, "hub.region", "missing: a region hub needs its region name");
  }
  if (!c->hub_region.empty() && !IsTopicId(c->hub_region)) {
    check->Error(at("hub", "region"), "hub.region", "must be 1..64 of [A-Za-z0-9_-]");
  }
  {
    ClockTrustOptions trust;
    Status t = ParseClockTrustSource(c->ingest_clock_trust, &trust);
    if (!t.ok()) check->Error(at("ingest", "clock_trust"), "ingest.clock_trust", t.message());
  }
  int64_t floor_ms = 0;
  if (!ParseUtcMillis(c->ingest_epoch_floor, &floor_ms)) {
    check->Error(at("ingest", "epoch_floor"), "ingest.epoch_floor", "expected YYYY-MM-DDTHH:MM:SSZ");
  }
  if (role == ConfigRole::kRegion && at("metrics", "listen") == nullptr) c->metrics_listen = kRegionMetricsListen;
  if (!c->metrics_listen.empty()) {
    size_t colon = c->metrics_listen.rfind(':');
    int64_t port = -1;
    if (colon != std::string::npos && colon > 0 && colon + 1 < c->metrics_listen.size() &&
        c->metrics_listen.size() - colon <= 6 &&
        c->metrics_listen.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
      port = std::stoll(c->metrics_listen.substr(colon + 1));
    }
    if (port < 1 || port > 65535) {
      check->Error(at("metrics", "listen"), "metrics.listen", "expected host:port (port 1..65535) or \"\"");
    }
  }
  if (c->uplink_backoff_max_ms < c->uplink_backoff_base_ms) {
    check->Error(at("uplink", "backoff_max_ms"), "uplink.backoff_max_ms", "smaller than uplink.backoff_base_ms");
  }
  if (!c->hub_id.empty() && (!IsTopicId(c->hub_id) || c->hub_id.size() > 40)) {
    check->Error(at("hub", "id"), "hub.id", "must be 1..40 of [A-Za-z0-9_-]");
  }
  if (!c->hub_store.empty() && c->hub_store.rfind("postgresql://", 0) != 0 &&
      c->hub_store.rfind("postgres://", 0) != 0) {
    check->Error(at("hub", "store"), "hub.store", "expected \"\" (SQLite) or a postgresql:// URI");
  }
  for (const TransportProblem& p : TransportProblems(*c)) {
    const toml::value* where = at("hub", "broker_uri");
    if (p.key.rfind("region[", 0) == 0) {
      size_t i = std::stoul(p.key.substr(7));
      const auto& regions = root.at("region").as_array();
      where = i < regions.size() && regions[i].contains("uri") ? &regions[i].at("uri") : nullptr;
    }
    check->Error(where, p.key, p.message);
  }
}

}  // namespace

std::string ConfigError::ToString() const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
}

bool ParseUtcMillis(const std::string& text, int64_t* ms) {
  struct tm tm = {};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != static_cast<int>(text.size()) || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
      tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) {
    return false;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  *ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  return true;
}

namespace {

// toml11 parses arrays and inline tables recursively: a few thousand '['
// overflow the stack (found by tests/fuzz/config_fuzz.cc). No option nests
// more than two levels, so deeper nesting is refused before parsing. Counts
// brackets outside comments and strings; returns the line of the first one
// too deep, or 0.
constexpr int kMaxNesting = 32;

int TooDeepAt(const std::string& text) {
  int depth = 0, line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool triple = text.compare(i, 3, std::string(3, c)) == 0;
      const bool escapes = c == '"';
      i += triple ? 3 : 1;
      for (; i < text.size(); ++i) {
        if (text[i] == '\n') {
          ++line;
          if (!triple) break;  // an unterminated string: the parser says so
        } else if (escapes && text[i] == '\\') {
          ++i;
          if (i < text.size() && text[i] == '\n') ++line;
        } else if (text[i] == c && (!triple || text.compare(i, 3, std::string(3, c)) == 0)) {
          if (triple) i += 2;
          break;
        }
      }
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) return line;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
  return 0;
}

}  // namespace

Status ParseConfig(const std::string& text, const std::string& name, ConfigRole role, Config* config,
                   std::vector<ConfigError>* errors) {
  errors->clear();
  Config c;
  c.source = name;
  if (int line = TooDeepAt(text)) {
    errors->push_back({name, line, "", "arrays or tables nested more than " + std::to_string(kMaxNesting) + " deep"});
    return Status::InvalidArgument("config nests too deep");
  }
  toml::value root;
  try {
    std::istringstream in(text);
    root = toml::parse(in, name);
  } catch (const toml::syntax_error& e) {
    // toml11 formats the place itself ("[error] ... --> file\n  line | ...").
    errors->push_back({name, 0, "", std::string("syntax error: ") + e.what()});
    return Status::InvalidArgument("config has syntax errors");
  } catch (const std::exception& e) {
    errors->push_back({name, 0, "", std::string("cannot parse: ") + e.what()});
    return Status::InvalidArgument("config cannot be parsed");
  }

  Checker check(name, errors, &c.retired_options);
  try {
    std::set<std::string> sections;
    for (const auto& s : ConfigOptions()) sections.insert(s.section);
    for (const auto& [section, value] : root.as_table()) {
      if (section == "region") {
        if (!value.is_array()) {
          check.Error(&value, "region", "expected [[region]] tables");
          continue;
        }
        size_t index = 0;
        for (const auto& item : value.as_array()) {
          std::string prefix = "region[" + std::to_string(index++) + "].";
          if (!item.is_table()) {
            check.Error(&item, prefix, "expected a table");
            continue;
          }
          RegionConfig r;
          check.ReadTable(item, "region", prefix, RegionOptions(), &r);
          if (r.uri.empty()) check.Error(&item, prefix + "uri", "missing: a region needs a broker URI");
          if (!IsTopicId(r.name)) {
            check.Error(&item, prefix + "name", "missing or not 1..64 of [A-Za-z0-9_-]");
          }
          for (const auto& other : c.regions) {
            if (other.name == r.name) check.Error(&item, prefix + "name", "duplicate region name " + r.name);
          }
          c.regions.push_back(r);
        }
        continue;
      }
      if (sections.count(section) == 0) {
        check.Error(&value, section, "unknown section");
        continue;
      }
      if (!value.is_table()) {
        check.Error(&value, section, "expected a table");
        continue;
      }
      check.ReadTable(value, section, section + ".", ConfigOptions(), &c);
    }
    CheckSemantics(root, role, &c, &check);
  } catch (const std::exception& e) {
    errors->push_back({name, 0, "", std::string("cannot read: ") + e.what()});
  }
  // toml11 keeps tables unordered; report in file order, as a reader expects.
  std::stable_sort(errors->begin(), errors->end(),
                   [](const ConfigError& a, const ConfigError& b) { return a.line < b.line; });
  if (!errors->empty()) return Status::InvalidArgument(std::to_string(errors->size()) + " error(s) in " + name);
  *config = c;
  return Status::Ok();
}

Status LoadConfig(const std::string& path, ConfigRole role, Config* config, std::vector<ConfigError>* errors) {
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok()) {
    errors->clear();
    errors->push_back({path, 0, "", "cannot read the file"});
    return s;
  }
  return ParseConfig(text, path, role, config, errors);
}

std::string DumpConfig(const Config& c) {
  std::ostringstream out;
  out << "# effective configuration" << (c.source.empty() ? "" : " of " + c.source) << "\n";
  std::string section;
  for (const auto& o : ConfigOptions()) {
    if (o.section != section) {
      section = o.section;
      out << "\n[" << section << "]\n";
    }
    out << o.key << " = " << o.show(c) << "\n";
  }
  for (const auto& r : c.regions) {
    out << "\n[[region]]\n";
    for (const auto& o : RegionOptions()) out << o.key << " = " << o.show(r) << "\n";
  }
  return out.str();
}

std::vector<OptionDoc> ListOptions() {
  std::vector<OptionDoc> out;
  Config defaults;
  for (const auto& o : ConfigOptions()) {
    out.push_back({o.section + "." + o.key, o.show(defaults), o.doc, o.operator_decides});
  }
  RegionConfig r;
  for (const auto& o : RegionOptions()) out.push_back({"region." + o.key, o.show(r), o.doc, o.operator_decides});
  return out;
}

std::string ExampleConfig() {
  std::ostringstream out;
  out << "# edgesync configuration (TOML): the options an operator decides for a\n"
         "# deployment (identity, links, trust, retention, the power-cut loss window,\n"
         "# limits), each commented out at its default; uncomment and edit what you\n"
         "# need. Every other option tunes the gateway or hub and its default fits:\n"
         "# all of them, with what each accepts, are in docs/CONFIG.md, which\n"
         "#   edgesync config reference\n"
         "# prints. Check a file with\n"
         "#   edgesync config check FILE [--role gateway|region]\n"
         "# which reports each error with file, line and key, and prints the\n"
         "# effective configuration.\n"
         "#\n"
         "# Transport, the same for ingest, regions and the hub: a ca_file or\n"
         "# cert_file means TLS, also beside a tcp:// URI (used as ssl://). A region\n"
         "# or hub broker that is neither TLS nor loopback is refused unless that\n"
         "# link sets allow_insecure = true.\n";
  Config defaults;
  std::string section;
  for (const auto& o : ConfigOptions()) {
    if (!o.operator_decides) continue;
    if (o.section != section) {
      section = o.section;
      out << "\n[" << section << "]\n";
    }
    out << "# " << o.doc << "\n";
    if (o.section == "gateway" && o.key == "id") {
      out << "id = \"gateway-1\"\n";  // required: shown set, so the example checks clean
    } else {
      out << "# " << o.key << " = " << o.show(defaults) << "\n";
    }
  }
  out << "\n# Regions the gateway syncs with; one [[region]] table each. The nearest\n"
         "# healthy region (measured round trip) takes the writes.\n"
         "#[[region]]\n";
  RegionConfig r;
  for (const auto& o : RegionOptions()) {
    if (!o.operator_decides) continue;
    out << "# " << o.doc << "\n";
    out << "# " << o.key << " = " << o.show(r) << "\n";
  }
  return out.str();
}

namespace {

// A Markdown table cell: pipes escaped, so a doc string cannot break the table.
std::string Cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

template <typename Target>
void ReferenceTable(const std::vector<OptionSpec<Target>>& options, const Target& defaults, std::ostream& out) {
  out << "| key | default | accepts | meaning |\n|---|---|---|---|\n";
  for (const auto& o : options) {
    out << "| `" << o.key << "` | `" << Cell(o.show(defaults)) << "` | " << Cell(o.accepts) << " | "
        << Cell(o.doc) << " |\n";
  }
}

}  // namespace

std::string ConfigReference() {
  std::ostringstream out;
  out << "# Configuration reference\n\n"
         "Generated by `edgesync config reference` from the option table in\n"
         "`firmware-config/config.cc`, the one place each default and bound is written;\n"
         "`tests/unit/config/config_reference_test.cc` fails when this page differs from it.\n"
         "Regenerate with `build/edgesync config reference > docs/CONFIG.md`.\n\n"
         "A config is a TOML file; `edgesync config example` prints the options an\n"
         "operator decides (identity, links, trust, retention, the power-cut loss window,\n"
         "limits) commented out at their defaults, as `firmware-config/edgesync.example.toml`\n"
         "ships them; this page lists every option. `edgesync config check FILE\n"
         "[--role gateway|region]` reports each error with file, line and key.\n";
  Config defaults;
  std::vector<OptionSpec<Config>> section_options;
  std::string section;
  auto flush = [&] {
    if (section_options.empty()) return;
    out << "\n## [" << section << "]\n\n";
    ReferenceTable(section_options, defaults, out);
    section_options.clear();
  };
  for (const auto& o : ConfigOptions()) {
    if (o.section != section) {
      flush();
      section = o.section;
    }
    section_options.push_back(o);
  }
  flush();
  out << "\n## [[region]]\n\n"
         "One table per region the gateway syncs with; the nearest healthy region\n"
         "(measured round trip) takes the writes.\n\n";
  ReferenceTable(RegionOptions(), RegionConfig(), out);
  return out.str();
}

}  // namespace edgesync

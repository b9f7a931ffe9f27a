#include "agent/gateway.h"

#include <time.h>

#include <algorithm>
#include <cstdio>

#include "agent/roles.h"
#include "platform/files.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "platform/systemd.h"

namespace edgesync {

bool ParseUtcMillis(const std::string& text, int64_t* ms) {
  struct tm tm = {};
  int consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != static_cast<int>(text.size())) {
    return false;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  *ms = static_cast<int64_t>(timegm(&tm)) * 1000;
  return true;
}

IngestOptions IngestOptionsFromConfig(const Config& c) {
  IngestOptions o;
  o.patterns.clear();
  for (const auto& s : c.subscriptions) o.patterns.push_back(s.pattern);
  o.max_payload_bytes = c.ingest_max_payload_bytes;
  o.device_rate = c.ingest_device_rate;
  o.device_burst = static_cast<double>(c.ingest_device_burst);
  ParseUtcMillis(c.ingest_epoch_floor, &o.epoch_floor_ms);
  o.batch_max = c.ingest_batch_max;
  o.batch_delay_ms = c.ingest_batch_delay_ms;
  o.ack_after_commit = c.ingest_ack != "on-receipt";
  return o;
}

MqttLinkOptions IngestLinkOptionsFromConfig(const Config& c) {
  MqttLinkOptions o;
  o.uri = c.ingest_broker_uri;
  o.client_id = c.ClientId();
  o.credentials_file = c.ingest_credentials_file;
  o.ca_file = c.ingest_tls.ca_file;
  o.cert_file = c.ingest_tls.cert_file;
  o.key_file = c.ingest_tls.key_file;
  o.mqtt_version = static_cast<int>(c.ingest_mqtt_version);
  o.clean_start = false;
  o.session_expiry_s = c.ingest_session_expiry_s;
  // A CA file alone means TLS even if the URI was written tcp://.
  if (!o.ca_file.empty() && o.uri.rfind("tcp://", 0) == 0) o.uri = "ssl://" + o.uri.substr(6);
  return o;
}

StoreOptions StoreOptionsFromConfig(const Config& c) {
  StoreOptions o;
  o.path = c.StorePath();
  o.gateway_id = c.gateway_id;
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

Gateway::Gateway(Config config, Clock* clock) : config_(std::move(config)), clock_(clock ? clock : SystemClock()) {}

Gateway::~Gateway() { Stop(); }

std::string Gateway::StatusPath() const {
  return config_.status_file.empty() ? config_.data_dir + "/status.json" : config_.status_file;
}

Status Gateway::Start() {
  started_ms_ = clock_->WallMillis();
  ES_RETURN_IF_ERROR(MakeDirs(config_.data_dir).Annotate("data_dir"));
  StoreOptions so = StoreOptionsFromConfig(config_);
  so.clock = clock_;
  ES_RETURN_IF_ERROR(Store::Open(so, &store_).Annotate("opening store " + so.path));
  sink_ = std::make_unique<StoreSink>(store_.get());
  ingest_ = std::make_unique<Ingest>(IngestOptionsFromConfig(config_), sink_.get(), clock_);
  ES_RETURN_IF_ERROR(ingest_->Init());
  ES_RETURN_IF_ERROR(NewPahoMqttLink(IngestLinkOptionsFromConfig(config_), &link_).Annotate("ingest broker"));
  Ingest* ingest = ingest_.get();
  link_->SetMessageHandler([ingest](MqttMessage&& m) { ingest->OnMessage(m.topic, m.payload, m.duplicate); });
  for (const std::string& f : ingest_->Filters()) ES_RETURN_IF_ERROR(link_->Subscribe(f, 1));
  ingest_->Start();
  ES_RETURN_IF_ERROR(link_->Start());
  running_ = true;
  ES_LOG(kInfo, "gateway {}: ingesting from {} ({} ack)", config_.gateway_id, config_.ingest_broker_uri,
         config_.ingest_ack);
  return Status::Ok();
}

void Gateway::Stop() {
  if (!running_) return;
  running_ = false;
  // Link first: no message may arrive (and be acknowledged) after ingest
  // has committed its last batch.
  if (link_) link_->Disconnect(3000);
  if (ingest_) ingest_->Stop();
  ES_LOG(kInfo, "gateway {}: stopped", config_.gateway_id);
}

nlohmann::json Gateway::StatusJson() {
  using json = nlohmann::json;
  json j;
  j["role"] = "gateway";
  j["gateway_id"] = config_.gateway_id;
  j["time_ms"] = clock_->WallMillis();
  j["started_ms"] = started_ms_;
  if (link_) {
    MqttLink::Counters m = link_->counters();
    j["ingest_mqtt"] = {{"connected", link_->connected()}, {"uri", config_.ingest_broker_uri},
                        {"connects", m.connects},          {"connection_losses", m.connection_losses},
                        {"received", m.received}};
  }
  if (ingest_) {
    IngestCounters c = ingest_->counters();
    json rejected = json::object();
    for (size_t i = 0; i < c.rejected.size(); ++i) {
      rejected[RejectReasonName(static_cast<RejectReason>(i))] = c.rejected[i];
    }
    json limited = json::array();
    for (const auto& [device, n] : c.top_rate_limited) limited.push_back({{"device", device}, {"rejected", n}});
    j["ingest"] = {{"messages", c.messages},
                   {"readings_accepted", c.readings_accepted},
                   {"readings_committed", c.readings_committed},
                   {"batches", c.batches},
                   {"commit_failures", c.commit_failures},
                   {"duplicates_skipped", c.duplicates_skipped},
                   {"dead_letters", c.dead_letters},
                   {"dead_letters_dropped", c.dead_letters_dropped},
                   {"rejected", rejected},
                   {"rate_limited_devices", limited},
                   {"rate_limited_evicted", c.rate_limited_evicted},
                   {"ack", config_.ingest_ack}};
  }
  if (store_) {
    StoreStats s;
    if (store_->Stats(&s).ok()) {
      j["store"] = {{"last_lsn", s.last_lsn},         {"acked_lsn", s.acked_lsn},
                    {"entries", s.entries},           {"file_bytes", s.file_bytes},
                    {"dead_letters", s.dead_letters}, {"rejected_full", s.rejected_full},
                    {"dropped_oldest", s.dropped_oldest}};
    }
  }
  ProcessStats p = ReadProcessStats();
  j["process"] = {{"rss_bytes", p.rss_bytes}, {"peak_rss_bytes", p.peak_rss_bytes}};
  return j;
}

int RunGateway(const Config& config) {
  Signals::Install();
  SystemdNotifier systemd;
  Gateway gateway(config);
  Status s = gateway.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "edgesync gateway: %s\n", s.ToString().c_str());
    gateway.Stop();
    return 1;
  }
  systemd.Ready();
  const std::string status_path = gateway.StatusPath();
  int64_t tick_ms = 1000;
  if (systemd.watchdog_interval_ms() > 0) tick_ms = std::min(tick_ms, systemd.watchdog_interval_ms() / 2);
  int64_t next_status = 0;
  while (!Signals::StopRequested()) {
    Signals::WaitForSignal(tick_ms);
    if (Signals::TakeReload()) {
      // Only what can change without a restart: the log level.
      systemd.Reloading();
      Config fresh;
      std::vector<ConfigError> errors;
      if (!config.source.empty() && LoadConfig(config.source, ConfigRole::kGateway, &fresh, &errors).ok()) {
        LogLevel level;
        if (ParseLogLevel(fresh.log_level, &level)) SetLogLevel(level);
        ES_LOG(kInfo, "reloaded {}: log level {}", config.source, fresh.log_level);
      } else {
        for (const auto& e : errors) ES_LOG(kError, "reload: {}", e.ToString());
      }
      systemd.Ready();
    }
    systemd.WatchdogPing();
    int64_t now = SystemClock()->MonotonicMillis();
    if (now >= next_status) {
      next_status = now + 1000;
      Status w = WriteFileAtomic(status_path, gateway.StatusJson().dump(2) + "\n");
      if (!w.ok()) ES_LOG(kWarn, "status file: {}", w.ToString());
    }
  }
  systemd.Stopping();
  gateway.Stop();
  WriteFileAtomic(status_path, gateway.StatusJson().dump(2) + "\n");
  return 0;
}

int RunStatus(const Config& config) {
  std::string path = config.status_file.empty() ? config.data_dir + "/status.json" : config.status_file;
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok()) {
    std::fprintf(stderr, "edgesync status: no status file %s (is the gateway running?)\n", path.c_str());
    return 1;
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace edgesync

#include "agent/gateway.h"

#include <algorithm>
#include <cstdio>

#include "agent/roles.h"
#include "agent/options.h"
#include "platform/files.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "platform/systemd.h"

namespace edgesync {

namespace {

// Commits through the store and wakes the uplink at once, so a reading goes
// upstream without waiting for the uplink's next poll of the store.
class UplinkNotifyingSink : public StoreSink {
 public:
  UplinkNotifyingSink(Store* store, Uplink* uplink) : StoreSink(store), uplink_(uplink) {}
  Status AppendReadings(const std::vector<Reading>& readings, uint64_t intake_seq) override {
    Status s = StoreSink::AppendReadings(readings, intake_seq);
    if (s.ok() && uplink_ != nullptr) uplink_->NotifyAppended();
    return s;
  }

 private:
  Uplink* uplink_;
};

}  // namespace

Gateway::Gateway(Config config, Clock* clock) : config_(std::move(config)), clock_(clock ? clock : SystemClock()) {}

Gateway::~Gateway() { Stop(); }

Status Gateway::Start() {
  started_ms_ = clock_->WallMillis();
  ES_RETURN_IF_ERROR(MakeDirs(config_.data_dir).Annotate("data_dir"));
  StoreOptions so = StoreOptionsFromConfig(config_);
  so.clock = clock_;
  ES_RETURN_IF_ERROR(Store::Open(so, &store_).Annotate("opening store " + so.path));
  retention_ = std::make_unique<Retention>(store_.get(), RetentionOptionsFromConfig(config_), clock_);
  ES_RETURN_IF_ERROR(retention_->Start().Annotate("retention"));
  if (!config_.regions.empty()) {
    uplink_ = std::make_unique<Uplink>(store_.get(), UplinkOptionsFromConfig(config_), clock_);
    ES_RETURN_IF_ERROR(uplink_->Start().Annotate("uplink"));
    feed_puller_ = std::make_unique<FeedPuller>(store_.get(), FeedPullerOptionsFromConfig(config_), clock_);
    ES_RETURN_IF_ERROR(feed_puller_->Start().Annotate("feed puller"));
  } else {
    ES_LOG(kWarn, "gateway {}: no [[region]] configured: readings are kept locally only", config_.gateway_id);
  }
  sink_ = std::make_unique<UplinkNotifyingSink>(store_.get(), uplink_.get());
  ingest_ = std::make_unique<Ingest>(IngestOptionsFromConfig(config_), sink_.get(), clock_);
  ES_RETURN_IF_ERROR(ingest_->Init());
  ES_RETURN_IF_ERROR(NewPahoMqttLink(IngestLinkOptionsFromConfig(config_), &link_).Annotate("ingest broker"));
  Ingest* ingest = ingest_.get();
  link_->SetMessageHandler([ingest](MqttMessage&& m) { ingest->OnMessage(m.topic, m.payload, m.duplicate); });
  for (const std::string& f : ingest_->Filters()) ES_RETURN_IF_ERROR(link_->Subscribe(f, 1));
  // The journal's readings go in before any message can be redelivered.
  ES_RETURN_IF_ERROR(ingest_->Start().Annotate("ingest"));
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
  if (uplink_) uplink_->Stop();
  if (feed_puller_) feed_puller_->Stop();
  if (retention_) retention_->Stop();
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
  uint64_t committed = 0;
  if (ingest_) {
    IngestCounters c = ingest_->counters();
    committed = static_cast<uint64_t>(c.readings_committed);
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
                   {"replayed", c.replayed},
                   {"journal_failures", c.journal_failures},
                   {"journal_bytes", c.journal_bytes},
                   {"dead_letters", c.dead_letters},
                   {"dead_letters_dropped", c.dead_letters_dropped},
                   {"rejected", rejected},
                   {"rate_limited_devices", limited},
                   {"rate_limited_evicted", c.rate_limited_evicted},
                   {"ack", config_.ingest_ack}};
  }
  if (store_) {
    // Store::Stats counts the log's rows: on a board holding millions of
    // readings that is too much work for every second, so the counts are
    // refreshed every kStoreCountsEveryMs; the last LSN is always fresh.
    int64_t now = clock_->MonotonicMillis();
    if (store_stats_at_ms_ == 0 || now - store_stats_at_ms_ >= kStoreCountsEveryMs) {
      StoreStats fresh;
      if (store_->Stats(&fresh).ok()) {
        store_stats_ = fresh;
        store_stats_at_ms_ = now;
      }
    }
    const StoreStats& s = store_stats_;
    j["store"] = {{"last_lsn", std::max(s.last_lsn, store_->LastLsn())},
                  {"acked_lsn", s.acked_lsn},
                  {"entries", s.entries},
                  {"file_bytes", s.file_bytes},
                  {"dead_letters", s.dead_letters},
                  {"rejected_full", s.rejected_full},
                  {"dropped_oldest", s.dropped_oldest},
                  {"counted_ms_ago", now - store_stats_at_ms_}};
  }
  if (retention_) {
    RetentionStats r = retention_->stats();
    j["retention"] = {{"passes", r.passes},
                      {"readings_pruned", r.pruned.readings},
                      {"pruned_early_for_space", r.pruned.early},
                      {"tombstones_pruned", r.pruned.tombstones},
                      {"read_view_pruned", r.pruned.remote},
                      {"space_low", r.pruned.space_low},
                      {"errors", r.errors},
                      {"longest_step_ms", r.longest_step_ms}};
  }
  uint64_t acked = 0;
  if (uplink_) {
    UplinkStats u = uplink_->stats();
    acked = u.checkpoint;
    json regions = json::array();
    for (const auto& r : u.regions) {
      regions.push_back({{"name", r.name}, {"connected", r.connected}, {"healthy", r.healthy},
                         {"rtt_ms", r.rtt_ms}, {"high_water", r.high_water}});
    }
    j["uplink"] = {{"write_region", u.write_region}, {"checkpoint", u.checkpoint},
                   {"last_lsn", u.last_lsn},         {"backlog", u.backlog},
                   {"batches_sent", u.batches_sent}, {"entries_sent", u.entries_sent},
                   {"bytes_sent", u.bytes_sent},     {"acks", u.acks},
                   {"resends", u.resends},           {"ack_timeouts", u.ack_timeouts},
                   {"refusals", u.refusals},         {"region_switches", u.region_switches},
                   {"inflight", u.inflight},         {"regions", regions}};
  }
  if (feed_puller_) {
    FeedPullerStats f = feed_puller_->stats();
    json regions = json::array();
    for (const auto& r : f.regions) {
      regions.push_back({{"name", r.name},     {"connected", r.connected}, {"position", r.position},
                         {"head", r.head},     {"applied", r.applied},     {"skipped_own", r.skipped_own},
                         {"resets", r.resets}});
    }
    j["read_view"] = {{"pages", f.pages}, {"timeouts", f.timeouts}, {"bad_messages", f.bad_messages},
                      {"regions", regions}};
  }
  int64_t now_ms = clock_->MonotonicMillis();
  if (rate_at_ms_ > 0 && now_ms - rate_at_ms_ >= 500) {
    double secs = static_cast<double>(now_ms - rate_at_ms_) / 1000.0;
    // Smoothed over a few samples: a per-second figure jumps with batching.
    auto smooth = [](double old, double fresh) { return old == 0 ? fresh : 0.7 * old + 0.3 * fresh; };
    ingest_rate_ = smooth(ingest_rate_, static_cast<double>(committed - std::min(committed, rate_committed_)) / secs);
    ack_rate_ = smooth(ack_rate_, static_cast<double>(acked - std::min(acked, rate_acked_)) / secs);
  }
  if (rate_at_ms_ == 0 || now_ms - rate_at_ms_ >= 500) {
    rate_at_ms_ = now_ms;
    rate_committed_ = committed;
    rate_acked_ = acked;
  }
  j["rates"] = {{"ingest_per_s", ingest_rate_}, {"acked_per_s", ack_rate_}};
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
  const std::string status_path = config.StatusPath();
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
      Status w = WriteFileAtomic(status_path, gateway.StatusJson().dump(2) + "\n", /*durable=*/false);
      if (!w.ok()) ES_LOG(kWarn, "status file: {}", w.ToString());
    }
  }
  systemd.Stopping();
  gateway.Stop();
  WriteFileAtomic(status_path, gateway.StatusJson().dump(2) + "\n", /*durable=*/false);
  return 0;
}

namespace {

std::string StatusLine(const nlohmann::json& j, int64_t now_ms) {
  auto num = [](const nlohmann::json& o, const char* a, const char* b) -> double {
    if (!o.contains(a) || !o[a].contains(b) || !o[a][b].is_number()) return 0;
    return o[a][b].get<double>();
  };
  // The store's last LSN: every reading ever ingested, across restarts (the
  // ingest counters start from zero with each process).
  double committed = num(j, "store", "last_lsn");
  double backlog = num(j, "uplink", "backlog");
  double sent = num(j, "uplink", "entries_sent");
  double acked = num(j, "uplink", "checkpoint");
  double in_rate = num(j, "rates", "ingest_per_s");
  double ack_rate = num(j, "rates", "acked_per_s");
  std::string region = j.contains("uplink") ? j["uplink"].value("write_region", "") : "";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "ingested %.0f | backlog %.0f | sent %.0f | acked %.0f | region %s | in %.0f/s, acked %.0f/s",
                committed, backlog, sent, acked, region.empty() ? "none" : region.c_str(), in_rate, ack_rate);
  std::string line = buf;
  if (backlog > 0) {
    // Draining at the acknowledgement rate net of what keeps arriving.
    double net = ack_rate - in_rate;
    if (net > 1) {
      std::snprintf(buf, sizeof buf, " | drain ~%.0fs", backlog / net);
      line += buf;
    } else {
      line += " | drain: waiting for a region";
    }
  } else {
    line += " | caught up";
  }
  int64_t age_ms = now_ms - j.value("time_ms", int64_t{0});
  if (age_ms > 5000) line += " | stale " + std::to_string(age_ms / 1000) + "s (not running?)";
  return line;
}

}  // namespace

int RunStatus(const Config& config, bool one_line) {
  const std::string path = config.StatusPath();
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok()) {
    std::fprintf(stderr, "edgesync status: no status file %s (is the gateway running?)\n", path.c_str());
    return 1;
  }
  if (!one_line) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    std::fprintf(stderr, "edgesync status: %s is not a status document\n", path.c_str());
    return 1;
  }
  std::printf("%s\n", StatusLine(j, SystemClock()->WallMillis()).c_str());
  return 0;
}

}  // namespace edgesync

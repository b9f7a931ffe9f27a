#include "agent/gateway.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "agent/options.h"
#include "agent/role_support.h"
#include "agent/roles.h"
#include "agent/store_figures.h"
#include "firmware-config/transport.h"
#include "platform/files.h"
#include "platform/histogram.h"
#include "platform/liveness.h"
#include "platform/log.h"
#include "platform/signals.h"
#include "platform/systemd.h"
#include "sync/mqtt_link_pool.h"

namespace edgesync {

namespace {

// Commits through the store and wakes the uplink at once, so a reading goes
// upstream without waiting for the uplink's next poll of the store.
// Also times each group commit for the commit-latency histogram.
class UplinkNotifyingSink : public StoreSink {
 public:
  UplinkNotifyingSink(Store* store, Uplink* uplink, Histogram* latency, Clock* clock)
      : StoreSink(store, store, store), uplink_(uplink), latency_(latency), clock_(clock) {}
  Status AppendReadings(const std::vector<Reading>& readings, uint64_t intake_seq) override {
    int64_t start = clock_->MonotonicNanos();
    Status s = StoreSink::AppendReadings(readings, intake_seq);
    if (s.ok()) latency_->Observe(static_cast<double>(clock_->MonotonicNanos() - start) / 1e9);
    if (s.ok() && uplink_ != nullptr) uplink_->NotifyAppended();
    return s;
  }
  Status PutDevice(const DeviceRecord& device) override {
    Status s = StoreSink::PutDevice(device);
    if (s.ok() && uplink_ != nullptr) uplink_->NotifyAppended();
    return s;
  }

 private:
  Uplink* uplink_;
  Histogram* latency_;
  Clock* clock_;
};

}  // namespace

Gateway::Gateway(Config config, Clock* clock) : config_(std::move(config)), clock_(clock ? clock : SystemClock()) {}

Gateway::~Gateway() { Stop(); }

Status Gateway::Start() {
  started_ms_ = clock_->WallMillis();
  // Also for a Config built in code, not only one `config check` passed.
  ES_RETURN_IF_ERROR(CheckTransport(config_));
  ES_RETURN_IF_ERROR(MakePrivateDir(config_.data_dir).Annotate("data_dir"));
  StoreOptions so = StoreOptionsFromConfig(config_);
  so.clock = clock_;
  so.take_id_while_empty = true;  // an id set after a first start, before any reading, takes effect
  ES_RETURN_IF_ERROR(Store::Open(so, &store_));
  retention_ = std::make_unique<Retention>(store_.get(), RetentionOptionsFromConfig(config_), clock_);
  ES_RETURN_IF_ERROR(retention_->Start().Annotate("retention"));
  if (!config_.regions.empty()) {
    // The region broker binds a client id to its identity: the uplink and
    // the feed puller share one connection per region broker under the
    // gateway's identity (sync/mqtt_link_pool.h).
    MqttLinkFactory links = IdentityBoundLinks(config_.gateway_id);
    UplinkOptions uo = UplinkOptionsFromConfig(config_);
    // Not trusted until the ingest has made its clock trust (below).
    uo.clock_trusted_since = [this]() -> int64_t {
      Ingest* ingest = clock_source_.load();
      if (ingest == nullptr) return 0;
      const ClockTrust::State state = ingest->clock_state();
      return state.trusted ? std::max<int64_t>(1, state.trusted_since_ms) : 0;
    };
    uplink_ = std::make_unique<Uplink>(store_.get(), std::move(uo), clock_, links);
    ES_RETURN_IF_ERROR(uplink_->Start().Annotate("uplink"));
    feed_puller_ = std::make_unique<FeedPuller>(store_.get(), FeedPullerOptionsFromConfig(config_), clock_, links);
    ES_RETURN_IF_ERROR(feed_puller_->Start().Annotate("feed puller"));
  } else {
    ES_LOG(kWarn, "gateway {}: no [[region]] configured: readings are kept locally only", config_.gateway_id);
  }
  sink_ = std::make_unique<UplinkNotifyingSink>(store_.get(), uplink_.get(), &commit_latency_, clock_);
  ingest_ = std::make_unique<Ingest>(IngestOptionsFromConfig(config_), sink_.get(), clock_);
  ES_RETURN_IF_ERROR(ingest_->Init());
  clock_source_ = ingest_.get();
  ES_RETURN_IF_ERROR(NewPahoMqttLink(IngestLinkOptionsFromConfig(config_), &link_).Annotate("ingest broker"));
  Ingest* ingest = ingest_.get();
  link_->SetMessageHandler([ingest](MqttMessage&& m) { ingest->OnMessage(m.topic, m.payload, m.duplicate, m.packet_id); });
  // When the link was away and whether the broker kept our session: what a
  // device may send in a burst when the broker delivers its queue.
  link_->SetStateHandler([ingest](bool connected, bool session_present, const std::string&) {
    if (connected) {
      ingest->LinkUp(session_present);
    } else {
      ingest->LinkDown();
    }
  });
  for (const std::string& f : ingest_->Filters()) ES_RETURN_IF_ERROR(link_->Subscribe(f, 1));
  // The journal's readings go in before any message can be redelivered:
  // the gate keeps the link down until they are (and while the store
  // refuses commits), never the MQTT receive thread (intake_gate.h).
  ES_RETURN_IF_ERROR(ingest_->Start().Annotate("ingest"));
  gate_ = std::make_unique<IntakeGate>(ingest_.get(), link_.get());
  gate_->Start();
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
  // has committed its last batch. The gate goes before it, so that it
  // cannot resume the link meanwhile.
  if (gate_) gate_->Stop();
  if (link_) link_->Disconnect(3000);
  if (ingest_) ingest_->Stop();
  if (uplink_) uplink_->Stop();
  if (feed_puller_) feed_puller_->Stop();
  if (retention_) retention_->Stop();
  ES_LOG(kInfo, "gateway {}: stopped", config_.gateway_id);
}

nlohmann::json Gateway::StatusJson() {
  using json = nlohmann::json;
  MutexLock lock(&status_mu_);
  json j;
  j["role"] = "gateway";
  j["gateway_id"] = config_.gateway_id;
  j["running"] = true;
  j["pid"] = static_cast<int64_t>(::getpid());
  j["time_ms"] = clock_->WallMillis();
  j["started_ms"] = started_ms_;
  if (link_) {
    MqttLink::Counters m = link_->counters();
    j["ingest_mqtt"] = {{"connected", link_->connected()}, {"uri", config_.ingest_broker_uri},
                        {"connects", m.connects},          {"connection_losses", m.connection_losses},
                        {"received", m.received},          {"paused", link_->paused()},
                        {"pauses", m.pauses}};
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
                   {"untrusted_clock", c.untrusted_clock},
                   {"replayed", c.replayed},
                   {"journal_failures", c.journal_failures},
                   {"journal_bytes", c.journal_bytes},
                   {"paused", c.paused},
                   {"pause_reason", c.pause_reason},
                   {"pauses", c.pauses},
                   {"paused_ms", c.paused_ms},
                   {"overruns", c.overruns},
                   {"dead_letters", c.dead_letters},
                   {"dead_letters_dropped", c.dead_letters_dropped},
                   {"rejected", rejected},
                   {"readings_rate_limited", c.readings_rate_limited},
                   {"rate_limited_devices", limited},
                   {"rate_limited_evicted", c.rate_limited_evicted},
                   {"ack", config_.ingest_ack}};
    const ClockTrust::State clock = ingest_->clock_state();
    j["clock"] = {{"trusted", clock.trusted},
                  {"source", clock.source},
                  {"sync", ClockSyncName(clock.last)},
                  {"trusted_since_ms", clock.trusted_since_ms}};
    const ClockPeriodFigures periods = ingest_->clock_periods();
    if (periods.kept) {
      j["clock"]["periods"] = {{"open", periods.open},
                               {"corrected", periods.corrected},
                               {"uncorrectable", periods.uncorrectable},
                               {"readings_open", periods.readings_open},
                               {"readings_corrected", periods.readings_corrected},
                               {"readings_uncorrectable", periods.readings_uncorrectable}};
    }
  }
  int64_t now_ms = clock_->MonotonicMillis();
  if (store_) {
    std::vector<std::string> regions;
    for (const RegionConfig& r : config_.regions) regions.push_back(r.name);
    uint64_t remote_applied = 0;
    if (feed_puller_) {
      for (const auto& r : feed_puller_->stats().regions) remote_applied += r.applied;
    }
    j.update(StoreFigures(store_.get(), store_counts_.Get(store_.get(), now_ms, remote_applied), config_.data_dir,
                          regions, clock_->WallMillis()));
  }
  if (sink_) j["commit_latency"] = HistogramJson(commit_latency_.Snapshot());
  if (retention_) {
    RetentionStats r = retention_->stats();
    j["retention"] = {{"passes", r.passes},
                      {"readings_pruned", r.pruned.readings},
                      {"pruned_early_for_space", r.pruned.early},
                      {"tombstones_pruned", r.pruned.tombstones},
                      {"read_view_pruned", r.pruned.remote},
                      {"space_low", r.pruned.space_low},
                      {"compacted_spans", r.compacted.spans},
                      {"compacted_readings", r.compacted.readings},
                      {"compacted_bytes_before", r.compacted.bytes_before},
                      {"compacted_bytes_after", r.compacted.bytes_after},
                      {"compaction_kept_spans", r.compacted.kept},
                      {"compaction_kept_readings", r.compacted.kept_readings},
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
                         {"rtt_ms", r.rtt_ms}, {"high_water", r.high_water}, {"acked", r.acked},
                         {"refilling", r.refilling}, {"refill_to", r.refill_to}, {"lost", r.lost}});
    }
    j["uplink"] = {{"write_region", u.write_region}, {"checkpoint", u.checkpoint},
                   {"complete_through_ms", u.complete_through_ms},
                   {"complete_age_ms", u.complete_through_ms > 0 ? clock_->WallMillis() - u.complete_through_ms : 0},
                   {"last_lsn", u.last_lsn},         {"backlog", u.backlog},
                   {"batches_sent", u.batches_sent}, {"entries_sent", u.entries_sent},
                   {"bytes_sent", u.bytes_sent},     {"acks", u.acks},
                   {"link_bytes_sent", u.link_bytes_sent}, {"link_bytes_per_s", u.link_bytes_per_s},
                   {"max_bytes_per_s", u.max_bytes_per_s}, {"cap_wait_ms", u.cap_wait_ms},
                   {"resends", u.resends},           {"ack_timeouts", u.ack_timeouts},
                   {"answer_wait_ms", u.answer_wait_ms},
                   {"refusals", u.refusals},         {"acks_ignored", u.acks_ignored},
                   {"acks_late", u.acks_late},
                   {"context_batches", u.context_batches}, {"context_misses", u.context_misses},
                   {"region_switches", u.region_switches},
                   {"region_regressions", u.region_regressions}, {"refills_pending", u.refills_pending},
                   {"refill_lost", u.refill_lost},
                   {"corrections_withheld", u.corrections_withheld},
                   {"inflight", u.inflight},         {"regions", regions},
                   {"ack_latency", HistogramJson(u.ack_latency)},
                   {"live_lane_open", u.live_lane_open}, {"live_from", u.live_from},
                   {"live_lanes_opened", u.live_lanes_opened},
                   {"priority_batches_sent", u.priority_batches_sent},
                   {"priority_readings_sent", u.priority_readings_sent}};
    auto lane_json = [](const UplinkLaneStats& l) {
      json o = {{"waiting", l.waiting}, {"waiting_bytes", l.waiting_bytes}, {"oldest_age_ms", l.oldest_age_ms},
                {"readings_per_s", l.readings_per_s}, {"bytes_per_s", l.bytes_per_s},
                {"batches_sent", l.batches_sent}, {"entries_sent", l.entries_sent}};
      if (l.eta_s >= 0) o["eta_s"] = l.eta_s;
      return o;
    };
    j["uplink_live_lane"] = lane_json(u.live_lane);
    j["uplink_backlog_lane"] = lane_json(u.backlog_lane);
  }
  if (feed_puller_) {
    FeedPullerStats f = feed_puller_->stats();
    json regions = json::array();
    for (const auto& r : f.regions) {
      regions.push_back({{"name", r.name},
                         {"connected", r.connected},
                         {"position", r.position},
                         {"head", r.head},
                         {"lag", r.lag},
                         {"positions", r.positions},
                         {"applied", r.applied},
                         {"skipped_own", r.skipped_own},
                         {"resets", r.resets},
                         {"epoch", r.epoch},
                         {"pages_ignored", r.bad_pages},
                         {"pages_late", r.late_pages},
                         {"store_errors", r.store_errors},
                         {"last_error", r.last_error}});
    }
    j["read_view"] = {{"pages", f.pages}, {"timeouts", f.timeouts}, {"bad_messages", f.bad_messages},
                      {"regions", regions}};
    // The other origins' completeness watermarks the read view holds: the
    // oldest (most behind) first, at most kListedWatermarks of them.
    std::vector<OriginWatermark> marks;
    if (store_ && store_->ListWatermarks(&marks).ok()) {
      std::sort(marks.begin(), marks.end(), [](const OriginWatermark& a, const OriginWatermark& b) {
        return a.complete_through_ms != b.complete_through_ms ? a.complete_through_ms < b.complete_through_ms
                                                              : a.origin.ToString() < b.origin.ToString();
      });
      const int64_t wall = clock_->WallMillis();
      nlohmann::json listed = nlohmann::json::array();
      for (size_t i = 0; i < marks.size() && i < kListedWatermarks; ++i) {
        listed.push_back({{"origin", marks[i].origin.ToString()},
                          {"complete_through_ms", marks[i].complete_through_ms},
                          {"complete_age_ms", wall - marks[i].complete_through_ms}});
      }
      j["read_view"]["watermark_origins"] = marks.size();
      j["read_view"]["watermarks"] = std::move(listed);
    }
  }
  j["rates"] = {{"ingest_per_s", ingest_rate_.Update(committed, now_ms)},
                {"acked_per_s", ack_rate_.Update(acked, now_ms)}};
  AddProcessFigures(&j);
  return j;
}

std::map<std::string, double> Gateway::ChartPoints(const nlohmann::json& s) {
  std::map<std::string, double> points;
  // A counter: the chart shows its mean rate over each step (StatusBoard).
  if (s.contains("ingest")) points["ingest_total"] = s["ingest"].value("readings_committed", 0.0);
  if (s.contains("backlog")) points["backlog"] = s["backlog"].value("readings", 0.0);
  if (s.contains("uplink")) {
    for (const auto& r : s["uplink"]["regions"]) {
      double rtt = r.value("rtt_ms", -1.0);
      if (rtt >= 0) points["rtt_ms:" + r.value("name", "")] = rtt;
    }
  }
  return points;
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
  StatusBoard board(config.StatusPath());
  HttpStatusServer http(&board);
  StartHttp(config, &http);
  systemd.Ready();
  WatchdogGate watchdog(&systemd);
  int64_t tick_ms = 1000;
  if (systemd.watchdog_interval_ms() > 0) tick_ms = std::min(tick_ms, systemd.watchdog_interval_ms() / 2);
  int64_t next_status = 0;
  // The first status goes out at once, then every second: `status` must not
  // read a running gateway as stopped for its first second.
  while (!Signals::StopRequested()) {
    if (Signals::TakeReload()) {
      // Only what can change without a restart: the log level.
      systemd.Reloading();
      ReloadLogLevel(config, ConfigRole::kGateway);
      systemd.Ready();
    }
    watchdog.Tick();
    int64_t now = SystemClock()->MonotonicMillis();
    if (now >= next_status) {
      next_status = now + 1000;
      nlohmann::json snapshot = gateway.StatusJson();
      board.Publish(snapshot, Gateway::ChartPoints(snapshot), SystemClock()->WallMillis());
    }
    Signals::WaitForSignal(tick_ms);
  }
  systemd.Stopping();
  http.Stop();
  gateway.Stop();
  nlohmann::json last = gateway.StatusJson();
  last["running"] = false;
  board.Publish(last, {}, SystemClock()->WallMillis());
  return 0;
}

}  // namespace edgesync

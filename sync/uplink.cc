#include "sync/uplink.h"

#include <algorithm>
#include <random>

#include "platform/liveness.h"
#include "platform/log.h"
#include "store/checkpoint_names.h"

namespace edgesync {
namespace {

constexpr int64_t kTickMs = 10;
// A slow region's answers may make a batch wait up to this many times
// uplink.ack_timeout_ms (10 s by default: 80 s) before it is resent.
constexpr int64_t kMaxAnswerWaitFactor = 8;
// Late answers are said in one line once none came for this long.
constexpr int64_t kLateAnswersQuietMs = 5000;
// Under uplink.max_bytes_per_s the bucket holds this much of the cap: the
// burst after an idle spell, and the size batches aim at. A quarter second
// keeps what any 10 s goes within a few percent of the cap (a burst of one
// second alone would be 10%), and batches of that size leave in an even
// stream a few times a second instead of a lump every second.
constexpr int64_t kCapDepthMs = 250;
// The first batch's entries are sized on this guess of bytes per entry
// (self-contained batches take ~5-40), the next ones on what the last batch
// measured, aiming at this share of the depth (room for a batch that
// compresses worse than the last).
constexpr int64_t kFirstGuessBytesPerEntry = 64;
constexpr double kCappedBatchShare = 0.9;
// ... but never below this many bytes: a batch carries ~660 bytes of its
// own, so under a cap of a few KB/s batches of a quarter second would hold
// a handful of readings and the link would carry mostly batch headers. Such
// a batch goes once the bucket is full and the next waits for its debt.
constexpr double kMinCappedBatchBytes = 4096;
// The send rate (link_bytes_per_s) is measured over this many seconds.
constexpr size_t kRateSeconds = 5;
// A live lane opens when more than this many batches lie between where the
// uplink stands and the log's tail: less drains within a few round trips.
constexpr uint64_t kLiveLaneOpenBatches = 4;
// Under a cap a live batch gathers until the cap has carried 100 times a
// batch's own bytes, so the live lane's framing takes ~1% of the cap and a
// drain's bytes per reading stay as in strict order. A live batch referring
// to its context carries ~320 bytes of its own whatever its size (MQTT
// header and topic, the Message and Batch tables, the columns' skeleton,
// the zstd frame): gathered every 200 ms they took 4% of a 28,000 bytes/s
// cap. Between 200 ms (fast links) and 1 s (a live reading's wait for its
// batch stays well inside the 2 s it may take to reach the region).
constexpr int64_t kLiveBatchOwnBytes = 320;
constexpr int64_t kLiveFramingShareInverse = 100;
constexpr int64_t kLiveGatherMinMs = 200;
constexpr int64_t kLiveGatherMaxMs = 1000;

int64_t LiveGatherMs(int64_t max_bytes_per_s) {
  return std::clamp(kLiveBatchOwnBytes * kLiveFramingShareInverse * 1000 / std::max<int64_t>(1, max_bytes_per_s),
                    kLiveGatherMinMs, kLiveGatherMaxMs);
}
// A priority batch looks at most this many entries of the log (the feed's
// page budget too): decoding them takes milliseconds on a Pi, so one send
// cycle stays short however sparse the level; the next batch goes on from
// there, and a batch declares the whole span it looked at.
constexpr size_t kPriorityScanEntries = 65536;

}  // namespace

Uplink::Uplink(UplinkSource* store, UplinkOptions options, Clock* clock, MqttLinkFactory factory)
    : store_(store),
      options_(std::move(options)),
      clock_(clock ? clock : SystemClock()),
      factory_(factory ? std::move(factory) : MqttLinkFactory(NewPahoMqttLink)),
      backoff_(options_.backoff_base_ms, options_.backoff_max_ms) {
  encode_.zstd_level = options_.zstd_level;
  answer_wait_ms_ = options_.ack_timeout_ms;
}

Uplink::~Uplink() { Stop(); }

Status Uplink::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (!IsTopicId(options_.gateway_id)) {
    return Status::InvalidArgument("uplink: gateway id must be 1..64 of [A-Za-z0-9_-]");
  }
  if (options_.regions.empty()) return Status::InvalidArgument("uplink: no region configured");
  if (options_.window == 0 || options_.batch_max_readings == 0) {
    return Status::InvalidArgument("uplink: window and batch_max_readings must be at least 1");
  }
  if (options_.max_bytes_per_s < 0) return Status::InvalidArgument("uplink: max_bytes_per_s must be 0 or more");
  if (options_.priority_levels > kMaxPriorityLevel) {
    return Status::InvalidArgument("uplink: at most " + std::to_string(kMaxPriorityLevel) + " priority levels");
  }
  bucket_.reset();
  if (options_.max_bytes_per_s > 0) {
    bucket_ = std::make_unique<ByteBucket>(options_.max_bytes_per_s, options_.max_bytes_per_s * kCapDepthMs / 1000,
                                           clock_);
  }
  {
    MutexLock lock(&stats_mu_);
    stats_.max_bytes_per_s = options_.max_bytes_per_s;
  }
  origin_ = store_->origin();
  reply_topic_ = ReplyTopic(options_.topic_prefix, options_.gateway_id, "up");
  ES_RETURN_IF_ERROR(store_->GetCheckpoint(checkpoint::kUpstream, &checkpoint_));
  // Correlation ids start at a random point: an answer counts only for the
  // batch it names, and a guessable id would make forging one cheap.
  correlation_ = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  next_after_ = checkpoint_;
  stream_mark_ = checkpoint_;
  records_.assign(options_.regions.size(), RegionRecord{});
  for (size_t i = 0; i < options_.regions.size(); ++i) {
    ES_RETURN_IF_ERROR(store_->GetCheckpoint(checkpoint::UpstreamOf(options_.regions[i].name), &records_[i].acked));
    ES_RETURN_IF_ERROR(store_->GetCheckpoint(checkpoint::UpstreamEpochOf(options_.regions[i].name), &records_[i].epoch_tag));
  }

  std::vector<RegionSelector::Region> regions;
  links_.clear();
  for (size_t i = 0; i < options_.regions.size(); ++i) {
    const UplinkRegion& r = options_.regions[i];
    if (!IsTopicId(r.name)) return Status::InvalidArgument("uplink: region name must be [A-Za-z0-9_-]");
    MqttLinkOptions lo = r.link;
    lo.client_id = "es-up-" + options_.gateway_id;
    std::unique_ptr<MqttLink> link;
    ES_RETURN_IF_ERROR(factory_(lo, &link).Annotate("uplink region " + r.name));
    link->SetMessageHandler([this, i](MqttMessage&& m) {
      MutexLock lock(&mu_);
      events_.push_back(Event{Event::Type::kMessage, i, false, std::move(m.payload), clock_->MonotonicNanos()});
      cv_.notify_one();
    });
    link->SetStateHandler([this, i](bool connected, bool, const std::string&) {
      MutexLock lock(&mu_);
      events_.push_back(Event{Event::Type::kState, i, connected, {}, 0});
      cv_.notify_one();
    });
    ES_RETURN_IF_ERROR(link->Subscribe(reply_topic_, 1));
    links_.push_back(std::move(link));
    regions.push_back({r.name, r.preference});
  }
  int64_t health_timeout = 3 * options_.probe_interval_ms + 1000;
  // Long enough for every live region to connect and answer its first
  // probe on a loaded board (over 500 ms was seen on 2 busy cores); the
  // most preferred region takes the writes meanwhile if it answers.
  int64_t grace = std::clamp<int64_t>(2 * options_.probe_interval_ms, 2000, 3000);
  selector_ = std::make_unique<RegionSelector>(regions, health_timeout, options_.failback_after_ms, grace);
  next_probe_ms_.assign(links_.size(), 0);
  region_high_water_.assign(links_.size(), 0);
  context_refused_.assign(links_.size(), false);
  context_proven_.assign(links_.size(), false);
  region_version_.assign(links_.size(), 0);
  withheld_said_.assign(links_.size(), false);
  live_refused_.assign(links_.size(), false);
  priority_refused_.assign(links_.size(), false);
  live_from_ = 0;
  backlog_sent_through_ = checkpoint_;
  ForgetPriority();
  for (auto& link : links_) ES_RETURN_IF_ERROR(link->Start());
  stop_ = false;
  worker_ = std::thread([this] { Run(); });
  ES_LOG(kInfo, "uplink: started, {} region(s), checkpoint {}", links_.size(), checkpoint_);
  return Status::Ok();
}

void Uplink::Stop() {
  if (!worker_.joinable()) return;
  stop_ = true;
  {
    MutexLock lock(&mu_);
    cv_.notify_all();
  }
  worker_.join();
  for (auto& link : links_) link->Disconnect(2000);
  ES_LOG(kInfo, "uplink: stopped at checkpoint {}", checkpoint_);
}

void Uplink::NotifyAppended() {
  MutexLock lock(&mu_);
  wake_ = true;
  cv_.notify_one();
}

UplinkStats Uplink::stats() const {
  MutexLock lock(&stats_mu_);
  UplinkStats s = stats_;
  s.ack_latency = ack_latency_.Snapshot();
  return s;
}

void Uplink::Run() {
  Heartbeat beat("uplink");
  while (!stop_) {
    beat.Beat();  // each turn is bounded by a timed wait
    std::deque<Event> events;
    {
      // Sleeps until an event, a commit (NotifyAppended), the pending
      // batch's deadline or the tick (probes, ack timeouts, polling a store
      // written by another process), whichever is first.
      int64_t wait_ms = kTickMs;
      if (wake_at_ms_ >= 0) wait_ms = std::clamp<int64_t>(wake_at_ms_ - NowMs(), 0, kTickMs);
      wake_at_ms_ = -1;
      MutexLock lock(&mu_);
      lock.WaitFor(&cv_, std::chrono::milliseconds(wait_ms),
                   [this]() REQUIRES(mu_) { return stop_ || wake_ || !events_.empty(); });
      events.swap(events_);
      wake_ = false;
    }
    for (Event& e : events) HandleEvent(e);
    int64_t now = NowMs();
    Probe(now);
    Choose(now);
    ChooseTarget(now);
    UpdateLanes(now);
    if (!inflight_.empty() && now - inflight_.front().sent_ms > answer_wait_ms_) {
      {
        MutexLock lock(&stats_mu_);
        ++stats_.ack_timeouts;
      }
      const size_t region = inflight_.front().region;
      // Silent: not one answer, probes included, since the overdue batch
      // went (a stopped hub behind a live broker); else the region answers,
      // only not this batch in time (a busy hub).
      const int64_t heard_ms = selector_->last_answer_ms(region);
      const int64_t silent_for_ms = now - std::max(heard_ms, inflight_.front().sent_ms);
      const bool silent = heard_ms <= inflight_.front().sent_ms;
      // A hub of protocol 2 leaves a lean context batch unanswered (it
      // cannot tell whose it is): the next ones name their origin again.
      context_proven_[region] = false;
      Rewind("no answer within uplink.ack_timeout_ms", true);
      const int64_t longest = kMaxAnswerWaitFactor * options_.ack_timeout_ms;
      const int64_t before = answer_wait_ms_;
      if (answer_wait_ms_ < longest) answer_wait_ms_ = std::min(longest, 2 * answer_wait_ms_);
      if (silent) {
        ES_LOG(kWarn,
               "uplink: region {} has answered nothing, not even a probe, for {} ms (its hub stopped?); "
               "batches now wait {} ms for their answer",
               options_.regions[region].name, silent_for_ms, answer_wait_ms_);
      } else if (answer_wait_ms_ != before) {
        ES_LOG(kInfo,
               "uplink: region {} answers probes but not batches within {} ms (a busy hub); batches now wait {} ms "
               "for their answer",
               options_.regions[region].name, before, answer_wait_ms_);
      }
    }
    SendBatches(now);
    if (late_acks_unsaid_ > 0 && now - last_late_ack_ms_ >= kLateAnswersQuietMs) {
      ES_LOG(kInfo, "uplink: ignored {} late answer(s) to batches resent after an outage (acks_late)",
             late_acks_unsaid_);
      late_acks_unsaid_ = 0;
    }

    MutexLock lock(&stats_mu_);
    stats_.write_region = write_region_ >= 0 ? options_.regions[write_region_].name : "";
    stats_.checkpoint = checkpoint_;
    stats_.complete_through_ms = complete_through_ms_;
    stats_.answer_wait_ms = answer_wait_ms_;
    stats_.last_lsn = store_->LastLsn();
    stats_.backlog = stats_.last_lsn > checkpoint_ ? stats_.last_lsn - checkpoint_ : 0;
    stats_.inflight = inflight_.size();
    stats_.cap_wait_ms = cap_wait_ms_ + (cap_wait_since_ms_ >= 0 ? now - cap_wait_since_ms_ : 0);
    if (rate_samples_.empty() || now - rate_samples_.back().first >= 1000) {
      rate_samples_.emplace_back(now, link_bytes_);
      if (rate_samples_.size() > kRateSeconds + 1) rate_samples_.pop_front();
      const auto& [from_ms, from_bytes] = rate_samples_.front();
      stats_.link_bytes_per_s =
          now > from_ms ? static_cast<double>(link_bytes_ - from_bytes) * 1000.0 / static_cast<double>(now - from_ms) : 0;
    }
    stats_.region_switches = static_cast<uint64_t>(selector_->switches());
    stats_.refills_pending = 0;
    stats_.bad_messages = wire_counters_.rejected();
    stats_.regions.resize(links_.size());
    for (size_t i = 0; i < links_.size(); ++i) {
      UplinkRegionStats& r = stats_.regions[i];
      r.name = options_.regions[i].name;
      r.connected = links_[i]->connected();
      r.healthy = selector_->Healthy(i, now);
      r.rtt_ms = selector_->rtt_us(i) < 0 ? -1 : selector_->rtt_us(i) / 1000.0;
      r.high_water = region_high_water_[i];
      r.acked = records_[i].acked;
      r.refilling = records_[i].refilling;
      r.refill_to = records_[i].refill_to;
      r.lost = records_[i].lost;
      if (records_[i].refilling || records_[i].suspect) ++stats_.refills_pending;
    }
    UpdateLaneStats(now);
    drain_progress_.Update(checkpoint_, stats_.backlog, now);
  }
}

void Uplink::HandleEvent(Event& event) {
  int64_t now = NowMs();
  if (event.type == Event::Type::kState) {
    selector_->OnConnected(event.region, event.connected, now);
    if (event.connected) {
      next_probe_ms_[event.region] = 0;
      context_refused_[event.region] = false;  // it may have been upgraded meanwhile
    }
    context_proven_[event.region] = false;
    // Another connection may reach another hub (or an upgraded one): its
    // protocol is learnt again from its answers.
    region_version_[event.region] = 0;
    withheld_said_[event.region] = false;
    live_refused_[event.region] = false;
    priority_refused_[event.region] = false;
    if (static_cast<int>(event.region) == target_) {
      // Publishes in flight on a lost connection may be gone: go back to the
      // checkpoint; the link reconnects with its own backoff.
      Rewind(event.connected ? "reconnected" : "connection lost", false);
    }
    return;
  }
  WireMessage m;
  Status st = DecodeMessage(event.payload, DecodeLimits{}, &m, &wire_counters_);
  if (!st.ok()) {
    ES_LOG(kWarn, "uplink: region {}: undecodable answer: {}", options_.regions[event.region].name, st.ToString());
    return;
  }
  // Every hub message carries its protocol: what the batches to it may hold.
  if (m.kind == WireKind::kPong || m.kind == WireKind::kAck) region_version_[event.region] = m.version;
  if (m.kind == WireKind::kPong) {
    int64_t rtt_ns = event.received_ns - m.ping_sent_ns;
    if (rtt_ns >= 0 && rtt_ns < int64_t{600} * 1000000000) selector_->OnProbeAnswered(event.region, rtt_ns / 1000, now);
    RegionRecord& rec = records_[event.region];
    // A store of another epoch than the one that acknowledged our log may
    // have lost it (a re-created store; "" is a hub of protocol 3). Our
    // next batch to it names our record and its answer says.
    if (!m.pong_epoch.empty() && rec.acked > 0 && !rec.refilling && !rec.suspect &&
        EpochTag(m.pong_epoch) != rec.epoch_tag) {
      rec.suspect = true;
      ES_LOG(kInfo, "uplink: region {} answers with store epoch {}, not the one that acknowledged {} of ours; "
             "asking it what it holds", options_.regions[event.region].name, m.pong_epoch, rec.acked);
      if (static_cast<int>(event.region) == target_) Rewind("the region's store changed", false);
    }
  } else if (m.kind == WireKind::kAck) {
    HandleAck(event.region, m.correlation_id, m.ack);
  }
}

void Uplink::IgnoreAck(size_t region, uint64_t correlation_id, const char* why) {
  ES_LOG(kWarn, "uplink: ignored an answer (correlation {}) arriving from region {}: {}", correlation_id,
         options_.regions[region].name, why);
  MutexLock lock(&stats_mu_);
  ++stats_.acks_ignored;
}

void Uplink::HandleAck(size_t region, uint64_t correlation_id, const WireAck& ack) {
  const std::string& name = options_.regions[region].name;
  // A hub that lost our context answers NoContext to a batch that named no
  // origin (the context's): it knows our id (the topic), not our epoch.
  const bool unnamed = ack.code == AckCode::kNoContext && ack.origin.epoch.empty() &&
                       ack.origin.gateway_id == origin_.gateway_id;
  if (ack.origin != origin_ && !unnamed) return IgnoreAck(region, correlation_id, "it names another origin");
  if (ack.region != name) return IgnoreAck(region, correlation_id, "it names another region");
  // Only an answer to a batch in flight counts: anything else is forged,
  // replayed, or answers a batch given up on (after a rewind), whose
  // outcome the resend will learn again.
  auto batch = std::find_if(inflight_.begin(), inflight_.end(),
                            [&](const InFlight& f) { return f.correlation_id == correlation_id; });
  if (correlation_id == 0) return IgnoreAck(region, correlation_id, "it has no correlation id");
  if (batch == inflight_.end() && correlation_id > correlation_) {
    return IgnoreAck(region, correlation_id, "no batch was sent with that correlation id");
  }
  if (batch == inflight_.end()) {
    // Our origin and the region's name, to a batch sent and no longer in
    // flight: the answer to a batch given up on (or a replay), which every
    // outage brings by the dozen. Counted, and said in one line once they
    // stop (Run).
    ES_LOG(kDebug, "uplink: ignored a late answer (correlation {}) from region {}: no batch in flight has that "
           "correlation id", correlation_id, name);
    ++late_acks_unsaid_;
    last_late_ack_ms_ = NowMs();
    MutexLock lock(&stats_mu_);
    ++stats_.acks_ignored;
    ++stats_.acks_late;
    return;
  }
  if (batch->region != region) return IgnoreAck(region, correlation_id, "the batch was sent to another region");
  selector_->OnBatchAnswered(region, NowMs());
  region_high_water_[region] = std::max(region_high_water_[region], ack.high_water);
  if (batch->priority > 0 &&
      (ack.code == AckCode::kOk || ack.code == AckCode::kGap || ack.code == AckCode::kBadBatch)) {
    return HandlePriorityAck(batch, ack);
  }
  if (ack.code == AckCode::kNoContext) {
    // Not a fault of the batch nor a sign of load: the region lost (or
    // never had) the context, so the resend goes at once, self-contained.
    {
      MutexLock lock(&stats_mu_);
      ++stats_.refusals;
      ++stats_.context_misses;
    }
    ++context_misses_in_row_;
    plain_batches_left_ = (size_t{1} << std::min(context_misses_in_row_ - 1, 6)) - 1;
    ES_LOG(kInfo, "uplink: region {} does not hold the series context of our batches; resending self-contained",
           name);
    Rewind("the region does not hold the series context", false);
    return;
  }
  if (ack.code == AckCode::kRegressed) return HandleRegressed(region, ack);
  if (ack.code != AckCode::kOk) {
    {
      MutexLock lock(&stats_mu_);
      ++stats_.refusals;
    }
    if (ack.code == AckCode::kGap && batch->live) {
      // The region holds as many spans of ours above its mark as it keeps
      // (kMaxHeldRanges): one lane to it until it reconnects.
      live_refused_[region] = true;
      ES_LOG(kWarn, "uplink: region {} holds no more live spans of ours ({}); sending one lane until it reconnects",
             name, ack.message);
      CloseLane("the region refused a live span");
      Rewind("live batch refused", false);
      return;
    }
    ES_LOG(kWarn, "uplink: region {} refused a batch ({}): {}", name, static_cast<int>(ack.code), ack.message);
    if (ack.code == AckCode::kBadBatch && batch->with_context && !context_refused_[region]) {
      // A hub of protocol 2 refuses the ColumnsContext encoding it does not
      // know; it decodes self-contained batches.
      context_refused_[region] = true;
      ES_LOG(kWarn, "uplink: region {} does not decode batches that refer to a series context (an older hub?); "
             "sending it self-contained batches until it reconnects", name);
    }
    // The batches after it are refused too; the rewind forgets them all, so
    // their refusals are no longer in flight.
    Rewind("batch refused", true);
    return;
  }
  {
    MutexLock lock(&stats_mu_);
    ++stats_.acks;
  }
  if (batch->with_context) {
    context_misses_in_row_ = 0;
    context_proven_[region] = true;
  }
  // The region may hold more than this batch (sent before); the checkpoint
  // still moves only as far as what this answer acknowledges of ours.
  // While lanes interleave, "what was sent" is what was sent of both when
  // the batch went (InFlight::covers).
  const uint64_t hw = std::min(ack.high_water, batch->covers);
  const int64_t sent_ms = batch->sent_ms;
  if (!RecordAck(region, ack, hw, batch->lost)) return;
  if (static_cast<int>(region) == live_target_) TakeHeldSpans(ack);
  TakePriorityMarks(region, ack);
  int64_t now = NowMs();
  // Answered in time: the wait comes back to what the answers need with
  // room (four times this one's round trip), never below ack_timeout_ms.
  answer_wait_ms_ = std::max(options_.ack_timeout_ms, std::min(answer_wait_ms_, 4 * (now - sent_ms)));
  RemoveAnswered(now);
  if (next_after_ < stream_mark_) next_after_ = stream_mark_;
}

size_t Uplink::LaneInFlight(bool live) const {
  return static_cast<size_t>(std::count_if(inflight_.begin(), inflight_.end(), [live](const InFlight& f) {
    return f.priority == 0 && f.live == live;
  }));
}

void Uplink::ForgetPriority() {
  for (PriorityCursor& c : priority_) c = PriorityCursor{};
  priority_known_ = false;
}

void Uplink::TakePriorityMarks(size_t region, const WireAck& ack) {
  if (static_cast<int>(region) != target_ || region_version_[region] < kPriorityVersion) return;
  // P[k] only grows while the region holds what it answered (a region that
  // lost it answers Regressed, which rewinds and forgets them).
  for (size_t k = 0; k < ack.priority_held.size() && k < kMaxPriorityLevel; ++k) {
    priority_[k].held = std::max(priority_[k].held, ack.priority_held[k]);
  }
  priority_known_ = true;
}

void Uplink::HandlePriorityAck(std::deque<InFlight>::iterator batch, const WireAck& ack) {
  const size_t region = batch->region;
  const size_t level = batch->priority;
  PriorityCursor& c = priority_[level - 1];
  const int64_t now = NowMs();
  if (ack.code == AckCode::kOk) {
    ack_latency_.Observe(static_cast<double>(now - batch->sent_ms) / 1000.0);
    inflight_.erase(batch);
    c.in_flight = false;
    TakePriorityMarks(region, ack);
    MutexLock lock(&stats_mu_);
    ++stats_.acks;
    return;
  }
  if (ack.code == AckCode::kBadBatch) {
    // A hub that does not decode priority batches (one of protocol 7 behind
    // the region's broker, mid-upgrade or rolled back, refuses their
    // encoding) applied nothing of it. The lanes carry every entry anyway:
    // no priority batch to that region until it reconnects, and no rewind.
    inflight_.erase(batch);
    c.in_flight = false;
    for (PriorityCursor& other : priority_) other.ready.reset();
    if (!priority_refused_[region]) {
      priority_refused_[region] = true;
      ES_LOG(kWarn, "uplink: region {} refused a priority batch of level {} ({}); no priority batches to it until "
             "it reconnects, its lanes carry every entry", options_.regions[region].name, level, ack.message);
    }
    MutexLock lock(&stats_mu_);
    ++stats_.refusals;
    return;
  }
  // A gap: the region's mark of the level lies below where the batch began
  // and its contiguous mark too (a store of another history behind the
  // same name, a region that took over). The level starts again from what
  // it says it holds, once an answer of the stream says where its mark
  // stands.
  inflight_.erase(batch);
  c = PriorityCursor{};
  if (level - 1 < ack.priority_held.size()) c.held = ack.priority_held[level - 1];
  priority_known_ = false;
  ES_LOG(kInfo, "uplink: region {} holds level {} of ours only up to {} ({}); that level starts again from there",
         options_.regions[region].name, level, c.held, ack.message);
  MutexLock lock(&stats_mu_);
  ++stats_.refusals;
}

bool Uplink::PriorityRuns() const {
  if (options_.priority_levels == 0 || !priority_known_ || target_ < 0 || target_ != write_region_) return false;
  const RegionRecord& rec = records_[target_];
  if (rec.refilling || rec.suspect || priority_refused_[target_] || region_version_[target_] < kPriorityVersion) {
    return false;
  }
  // As for opening a live lane: while the uplink keeps up, a lane batch
  // carries a reading of any level within a few round trips, and a
  // priority batch would only send it twice.
  return BacklogAhead(live_from_ != 0 ? live_from_ - 1 : store_->LastLsn());
}

bool Uplink::BacklogAhead(uint64_t last) const {
  const uint64_t ahead = std::max(next_after_, stream_mark_);
  return last > ahead && last - ahead > kLiveLaneOpenBatches * BatchEntries();
}

bool Uplink::PreparePriorityBatch(size_t level) {
  PriorityCursor& c = priority_[level - 1];
  const RegionRecord& rec = records_[target_];
  // Where the region's mark of the level, the checkpoint (at or below its
  // contiguous mark, so never a gap) or our last batch of the level stands.
  const uint64_t base = std::max({c.declared, c.held, checkpoint_});
  if (c.scanned < base) c.scanned = base;
  const uint64_t last = store_->LastLsn();
  if (c.scanned >= last) return false;
  WireBatch batch;
  uint64_t scanned_to = c.scanned;
  Status st = store_->ReadLogLevel(c.scanned, static_cast<uint32_t>(level), BatchEntries(), kPriorityScanEntries,
                                   &batch.entries, &scanned_to);
  if (!st.ok()) {
    ES_LOG(kError, "uplink: reading level {} of the change log after {}: {}", level, c.scanned, st.ToString());
    resume_at_ms_ = NowMs() + backoff_.Next();
    return false;
  }
  if (batch.entries.empty()) {
    // None of the level there: the next batch's span declares this too.
    c.scanned = std::max(c.scanned, scanned_to);
    return false;
  }
  batch.origin = origin_;
  batch.first_lsn = base + 1;
  batch.last_lsn = scanned_to;
  batch.base_lsn = checkpoint_;
  batch.region_epoch = rec.epoch_tag;
  batch.region_held = rec.acked;
  batch.more = last > scanned_to;
  batch.priority = static_cast<uint8_t>(level);
  Ready ready;
  // Self-contained: the series context follows the backlog's batches.
  st = EncodeReady(batch, nullptr, &ready);
  if (!st.ok()) {
    ES_LOG(kWarn, "uplink: encoding a priority batch for {}: {}", options_.regions[target_].name, st.ToString());
    Rewind("priority batch not encoded", true);
    return false;
  }
  c.declared = c.scanned = scanned_to;
  c.ready = std::move(ready);
  return true;
}

void Uplink::TakeHeldSpans(const WireAck& ack) {
  if (live_from_ == 0) return;
  for (const LsnSpan& h : ack.held) {
    // The span the live lane opened (a span of an earlier lane it touched
    // may have merged into it from below). Never past what was sent.
    if (h.first <= live_from_ && live_from_ <= h.last) {
      live_held_ = std::max(live_held_, std::min(h.last, live_sent_through_));
    }
  }
}

void Uplink::RemoveAnswered(int64_t now_ms) {
  // Answers come per lane: a live batch may be answered before the
  // backlog's batches sent ahead of it.
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    // A priority batch is answered by its own answer only (HandlePriorityAck).
    const bool answered = it->priority == 0 && (it->last <= stream_mark_ ||
                                                (it->live && live_from_ != 0 && it->last <= live_held_));
    if (!answered) {
      ++it;
      continue;
    }
    ack_latency_.Observe(static_cast<double>(now_ms - it->sent_ms) / 1000.0);
    complete_through_ms_ = std::max(complete_through_ms_, it->complete_ms);
    lane_acked_[it->live ? 0 : 1] += it->entries;
    it = inflight_.erase(it);
  }
}

bool Uplink::RecordAck(size_t region, const WireAck& ack, uint64_t hw, uint64_t lost) {
  const std::string& name = options_.regions[region].name;
  RegionRecord& rec = records_[region];
  Status st;
  if (!rec.refilling && rec.epoch_tag == 0 && !ack.epoch.empty()) {
    // The first answer naming the store: our record is of it from now on.
    st = store_->SetCheckpoint(checkpoint::UpstreamEpochOf(name), EpochTag(ack.epoch));
    if (st.ok()) rec.epoch_tag = EpochTag(ack.epoch);
  }
  if (st.ok() && hw > rec.acked) {
    st = store_->AckUpstream(name, hw);
    if (st.ok()) st = store_->SetCheckpoint(checkpoint::UpstreamOf(name), hw);
    if (st.ok()) rec.acked = hw;
  }
  if (st.ok() && hw > checkpoint_) {
    st = store_->SetCheckpoint(checkpoint::kUpstream, hw);
    if (st.ok()) checkpoint_ = hw;
  }
  if (!st.ok()) {
    // The answer is not lost: the region answers again on the resend.
    ES_LOG(kError, "uplink: recording acknowledgement {} from {}: {}", hw, name, st.ToString());
    return false;
  }
  backoff_.Reset();
  rec.suspect = false;  // it answered our record Ok: it holds what it acknowledged
  stream_mark_ = std::max(stream_mark_, hw);
  if (lost > 0) {
    rec.lost += lost;
    MutexLock lock(&stats_mu_);
    stats_.refill_lost += lost;
  }
  if (rec.refilling) {
    rec.refill_mark = std::max(rec.refill_mark, hw);
    if (rec.refill_mark >= rec.refill_to) {
      // Refilled: the store of this epoch is our record of the region now.
      st = store_->SetCheckpoint(checkpoint::UpstreamEpochOf(name), rec.refill_tag);
      if (!st.ok()) {
        ES_LOG(kError, "uplink: recording the refill of region {}: {}", name, st.ToString());
        return true;  // the next answer tries again
      }
      rec.epoch_tag = rec.refill_tag;
      rec.refilling = false;
      ES_LOG(kWarn, "uplink: region {} holds our log up to {} again (refilled{}{})", name, rec.refill_mark,
             rec.lost > 0 ? "; LSNs we no longer held: " : "", rec.lost > 0 ? std::to_string(rec.lost) : "");
    }
  }
  return true;
}

void Uplink::HandleRegressed(size_t region, const WireAck& ack) {
  const std::string& name = options_.regions[region].name;
  RegionRecord& rec = records_[region];
  const uint64_t to = std::max(rec.acked, rec.refilling ? rec.refill_to : 0);
  {
    MutexLock lock(&stats_mu_);
    ++stats_.region_regressions;
  }
  ES_LOG(kWarn, "uplink: region {} lost what it acknowledged of ours: its store{}{} holds our log up to {}, it "
         "had acknowledged {} ({}); resending it from {}", name, ack.epoch.empty() ? "" : " of epoch ", ack.epoch,
         ack.high_water, to, ack.message, ack.high_water);
  rec.suspect = false;
  rec.refilling = true;
  rec.refill_tag = ack.epoch.empty() ? rec.epoch_tag : EpochTag(ack.epoch);
  rec.refill_mark = ack.high_water;
  rec.refill_to = to;
  if (rec.refill_mark >= rec.refill_to) {
    rec.refilling = false;  // nothing to resend after all
    rec.epoch_tag = rec.refill_tag;
    store_->SetCheckpoint(checkpoint::UpstreamEpochOf(name), rec.refill_tag);
  }
  if (static_cast<int>(region) == target_) Rewind("the region lost what it acknowledged", false);
}

void Uplink::Probe(int64_t now_ms) {
  for (size_t i = 0; i < links_.size(); ++i) {
    if (now_ms < next_probe_ms_[i] || !links_[i]->connected()) continue;
    if (++correlation_ == 0) ++correlation_;
    const std::string topic = HubInboxTopic(options_.topic_prefix, options_.regions[i].name, options_.gateway_id);
    std::string ping = EncodePing(reply_topic_, correlation_, clock_->MonotonicNanos());
    // Under the cap a probe waits for its few bytes, which batches sized
    // to the bucket's depth leave soon; behind a larger batch's debt it
    // goes anyway once a whole interval late, so the region stays healthy
    // (the batches after it pay for it).
    const bool overdue = now_ms - next_probe_ms_[i] >= options_.probe_interval_ms;
    if (!TakeLinkBytes(static_cast<int64_t>(MqttPublishPacketBytes(topic.size(), ping.size(), 0,
                                                                   options_.regions[i].link.mqtt_version)),
                       overdue)) {
      continue;
    }
    next_probe_ms_[i] = now_ms + options_.probe_interval_ms;
    links_[i]->Publish(topic, ping, 0, false, 0);
  }
}

void Uplink::Choose(int64_t now_ms) {
  bool changed = false;
  int chosen = selector_->Select(now_ms, &changed);
  if (!changed) return;
  int before = write_region_;
  write_region_ = chosen;
  if (chosen < 0) {
    ES_LOG(kWarn, "uplink: no healthy region; the backlog waits in the store (checkpoint {})", checkpoint_);
  } else {
    ES_LOG(kInfo, "uplink: writing to region {} (round trip {:.1f} ms){}{}", options_.regions[chosen].name,
           selector_->rtt_us(chosen) / 1000.0, before >= 0 ? ", was " : "",
           before >= 0 ? options_.regions[before].name : "");
  }
  Rewind("write region changed", false);
}

void Uplink::ChooseTarget(int64_t now_ms) {
  int target = write_region_;
  const bool write_needs = target >= 0 && (records_[target].refilling || records_[target].suspect);
  for (size_t i = 0; i < links_.size() && !write_needs; ++i) {
    if ((records_[i].refilling || records_[i].suspect) && links_[i]->connected() && selector_->Healthy(i, now_ms)) {
      target = static_cast<int>(i);
      break;
    }
  }
  if (target == target_) return;
  const int before = target_;
  target_ = target;
  if (target >= 0 && target != write_region_) {
    ES_LOG(kInfo, "uplink: sending to region {} until it holds what it acknowledged of ours (write region {})",
           options_.regions[target].name, write_region_ >= 0 ? options_.regions[write_region_].name : "none");
  } else if (before >= 0 && before != write_region_ && target >= 0) {
    ES_LOG(kInfo, "uplink: back to the write region {}", options_.regions[target].name);
  }
  Rewind("target region changed", false);
}

uint64_t Uplink::StreamStart() const {
  if (target_ < 0) return checkpoint_;
  const RegionRecord& rec = records_[target_];
  if (rec.refilling) return rec.refill_mark;
  // The question to a suspect region is a batch: one with the last entry
  // it acknowledged, in case nothing new is to be sent.
  if (rec.suspect && rec.acked > 0) return std::min(checkpoint_, rec.acked - 1);
  return checkpoint_;
}

void Uplink::Rewind(const char* why, bool with_backoff) {
  const uint64_t start = StreamStart();
  if (!inflight_.empty() || next_after_ != start) {
    ES_LOG(kInfo, "uplink: resending from {} ({})", start, why);
    MutexLock lock(&stats_mu_);
    ++stats_.resends;
  }
  inflight_.clear();
  ready_.reset();
  ready_live_.reset();
  live_context_.Reset();
  ForgetPriority();
  if (live_from_ != 0) {
    if (target_ != live_target_ || target_ < 0 || records_[target_].refilling || records_[target_].suspect) {
      CloseLane(why);
    } else {
      // The region holds the live lane through live_held_ (its spans are
      // durable): the lane goes on from there, extending its span.
      live_next_after_ = std::max(live_held_, live_from_ - 1);
      live_sent_through_ = live_next_after_;
      live_pending_since_ms_ = -1;
    }
  }
  backlog_sent_through_ = start;
  if (cap_wait_since_ms_ >= 0) {
    cap_wait_ms_ += NowMs() - cap_wait_since_ms_;
    cap_wait_since_ms_ = -1;
  }
  next_after_ = start;
  stream_mark_ = start;
  withheld_tail_ = 0;
  pending_since_ms_ = -1;
  context_.Reset();
  if (with_backoff) resume_at_ms_ = NowMs() + backoff_.Next();
}

SeriesContext* Uplink::NextContext() {
  if (!options_.series_context || context_refused_[target_]) return nullptr;
  if (plain_batches_left_ > 0) {
    --plain_batches_left_;
    context_.Reset();
    return nullptr;
  }
  return &context_;
}

size_t Uplink::BatchEntries() const {
  if (!bucket_) return options_.batch_max_readings;
  size_t n = capped_entries_;
  if (n == 0) n = static_cast<size_t>(CappedBatchBytes() / kFirstGuessBytesPerEntry);
  return std::clamp<size_t>(n, 1, options_.batch_max_readings);
}

double Uplink::CappedBatchBytes() const {
  return std::max(kMinCappedBatchBytes, kCappedBatchShare * static_cast<double>(bucket_->depth()));
}

bool Uplink::TakeLinkBytes(int64_t bytes, bool now_anyway) {
  if (bucket_) {
    if (!now_anyway && !bucket_->CanTake(bytes)) return false;
    bucket_->Take(bytes);
  }
  link_bytes_ += static_cast<uint64_t>(bytes);
  MutexLock lock(&stats_mu_);
  stats_.link_bytes_sent = link_bytes_;
  return true;
}

void Uplink::SendBatches(int64_t now_ms) {
  if (target_ < 0 || now_ms < resume_at_ms_) return;
  MqttLink* link = links_[target_].get();
  if (!link->connected()) return;
  while (!stop_) {
    // Publishes the broker has not acknowledged stay in the MQTT session and
    // go again on every reconnect. Left to grow with each resend (a link
    // that swallows bytes, then comes back), their replay on a slow link
    // outlasted the keepalive after every reconnect, and no new batch got
    // through again. The batches the lanes and the priority levels may have
    // in flight bound them.
    if (link->inflight() >= static_cast<int>(2 * options_.window + options_.priority_levels)) return;
    // Priority batches first, level 1 first, one of each level in flight:
    // they take the cap's bytes before the lanes. A batch encoded goes even
    // if the cursors stopped meanwhile (the backlog shrank): it is due.
    const bool priority_runs = PriorityRuns();
    bool priority_sent = false;
    for (size_t level = 1; level <= options_.priority_levels && !priority_sent; ++level) {
      PriorityCursor& c = priority_[level - 1];
      if (c.in_flight || (!c.ready && (!priority_runs || !PreparePriorityBatch(level)))) continue;
      if (!SendReady(&c.ready, link, now_ms)) return;
      priority_sent = true;
    }
    if (priority_sent) continue;
    // The live lane next: its batch takes the cap's bytes before any of
    // the backlog's, which never goes ahead of it.
    if (live_from_ != 0 && !ready_live_) PrepareLiveBatch(now_ms);
    if (ready_live_ && LaneInFlight(true) < options_.window) {
      if (!SendReady(&ready_live_, link, now_ms)) return;
      continue;
    }
    // Each lane has its window: a backlog whose answers are slow never
    // keeps a live batch from going.
    if (LaneInFlight(false) >= options_.window) return;
    if (!ready_ && !PrepareBatch(now_ms)) return;
    if (!SendReady(&ready_, link, now_ms)) return;
  }
}

bool Uplink::SendReady(std::optional<Ready>* slot, MqttLink* link, int64_t now_ms) {
  const std::string& region = options_.regions[target_].name;
  if (!TakeLinkBytes((*slot)->packet_bytes)) {
    // The cap: the batch waits, encoded, until the bucket holds its
    // bytes (a resend after a rewind is encoded again and waits too).
    if (cap_wait_since_ms_ < 0) cap_wait_since_ms_ = now_ms;
    wake_at_ms_ = now_ms + bucket_->WaitMs((*slot)->packet_bytes);
    return false;
  }
  if (cap_wait_since_ms_ >= 0) {
    cap_wait_ms_ += now_ms - cap_wait_since_ms_;
    cap_wait_since_ms_ = -1;
  }
  Ready batch = std::move(**slot);
  slot->reset();
  Status st = link->Publish(batch.topic, batch.payload, 1, false, 1000);
  if (!st.ok()) {
    ES_LOG(kWarn, "uplink: sending to {}: {}", region, st.ToString());
    Rewind("send failed", true);
    return false;
  }
  if (batch.priority > 0) {
    // Beside the lanes: it covers nothing the checkpoint may move over.
    priority_[batch.priority - 1].in_flight = true;
    inflight_.push_back({false, batch.priority, batch.correlation_id, static_cast<size_t>(target_), batch.last, 0,
                         batch.entries, now_ms, false, 0, 0});
    MutexLock lock(&stats_mu_);
    ++stats_.batches_sent;
    stats_.entries_sent += batch.entries;
    stats_.bytes_sent += batch.payload.size();
    ++stats_.priority_batches_sent;
    stats_.priority_readings_sent += batch.entries;
    return true;
  }
  // What its answer may cover: everything sent of both lanes when it went.
  // A live batch: up to it once the backlog reached the lane, else what the
  // backlog sent. The backlog's last batch before the lane: the live
  // lane's span too (the region merges it into its mark).
  uint64_t covers = batch.last;
  if (batch.live) {
    live_sent_through_ = batch.last;
    if (backlog_sent_through_ + 1 < live_from_) covers = backlog_sent_through_;
  } else {
    backlog_sent_through_ = batch.last;
    if (live_from_ != 0 && batch.last + 1 >= live_from_) covers = std::max(batch.last, live_sent_through_);
  }
  inflight_.push_back({batch.live, 0, batch.correlation_id, static_cast<size_t>(target_), batch.last, covers,
                       batch.entries, now_ms, batch.with_context, batch.lost, batch.complete_ms});
  const int lane = batch.live ? 0 : 1;
  const double per_entry = static_cast<double>(batch.packet_bytes) / static_cast<double>(batch.entries);
  lane_link_bytes_[lane] += static_cast<uint64_t>(batch.packet_bytes);
  lane_bytes_per_entry_[lane] = per_entry;
  if (bucket_ && !batch.live) {
    // The next batches hold what the bucket's depth carries at this
    // batch's bytes per entry. Small batches overstate it (each carries
    // a fixed part), so sizes grow towards the cap from below.
    capped_entries_ = std::max<size_t>(1, static_cast<size_t>(CappedBatchBytes() / per_entry));
  }
  MutexLock lock(&stats_mu_);
  ++stats_.batches_sent;
  if (batch.with_context) ++stats_.context_batches;
  stats_.entries_sent += batch.entries;
  stats_.bytes_sent += batch.payload.size();
  UplinkLaneStats& lane_stats = batch.live ? stats_.live_lane : stats_.backlog_lane;
  ++lane_stats.batches_sent;
  lane_stats.entries_sent += batch.entries;
  return true;
}

void Uplink::UpdateLanes(int64_t now_ms) {
  if (live_from_ != 0) {
    // The backlog reached the live lane (all of it sent; its answer merges
    // the lane's span into the region's mark): one stream again, after the
    // live lane's last batch. That batch's span does not follow the
    // series context's last one, so the next batch starts a new context.
    if (next_after_ + 1 >= live_from_ && !ready_live_ && !ready_) {
      next_after_ = std::max(next_after_, live_next_after_);
      backlog_sent_through_ = std::max(backlog_sent_through_, live_sent_through_);
      context_.Reset();
      ES_LOG(kInfo, "uplink: the backlog reached the live lane at {}; one stream again", live_from_);
      live_from_ = 0;
      live_target_ = -1;
      live_context_.Reset();
    }
    return;
  }
  if (!options_.live_lane || target_ < 0 || target_ != write_region_ || now_ms < resume_at_ms_) return;
  const RegionRecord& rec = records_[target_];
  if (rec.refilling || rec.suspect || live_refused_[target_] || region_version_[target_] < kLiveLaneVersion) return;
  if (!links_[target_]->connected()) return;
  const uint64_t last = store_->LastLsn();
  if (!BacklogAhead(last)) return;
  // The lane starts right after an entry of the log, so the backlog's last
  // batch ends at live_from_ - 1 and the region's mark reaches the lane's
  // span exactly (an LSN hole there would keep them apart).
  std::vector<ChangeEntry> tail;
  Status st = store_->ReadLog(last - 1, 1, &tail);
  if (!st.ok() || tail.empty() || tail.front().lsn != last) return;
  live_from_ = last + 1;
  live_target_ = target_;
  live_next_after_ = last;
  live_held_ = last;
  live_sent_through_ = last;
  live_pending_since_ms_ = -1;
  {
    MutexLock lock(&stats_mu_);
    ++stats_.live_lanes_opened;
  }
  ES_LOG(kInfo, "uplink: {} entries of backlog to region {}; what is committed from LSN {} on goes ahead of it "
         "(live lane)", last - std::max(next_after_, stream_mark_), options_.regions[target_].name, live_from_);
}

void Uplink::CloseLane(const char* why) {
  if (live_from_ == 0) return;
  ES_LOG(kInfo, "uplink: live lane from {} closed ({}); one stream in LSN order", live_from_, why);
  live_from_ = 0;
  live_target_ = -1;
  ready_live_.reset();
  live_context_.Reset();
}

bool Uplink::PrepareLiveBatch(int64_t now_ms) {
  const std::string& region = options_.regions[target_].name;
  const RegionRecord& rec = records_[target_];
  const size_t max_entries = BatchEntries();
  const uint64_t last = store_->LastLsn();
  if (last <= live_next_after_) {
    live_pending_since_ms_ = -1;
    return false;
  }
  if (last - live_next_after_ < max_entries) {
    // A partial live batch: at once when none of the lane is in flight and
    // no cap is set; while one is in flight, up to batch_max_delay_ms as
    // the one stream does; under a cap it gathers LiveGatherMs (see there).
    if (live_pending_since_ms_ < 0) live_pending_since_ms_ = now_ms;
    const bool live_in_flight = LaneInFlight(true) > 0;
    int64_t hold = live_in_flight ? options_.batch_max_delay_ms : 0;
    if (bucket_) hold = LiveGatherMs(options_.max_bytes_per_s);
    const int64_t waited = now_ms - live_pending_since_ms_;
    if (waited < hold) {
      wake_at_ms_ = wake_at_ms_ < 0 ? live_pending_since_ms_ + hold
                                    : std::min(wake_at_ms_, live_pending_since_ms_ + hold);
      return false;
    }
  }
  WireBatch batch;
  Status st = store_->ReadLog(live_next_after_, max_entries, &batch.entries);
  if (!st.ok() || batch.entries.empty()) {
    if (!st.ok()) ES_LOG(kError, "uplink: reading the change log after {}: {}", live_next_after_, st.ToString());
    return false;
  }
  live_pending_since_ms_ = -1;
  batch.origin = origin_;
  batch.first_lsn = live_next_after_ + 1;
  batch.last_lsn = batch.entries.back().lsn;
  batch.base_lsn = checkpoint_;
  batch.region_epoch = rec.epoch_tag;
  batch.region_held = rec.acked;
  batch.more = last > batch.last_lsn;
  batch.live = true;  // above the region's mark: no watermark (only gap-free LSNs count)
  // The live lane's batches refer to a context of their own at the region
  // (kept beside the backlog's): a self-contained batch of a few dozen
  // readings carries the series' names and costs several times their bytes.
  SeriesContext* context = options_.series_context && !context_refused_[target_] ? &live_context_ : nullptr;
  Ready ready;
  st = EncodeReady(batch, context, &ready);
  if (!st.ok()) {
    ES_LOG(kWarn, "uplink: encoding a live batch for {}: {}", region, st.ToString());
    CloseLane("a live batch was not encoded");
    return false;
  }
  live_next_after_ = batch.last_lsn;
  ready_live_ = std::move(ready);
  return true;
}

Status Uplink::EncodeReady(const WireBatch& batch, SeriesContext* context, Ready* ready) {
  if (++correlation_ == 0) ++correlation_;
  ready->live = batch.live;
  ready->priority = batch.priority;
  ready->correlation_id = correlation_;
  ready->with_context = context != nullptr && !context->empty();
  encode_.context_names_origin = !context_proven_[target_];
  ES_RETURN_IF_ERROR(EncodeBatch(reply_topic_, ready->correlation_id, batch, encode_, &ready->payload, context));
  ready->topic = HubInboxTopic(options_.topic_prefix, options_.regions[target_].name, options_.gateway_id);
  ready->packet_bytes = static_cast<int64_t>(MqttPublishPacketBytes(ready->topic.size(), ready->payload.size(), 1,
                                                                    options_.regions[target_].link.mqtt_version));
  ready->last = batch.last_lsn;
  ready->entries = batch.entries.size();
  return Status::Ok();
}

void Uplink::UpdateLaneStats(int64_t now_ms) {
  const uint64_t last = stats_.last_lsn;
  uint64_t waiting[2] = {0, 0};
  uint64_t from[2] = {checkpoint_, checkpoint_};  // each lane's waiting entries start after
  if (live_from_ != 0) {
    const uint64_t backlog_end = live_from_ - 1;
    waiting[1] = backlog_end > checkpoint_ ? backlog_end - checkpoint_ : 0;
    from[0] = std::max(live_held_, checkpoint_);
    waiting[0] = last > from[0] ? last - from[0] : 0;
  } else {
    const uint64_t all = last > checkpoint_ ? last - checkpoint_ : 0;
    const bool backlog = !options_.live_lane || all > kLiveLaneOpenBatches * BatchEntries();
    waiting[backlog ? 1 : 0] = all;
  }
  // Once a second: the rates over the last seconds and the oldest waiting
  // reading's time (one entry read per lane).
  const bool sample = lane_samples_[0].empty() || now_ms - std::get<0>(lane_samples_[0].back()) >= 1000;
  UplinkLaneStats* lanes[2] = {&stats_.live_lane, &stats_.backlog_lane};
  for (int l = 0; l < 2; ++l) {
    UplinkLaneStats& lane = *lanes[l];
    lane.waiting = waiting[l];
    lane.waiting_bytes = static_cast<uint64_t>(static_cast<double>(waiting[l]) * lane_bytes_per_entry_[l]);
    if (sample) {
      lane_samples_[l].emplace_back(now_ms, lane_acked_[l], lane_link_bytes_[l]);
      if (lane_samples_[l].size() > kRateSeconds + 1) lane_samples_[l].pop_front();
      const auto& [t0, acked0, bytes0] = lane_samples_[l].front();
      const double secs = static_cast<double>(now_ms - t0) / 1000.0;
      lane.readings_per_s = secs > 0 ? static_cast<double>(lane_acked_[l] - acked0) / secs : 0;
      lane.bytes_per_s = secs > 0 ? static_cast<double>(lane_link_bytes_[l] - bytes0) / secs : 0;
      lane_oldest_ts_ms_[l] = 0;
      if (waiting[l] > 0) {
        std::vector<ChangeEntry> first;
        if (store_->ReadLog(from[l], 1, &first).ok() && !first.empty() &&
            first.front().kind == ChangeEntry::Kind::kReading) {
          lane_oldest_ts_ms_[l] = first.front().reading.ts_ms;
        }
      }
    }
    lane.oldest_age_ms = waiting[l] > 0 && lane_oldest_ts_ms_[l] > 0
                             ? std::max<int64_t>(0, clock_->WallMillis() - lane_oldest_ts_ms_[l])
                             : 0;
    lane.eta_s = waiting[l] == 0                ? 0
                 : lane.readings_per_s >= 0.5 ? static_cast<int64_t>(static_cast<double>(waiting[l]) /
                                                                      lane.readings_per_s)
                                              : -1;
  }
  stats_.live_lane_open = live_from_ != 0;
  stats_.live_from = live_from_;
  // The catch-up line, while two lanes run: what waits in each, how old,
  // and when the backlog is through at its rate.
  if (live_from_ != 0 && now_ms - lane_progress_ms_ >= 5000) {
    lane_progress_ms_ = now_ms;
    const UplinkLaneStats& b = stats_.backlog_lane;
    const UplinkLaneStats& l = stats_.live_lane;
    ES_LOG(kInfo, "uplink: two lanes: backlog {} readings waiting (oldest {} s), {:.0f} readings/s, {}; live {} "
           "waiting (oldest {} s), {:.0f} readings/s", b.waiting, b.oldest_age_ms / 1000, b.readings_per_s,
           b.eta_s >= 0 ? "through in about " + std::to_string(b.eta_s) + " s" : "not moving", l.waiting,
           l.oldest_age_ms / 1000, l.readings_per_s);
  }
}

bool Uplink::WithholdCorrections(std::vector<ChangeEntry>* entries, uint64_t* read_last, uint64_t log_last) {
  const std::string& region = options_.regions[target_].name;
  uint64_t withheld = 0;
  std::vector<ChangeEntry> more;
  for (;;) {
    for (const ChangeEntry& e : *entries) {
      if (e.kind == ChangeEntry::Kind::kTimeCorrection && e.lsn > withheld_through_) {
        withheld_through_ = e.lsn;
        ++withheld;
      }
    }
    entries->erase(std::remove_if(entries->begin(), entries->end(),
                                  [](const ChangeEntry& e) { return e.kind == ChangeEntry::Kind::kTimeCorrection; }),
                   entries->end());
    // Only corrections read, and the log goes on: read past them (they are
    // rare, one per corrected clock period), so the span reaches an entry.
    if (!entries->empty() || *read_last >= log_last) break;
    Status st = store_->ReadLog(*read_last, BatchEntries(), &more);
    if (!st.ok()) {
      ES_LOG(kError, "uplink: reading the change log after {}: {}", *read_last, st.ToString());
      return false;
    }
    if (more.empty()) break;
    *read_last = more.back().lsn;
    entries->swap(more);
  }
  if (withheld > 0) {
    MutexLock lock(&stats_mu_);
    stats_.corrections_withheld += withheld;
  }
  if (!withheld_said_[target_]) {
    withheld_said_[target_] = true;
    ES_LOG(kWarn, "uplink: region {} speaks protocol {}, before time corrections ({}): they are not sent to it, "
           "its readings keep their stamped times (corrections_withheld)", region, region_version_[target_],
           kTimeCorrectionVersion);
  }
  return true;
}

int64_t Uplink::BatchWatermark(uint64_t last_lsn, bool refilling) {
  // A refill's batches may start below the checkpoint, where compacted
  // spans carry the newest write time of many groups: none is claimed.
  if (refilling || last_lsn < checkpoint_) return 0;
  int64_t trusted_since = 1;
  if (options_.clock_trusted_since) {
    trusted_since = options_.clock_trusted_since();
    if (trusted_since <= 0) return 0;  // the clock is not trusted now
  }
  int64_t through = 0;
  Status st = store_->CompleteThrough(last_lsn, &through);
  if (!st.ok()) {
    ES_LOG(kWarn, "uplink: reading the commit time after LSN {}: {}", last_lsn, st.ToString());
    return 0;
  }
  // A commit time from before trust began may be untrusted (stamped by a
  // clock not yet synchronised, in this boot or before a restart): the
  // watermark waits for the batches committed since.
  return through >= trusted_since ? through : 0;
}

bool Uplink::PrepareBatch(int64_t now_ms) {
  const std::string& region = options_.regions[target_].name;
  const RegionRecord& rec = records_[target_];
  const size_t max_entries = BatchEntries();
  uint64_t last = store_->LastLsn();
  // The backlog ends where the live lane starts (that LSN - 1 is an entry).
  if (live_from_ != 0) last = std::min(last, live_from_ - 1);
  if (last <= std::max(next_after_, withheld_tail_)) {
    pending_since_ms_ = -1;
    return false;
  }
  if (last - next_after_ < max_entries) {
    // Not a full batch. While batches are in flight, Nagle's rule at the
    // batch level: what arrives while the region has not yet answered is
    // coalesced until its answers are in (then it goes at once), or for at
    // most batch_max_delay_ms from the first of it when answers are slow.
    // A partial batch on a link with nothing in flight goes at once. So a
    // reading waits at most about one round trip for a batch to share,
    // batches grow with the rate times the round trip, and a batch per
    // commit (each batch carries ~660 bytes of its own: tens of bytes per
    // reading at 10 readings per commit) never happens while answers flow.
    // Measured (tests/bench/uplink_bench.cc, docs/BENCHMARKS.md): see
    // Config::uplink_batch_max_delay_ms.
    // batch_min_delay_ms (0 by default) holds every partial batch that
    // long first, for links where bytes cost more than latency.
    if (pending_since_ms_ < 0) pending_since_ms_ = now_ms;
    const int64_t waited = now_ms - pending_since_ms_;
    const int64_t hold = waited < options_.batch_min_delay_ms ? options_.batch_min_delay_ms
                         : !inflight_.empty()                   ? options_.batch_max_delay_ms
                                                                : 0;
    if (waited < hold) {
      wake_at_ms_ = pending_since_ms_ + hold;
      return false;
    }
  }
  WireBatch batch;
  Status st = store_->ReadLog(next_after_, max_entries, &batch.entries);
  if (!st.ok()) {
    ES_LOG(kError, "uplink: reading the change log after {}: {}", next_after_, st.ToString());
    resume_at_ms_ = now_ms + backoff_.Next();
    return false;
  }
  pending_since_ms_ = -1;
  if (live_from_ != 0) {
    batch.entries.erase(std::find_if(batch.entries.begin(), batch.entries.end(),
                                     [this](const ChangeEntry& e) { return e.lsn >= live_from_; }),
                        batch.entries.end());
  }
  // What was read, corrections withheld or not: the span the batch covers
  // and where a refill's jump starts are of the log, not of what is sent.
  const uint64_t read_first = batch.entries.empty() ? 0 : batch.entries.front().lsn;
  uint64_t read_last = batch.entries.empty() ? 0 : batch.entries.back().lsn;
  const bool corrections = std::any_of(batch.entries.begin(), batch.entries.end(), [](const ChangeEntry& e) {
    return e.kind == ChangeEntry::Kind::kTimeCorrection;
  });
  if (corrections && region_version_[target_] == 0) {
    // A hub of protocol 5 would refuse the whole batch: nothing goes
    // before its answers (a probe's, at the latest) say which it is. Not
    // logged: this turn comes back every tick until then.
    return false;
  }
  if (corrections && region_version_[target_] < kTimeCorrectionVersion) {
    if (!WithholdCorrections(&batch.entries, &read_last, last)) {
      resume_at_ms_ = now_ms + backoff_.Next();
      return false;
    }
    if (batch.entries.empty()) {
      // Only corrections up to the log's end: no batch a hub of this
      // protocol decodes can cover them alone (its last entry names its
      // span's end). The next entry's batch does.
      withheld_tail_ = read_last;
      return false;
    }
  }
  if (batch.entries.empty()) {
    RegionRecord& r = records_[target_];
    if (r.refilling || r.suspect) {
      // Nothing left to send it from here on (pruned): the region cannot
      // be refilled nor asked; what it lost is lost, said here.
      const uint64_t gone = r.refilling && r.refill_to > r.refill_mark ? r.refill_to - r.refill_mark : 0;
      ES_LOG(kWarn, "uplink: region {}: we no longer hold our log after {} to {} it{}; {} LSNs lost to it",
             region, next_after_, r.refilling ? "refill" : "ask", r.refilling ? "" : " with", gone);
      r.lost += gone;
      {
        MutexLock lock(&stats_mu_);
        stats_.refill_lost += gone;
      }
      if (r.refilling) {
        r.epoch_tag = r.refill_tag;
        store_->SetCheckpoint(checkpoint::UpstreamEpochOf(region), r.refill_tag);
      }
      r.refilling = r.suspect = false;
      Rewind("nothing left to refill the region with", false);
    }
    return false;
  }
  batch.origin = origin_;
  // The span starts right after the previous batch: LSNs the log compacted
  // away (superseded device records) are covered, not a gap.
  batch.first_lsn = next_after_ + 1;
  batch.last_lsn = batch.entries.back().lsn;
  // After a refill the stream may stand below the checkpoint: the base
  // never lies inside the batch.
  batch.base_lsn = std::min(checkpoint_, next_after_);
  batch.region_epoch = rec.epoch_tag;
  batch.region_held = rec.acked;
  // The hub reads this origin's lag from it: 0 once a batch leaves
  // nothing behind it.
  batch.more = last > read_last;
  batch.complete_through_ms = BatchWatermark(batch.last_lsn, rec.refilling);
  uint64_t lost = 0;
  if (rec.refilling) {
    // No jump over what the region lost: from its mark on, except over
    // what we no longer hold (pruned after it acknowledged it), which it
    // is told is lost rather than taking it for compacted LSNs.
    batch.region_epoch = rec.refill_tag;
    batch.region_held = rec.refill_mark;
    batch.base_lsn = rec.refill_mark;
    if (read_first > next_after_ + 1) {
      batch.base_lsn = read_first - 1;
      batch.base_lost = true;
      lost = batch.base_lsn - next_after_;
    }
  }
  Ready ready;
  st = EncodeReady(batch, NextContext(), &ready);
  if (!st.ok()) {
    ES_LOG(kWarn, "uplink: encoding a batch for {}: {}", region, st.ToString());
    Rewind("batch not encoded", true);
    return false;
  }
  ready.lost = lost;
  ready.complete_ms = batch.complete_through_ms;
  // The batch belongs to the stream from here: a rewind drops it with the
  // batches in flight.
  next_after_ = batch.last_lsn;
  ready_ = std::move(ready);
  return true;
}

}  // namespace edgesync

#include "sync/region_hub.h"

#include <algorithm>

#include "platform/liveness.h"
#include "platform/log.h"

namespace edgesync {

RegionHub::RegionHub(HubStore* store, RegionHubOptions options, Clock* clock, MqttLinkFactory factory)
    : store_(store),
      options_(std::move(options)),
      clock_(clock ? clock : SystemClock()),
      factory_(factory ? std::move(factory) : MqttLinkFactory(NewPahoMqttLink)) {}

RegionHub::~RegionHub() { Stop(); }

Status RegionHub::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (!IsTopicLevel(options_.region)) return Status::InvalidArgument("hub: region name must be 1..64 of [A-Za-z0-9_-]");
  epoch_ = store_->epoch();
  MqttLinkOptions lo = options_.link;
  lo.client_id = "es-hub-" + options_.region;
  lo.clean_start = false;  // batches sent while we restart wait in the broker
  ES_RETURN_IF_ERROR(factory_(lo, &link_).Annotate("hub"));
  link_->SetMessageHandler([this](MqttMessage&& m) {
    // Probes are answered here, not behind queued batches: the round trip
    // measures the path to the region, not how busy its store is.
    WireKind kind;
    if (PeekKind(m.payload, options_.limits, &kind) && kind == WireKind::kPing) {
      Handle(m);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      if (queue_.size() < options_.max_queued_messages) {
        queue_.push_back(std::move(m));
        cv_.notify_one();
        return;
      }
    }
    // Never wait here: this is the link's receive thread, which also takes
    // the broker's PUBACKs for our answers. Waiting for room stopped the hub
    // for good (the applier's answers could not complete, so it never made
    // room; 100 simulated gateways with one batch each in flight were
    // enough at a queue of 64). A shed batch is not lost: the gateway has
    // no answer for it and resends it after uplink.ack_timeout_ms, and the
    // high-water mark makes a resend of anything applied a no-op.
    const int64_t now = clock_->MonotonicMillis();
    uint64_t shed = 0;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      shed = ++stats_.batches_shed;
    }
    if (now - last_shed_log_ms_.load() >= 10000) {
      last_shed_log_ms_ = now;
      ES_LOG(kWarn, "hub {}: receive queue full ({} messages not yet applied): a message from {} was shed, {} so far; "
             "its gateway resends it. Raise hub.max_queued_messages above gateways x uplink.window",
             options_.region, options_.max_queued_messages, m.topic, shed);
    }
  });
  ES_RETURN_IF_ERROR(link_->Subscribe(HubInboxFilter(options_.topic_prefix, options_.region), 1));
  stop_ = false;
  worker_ = std::thread([this] { Run(); });
  ES_RETURN_IF_ERROR(link_->Start());
  ES_LOG(kInfo, "hub {}: listening on {}", options_.region, HubInboxFilter(options_.topic_prefix, options_.region));
  return Status::Ok();
}

void RegionHub::Stop() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  link_->Disconnect(2000);
  worker_.join();
  ES_LOG(kInfo, "hub {}: stopped", options_.region);
}

RegionHubStats RegionHub::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  RegionHubStats s = stats_;
  s.bad_messages += counters_.rejected();
  for (const auto& [name, o] : origins_) s.origins.push_back(o);
  return s;
}

void RegionHub::Run() {
  Heartbeat beat("hub-applier");
  PublishHead(true);
  std::vector<MqttMessage> taken;
  while (true) {
    beat.Beat();  // each turn is bounded by a timed wait
    taken.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(options_.head_interval_ms),
                   [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      // What queued while the last turn applied goes together: a busy hub
      // groups batches, an idle one applies each as it comes.
      while (!queue_.empty() && taken.size() < std::max<size_t>(1, options_.max_group_batches)) {
        taken.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    HandleAll(&taken);
    PublishHead(false);
  }
}

void RegionHub::Reply(const std::string& to, const std::string& payload) {
  Status st = link_->Publish(to, payload, 1, false, 5000);
  if (!st.ok()) ES_LOG(kWarn, "hub {}: answering {}: {}", options_.region, to, st.ToString());
}

bool RegionHub::Admit(const MqttMessage& message, std::string* sender, WireMessage* out) {
  if (!InboxSender(options_.topic_prefix, options_.region, message.topic, sender)) {
    // Only a broker delivering outside our subscription gets here.
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.bad_messages;
    return false;
  }
  WireMessage& m = *out;
  Status st = DecodeMessage(message.payload, options_.limits, &m, &counters_);
  if (!st.ok()) {
    ES_LOG(kWarn, "hub {}: refused a message from {}: {}", options_.region, *sender, st.ToString());
    if (m.kind == WireKind::kBatch && IsReplyTopic(options_.topic_prefix, *sender, m.reply_to) &&
        m.batch.origin.gateway_id == *sender) {
      // Tell the sender why, so it does not wait for its timeout.
      WireAck ack{options_.region, m.batch.origin, 0, AckCode::kBadBatch, st.ToString()};
      store_->HighWater(m.batch.origin, &ack.high_water);
      Reply(m.reply_to, EncodeAck(m.correlation_id, ack));
    }
    return false;
  }
  if (m.kind != WireKind::kBatch && m.kind != WireKind::kPing && m.kind != WireKind::kFeedRequest) return false;
  if (!IsReplyTopic(options_.topic_prefix, *sender, m.reply_to)) {
    ES_LOG(kWarn, "hub {}: {} asked for an answer on {}, not one of its reply topics; dropped", options_.region,
           *sender, m.reply_to);
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.bad_reply_addresses;
    return false;
  }
  if (m.kind == WireKind::kPing) {
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.pings;
    }
    link_->Publish(m.reply_to, EncodePong(m.correlation_id, options_.region, m.ping_sent_ns), 0, false, 0);
    return false;
  }
  return true;
}

void RegionHub::Handle(const MqttMessage& message) {
  std::vector<MqttMessage> one{message};
  HandleAll(&one);
}

void RegionHub::HandleAll(std::vector<MqttMessage>* messages) {
  std::vector<PendingBatch> pending;
  for (const MqttMessage& message : *messages) {
    PendingBatch p;
    if (!Admit(message, &p.sender, &p.message)) continue;
    if (p.message.kind == WireKind::kBatch) {
      pending.push_back(std::move(p));
      continue;
    }
    // A feed request sees every batch that arrived before it.
    ApplyBatches(&pending);
    HandleFeedRequest(p.message);
  }
  ApplyBatches(&pending);
}

void RegionHub::HandleFeedRequest(const WireMessage& m) {
  WireFeedPage page;
  page.region = options_.region;
  page.after_seq = m.feed_after_seq;
  page.epoch = epoch_;
  uint64_t oldest = 0, head = 0;
  Status st = store_->FeedBounds(&oldest, &head);
  // A position of another epoch, or past our head, was given out by a
  // store that is gone (re-created): its numbers mean nothing here. An
  // empty epoch is a reader that has not heard one yet; its position is
  // taken at its word while it lies within the head.
  const char* why = nullptr;
  if (!m.feed_epoch.empty() && m.feed_epoch != epoch_) {
    why = "is of another hub epoch (the region's store was re-created)";
  } else if (m.feed_after_seq > head) {
    why = "lies past the head (the region's store was re-created)";
  }
  if (st.ok() && why == nullptr) {
    size_t max = std::clamp<size_t>(m.feed_max_entries, 1, options_.feed_max_entries);
    st = store_->ReadFeed(m.feed_after_seq, max, &page.entries, &page.head_seq, &page.reset);
    if (page.reset) why = "was pruned";
  }
  if (!st.ok()) {
    ES_LOG(kError, "hub {}: reading the region feed: {}", options_.region, st.ToString());
    return;  // the reader times out and asks again
  }
  if (why != nullptr) {
    // The reader restarts explicitly just before the oldest entry still served.
    page.reset = true;
    page.entries.clear();
    page.head_seq = head;
    page.next_seq = oldest > 0 ? oldest - 1 : head;
    ES_LOG(kWarn, "hub {}: feed position {} (epoch {}) {}; reader restarts at {} of epoch {}", options_.region,
           m.feed_after_seq, m.feed_epoch.empty() ? "-" : m.feed_epoch, why, page.next_seq, epoch_);
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.feed_resets;
  } else {
    page.next_seq = page.entries.empty() ? m.feed_after_seq : page.entries.back().seq;
  }
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.feed_requests;
  }
  std::string out;
  EncodeOptions eo;
  eo.zstd_level = options_.zstd_level;
  if (EncodeFeedPage(m.correlation_id, page, eo, &out).ok()) Reply(m.reply_to, out);
}

void RegionHub::ApplyBatches(std::vector<PendingBatch>* pending) {
  if (pending->empty()) return;
  std::vector<const PendingBatch*> admitted;
  std::vector<OriginBatch> batches;
  for (const PendingBatch& p : *pending) {
    const WireBatch& b = p.message.batch;
    if (b.origin.gateway_id != p.sender) {
      // The broker vouches for the topic's sender, nothing vouches for the
      // payload: a gateway writes only its own origin. No answer: the only
      // way here is a forgery (an honest gateway's id is its topic level).
      ES_LOG(kWarn, "hub {}: refused batch {}..{} sent by {} naming origin {}: a gateway writes only its own origin",
             options_.region, b.first_lsn, b.last_lsn, p.sender, b.origin.ToString());
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.sender_refused;
      continue;
    }
    admitted.push_back(&p);
    batches.push_back(OriginBatch{b.origin, b.base_lsn, b.first_lsn, &b.entries});
  }
  std::vector<ApplyResult> results;
  Status st = batches.empty() ? Status::Ok() : store_->ApplyBatches(batches, &results);
  for (size_t i = 0; i < admitted.size(); ++i) Answer(*admitted[i], st, st.ok() ? results[i] : ApplyResult{});
  pending->clear();
}

void RegionHub::Answer(const PendingBatch& p, const Status& status, const ApplyResult& r) {
  const WireBatch& b = p.message.batch;
  WireAck ack;
  ack.region = options_.region;
  ack.origin = b.origin;
  ack.high_water = r.high_water;
  // A jump over a hole: everything up to base is declared held elsewhere
  // (after a failover). Only the origin's own, authenticated sender gets
  // here; still, it moves the mark without the entries, so it is on record.
  const bool applied = status.ok() && r.outcome == ApplyOutcome::kApplied;
  const bool jumped = applied && b.base_lsn > r.before;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.entries_received += b.entries.size();
    if (!status.ok()) {
      ++stats_.store_errors;
    } else if (r.outcome == ApplyOutcome::kApplied || r.outcome == ApplyOutcome::kAlreadyHeld) {
      ++stats_.batches_applied;
      if (!applied) ++stats_.batches_already_held;
      int64_t newest_ts = INT64_MIN;
      for (const ChangeEntry& e : b.entries) {
        if (e.lsn > r.before && e.kind == ChangeEntry::Kind::kReading) newest_ts = std::max(newest_ts, e.reading.ts_ms);
      }
      stats_.entries_applied += r.applied;
      std::string name = b.origin.ToString();
      HubOriginStats& o = origins_[name];
      o.origin = name;
      o.high_water = r.high_water;
      ++o.batches;
      o.entries += r.applied;
      o.last_batch_wall_ms = clock_->WallMillis();
      if (newest_ts != INT64_MIN) o.lag_ms = std::max<int64_t>(0, o.last_batch_wall_ms - newest_ts);
      if (jumped) ++stats_.hole_jumps;
    } else if (r.outcome == ApplyOutcome::kGap) {
      ++stats_.gaps_refused;
    } else {
      ++stats_.batches_invalid;
    }
  }
  if (jumped) {
    ES_LOG(kInfo, "hub {}: origin {} jumped over {}..{} (held {}, its sender {} declares base {})", options_.region,
           b.origin.ToString(), r.before + 1, b.base_lsn, r.before, p.sender, b.base_lsn);
  }
  if (!status.ok()) {
    ack.code = AckCode::kStoreError;
    ack.message = status.ToString();
    store_->HighWater(b.origin, &ack.high_water);
  } else if (r.outcome == ApplyOutcome::kGap) {
    ack.code = AckCode::kGap;
    ack.message = r.detail;
  } else if (r.outcome == ApplyOutcome::kInvalid) {
    ack.code = AckCode::kBadBatch;
    ack.message = r.detail;
  }
  if (ack.code != AckCode::kOk) {
    ES_LOG(kWarn, "hub {}: batch {}..{} of {} refused ({}): {}", options_.region, b.first_lsn, b.last_lsn,
           b.origin.ToString(), status.ok() ? ApplyOutcomeName(r.outcome) : "store error",
           status.ok() ? r.detail : status.ToString());
  }
  Reply(p.message.reply_to, EncodeAck(p.message.correlation_id, ack));
}

void RegionHub::PublishHead(bool force) {
  int64_t now = clock_->MonotonicMillis();
  if (!force && now - last_head_ms_ < options_.head_interval_ms) return;
  if (!link_->connected()) return;
  uint64_t oldest = 0, head = 0;
  if (!store_->FeedBounds(&oldest, &head).ok()) return;
  last_head_ms_ = now;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.head_seq = head;
  }
  if (head == head_published_ && !force) return;
  if (link_->Publish(HeadTopic(options_.topic_prefix, options_.region), EncodeFeedHead(options_.region, head, epoch_), 0,
                     true, 0).ok()) {
    head_published_ = head;
  }
}

}  // namespace edgesync

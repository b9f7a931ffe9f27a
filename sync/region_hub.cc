#include "sync/region_hub.h"

#include <algorithm>

#include "platform/liveness.h"
#include "platform/log.h"

namespace edgesync {

RegionHub::RegionHub(Store* store, RegionHubOptions options, Clock* clock, MqttLinkFactory factory)
    : store_(store),
      options_(std::move(options)),
      clock_(clock ? clock : SystemClock()),
      factory_(factory ? std::move(factory) : MqttLinkFactory(NewPahoMqttLink)) {}

RegionHub::~RegionHub() { Stop(); }

Status RegionHub::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (!IsTopicLevel(options_.region)) return Status::InvalidArgument("hub: region name must be 1..64 of [A-Za-z0-9_-]");
  MqttLinkOptions lo = options_.link;
  lo.client_id = "es-hub-" + options_.region;
  lo.clean_start = false;  // batches sent while we restart wait in the broker
  ES_RETURN_IF_ERROR(factory_(lo, &link_).Annotate("hub"));
  link_->SetMessageHandler([this](MqttMessage&& m) {
    // Probes are answered here, not behind queued batches: the round trip
    // measures the path to the region, not how busy its store is.
    WireKind kind;
    if (PeekKind(m.payload, options_.limits, &kind) && kind == WireKind::kPing) {
      Handle(m.payload);
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    // Back-pressure: while the store is behind, stop reading the socket, so
    // the broker holds what we cannot apply yet instead of our memory.
    space_cv_.wait(lock, [this] { return stop_ || queue_.size() < options_.max_queued_messages; });
    if (stop_) return;
    queue_.push_back(std::move(m.payload));
    cv_.notify_one();
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
    space_cv_.notify_all();
  }
  link_->Disconnect(2000);
  worker_.join();
  ES_LOG(kInfo, "hub {}: stopped", options_.region);
}

RegionHubStats RegionHub::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  RegionHubStats s = stats_;
  s.bad_messages += counters_.rejected();
  return s;
}

void RegionHub::Run() {
  Heartbeat beat("hub-applier");
  PublishHead(true);
  while (true) {
    beat.Beat();  // each turn is bounded by a timed wait
    std::string payload;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(options_.head_interval_ms),
                   [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      if (!queue_.empty()) {
        payload = std::move(queue_.front());
        queue_.pop_front();
        space_cv_.notify_one();
      }
    }
    if (!payload.empty()) Handle(payload);
    PublishHead(false);
  }
}

void RegionHub::Reply(const std::string& to, const std::string& payload) {
  Status st = link_->Publish(to, payload, 1, false, 5000);
  if (!st.ok()) ES_LOG(kWarn, "hub {}: answering {}: {}", options_.region, to, st.ToString());
}

void RegionHub::Handle(const std::string& payload) {
  WireMessage m;
  Status st = DecodeMessage(payload, options_.limits, &m, &counters_);
  if (!st.ok()) {
    ES_LOG(kWarn, "hub {}: refused a message: {}", options_.region, st.ToString());
    if (m.kind == WireKind::kBatch && IsReplyTopic(options_.topic_prefix, m.reply_to) &&
        !m.batch.origin.gateway_id.empty()) {
      // Tell the sender why, so it does not wait for its timeout.
      WireAck ack{options_.region, m.batch.origin, 0, AckCode::kBadBatch, st.ToString()};
      store_->GetHighWater(m.batch.origin, &ack.high_water);
      Reply(m.reply_to, EncodeAck(m.correlation_id, ack));
    }
    return;
  }
  if (m.kind != WireKind::kBatch && m.kind != WireKind::kPing && m.kind != WireKind::kFeedRequest) return;
  if (!IsReplyTopic(options_.topic_prefix, m.reply_to)) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.bad_reply_addresses;
    return;
  }
  if (m.kind == WireKind::kPing) {
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.pings;
    }
    link_->Publish(m.reply_to, EncodePong(m.correlation_id, options_.region, m.ping_sent_ns), 0, false, 0);
    return;
  }
  if (m.kind == WireKind::kFeedRequest) {
    WireFeedPage page;
    page.region = options_.region;
    page.after_seq = m.feed_after_seq;
    size_t max = std::clamp<size_t>(m.feed_max_entries, 1, options_.feed_max_entries);
    st = store_->ReadRegionFeed(m.feed_after_seq, max, &page.entries, &page.head_seq, &page.reset);
    if (!st.ok()) {
      ES_LOG(kError, "hub {}: reading the region feed: {}", options_.region, st.ToString());
      return;  // the reader times out and asks again
    }
    if (page.reset) {
      // The reader restarts explicitly just before the oldest entry still served.
      uint64_t oldest = 0, head = 0;
      st = store_->RegionFeedBounds(&oldest, &head);
      if (!st.ok()) {
        ES_LOG(kError, "hub {}: region feed bounds: {}", options_.region, st.ToString());
        return;
      }
      page.next_seq = oldest > 0 ? oldest - 1 : head;
      ES_LOG(kWarn, "hub {}: feed position {} was pruned; reader restarts at {}", options_.region,
             m.feed_after_seq, page.next_seq);
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
    return;
  }

  const WireBatch& b = m.batch;
  WireAck ack;
  ack.region = options_.region;
  ack.origin = b.origin;
  // The span may open with LSNs the gateway's log compacted away. When the
  // span joins what is held (here, or elsewhere per base_lsn), they are no
  // gap: declare them as the base. Only this worker applies, so the mark
  // cannot move in between.
  uint64_t base = b.base_lsn;
  uint64_t held = 0;
  if (b.entries.front().lsn > b.first_lsn && store_->GetHighWater(b.origin, &held).ok() &&
      std::max(held, base) >= b.first_lsn - 1) {
    base = std::max(base, b.entries.front().lsn - 1);
  }
  st = store_->ApplyOriginBatch(b.origin, base, b.entries, &ack.high_water);
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.entries_received += b.entries.size();
    if (st.ok()) {
      ++stats_.batches_applied;
    } else if (st.code() == Status::Code::kInvalidArgument) {
      ++stats_.gaps_refused;
    } else {
      ++stats_.store_errors;
    }
  }
  if (!st.ok()) {
    ack.code = st.code() == Status::Code::kInvalidArgument ? AckCode::kGap : AckCode::kStoreError;
    ack.message = st.ToString();
    store_->GetHighWater(b.origin, &ack.high_water);
    ES_LOG(kWarn, "hub {}: batch {}..{} of {} refused: {}", options_.region, b.first_lsn, b.last_lsn,
           b.origin.ToString(), st.ToString());
  }
  Reply(m.reply_to, EncodeAck(m.correlation_id, ack));
}

void RegionHub::PublishHead(bool force) {
  int64_t now = clock_->MonotonicMillis();
  if (!force && now - last_head_ms_ < options_.head_interval_ms) return;
  if (!link_->connected()) return;
  uint64_t oldest = 0, head = 0;
  if (!store_->RegionFeedBounds(&oldest, &head).ok()) return;
  last_head_ms_ = now;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.head_seq = head;
  }
  if (head == head_published_ && !force) return;
  if (link_->Publish(HeadTopic(options_.topic_prefix, options_.region), EncodeFeedHead(options_.region, head), 0,
                     true, 0).ok()) {
    head_published_ = head;
  }
}

}  // namespace edgesync

#include "sync/feed_puller.h"

#include "platform/liveness.h"
#include "platform/log.h"

namespace edgesync {

FeedPuller::FeedPuller(Store* store, FeedPullerOptions options, Clock* clock, MqttLinkFactory factory)
    : store_(store),
      options_(std::move(options)),
      clock_(clock ? clock : SystemClock()),
      factory_(factory ? std::move(factory) : MqttLinkFactory(NewPahoMqttLink)) {}

FeedPuller::~FeedPuller() { Stop(); }

Status FeedPuller::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (!IsTopicLevel(options_.gateway_id)) return Status::InvalidArgument("feed: gateway id must be [A-Za-z0-9_-]");
  own_ = store_->origin();
  reply_topic_ = ReplyTopic(options_.topic_prefix, "feed-" + options_.gateway_id);
  regions_.clear();
  regions_.resize(options_.regions.size());
  stats_.regions.resize(options_.regions.size());
  for (size_t i = 0; i < options_.regions.size(); ++i) {
    const UplinkRegion& r = options_.regions[i];
    Region& region = regions_[i];
    region.name = r.name;
    region.backoff = std::make_unique<Backoff>(options_.backoff_base_ms, options_.backoff_max_ms);
    ES_RETURN_IF_ERROR(store_->GetCheckpoint("feed:" + r.name, &region.position));
    stats_.regions[i].name = r.name;
    stats_.regions[i].position = region.position;
    MqttLinkOptions lo = r.link;
    lo.client_id = "es-feed-" + options_.gateway_id;
    ES_RETURN_IF_ERROR(factory_(lo, &region.link).Annotate("feed region " + r.name));
    region.link->SetMessageHandler([this, i](MqttMessage&& m) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(Event{i, false, false, std::move(m.payload)});
      cv_.notify_one();
    });
    region.link->SetStateHandler([this, i](bool connected, bool, const std::string&) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(Event{i, true, connected, {}});
      cv_.notify_one();
    });
    ES_RETURN_IF_ERROR(region.link->Subscribe(reply_topic_, 1));
    ES_RETURN_IF_ERROR(region.link->Subscribe(HeadTopic(options_.topic_prefix, r.name), 0));
  }
  for (Region& r : regions_) ES_RETURN_IF_ERROR(r.link->Start());
  stop_ = false;
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void FeedPuller::Stop() {
  if (!worker_.joinable()) return;
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  worker_.join();
  for (Region& r : regions_) r.link->Disconnect(2000);
}

FeedPullerStats FeedPuller::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  FeedPullerStats s = stats_;
  s.bad_messages = counters_.rejected();
  return s;
}

void FeedPuller::Run() {
  Heartbeat beat("feed-puller");
  while (!stop_) {
    beat.Beat();  // each turn is bounded by a timed wait
    std::deque<Event> events;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stop_.load() || !events_.empty(); });
      events.swap(events_);
    }
    for (Event& e : events) {
      Region& r = regions_[e.region];
      if (e.state) {
        // A lost connection may have eaten the request or its answer.
        r.outstanding = 0;
        r.want = e.connected;
        std::lock_guard<std::mutex> lock(stats_mu_);
        stats_.regions[e.region].connected = e.connected;
        continue;
      }
      HandleMessage(e.region, e.payload);
    }
    int64_t now = clock_->MonotonicMillis();
    for (size_t i = 0; i < regions_.size(); ++i) {
      Region& r = regions_[i];
      if (r.outstanding != 0 && now - r.sent_ms > options_.answer_timeout_ms) {
        r.outstanding = 0;
        r.next_pull_ms = now + r.backoff->Next();
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.timeouts;
      }
      if (r.outstanding == 0 && r.link->connected() && now >= r.next_pull_ms &&
          (r.want || r.head > r.position || now - r.sent_ms >= options_.poll_interval_ms)) {
        Pull(i, now);
      }
    }
  }
}

void FeedPuller::Pull(size_t index, int64_t now_ms) {
  Region& r = regions_[index];
  uint64_t id = ++correlation_;
  std::string request = EncodeFeedRequest(reply_topic_, id, r.position, options_.page_max_entries);
  if (!r.link->Publish(HubInboxTopic(options_.topic_prefix, r.name, "feed-" + options_.gateway_id), request, 1, false,
                       0).ok()) {
    r.next_pull_ms = now_ms + r.backoff->Next();
    return;
  }
  r.outstanding = id;
  r.sent_ms = now_ms;
  r.want = false;
}

void FeedPuller::HandleMessage(size_t index, const std::string& payload) {
  Region& r = regions_[index];
  WireMessage m;
  Status st = DecodeMessage(payload, DecodeLimits{}, &m, &counters_);
  if (!st.ok()) {
    ES_LOG(kWarn, "feed {}: undecodable message: {}", r.name, st.ToString());
    return;
  }
  if (m.kind == WireKind::kFeedHead) {
    if (m.head_region == r.name && m.head_seq > r.head) r.head = m.head_seq;
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.regions[index].head = r.head;
    return;
  }
  if (m.kind != WireKind::kFeedPage || m.correlation_id != r.outstanding) return;  // stale answer
  r.outstanding = 0;
  WireFeedPage& page = m.feed_page;
  if (page.head_seq > r.head) r.head = page.head_seq;
  FeedRegionStats delta;
  if (page.reset) {
    ES_LOG(kWarn, "feed {}: position {} no longer served (pruned at the region); restarting at {}", r.name,
           r.position, page.next_seq);
    ++delta.resets;
  }
  std::vector<RemoteEntry> entries;
  entries.reserve(page.entries.size());
  for (RegionFeedEntry& e : page.entries) {
    if (e.remote.origin == own_) {
      ++delta.skipped_own;
    } else {
      entries.push_back(std::move(e.remote));
    }
  }
  int64_t applied = 0;
  if (!entries.empty()) st = store_->ApplyRemote(entries, &applied);
  // The restart position of a reset may lie behind ours only if the region
  // was rebuilt; checkpoints never move back, so ours stays.
  if (st.ok() && page.next_seq > r.position) st = store_->SetCheckpoint("feed:" + r.name, page.next_seq);
  if (!st.ok()) {
    ES_LOG(kError, "feed {}: applying a page: {}", r.name, st.ToString());
    r.next_pull_ms = clock_->MonotonicMillis() + r.backoff->Next();
    return;
  }
  if (page.next_seq > r.position) r.position = page.next_seq;
  r.backoff->Reset();
  // More to read: ask again at once.
  r.want = !page.entries.empty() && r.position < r.head;
  std::lock_guard<std::mutex> lock(stats_mu_);
  ++stats_.pages;
  FeedRegionStats& s = stats_.regions[index];
  s.position = r.position;
  s.head = r.head;
  s.applied += static_cast<uint64_t>(applied);
  s.skipped_own += delta.skipped_own;
  s.resets += delta.resets;
}

}  // namespace edgesync

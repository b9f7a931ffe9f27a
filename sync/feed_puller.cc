#include "sync/feed_puller.h"

#include <algorithm>
#include <random>

#include "platform/liveness.h"
#include "platform/log.h"
#include "store/token.h"

namespace edgesync {
namespace {

// Late pages are said in one line once none came for this long.
constexpr int64_t kLatePagesQuietMs = 5000;

}  // namespace

FeedPuller::FeedPuller(ReadViewWriter* store, FeedPullerOptions options, Clock* clock, MqttLinkFactory factory)
    : store_(store),
      options_(std::move(options)),
      clock_(clock ? clock : SystemClock()),
      factory_(factory ? std::move(factory) : MqttLinkFactory(NewPahoMqttLink)) {}

FeedPuller::~FeedPuller() { Stop(); }

Status FeedPuller::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (!IsTopicId(options_.gateway_id)) return Status::InvalidArgument("feed: gateway id must be [A-Za-z0-9_-]");
  own_ = store_->origin();
  reply_topic_ = ReplyTopic(options_.topic_prefix, options_.gateway_id, "feed");
  // Correlation ids start at a random point: an answer is matched to the
  // request it names, and a guessable id would make forging one cheap.
  correlation_ = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  regions_.clear();
  regions_.resize(options_.regions.size());
  {
    MutexLock lock(&stats_mu_);
    stats_.regions.resize(options_.regions.size());
  }
  for (size_t i = 0; i < options_.regions.size(); ++i) {
    const UplinkRegion& r = options_.regions[i];
    Region& region = regions_[i];
    region.name = r.name;
    region.backoff = std::make_unique<Backoff>(options_.backoff_base_ms, options_.backoff_max_ms);
    region.progress = std::make_unique<ProgressLog>("feed catch-up from " + r.name, "entries");
    ES_RETURN_IF_ERROR(store_->GetFeedPosition(r.name, &region.position));
    if (region.position.single_seq > 0) {
      // A position of the single-sequence feed cannot be split into shards:
      // start over, said out loud; the read view stays (applies are
      // idempotent by origin and LSN), and the hub resets us if it pruned.
      ES_LOG(kWarn, "feed {}: position {} is of the single-sequence feed; reading the region's feed again from its "
             "oldest entry", r.name, region.position.single_seq);
    }
    {
      MutexLock lock(&stats_mu_);
      stats_.regions[i].name = r.name;
      if (region.position.single_seq > 0) ++stats_.regions[i].resets;
      Publish(i, region);
    }
    MqttLinkOptions lo = r.link;
    lo.client_id = "es-feed-" + options_.gateway_id;
    ES_RETURN_IF_ERROR(factory_(lo, &region.link).Annotate("feed region " + r.name));
    region.link->SetMessageHandler([this, i](MqttMessage&& m) {
      MutexLock lock(&mu_);
      events_.push_back(Event{i, false, false, std::move(m.payload)});
      cv_.notify_one();
    });
    region.link->SetStateHandler([this, i](bool connected, bool, const std::string&) {
      MutexLock lock(&mu_);
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
  if (worker_.joinable()) {
    stop_ = true;
    {
      MutexLock lock(&mu_);
      cv_.notify_all();
    }
    worker_.join();
  }
  // Also after a Start that failed part way: a link set up by then may
  // share a connection that is up (sync/mqtt_link_pool.h), and its handler
  // queues events until it is disconnected.
  for (Region& r : regions_) {
    if (r.link) r.link->Disconnect(2000);
  }
}

FeedPullerStats FeedPuller::stats() const {
  MutexLock lock(&stats_mu_);
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
      MutexLock lock(&mu_);
      lock.WaitFor(&cv_, std::chrono::milliseconds(20),
                   [this]() REQUIRES(mu_) { return stop_.load() || !events_.empty(); });
      events.swap(events_);
    }
    for (Event& e : events) {
      Region& r = regions_[e.region];
      if (e.state) {
        // A lost connection may have eaten the request or its answer.
        r.outstanding = 0;
        r.want = e.connected;
        MutexLock lock(&stats_mu_);
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
        MutexLock lock(&stats_mu_);
        ++stats_.timeouts;
      }
      if (r.outstanding == 0 && r.link->connected() && now >= r.next_pull_ms &&
          (r.want || now - r.sent_ms >= options_.poll_interval_ms)) {
        Pull(i, now);
      }
      r.progress->Update(MaxPosition(r.position.shards), ShardLag(r.position.shards, r.head), now);
      if (r.late_unsaid > 0 && now - r.last_late_ms >= kLatePagesQuietMs) {
        ES_LOG(kInfo, "feed {}: ignored {} late page(s) answering requests given up on during an outage (pages_late)",
               r.name, r.late_unsaid);
        r.late_unsaid = 0;
      }
    }
  }
}

void FeedPuller::Pull(size_t index, int64_t now_ms) {
  Region& r = regions_[index];
  if (++correlation_ == 0) ++correlation_;
  uint64_t id = correlation_;
  std::string request =
      EncodeFeedRequest(reply_topic_, id, r.position.shards, options_.page_max_entries, r.position.epoch);
  if (!r.link->Publish(HubInboxTopic(options_.topic_prefix, r.name, options_.gateway_id), request, 1, false, 0)
           .ok()) {
    r.next_pull_ms = now_ms + r.backoff->Next();
    return;
  }
  r.outstanding = id;
  r.sent_ms = now_ms;
  r.want = false;
}

void FeedPuller::HandleMessage(size_t index, const std::string& payload) {
  WireMessage m;
  Status st = DecodeMessage(payload, DecodeLimits{}, &m, &counters_);
  if (!st.ok()) {
    ES_LOG(kWarn, "feed {}: undecodable message: {}", regions_[index].name, st.ToString());
    return;
  }
  if (m.kind == WireKind::kFeedHead) {
    HandleHead(index, m);
  } else if (m.kind == WireKind::kFeedPage) {
    HandlePage(index, m);
  }
}

void FeedPuller::HandleHead(size_t index, const WireMessage& m) {
  Region& r = regions_[index];
  if (m.head_region != r.name) return;
  // A notice only asks for one pull; what that pull returns decides whether
  // to go on, so a notice (forged, or a stale retained one) cannot make the
  // puller spin. Another epoch: the hub's store was re-created, and the pull
  // learns the explicit reset.
  if (!m.head_per_shard) return;  // a hub of the single-sequence feed
  bool other_epoch = !m.head_epoch.empty() && !r.position.epoch.empty() && m.head_epoch != r.position.epoch;
  bool ahead = false;
  for (int s = 0; s < kRegionShards; ++s) ahead |= m.head_shards[s] > std::max(r.head[s], r.position.shards[s]);
  if (other_epoch || ahead) r.want = true;
}

const char* FeedPuller::CheckPage(const Region& r, const WireMessage& m) const {
  const WireFeedPage& page = m.feed_page;
  if (m.correlation_id == 0) return "it has no correlation id";
  if (m.correlation_id != r.outstanding) return "it answers no outstanding request";
  if (page.region != r.name) return "it names another region";
  if (!page.per_shard) return "it has no per-shard continuation (a hub of the single-sequence feed)";
  if (page.after != r.position.shards) return "it answers another position";
  if (!IsEpoch(page.epoch)) return "it carries no hub epoch";
  if (!AllAtOrBelow(page.next, page.head)) return "its continuation lies past its head";
  if (page.reset) return page.entries.empty() ? nullptr : "a reset carries entries";
  if (!r.position.epoch.empty() && page.epoch != r.position.epoch) return "it is of another hub epoch, with no reset";
  // Per shard: sequences strictly increasing inside (position, head], and
  // the continuation between the shard's last entry and its head.
  ShardPositions previous = r.position.shards;
  for (const RegionFeedEntry& e : page.entries) {
    if (e.shard < 0 || e.shard >= kRegionShards) return "an entry lies outside every shard";
    if (e.seq <= previous[e.shard] || e.seq > page.head[e.shard]) {
      return "a sequence lies outside its shard's (position, head] or repeats";
    }
    previous[e.shard] = e.seq;
  }
  if (!AllAtOrBelow(previous, page.next)) return "its continuation lies before a shard's last entry";
  return nullptr;
}

uint64_t FeedPuller::MaxPosition(const ShardPositions& positions) {
  return *std::max_element(positions.begin(), positions.end());
}

void FeedPuller::Publish(size_t index, const Region& r) {
  FeedRegionStats* s = &stats_.regions[index];
  s->position = MaxPosition(r.position.shards);
  s->head = MaxPosition(r.head);
  s->lag = ShardLag(r.position.shards, r.head);
  s->positions = ShardPositionsText(r.position.shards);
  s->epoch = r.position.epoch;
}

void FeedPuller::BadPage(size_t index, const WireMessage& m, const char* why) {
  Region& r = regions_[index];
  if (m.correlation_id != 0 && m.correlation_id != r.outstanding && m.feed_page.region == r.name) {
    // The answer to a request given up on, once a newer one is out or none
    // is: routine after an outage. Counted, and said in one line once they
    // stop (Run).
    ES_LOG(kDebug, "feed {}: ignored a late page (correlation {}): it answers no outstanding request", r.name,
           m.correlation_id);
    ++r.late_unsaid;
    r.last_late_ms = clock_->MonotonicMillis();
    MutexLock lock(&stats_mu_);
    ++stats_.regions[index].bad_pages;
    ++stats_.regions[index].late_pages;
    return;
  }
  ES_LOG(kWarn, "feed {}: ignored a page (correlation {}, after {}, next {}, head {}): {}", regions_[index].name,
         m.correlation_id, ShardPositionsText(m.feed_page.after), ShardPositionsText(m.feed_page.next),
         ShardPositionsText(m.feed_page.head), why);
  MutexLock lock(&stats_mu_);
  ++stats_.regions[index].bad_pages;
}

void FeedPuller::HandlePage(size_t index, WireMessage& m) {
  Region& r = regions_[index];
  // A bad page leaves the request open: the real answer may still come, else
  // the request times out and is asked again after a backoff delay.
  if (const char* why = CheckPage(r, m)) return BadPage(index, m, why);
  r.outstanding = 0;
  WireFeedPage& page = m.feed_page;
  FeedPosition next{page.epoch, page.next};
  FeedRegionStats delta;
  if (page.reset) {
    ES_LOG(kWarn, "feed {}: position {} (epoch {}) no longer served by the region; restarting at {} of epoch {}",
           r.name, ShardPositionsText(r.position.shards), r.position.epoch.empty() ? "-" : r.position.epoch,
           ShardPositionsText(next.shards), next.epoch);
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
  Status st;
  if (!entries.empty()) st = store_->ApplyRemote(entries, &applied);
  if (st.ok()) st = store_->SetFeedPosition(r.name, next, page.reset);
  // Only once the entries and the position are in: kept before them, a
  // crash between would claim readings the view does not hold.
  if (st.ok() && !page.reset && !page.watermarks.empty()) st = store_->KeepWatermarks(page.watermarks);
  if (!st.ok()) {
    // Not dropped and not retried in a loop: asked again after a growing
    // delay, counted and shown in status until a page goes in.
    int64_t delay = r.backoff->Next();
    ES_LOG(kError, "feed {}: the store refused a page (after {}): {}; asking again in {} ms", r.name,
           ShardPositionsText(page.after), st.ToString(), delay);
    r.next_pull_ms = clock_->MonotonicMillis() + delay;
    r.want = true;
    MutexLock lock(&stats_mu_);
    ++stats_.regions[index].store_errors;
    stats_.regions[index].last_error = st.ToString();
    return;
  }
  r.position = next;
  r.head = page.head;
  r.backoff->Reset();
  // More to read: ask again at once. A reset page is empty: follow it.
  r.want = page.reset || (!page.entries.empty() && r.position.shards != r.head);
  MutexLock lock(&stats_mu_);
  ++stats_.pages;
  Publish(index, r);
  FeedRegionStats& s = stats_.regions[index];
  s.applied += static_cast<uint64_t>(applied);
  s.skipped_own += delta.skipped_own;
  s.resets += delta.resets;
  s.last_error.clear();
}

}  // namespace edgesync

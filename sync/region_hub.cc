#include "sync/region_hub.h"

#include <algorithm>
#include <iterator>

#include "platform/liveness.h"
#include "platform/log.h"
#include "platform/thread_priority.h"

namespace edgesync {

RegionHub::RegionHub(HubStore* store, RegionHubOptions options, Clock* clock, MqttLinkFactory factory)
    : store_(store),
      options_(std::move(options)),
      clock_(clock ? clock : SystemClock()),
      factory_(factory ? std::move(factory) : MqttLinkFactory(NewPahoMqttLink)),
      feed_store_(options_.feed_store ? options_.feed_store : store),
      contexts_(options_.context_max_bytes) {}

RegionHub::~RegionHub() { Stop(); }

Status RegionHub::Start() {
  if (worker_.joinable()) return Status::Ok();
  if (!IsTopicId(options_.region)) return Status::InvalidArgument("hub: region name must be 1..64 of [A-Za-z0-9_-]");
  if (!IsTopicId(options_.hub_id) || options_.hub_id.size() > 40) {
    return Status::InvalidArgument("hub: hub id must be 1..40 of [A-Za-z0-9_-]");
  }
  static_assert(kRegionShards <= 64, "held_ is a 64-bit mask");
  epoch_ = store_->epoch();
  epoch_tag_ = EpochTag(epoch_);
  leases_ = options_.leases;
  if (leases_ == nullptr) {
    sole_leases_ = NewSoleOwnerLeases(kRegionShards);
    leases_ = sole_leases_.get();
  }
  // Before the broker hears of us: a second live hub under our id is refused
  // here, not after it took over our MQTT session.
  ES_RETURN_IF_ERROR(leases_->Join().Annotate("hub " + options_.hub_id));
  joined_ = true;
  MqttLinkOptions lo = options_.link;
  // One client id per hub: two hubs under one id would take each other's
  // session in turn (the broker drops the older connection).
  lo.client_id = "es-hub-" + options_.region + "-" + options_.hub_id;
  // One hub: batches sent while it restarts wait in the broker. Hubs sharing
  // the region: a restarted hub may hold other shards than before, and a
  // killed one may never come back, so its session must not go on queueing
  // its shards' messages; gateways resend what went unanswered.
  lo.clean_start = options_.leases != nullptr;
  ES_RETURN_IF_ERROR(factory_(lo, &link_).Annotate("hub"));
  link_->SetMessageHandler([this](MqttMessage&& m) {
    // Probes are answered here, not behind queued batches: the round trip
    // measures the path to the region, not how busy its store is.
    WireKind kind;
    const bool known = PeekKind(m.payload, options_.limits, &kind);
    if (known && kind == WireKind::kPing) {
      Handle(m);
      return;
    }
    // The sender is the topic's last level (Admit checks the rest).
    std::string sender = m.topic.substr(m.topic.rfind('/') + 1);
    if (known && kind == WireKind::kFeedRequest) {
      if (QueueFeedRequest(sender, std::move(m))) return;
    } else {
      MutexLock lock(&mu_);
      if (stop_) return;
      if (queue_.Push(sender, std::move(m))) {
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
      MutexLock lock(&stats_mu_);
      shed = ++stats_.batches_shed;
    }
    if (now - last_shed_log_ms_.load() >= 10000) {
      last_shed_log_ms_ = now;
      ES_LOG(kWarn, "hub {}: receive queue full ({} messages not yet applied): a message from {} was shed, {} so far; "
             "its gateway resends it. Raise hub.max_queued_messages above gateways x uplink.window",
             options_.region, options_.max_queued_messages, sender, shed);
    }
  });
  stop_ = false;
  LeaseRound();
  worker_ = std::thread([this] { Run(); });
  feed_worker_ = std::thread([this] { ServeFeed(); });
  ES_RETURN_IF_ERROR(link_->Start());
  lease_thread_ = std::thread([this] { LeaseLoop(); });
  ES_LOG(kInfo, "hub {}: {} listening on {}, holding {} of {} shards", options_.region, options_.hub_id,
         HubInboxAllFilter(options_.topic_prefix, options_.region), subscribed_.size(), kRegionShards);
  return Status::Ok();
}

void RegionHub::LeaseLoop() {
  Heartbeat beat("hub-leases");
  const int64_t every = std::max<int64_t>(1, options_.lease_ttl_ms / 3);
  while (true) {
    beat.Idle();  // a round every ttl / 3 may be longer than the watchdog period: waiting is no stall
    {
      MutexLock lock(&mu_);
      if (lock.WaitFor(&cv_lease_, std::chrono::milliseconds(every), [this] { return stop_.load(); })) return;
    }
    beat.Beat();
    LeaseRound();
  }
}

void RegionHub::LeaseRound() {
  if (!legacy_unsubscribed_ && link_->connected()) {
    // A kept session of a hub from before shards still holds the inbox
    // filter of that time; no gateway publishes there any more.
    legacy_unsubscribed_ = link_->Unsubscribe(options_.topic_prefix + "/region/" + options_.region + "/in/+").ok();
  }
  std::vector<int> owned;
  ShardLeaseStats ls;
  Status st = joined_ ? Status::Ok() : leases_->Join();
  if (st.ok()) {
    joined_ = true;
    st = leases_->Balance(&owned, &ls);
  }
  const int64_t now = clock_->MonotonicMillis();
  if (st.ok()) {
    last_renewal_ms_ = now;
    renewed_at_ms_ = now;
  } else {
    {
      MutexLock lock(&stats_mu_);
      ++stats_.lease_errors;
    }
    if (st.code() == Status::Code::kRejected) joined_ = false;
    // Until a round succeeds again, what we held is ours only while its
    // lease can not have run out: measured from our last renewal on our own
    // monotonic clock, which is conservative (the renewal's expiry was set
    // by the database after that instant).
    if (st.code() != Status::Code::kRejected && now - last_renewal_ms_ < options_.lease_ttl_ms / 2) {
      ES_LOG(kWarn, "hub {}: renewing its shard leases: {}", options_.region, st.ToString());
      return;
    }
    ES_LOG(kError, "hub {}: gives up its shards until its leases can be renewed: {}", options_.region,
           st.ToString());
    owned.clear();
  }
  Hold(owned);
  MutexLock lock(&stats_mu_);
  stats_.shards = owned;
  if (st.ok()) stats_.live_hubs = ls.live_hubs;
  stats_.shards_taken += static_cast<uint64_t>(ls.taken);
  stats_.shards_stolen += static_cast<uint64_t>(ls.stolen);
}

void RegionHub::Hold(const std::vector<int>& shards) {
  uint64_t mask = 0;
  for (int s : shards) mask |= uint64_t{1} << s;
  // Drop first, then unsubscribe: a message of a shard given up that is
  // still on its way is not applied by two hubs at once more than can be
  // helped (the high-water compare-and-set covers what remains).
  held_ = mask;
  std::vector<int> gone, fresh;
  std::set_difference(subscribed_.begin(), subscribed_.end(), shards.begin(), shards.end(), std::back_inserter(gone));
  std::set_difference(shards.begin(), shards.end(), subscribed_.begin(), subscribed_.end(), std::back_inserter(fresh));
  if (!gone.empty()) {
    MutexLock lock(&stats_mu_);
    stats_.shards_handed_over += gone.size();
  }
  for (int s : gone) link_->Unsubscribe(HubInboxFilter(options_.topic_prefix, options_.region, s));
  for (int s : fresh) {
    Status st = link_->Subscribe(HubInboxFilter(options_.topic_prefix, options_.region, s), 1);
    if (!st.ok()) ES_LOG(kWarn, "hub {}: subscribing to shard {}: {}", options_.region, s, st.ToString());
  }
  if (!gone.empty() || !fresh.empty()) {
    ES_LOG(kInfo, "hub {}: {} now holds {} of {} shards (+{} -{})", options_.region, options_.hub_id, shards.size(),
           kRegionShards, fresh.size(), gone.size());
  }
  subscribed_ = shards;
}

void RegionHub::Stop() {
  if (!worker_.joinable()) return;
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.notify_all();
    cv_lease_.notify_all();
  }
  {
    MutexLock lock(&feed_mu_);  // the feed thread checks stop_ under it
    feed_cv_.notify_all();
  }
  // First off the broker: an apply under way then answers into a closed link
  // at once instead of waiting out each publish's timeout.
  link_->Disconnect(2000);
  if (lease_thread_.joinable()) lease_thread_.join();
  worker_.join();
  feed_worker_.join();
  // Hand the shards over: no apply of ours runs any more, so the next holder
  // is the only one. The others take them at their next round rather than
  // after the leases' expiry; what gateways send meanwhile goes unanswered
  // and is resent. (Hubs sharing a region leave no session behind: clean
  // start. One hub keeps its subscriptions in its session for its restart.)
  if (options_.leases != nullptr) Hold({});
  Status st = leases_->Release();
  if (!st.ok()) ES_LOG(kWarn, "hub {}: handing its shards over: {} (they are taken after expiry)", options_.region,
                       st.ToString());
  ES_LOG(kInfo, "hub {}: stopped", options_.region);
}

RegionHubStats RegionHub::stats(size_t max_origins) const {
  MutexLock lock(&stats_mu_);
  RegionHubStats s = stats_;
  s.bad_messages += counters_.rejected();
  const int64_t renewed = renewed_at_ms_.load();
  if (renewed >= 0) s.lease_renewed_ago_ms = clock_->MonotonicMillis() - renewed;
  s.origin_count = origins_.size();
  if (origins_.size() <= max_origins) {
    s.origins.reserve(origins_.size());
    for (const auto& [name, o] : origins_) s.origins.push_back(o);
  } else if (max_origins > 0) {
    // Only pointers are ranked; only the chosen few are copied (their names
    // are strings).
    std::vector<const HubOriginStats*> all;
    all.reserve(origins_.size());
    for (const auto& [name, o] : origins_) all.push_back(&o);
    auto more_lagging = [](const HubOriginStats* a, const HubOriginStats* b) {
      if (a->lag_ms != b->lag_ms) return a->lag_ms > b->lag_ms;
      if (a->last_batch_wall_ms != b->last_batch_wall_ms) return a->last_batch_wall_ms < b->last_batch_wall_ms;
      return a->origin < b->origin;
    };
    std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(max_origins - 1), all.end(),
                     more_lagging);
    s.origins.reserve(max_origins);
    for (size_t i = 0; i < max_origins; ++i) s.origins.push_back(*all[i]);
  }
  lock.Unlock();  // the applier waits on this lock for its next answer: sort outside it
  std::sort(s.origins.begin(), s.origins.end(),
            [](const HubOriginStats& a, const HubOriginStats& b) { return a.origin < b.origin; });
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
      MutexLock lock(&mu_);
      lock.WaitFor(&cv_, std::chrono::milliseconds(options_.head_interval_ms),
                   [this]() REQUIRES(mu_) { return stop_ || !queue_.empty(); });
      if (stop_) return;
      // What queued while the last turn applied goes together: a busy hub
      // groups batches, an idle one applies each as it comes.
      // Round-robin between senders: a gateway flooding the hub gets its
      // turn like any other, not the whole applier.
      queue_.Take(std::max<size_t>(1, options_.max_group_batches), &taken);
    }
    HandleAll(&taken);
    PublishHead(false);
  }
}

bool RegionHub::QueueFeedRequest(const std::string& sender, MqttMessage message) {
  FeedQueue<MqttMessage>::Pushed pushed;
  {
    MutexLock lock(&feed_mu_);
    if (stop_) return true;
    pushed = feed_queue_.Push(sender, std::move(message));
    if (pushed == FeedQueue<MqttMessage>::Pushed::kQueued) feed_cv_.notify_one();
  }
  if (pushed == FeedQueue<MqttMessage>::Pushed::kSuperseded) {
    MutexLock lock(&stats_mu_);
    ++stats_.feed_requests_superseded;
  }
  return pushed != FeedQueue<MqttMessage>::Pushed::kRefused;
}

void RegionHub::ServeFeed() {
  Heartbeat beat("hub-feed");
  // Pages yield the CPU to the applier (and, on a shared machine, to the
  // broker): while both want it, a page costs batches a fraction of what it
  // would at the same priority, and with no batch waiting a reader still
  // gets every idle cycle, its pages back to back.
  Status st = LowerThisThreadPriority(kFeedNiceIncrement);
  if (!st.ok()) ES_LOG(kWarn, "hub {}: feed pages are built at the applier's priority: {}", options_.region,
                       st.ToString());
  MqttMessage message;
  std::string sender;
  while (true) {
    beat.Beat();  // each page is bounded (feed_max_entries), each wait timed
    {
      MutexLock lock(&feed_mu_);
      lock.WaitFor(&feed_cv_, std::chrono::milliseconds(options_.head_interval_ms),
                   [this]() REQUIRES(feed_mu_) { return stop_ || !feed_queue_.empty(); });
      if (stop_) return;
      if (!feed_queue_.Take(&sender, &message)) continue;
    }
    WireMessage m;
    if (Admit(message, &sender, &m) && m.kind == WireKind::kFeedRequest) HandleFeedRequest(m);
  }
}

void RegionHub::Reply(const std::string& to, const std::string& payload) {
  Status st = link_->Publish(to, payload, 1, false, 5000);
  if (!st.ok()) ES_LOG(kWarn, "hub {}: answering {}: {}", options_.region, to, st.ToString());
}

bool RegionHub::Admit(const MqttMessage& message, std::string* sender, WireMessage* out) {
  int shard = -1;
  const bool inbox = InboxSender(options_.topic_prefix, options_.region, message.topic, sender, &shard);
  if (message.retained && message.topic.rfind(options_.topic_prefix + "/region/" + options_.region + "/in/", 0) == 0) {
    // No gateway publishes retained: the broker would hand such a message
    // to every (re)subscribing hub, after the identity that left it was
    // revoked too, so it is cleared (a zero-length retained publish on its
    // topic; the hub's ACL lets it write its region's inboxes), under any
    // shard level. Delivered live, a retained publish comes without the
    // flag (MQTT 3.1.1) and is handled once like any other; the next
    // subscription clears it.
    Status cleared = link_->Publish(message.topic, "", 1, true, 5000);
    uint64_t n;
    {
      MutexLock lock(&stats_mu_);
      n = ++stats_.retained_refused;
    }
    if ((n & (n - 1)) == 0) {  // the 1st, 2nd, 4th...: a flood does not flood the log
      ES_LOG(kWarn, "hub {}: ignored a retained message on {} (sender {}; {} so far) and {}: gateways never publish "
             "retained", options_.region, message.topic, *sender, n,
             cleared.ok() ? std::string("published its clearing") : "could not clear it (" + cleared.ToString() + ")");
    }
    return false;
  }
  if (message.payload.empty()) {
    // Nothing to apply: what clears a retained message, the hub's own
    // clearing coming back through its subscription included.
    return false;
  }
  if (!inbox) {
    // A broker delivering outside our subscription, or a gateway publishing
    // under a shard level that is not its own.
    MutexLock lock(&stats_mu_);
    ++stats_.bad_messages;
    return false;
  }
  if (!Holds(shard)) {
    // Given up since it was sent (or still queued in our session): its
    // gateway gets no answer and resends to the shard's holder.
    MutexLock lock(&stats_mu_);
    ++stats_.not_owned;
    return false;
  }
  WireMessage& m = *out;
  // Batches of one origin come here in arrival order: its series context
  // moves batch by batch as the gateway's did.
  Status st = DecodeMessage(message.payload, options_.limits, &m, &counters_, &contexts_, sender);
  if (m.kind == WireKind::kBatch && m.reply_to.empty() && m.batch.context_lsn != 0) {
    // A batch referring to a context leaves its reply address out: the
    // sender's own, the only one answered anyway.
    m.reply_to = ReplyTopic(options_.topic_prefix, *sender, "up");
  }
  if (m.kind == WireKind::kBatch) {  // pings are answered on the receive thread: contexts_ is not theirs
    MutexLock lock(&stats_mu_);
    stats_.contexts = contexts_.size();
    stats_.context_bytes = contexts_.bytes();
    stats_.context_evictions = contexts_.evictions();
    stats_.context_misses = counters_.no_context;
  }
  if (!st.ok()) {
    const bool no_context = st.code() == Status::Code::kNotFound && m.kind == WireKind::kBatch;
    if (no_context) {
      ES_LOG(kDebug, "hub {}: {}: {}", options_.region, *sender, st.ToString());
    } else {
      ES_LOG(kWarn, "hub {}: refused a message from {}: {}", options_.region, *sender, st.ToString());
    }
    if (m.kind == WireKind::kBatch && IsReplyTopic(options_.topic_prefix, *sender, m.reply_to) &&
        m.batch.origin.gateway_id == *sender) {
      // Tell the sender why, so it does not wait for its timeout.
      WireAck ack{options_.region, m.batch.origin, 0, no_context ? AckCode::kNoContext : AckCode::kBadBatch,
                  st.ToString(), epoch_, {}};
      store_->HighWater(m.batch.origin, &ack.high_water);
      Reply(m.reply_to, EncodeAck(m.correlation_id, ack));
    }
    return false;
  }
  if (m.kind != WireKind::kBatch && m.kind != WireKind::kPing && m.kind != WireKind::kFeedRequest) return false;
  if (m.kind == WireKind::kBatch && m.batch.origin.gateway_id != *sender) {
    // Another gateway's batch (a verbatim replay carries that gateway's
    // reply address too): refused for its origin, ahead of the address.
    ES_LOG(kWarn, "hub {}: refused batch {}..{} sent by {} naming origin {}: a gateway writes only its own origin",
           options_.region, m.batch.first_lsn, m.batch.last_lsn, *sender, m.batch.origin.ToString());
    MutexLock lock(&stats_mu_);
    ++stats_.sender_refused;
    return false;
  }
  if (!IsReplyTopic(options_.topic_prefix, *sender, m.reply_to)) {
    ES_LOG(kWarn, "hub {}: {} asked for an answer on {}, not one of its reply topics; dropped", options_.region,
           *sender, m.reply_to);
    MutexLock lock(&stats_mu_);
    ++stats_.bad_reply_addresses;
    return false;
  }
  if (m.kind == WireKind::kPing) {
    {
      MutexLock lock(&stats_mu_);
      ++stats_.pings;
    }
    link_->Publish(m.reply_to, EncodePong(m.correlation_id, options_.region, m.ping_sent_ns, epoch_), 0, false, 0);
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
    } else if (p.message.kind == WireKind::kFeedRequest) {
      // The receive thread sends feed requests to the feed thread; one that
      // came here anyway goes there too: pages are never built here.
      QueueFeedRequest(p.sender, message);
    }
  }
  ApplyBatches(&pending);
}

void RegionHub::HandleFeedRequest(const WireMessage& m) {
  WireFeedPage page;
  page.region = options_.region;
  page.after = m.feed_after;
  page.epoch = epoch_;
  FeedBoundsInfo bounds;
  Status st = feed_store_->FeedBounds(&bounds);
  // A position of another epoch, or past our head in some shard, was given
  // out by a store that is gone (re-created): its numbers mean nothing
  // here. An empty epoch is a reader that has not heard one yet; its
  // position is taken at its word while it lies within the head. A reader
  // of the single-sequence feed has no per-shard position to resume from.
  const char* why = nullptr;
  if (!m.feed_per_shard && m.feed_after_seq > 0) {
    why = "is one region-wide sequence (a reader of the single-sequence feed)";
  } else if (!m.feed_epoch.empty() && m.feed_epoch != epoch_) {
    why = "is of another hub epoch (the region's store was re-created)";
  } else if (st.ok() && !AllAtOrBelow(m.feed_after, bounds.head)) {
    why = "lies past the head (the region's store was re-created)";
  }
  if (st.ok() && why == nullptr) {
    size_t max = std::clamp<size_t>(m.feed_max_entries, 1, options_.feed_max_entries);
    FeedRead read;
    st = feed_store_->ReadFeed(m.feed_after, max, &read);
    page.entries = std::move(read.entries);
    page.next = read.next;
    page.head = read.head;
    page.reset = read.reset;
    // A reader of protocol 5 or older refuses a page holding a time
    // correction (an entry kind it does not know): it gets the page without
    // them, a sequence hole it accepts.
    if (st.ok() && !read.reset && m.version < kTimeCorrectionVersion) WithholdCorrections(max, &page);
    if (st.ok() && !read.reset) {
      // Read after the page: a watermark is sent only where the page's
      // continuation already holds what it covers, so a newer one is safe.
      std::vector<OriginWatermark> all;
      Status w = feed_store_->FeedWatermarks(&all);
      if (w.ok()) {
        page.watermarks = PageWatermarks(all, m.feed_after, page.next);
      } else {
        ES_LOG(kWarn, "hub {}: reading the origins' watermarks: {}", options_.region, w.ToString());
      }
    }
    if (read.reset) {
      // The shards whose positions were pruned move to their pruned marks;
      // the others keep theirs.
      ES_LOG(kWarn, "hub {}: feed position {} was pruned; reader restarts at {}", options_.region,
             ShardPositionsText(m.feed_after), ShardPositionsText(page.next));
      MutexLock lock(&stats_mu_);
      ++stats_.feed_resets;
    }
  }
  if (!st.ok()) {
    ES_LOG(kError, "hub {}: reading the region feed: {}", options_.region, st.ToString());
    return;  // the reader times out and asks again
  }
  if (why != nullptr) {
    // The reader restarts explicitly just past what was pruned, every shard.
    page.reset = true;
    page.entries.clear();
    page.head = bounds.head;
    page.next = bounds.pruned;
    ES_LOG(kWarn, "hub {}: feed position {} (epoch {}) {}; reader restarts at {} of epoch {}", options_.region,
           m.feed_per_shard ? ShardPositionsText(m.feed_after) : std::to_string(m.feed_after_seq),
           m.feed_epoch.empty() ? "-" : m.feed_epoch, why, ShardPositionsText(page.next), epoch_);
    MutexLock lock(&stats_mu_);
    ++stats_.feed_resets;
  }
  {
    MutexLock lock(&stats_mu_);
    ++stats_.feed_requests;
  }
  std::string out;
  EncodeOptions eo;
  eo.zstd_level = options_.zstd_level;
  if (EncodeFeedPage(m.correlation_id, page, eo, &out).ok()) Reply(m.reply_to, out);
}

void RegionHub::WithholdCorrections(size_t max, WireFeedPage* page) {
  uint64_t withheld = 0;
  auto is_correction = [](const RegionFeedEntry& e) {
    return e.remote.entry.kind == ChangeEntry::Kind::kTimeCorrection;
  };
  for (int reads = 1;; ++reads) {
    const size_t before = page->entries.size();
    page->entries.erase(std::remove_if(page->entries.begin(), page->entries.end(), is_correction),
                        page->entries.end());
    withheld += before - page->entries.size();
    // A reader of protocol 5 takes an empty page for "caught up" and waits
    // for the next head notice: a page of corrections only, with more
    // behind it, reads on (corrections are rare: a few reads at most).
    if (!page->entries.empty() || before == 0 || page->next == page->head || reads >= kMaxWithheldReads) break;
    FeedRead read;
    Status st = feed_store_->ReadFeed(page->next, max, &read);
    if (!st.ok()) {
      ES_LOG(kWarn, "hub {}: reading the region feed past time corrections: {}", options_.region, st.ToString());
      break;  // the page stands as it is: the reader asks on from its next
    }
    if (read.reset) break;
    page->entries = std::move(read.entries);
    page->next = read.next;
    page->head = read.head;
  }
  if (withheld > 0) {
    MutexLock lock(&stats_mu_);
    stats_.feed_corrections_withheld += withheld;
  }
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
      MutexLock lock(&stats_mu_);
      ++stats_.sender_refused;
      continue;
    }
    if (b.region_epoch != 0 && b.region_epoch != epoch_tag_) {
      // The sender's record is of another store (this one was re-created):
      // what it acknowledged is gone. Applying would jump over the loss.
      ApplyResult r;
      r.outcome = ApplyOutcome::kRegressed;
      Status st = store_->HighWater(b.origin, &r.high_water);
      r.before = r.high_water;
      r.detail = "the region's store is of another epoch (" + epoch_ + ") than the one that acknowledged " +
                 std::to_string(b.region_held) + " to " + b.origin.ToString();
      Answer(p, st, r);
      continue;
    }
    admitted.push_back(&p);
    batches.push_back(
        OriginBatch{b.origin, b.base_lsn, b.first_lsn, &b.entries, b.region_held, b.complete_through_ms, b.live,
                    b.priority, b.priority != 0 ? b.last_lsn : 0});
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
  ack.epoch = epoch_;
  // The spans held above the mark, whatever the answer: a gateway's live
  // lane learns from them what the region already holds.
  if (status.ok()) ack.held = r.held;
  // Likewise the priority marks (protocol 8): a gateway's priority cursors
  // resume from them. All 0 (an invalid batch, an origin without any)
  // leaves the field out, as a hub before it.
  if (status.ok()) ack.priority_held.assign(r.priority_held.begin(), r.priority_held.end());
  // A jump over a hole: everything up to base is declared held elsewhere
  // (after a failover). Only the origin's own, authenticated sender gets
  // here; still, it moves the mark without the entries, so it is on record.
  const bool applied = status.ok() && r.outcome == ApplyOutcome::kApplied;
  // A priority batch never jumps (its base is only the sender's record).
  const bool jumped = applied && b.priority == 0 && b.base_lsn > r.before;
  // A refill's jump over what its sender no longer holds: lost to the
  // region for good, so counted and named, never silent.
  const uint64_t lost = jumped && b.base_lost ? b.base_lsn - r.before : 0;
  const bool held = status.ok() && (r.outcome == ApplyOutcome::kApplied || r.outcome == ApplyOutcome::kAlreadyHeld);
  int64_t newest_ts = INT64_MIN;  // outside the lock: stats() waits on it
  // Readings stamped well before the origin's watermark as it stood: a
  // device replaying its buffer, or a clock far behind. The watermark is
  // over commit time, so they arrive after a window over their own time
  // looked complete (docs/GUARANTEES.md); counted, not refused.
  uint64_t late = 0;
  if (held && r.applied > 0) {
    int64_t watermark = 0;
    {
      MutexLock lock(&stats_mu_);
      auto it = origins_.find(b.origin.ToString());
      if (it != origins_.end()) watermark = it->second.complete_through_ms;
    }
    for (const ChangeEntry& e : b.entries) {
      if (e.lsn <= r.before || e.kind != ChangeEntry::Kind::kReading) continue;
      newest_ts = std::max(newest_ts, e.reading.ts_ms);
      if (watermark > 0 && e.reading.ts_ms < watermark - kLateReadingMarginMs) ++late;
    }
  }
  {
    MutexLock lock(&stats_mu_);
    stats_.entries_received += b.entries.size();
    if (!status.ok()) {
      ++stats_.store_errors;
    } else if (held) {
      ++stats_.batches_applied;
      if (!applied) ++stats_.batches_already_held;
      stats_.entries_applied += r.applied;
      if (b.priority != 0) {
        ++stats_.priority_batches_applied;
        stats_.priority_entries_applied += r.applied;
      }
      // The name in a kept buffer: no string is built per answer once the
      // origin is known.
      origin_key_.assign(b.origin.gateway_id).append(1, '/').append(b.origin.epoch);
      auto it = origins_.find(origin_key_);
      if (it == origins_.end()) {
        it = origins_.emplace(origin_key_, HubOriginStats{}).first;
        it->second.origin = origin_key_;
      }
      HubOriginStats& o = it->second;
      o.high_water = r.high_water;
      o.complete_through_ms = std::max(o.complete_through_ms, r.complete_through_ms);
      o.late_readings += late;
      stats_.late_readings += late;
      ++o.batches;
      o.entries += r.applied;
      o.last_batch_wall_ms = clock_->WallMillis();
      // While its sender holds more, the origin is as far behind as this
      // batch's newest reading; a batch that leaves nothing behind it means
      // caught up, whatever the age of its readings (an idle gateway's
      // last batch does not read as a lag that grows or stays).
      // A live lane's batch says nothing of the backlog behind the mark
      // (its readings are recent whatever waits): the lag stays the
      // backlog's. So does a priority batch's (its readings jump the queue).
      const bool backlog = !b.live && b.priority == 0;
      if (backlog && !b.more) {
        o.lag_ms = 0;
      } else if (backlog && newest_ts != INT64_MIN) {
        o.lag_ms = std::max<int64_t>(0, o.last_batch_wall_ms - newest_ts);
      }
      if (jumped) ++stats_.hole_jumps;
      o.lost += lost;
      stats_.lost_at_origin += lost;
    } else if (r.outcome == ApplyOutcome::kRegressed) {
      ++stats_.regressed;
    } else if (r.outcome == ApplyOutcome::kGap) {
      ++stats_.gaps_refused;
    } else {
      ++stats_.batches_invalid;
    }
  }
  if (lost > 0) {
    ES_LOG(kWarn, "hub {}: origin {} no longer holds {}..{} (pruned after this region had acknowledged it, before "
           "the region lost it): {} LSNs lost to the region; its feed readers never get them", options_.region,
           b.origin.ToString(), r.before + 1, b.base_lsn, lost);
  } else if (jumped) {
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
  } else if (r.outcome == ApplyOutcome::kRegressed) {
    ack.code = AckCode::kRegressed;
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
  FeedBoundsInfo bounds;
  if (!store_->FeedBounds(&bounds).ok()) return;
  last_head_ms_ = now;
  {
    MutexLock lock(&stats_mu_);
    stats_.head_seq = bounds.numbered;
  }
  if (bounds.head == head_published_ && !force) return;
  if (link_->Publish(HeadTopic(options_.topic_prefix, options_.region),
                     EncodeFeedHead(options_.region, bounds.head, epoch_), 0, true, 0)
          .ok()) {
    head_published_ = bounds.head;
  }
}

}  // namespace edgesync

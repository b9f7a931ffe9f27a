// sync/region_hub.h: the region hub (`edgesync region`): applies gateways'
// batches to the region's store and serves the region feed.
//
// Listens on <prefix>/region/<region>/in/<shard>/+ of its region broker for
// the shards it holds (store/hub_store_leases.h: one hub on SQLite holds all;
// several hubs on PostgreSQL share them by leases, renewed every ttl / 3 by a
// thread of the hub; a message of a shard not held is dropped unanswered and
// counted, its gateway resends it to the shard's holder). Each hub connects
// with a client id of its own, es-hub-<region>-<hub id>. The last
// level of the topic a message arrived on names its sender: the broker's ACL
// (firmware-config/region/) lets an identity publish only on its own level,
// so it is the authenticated gateway id. A batch whose origin names another
// gateway is refused (counted, logged with both ids, nothing applied, no
// answer), and answers go only to the sender's own reply topics. A batch is
// applied through the hub store (store/hub_store.h: durable high-water mark
// per origin; the apply says applied, already held, gap or invalid, and each
// gets its own answer code and counter) and answered with the mark at the
// reply address inside the payload; the answer is sent only after the store
// committed, so a gateway never advances past what the region durably holds.
// When batches queue up (a busy hub), up to max_group_batches of them, of any
// origins, go to the store together: a backend that pays per transaction
// (PostgreSQL: a network round trip and a WAL flush per commit) applies them
// in one. Pings are echoed at once (round-trip probes). Feed requests
// ("changes after S, at most N", S one position per shard) are answered
// with a page, its per-shard continuation
// and the head, apart from the batches (sync/feed_queue.h: a sender's newer
// request supersedes its queued one, senders' requests are served in turn); a position that can no longer be served (pruned, past the
// head, or of another epoch: the store was re-created) gets an explicit
// reset. Pages and head notices carry the store's epoch. A batch coded
// against its origin's series context (protocol 3) is decoded against the
// context the hub keeps for that origin (bounded by context_max_bytes, least
// recently used evicted first); one naming a context not held is answered
// NoContext and its gateway resends self-contained. After applying, a small retained FeedHead notice goes to
// <prefix>/region/<region>/head so readers know when to pull. A retained
// message on an inbox (handed over at a (re)subscribe) is ignored, counted
// and cleared from the broker with a zero-length retained publish, which
// needs write access to the region's inboxes; zero-length messages are
// ignored.
// Protocol: sync/PROTOCOL.md.
//
// Thread safety: Start/Stop from one thread; stats() from any thread.
// Batches are applied by one worker thread, each sender's in arrival order,
// the senders' in turn (sync/fair_queue.h). Feed pages are built by a
// thread of their own, so a page (up to feed_max_entries read, encoded and
// compressed) never holds up a batch; it reads through options.feed_store,
// which a backend with one connection per store should give it (the
// PostgreSQL store serialises its calls on its connection). A page may miss
// batches received before its request and not yet applied: the reader gets
// them on its next page (the head notice tells it). Pings are answered
// on the MQTT receive thread, ahead of queued batches; leases are renewed on
// a thread of their own. Stop hands the hub's shards over (Release) after
// the last apply.
#ifndef EDGESYNC_SYNC_REGION_HUB_H_
#define EDGESYNC_SYNC_REGION_HUB_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "platform/clock.h"
#include "platform/mutex.h"
#include "platform/status.h"
#include "store/hub_store.h"
#include "store/hub_store_leases.h"
#include "sync/fair_queue.h"
#include "sync/feed_queue.h"
#include "sync/mqtt_link.h"
#include "sync/sync_defaults.h"
#include "sync/uplink.h"
#include "sync/wire.h"

namespace edgesync {

struct RegionHubOptions {
  std::string region;                  // [A-Za-z0-9_-]
  std::string topic_prefix = uplink_options::kTopicPrefix;
  std::string hub_id = "1";            // [A-Za-z0-9_-]: names the MQTT client and the hub's leases
  ShardLeases* leases = nullptr;       // not owned; nullptr = every shard, held for good (one hub)
  int64_t lease_ttl_ms = region_hub_options::kLeaseTtlS * 1000;  // leases are renewed every third of it
  MqttLinkOptions link;                // the region broker; client id is set by the hub
  size_t feed_max_entries = 5000;      // cap on one feed page
  // Feed pages are read through it (not owned); nullptr = the hub's store.
  // A second store on the same data keeps page reads off the applier's
  // connection where a backend serialises its calls.
  HubStore* feed_store = nullptr;
  int64_t head_interval_ms = 100;      // at most one head notice per interval
  // Batches received but not yet applied; beyond it a message is shed
  // (resent). One sender may hold an eighth of it (at least 64), and the
  // applier takes the senders' batches in turn: no gateway can crowd out
  // others. Feed requests wait apart, one per sender, for at most this many
  // senders.
  size_t max_queued_messages = region_hub_options::kMaxQueuedMessages;
  size_t max_group_batches = 64;       // queued batches applied together (one transaction where the store groups)
  size_t context_max_bytes = region_hub_options::kContextMaxBytes;  // sync_defaults.h says why
  int zstd_level = 3;
  DecodeLimits limits;
};

// A reading stamped this much before its origin's watermark when it
// arrives is counted late (HubOriginStats::late_readings): more than a
// reading waits between its stamp and its commit on a working gateway.
constexpr int64_t kLateReadingMarginMs = 60000;

// One origin (gateway store) as the hub sees it.
struct HubOriginStats {
  std::string origin;               // gateway_id/epoch
  uint64_t high_water = 0;          // highest contiguous LSN held
  // The origin's completeness watermark as the store keeps it: every
  // reading its gateway committed before this wall time (Unix ms) is held
  // here (Batch.complete_through_ms); 0 = none known.
  int64_t complete_through_ms = 0;
  // Readings new to the region stamped more than kLateReadingMarginMs
  // before complete_through_ms as it stood when they arrived (a device
  // replaying its buffer), since the hub started.
  uint64_t late_readings = 0;
  uint64_t batches = 0;             // applied since the hub started
  uint64_t entries = 0;             // new entries applied since the hub started
  int64_t last_batch_wall_ms = 0;   // when the last batch was applied
  // How far behind the region this origin's data arrives: while its last
  // batch said the sender held more (Batch.more, a backlog draining), that
  // batch's apply time minus its newest reading's timestamp; 0 once a batch
  // left nothing behind it (caught up, however idle since).
  int64_t lag_ms = 0;
  // LSNs the origin declared it no longer held when it refilled this
  // region after the region lost them (Batch.base_lost), since the hub started.
  uint64_t lost = 0;
};

struct RegionHubStats {
  uint64_t batches_applied = 0;      // answered OK: applied, or already held
  uint64_t batches_already_held = 0; // of those, nothing new (a resend)
  uint64_t batches_invalid = 0;      // decoded, but refused by the store's checks (answered "bad batch")
  uint64_t entries_received = 0;
  uint64_t entries_applied = 0;     // new to the region (received minus already held)
  uint64_t gaps_refused = 0;
  uint64_t sender_refused = 0;      // batches whose origin is not the topic's sender
  uint64_t hole_jumps = 0;          // batches applied from base_lsn above the high-water mark
  // Protocol 8: priority batches answered OK (applied or already held; in
  // batches_applied too), and their entries new to the region (in
  // entries_applied too): readings that ran ahead of their backlog.
  uint64_t priority_batches_applied = 0;
  uint64_t priority_entries_applied = 0;
  // Batches answered Regressed: the sender's record of this region names a
  // store of another epoch or a mark above the one held (the store was
  // re-created or restored); the sender refills from the mark.
  uint64_t regressed = 0;
  uint64_t lost_at_origin = 0;      // LSNs refilling origins no longer held (HubOriginStats::lost, all origins)
  uint64_t late_readings = 0;       // HubOriginStats::late_readings, all origins
  uint64_t store_errors = 0;
  uint64_t batches_shed = 0;        // received while the queue was full: dropped, the gateway resends
  uint64_t bad_messages = 0;        // undecodable or invalid payloads
  uint64_t bad_reply_addresses = 0;
  uint64_t retained_refused = 0;    // retained messages on an inbox (at a (re)subscribe): ignored and cleared
  uint64_t pings = 0;
  uint64_t feed_requests = 0;
  // Feed requests dropped unanswered because a newer one of the same sender
  // came before their turn (a reader has one outstanding; a flood of them
  // costs one page per turn).
  uint64_t feed_requests_superseded = 0;
  uint64_t feed_resets = 0;
  // Time corrections left out of feed pages to readers of protocol 5 or
  // older, which cannot decode them (their read views keep stamped times).
  uint64_t feed_corrections_withheld = 0;
  uint64_t head_seq = 0;            // entries the region feed numbered (every shard; FeedBoundsInfo::numbered)
  uint64_t not_owned = 0;           // messages of a shard this hub does not hold: dropped, resent by the gateway
  uint64_t context_misses = 0;      // batches naming a series context not held here: answered NoContext
  uint64_t context_evictions = 0;   // origins' contexts dropped for hub.context_max_bytes
  size_t contexts = 0;              // origins whose series context is held
  size_t context_bytes = 0;         // their memory (estimated)
  std::vector<int> shards;          // the shards this hub holds, ascending
  int live_hubs = 0;                // the region's hubs, as the last lease round counted them
  uint64_t shards_taken = 0;        // free or expired shards taken since the start (takeovers)
  uint64_t shards_stolen = 0;       // shards taken from a busier hub since the start
  uint64_t shards_handed_over = 0;  // shards given up since the start: stolen from us, expired, or released
  uint64_t lease_errors = 0;        // lease rounds that failed (database unreachable): renewals missed
  // Since the last lease round that renewed this hub's leases (monotonic
  // clock); -1 before the first.
  int64_t lease_renewed_ago_ms = -1;
  size_t origin_count = 0;              // origins answered since the hub started
  // At most stats()'s max_origins of them, by origin name: every origin
  // when they are that few, else the most lagging (largest lag_ms; ties:
  // the longest silent, then by name).
  std::vector<HubOriginStats> origins;
};

class RegionHub {
 public:
  RegionHub(HubStore* store, RegionHubOptions options, Clock* clock = nullptr, MqttLinkFactory factory = nullptr);
  ~RegionHub();
  RegionHub(const RegionHub&) = delete;
  RegionHub& operator=(const RegionHub&) = delete;

  Status Start();
  void Stop();
  bool connected() const { return link_ && link_->connected(); }
  // The counters and up to max_origins origins (RegionHubStats::origins).
  // A region of 10,000 gateways listed all of them every second for the
  // status snapshot: a fifth of a busy hub's CPU went there.
  RegionHubStats stats(size_t max_origins = SIZE_MAX) const;

 private:
  struct PendingBatch {
    std::string sender;  // the topic's (authenticated) sender
    WireMessage message;
  };
  void Run();
  // The feed thread: serves queued feed requests, one sender's at a time.
  void ServeFeed();
  // Decodes and checks a message and answers a ping; true for a batch or a
  // feed request to handle.
  bool Admit(const MqttMessage& message, std::string* sender, WireMessage* m);
  void Handle(const MqttMessage& message);
  void HandleAll(std::vector<MqttMessage>* messages);
  // To the feed thread (false: as many senders as max_queued_messages wait).
  bool QueueFeedRequest(const std::string& sender, MqttMessage message);
  void HandleFeedRequest(const WireMessage& m);  // the feed thread only
  // For a reader of protocol 5 or older: the page without time corrections
  // (counted); a page left empty by it, with more behind, reads on (up to
  // kMaxWithheldReads reads of `max` entries).
  void WithholdCorrections(size_t max, WireFeedPage* page);
  static constexpr int kMaxWithheldReads = 8;
  // Applies the batches as one group and answers each.
  void ApplyBatches(std::vector<PendingBatch>* pending);
  void Answer(const PendingBatch& p, const Status& status, const ApplyResult& result);
  void Reply(const std::string& to, const std::string& payload);
  void PublishHead(bool force);
  // One lease round: renews, takes or loses shards, and moves the
  // subscriptions to match.
  void LeaseRound();
  void LeaseLoop();
  void Hold(const std::vector<int>& shards);
  bool Holds(int shard) const { return (held_.load() >> shard) & 1; }

  HubStore* store_;
  RegionHubOptions options_;
  Clock* clock_;
  MqttLinkFactory factory_;
  std::unique_ptr<MqttLink> link_;
  std::thread worker_;
  std::thread feed_worker_;
  HubStore* feed_store_;  // options_.feed_store, or store_
  std::thread lease_thread_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<ShardLeases> sole_leases_;  // when options_.leases is nullptr
  ShardLeases* leases_ = nullptr;
  std::atomic<uint64_t> held_{0};             // bit s: shard s is held (kRegionShards <= 64)
  // The lease thread's own (and Start's before it runs, Stop's after it
  // has ended): no mutex, which the analysis has no way to state.
  std::vector<int> subscribed_;
  bool joined_ = false;
  bool legacy_unsubscribed_ = false;
  int64_t last_renewal_ms_ = 0;               // monotonic
  std::atomic<int64_t> renewed_at_ms_{-1};     // the same for stats(); -1 = never

  Mutex mu_;
  std::condition_variable cv_;       // worker: messages arrived
  std::condition_variable cv_lease_; // lease thread: stop
  // Batches received, not yet applied: fair between senders (each may hold
  // an eighth of max_queued_messages, at least 64), taken by deficit
  // round-robin, a turn worth kTurnCredit batches: a gateway's window of
  // batches goes in a few turns.
  static constexpr size_t kTurnCredit = 4;
  // The feed thread's nice value above the hub's: about a third of the
  // CPU time of a normal thread while both want it.
  static constexpr int kFeedNiceIncrement = 5;
  FairQueue<MqttMessage> queue_ GUARDED_BY(mu_){options_.max_queued_messages,
                                std::min(options_.max_queued_messages,
                                         std::max<size_t>(64, options_.max_queued_messages / 8)),
                                kTurnCredit};
  // Feed requests not yet answered, at most one per sender (a newer one
  // supersedes it), for as many senders as max_queued_messages. feed_mu_
  // is never held with mu_ nor while a page is built; feed_cv_ wakes the
  // feed thread.
  Mutex feed_mu_;
  std::condition_variable feed_cv_;
  FeedQueue<MqttMessage> feed_queue_ GUARDED_BY(feed_mu_){options_.max_queued_messages};
  std::atomic<int64_t> last_shed_log_ms_{-1000000};  // the shed warning, at most every 10 s

  WireCounters counters_;
  // Each origin's series context (sync/series_context.h), read and moved
  // only where batches are decoded (the worker, in arrival order).
  SeriesContextCache contexts_{0};
  std::string epoch_;  // the store's epoch: feed pages, head notices, answers and pongs carry it
  uint64_t epoch_tag_ = 0;  // EpochTag(epoch_)
  ShardPositions head_published_{};
  int64_t last_head_ms_ = 0;
  mutable Mutex stats_mu_;
  RegionHubStats stats_ GUARDED_BY(stats_mu_);
  // Hashed: every answer updates its origin's entry (10,000 origins took
  // ~14 string compares per batch in a map); stats() sorts the copy by name.
  std::unordered_map<std::string, HubOriginStats> origins_ GUARDED_BY(stats_mu_);
  // The name of the origin answered, its buffer kept.
  std::string origin_key_ GUARDED_BY(stats_mu_);
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_REGION_HUB_H_

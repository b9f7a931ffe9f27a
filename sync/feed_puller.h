// sync/feed_puller.h: the gateway's read view: pulls every region's feed.
//
// For each configured region: asks its hub for "changes after S, at most N"
// (S = one position per shard, store/feed_cursor.h, and the hub's epoch =
// Store::GetFeedPosition), applies the page with Store::ApplyRemote (idempotent by
// origin and origin LSN) skipping this gateway's own origin, then moves the
// position to the page's continuation; pulls again at once while the page
// said the head is ahead, once more when a head notice names a newer head or
// another epoch, and every poll interval. A notice can trigger only one pull
// (bounded by what that pull returns): it never makes the puller spin.
//
// A page counts only as the answer to the region's outstanding request
// (non-zero correlation id, the same region, the position asked for, the
// hub epoch asked for), with, in every shard, each sequence inside the
// shard's (position, head] and increasing, and a continuation between the
// shard's last entry and its head; anything else is counted
// (bad_pages) and ignored: the read view and the position stay as they were.
// An explicit reset from the hub (the position was pruned, or belongs to
// another epoch because the hub's store was re-created) is logged, counted
// and followed to the restart position and epoch the hub names: never a
// silent rewind or gap. A page the store refuses is counted (store_errors,
// last_error in status), logged and asked again after a decorrelated-jitter
// delay; a request left unanswered is asked again the same way.
//
// Thread safety: Start/Stop from one thread; stats() from any thread.
#ifndef EDGESYNC_SYNC_FEED_PULLER_H_
#define EDGESYNC_SYNC_FEED_PULLER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "platform/clock.h"
#include "platform/mutex.h"
#include "platform/progress.h"
#include "platform/status.h"
#include "store/store.h"
#include "sync/backoff.h"
#include "sync/mqtt_link.h"
#include "sync/sync_defaults.h"
#include "sync/uplink.h"
#include "sync/wire.h"

namespace edgesync {

struct FeedPullerOptions {
  std::string gateway_id;               // names our reply topic and MQTT client
  std::string topic_prefix = uplink_options::kTopicPrefix;
  std::vector<UplinkRegion> regions;    // the same region list as the uplink
  uint32_t page_max_entries = 5000;
  int64_t poll_interval_ms = 5000;      // pull at least this often, even without a head notice
  int64_t answer_timeout_ms = uplink_options::kAckTimeoutMs;
  int64_t backoff_base_ms = uplink_options::kBackoffBaseMs;
  int64_t backoff_max_ms = uplink_options::kBackoffMaxMs;
};

struct FeedRegionStats {
  std::string name;
  bool connected = false;
  // The position and head are one sequence per shard (store/feed_cursor.h):
  // position and head show the highest shard's (the checkpoint
  // "feed:<region>"; on a one-writer hub every shard's), lag the most any
  // shard is behind, positions every shard's.
  uint64_t position = 0;
  uint64_t head = 0;
  uint64_t lag = 0;
  std::string positions;
  uint64_t applied = 0;    // entries new to the read view
  uint64_t skipped_own = 0;
  uint64_t resets = 0;
  uint64_t bad_pages = 0;      // answers ignored: not to our request, or out of bounds
  // Of bad_pages: answers to a request given up on (timed out, or its
  // connection lost) arriving late, as every outage brings.
  uint64_t late_pages = 0;
  uint64_t store_errors = 0;   // pages the store refused (retried with backoff)
  std::string epoch;       // the hub epoch of position
  std::string last_error;  // the last refusal by the store, "" after a page is applied
};

struct FeedPullerStats {
  uint64_t pages = 0;
  uint64_t timeouts = 0;
  uint64_t bad_messages = 0;
  std::vector<FeedRegionStats> regions;
};

class FeedPuller {
 public:
  FeedPuller(ReadViewWriter* store, FeedPullerOptions options, Clock* clock = nullptr, MqttLinkFactory factory = nullptr);
  ~FeedPuller();
  FeedPuller(const FeedPuller&) = delete;
  FeedPuller& operator=(const FeedPuller&) = delete;

  Status Start();
  void Stop();
  FeedPullerStats stats() const;

 private:
  struct Region {
    std::unique_ptr<MqttLink> link;
    std::string name;
    FeedPosition position;
    ShardPositions head{};       // the head as the last page said
    bool want = true;            // pull as soon as possible
    uint64_t outstanding = 0;    // correlation id of the open request, 0 = none
    int64_t sent_ms = 0;
    int64_t next_pull_ms = 0;
    std::unique_ptr<Backoff> backoff;
    std::unique_ptr<ProgressLog> progress;  // catch-up lines in the log
    uint64_t late_unsaid = 0;    // late pages not yet said in the log's summarising line
    int64_t last_late_ms = 0;
  };
  struct Event {
    size_t region;
    bool state;
    bool connected;
    std::string payload;
  };
  void Run();
  void HandleMessage(size_t index, const std::string& payload);
  void HandleHead(size_t index, const WireMessage& m);
  void HandlePage(size_t index, WireMessage& m);
  // Why a page may not be applied at this position, or nullptr.
  const char* CheckPage(const Region& r, const WireMessage& m) const;
  void BadPage(size_t index, const WireMessage& m, const char* why);
  void Pull(size_t index, int64_t now_ms);
  static uint64_t MaxPosition(const ShardPositions& positions);
  // Copies r's position and head into region index's stats.
  void Publish(size_t index, const Region& r) REQUIRES(stats_mu_);

  ReadViewWriter* store_;
  FeedPullerOptions options_;
  Clock* clock_;
  MqttLinkFactory factory_;
  // The events the links' handlers queue for the worker. Declared before
  // regions_: the links go first (their handlers lock mu_), and Stop
  // disconnects them before that.
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_ GUARDED_BY(mu_);
  mutable Mutex stats_mu_;
  FeedPullerStats stats_ GUARDED_BY(stats_mu_);
  // Worker state: set up by Start before the worker runs, then touched by
  // the worker thread only (and by Stop after it has ended), so no mutex
  // guards it.
  Origin own_;
  std::string reply_topic_;
  std::vector<Region> regions_;
  uint64_t correlation_ = 0;
  std::thread worker_;
  std::atomic<bool> stop_{false};
  WireCounters counters_;  // atomics: stats() reads them from any thread
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_FEED_PULLER_H_

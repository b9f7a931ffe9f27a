// sync/feed_puller.h: the gateway's read view: pulls every region's feed.
//
// For each configured region: asks its hub for "changes after S, at most N"
// (S = the checkpoint "feed:<region>"), applies the page with
// Store::ApplyRemote (idempotent by origin and origin LSN) skipping this
// gateway's own origin, then moves the checkpoint to the page's continuation;
// pulls again at once while the region's head is ahead, otherwise when a head
// notice says there is more (retained, so a late reader learns the head too)
// or every poll interval. An explicit reset from the hub (the position was
// pruned) is logged, counted and followed to the restart position the hub
// names: never a silent rewind. A request left unanswered is asked again
// after a decorrelated-jitter delay.
//
// Thread safety: Start/Stop from one thread; stats() from any thread.
#ifndef EDGESYNC_SYNC_FEED_PULLER_H_
#define EDGESYNC_SYNC_FEED_PULLER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "platform/clock.h"
#include "platform/progress.h"
#include "platform/status.h"
#include "store/store.h"
#include "sync/backoff.h"
#include "sync/mqtt_link.h"
#include "sync/uplink.h"
#include "sync/wire.h"

namespace edgesync {

struct FeedPullerOptions {
  std::string gateway_id;               // names our reply topic and MQTT client
  std::string topic_prefix = "edgesync";
  std::vector<UplinkRegion> regions;    // the same region list as the uplink
  uint32_t page_max_entries = 5000;
  int64_t poll_interval_ms = 5000;      // pull at least this often, even without a head notice
  int64_t answer_timeout_ms = 10000;
  int64_t backoff_base_ms = 200;
  int64_t backoff_max_ms = 30000;
};

struct FeedRegionStats {
  std::string name;
  bool connected = false;
  uint64_t position = 0;   // checkpoint "feed:<region>"
  uint64_t head = 0;       // the region's head as last heard
  uint64_t applied = 0;    // entries new to the read view
  uint64_t skipped_own = 0;
  uint64_t resets = 0;
};

struct FeedPullerStats {
  uint64_t pages = 0;
  uint64_t timeouts = 0;
  uint64_t bad_messages = 0;
  std::vector<FeedRegionStats> regions;
};

class FeedPuller {
 public:
  FeedPuller(Store* store, FeedPullerOptions options, Clock* clock = nullptr, MqttLinkFactory factory = nullptr);
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
    uint64_t position = 0;
    uint64_t head = 0;
    bool want = true;            // pull as soon as possible
    uint64_t outstanding = 0;    // correlation id of the open request, 0 = none
    int64_t sent_ms = 0;
    int64_t next_pull_ms = 0;
    std::unique_ptr<Backoff> backoff;
    std::unique_ptr<ProgressLog> progress;  // catch-up lines in the log
  };
  struct Event {
    size_t region;
    bool state;
    bool connected;
    std::string payload;
  };
  void Run();
  void HandleMessage(size_t index, const std::string& payload);
  void Pull(size_t index, int64_t now_ms);

  Store* store_;
  FeedPullerOptions options_;
  Clock* clock_;
  MqttLinkFactory factory_;
  Origin own_;
  std::string reply_topic_;
  std::vector<Region> regions_;
  std::thread worker_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  uint64_t correlation_ = 0;
  WireCounters counters_;
  mutable std::mutex stats_mu_;
  FeedPullerStats stats_;
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_FEED_PULLER_H_

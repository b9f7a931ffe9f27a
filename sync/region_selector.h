// sync/region_selector.h: which region the gateway writes to.
//
// Fed with what the uplink observes (connection up/down, answered probes with
// their round trip, probes left unanswered), it names the write region:
//   - at start, the nearest healthy region once every region answered a
//     probe or startup_grace_ms passed: lowest round trip, taken as the
//     minimum of the last 64 probes (queueing on a busy link or hub only
//     ever adds delay, the minimum is the distance); round trips within
//     max(5 ms, 25 %) count as equal and preference decides. Until then,
//     the most preferred region if it answers (else none);
//   - a region whose first answer comes after that choice (down or slow at
//     start) takes the writes at once if it is nearer once three of its
//     round trips are measured: it was never weighed, so the failback
//     hysteresis below does not apply to it;
//   - when the write region becomes unhealthy, the next healthy region in
//     preference order (failover);
//   - to a nearer region once it has been healthy, and nearer, for
//     failback_after_ms without a break (hysteresis, so neither a flapping
//     link nor a moment of load drags writes around).
// A region is healthy while connected and its last probe or batch was
// answered within health_timeout_ms.
//
// Thread safety: not thread-safe; owned by the uplink's worker thread. Pure
// logic on the monotonic times it is given, so tests drive it directly.
#ifndef EDGESYNC_SYNC_REGION_SELECTOR_H_
#define EDGESYNC_SYNC_REGION_SELECTOR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace edgesync {

class RegionSelector {
 public:
  struct Region {
    std::string name;
    int64_t preference = 0;
  };
  RegionSelector(std::vector<Region> regions, int64_t health_timeout_ms, int64_t failback_after_ms,
                 int64_t startup_grace_ms);

  void OnConnected(size_t region, bool connected, int64_t now_ms);
  void OnProbeAnswered(size_t region, int64_t rtt_us, int64_t now_ms);
  // The region answered a batch in flight: alive, though the answer's delay
  // includes applying the batch, so it is no round-trip sample. Keeps a
  // region that is busy draining a backlog (probes queued behind batches on
  // a loaded board) from looking dead to the start choice and to failover.
  void OnBatchAnswered(size_t region, int64_t now_ms);

  // Re-evaluates at now_ms; returns the write region (-1: none healthy yet).
  // *changed tells whether it differs from the previous answer.
  int Select(int64_t now_ms, bool* changed);

  bool Healthy(size_t region, int64_t now_ms) const;
  int64_t rtt_us(size_t region) const { return state_[region].rtt_us; }
  // When the region last answered a probe or a batch (-1: not since it connected).
  int64_t last_answer_ms(size_t region) const { return state_[region].last_answer_ms; }
  int64_t switches() const { return switches_; }

 private:
  struct State {
    bool connected = false;
    int64_t rtt_us = -1;            // minimum of `samples`
    std::vector<int64_t> samples;   // the last kSamples round trips
    size_t next_sample = 0;
    int64_t nearer_since_ms = -1;   // continuously nearer than the write region since
    int64_t last_answer_ms = -1;
    int64_t healthy_since_ms = -1;  // start of the current healthy streak
    bool weighed = false;           // healthy when a settled choice was made (ever)
  };
  // True if a is nearer than b beyond the noise margin, or as near and preferred.
  bool Nearer(size_t a, size_t b) const;
  size_t NearestOf(const std::vector<size_t>& candidates) const;  // candidates not empty
  void Refresh(int64_t now_ms);

  std::vector<Region> regions_;
  std::vector<State> state_;
  int64_t health_timeout_ms_;
  int64_t failback_after_ms_;
  int64_t startup_grace_ms_;
  int64_t first_select_ms_ = -1;
  size_t preferred_ = 0;   // the lowest preference (first listed on a tie)
  bool settled_ = false;   // the start choice among measured regions is made
  int current_ = -1;
  int64_t switches_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_REGION_SELECTOR_H_

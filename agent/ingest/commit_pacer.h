// agent/ingest/commit_pacer.h: how long a commit group gathers readings,
// from the arrival rate, so that one rule fits every rate.
//
// A commit costs the card about the same whatever it holds: a 1 KiB page of
// WAL with store.sync = "normal", ~12 KiB of synced blocks with "commit" or
// "full" (the WAL's partial blocks are written again at each sync). A group
// therefore gathers until that cost is at most kFixedBytesPerReading a
// reading (16 readings, or 192 synced), which at rate r takes 16/r seconds;
// never less than kMinDelayMs (a burst still commits in groups) and never
// longer than the cap (ingest.batch_delay_ms: the latency an operator
// accepts, and with sync = "commit" the power-cut loss window). Where the
// cap cannot gather two readings, waiting gains nothing: the group commits
// after kMinDelayMs. Above kBusyRate readings/s the card's bandwidth is what
// is short and the uplink batches anyway: a group fills to batch_max or
// waits the cap (hysteresis: busy ends below two thirds of it). Until a
// first rate is known (half a second of commits) a group waits
// kFirstDelayMs: at the floor, the first half second of a Pi's start would
// cost ~30 synced commits, more than its next half minute.
// docs/INGEST.md shows the resulting groups at 1, 100, 1,000 and 8,000/s.
//
// Thread safety: none; the committer thread owns it.
#ifndef EDGESYNC_AGENT_INGEST_COMMIT_PACER_H_
#define EDGESYNC_AGENT_INGEST_COMMIT_PACER_H_

#include <cstddef>
#include <cstdint>

namespace edgesync {

class CommitPacer {
 public:
  static constexpr int64_t kMinDelayMs = 10;
  static constexpr int64_t kFirstDelayMs = 100;
  static constexpr int64_t kFixedBytesPerReading = 64;
  static constexpr int64_t kCommitBytes = 1024;          // sync = "normal"
  static constexpr int64_t kSyncedCommitBytes = 12288;   // sync = "commit" or "full"
  static constexpr double kBusyRate = 2000;              // readings/s
  static constexpr int64_t kRateWindowMs = 500;

  // cap_ms: ingest.batch_delay_ms; synced: the store syncs each commit.
  CommitPacer(int64_t cap_ms, size_t batch_max, bool synced);

  // A group of `readings` committed at monotonic time now_ms.
  void Committed(size_t readings, int64_t now_ms);
  // How long the first reading of the group being gathered may wait.
  int64_t DelayMs() const;
  // The readings a group aims for at the current rate.
  size_t TargetGroup() const;
  // Readings/s over the last window (0 until one has passed).
  double rate() const { return rate_; }
  bool busy() const { return busy_; }

 private:
  int64_t cap_ms_;
  size_t batch_max_;
  size_t group_;  // the group that amortises one commit's fixed cost
  double rate_ = 0;
  bool busy_ = false;
  bool started_ = false;
  int64_t window_start_ms_ = 0;
  int64_t window_readings_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_COMMIT_PACER_H_

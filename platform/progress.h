// platform/progress.h: progress lines for long catch-ups (the uplink
// draining a backlog, the feed puller catching up with a region): every few
// seconds one log line with what is done, what remains, the rate and the
// time to finish, so an operator watching the journal after a long outage
// knows how long the gateway needs. Short catch-ups log nothing.
//
// Contract: Update(done, remaining, now) where `done` counts since the
// catch-up began; a catch-up begins when `remaining` first exceeds the
// threshold and ends when it reaches zero (one closing line if any progress
// line was written). Times are monotonic milliseconds.
//
// Thread safety: one owner thread.
#ifndef EDGESYNC_PLATFORM_PROGRESS_H_
#define EDGESYNC_PLATFORM_PROGRESS_H_

#include <cstdint>
#include <string>

namespace edgesync {

class ProgressLog {
 public:
  // what: "uplink drain to eu", "feed catch-up from us"; unit: "readings".
  ProgressLog(std::string what, std::string unit, int64_t every_ms = 5000, uint64_t threshold = 10000);
  // position: an ever-growing count (e.g. the checkpoint LSN); remaining:
  // what is left now.
  void Update(uint64_t position, uint64_t remaining, int64_t now_ms);
  // The line Update would log (tests).
  static std::string Line(const std::string& what, const std::string& unit, uint64_t done, uint64_t remaining,
                          double rate_per_s);
  bool active() const { return active_; }

 private:
  std::string what_;
  std::string unit_;
  int64_t every_ms_;
  uint64_t threshold_;
  bool active_ = false;
  bool logged_ = false;
  uint64_t start_position_ = 0;
  int64_t start_ms_ = 0;
  int64_t last_log_ms_ = 0;
  uint64_t last_position_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_PROGRESS_H_

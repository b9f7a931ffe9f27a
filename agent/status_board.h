// agent/status_board.h: where a running role publishes its metrics
// snapshot (one JSON document, see docs/STATUS.md) once a second, and the
// one place the three views read it: the status file for `edgesync
// status`, and the HTTP server's /metrics, /status.json and status page.
// It also keeps the page's chart history: a small in-memory ring of chosen
// figures (kHistoryPoints points, one every kHistoryEveryMs: the last hour).
//
// Contract: Publish(snapshot, chart_points) stores the latest snapshot,
// writes it to the status file (not fsynced: it is rewritten every second
// and only a running process's figures matter), and appends chart_points
// to the history when a history step is due. A chart point named
// "<x>_total" is an ever-growing counter: the history holds, as series
// "<x>_per_s", its mean rate over the step that ends at the point (its
// increase divided by the step's time), so a steady rate charts as that
// rate whatever the step; the first point and a counter that went back
// have none.
//
// Thread safety: Publish from the role's main loop; Latest and HistoryJson
// from any thread (the HTTP server's).
#ifndef EDGESYNC_AGENT_STATUS_BOARD_H_
#define EDGESYNC_AGENT_STATUS_BOARD_H_

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "platform/mutex.h"

namespace edgesync {

class StatusBoard {
 public:
  static constexpr size_t kHistoryPoints = 360;
  static constexpr int64_t kHistoryEveryMs = 10000;

  explicit StatusBoard(std::string status_path, int64_t history_every_ms = kHistoryEveryMs);
  // chart_points: series name -> value ("backlog", "rtt_ms:eu", ...), or
  // counter ("ingest_total", charted as "ingest_per_s").
  void Publish(const nlohmann::json& snapshot, const std::map<std::string, double>& chart_points,
               int64_t now_wall_ms);
  nlohmann::json Latest() const;
  // {"every_ms": N, "series": [names], "points": [[t_ms, v, ...], ...]}; a
  // series missing at a point is null there.
  nlohmann::json HistoryJson() const;

 private:
  struct Point {
    int64_t t_ms;
    std::map<std::string, double> values;
  };
  std::string status_path_;
  int64_t history_every_ms_;
  mutable Mutex mu_;
  nlohmann::json latest_ GUARDED_BY(mu_);
  std::deque<Point> history_ GUARDED_BY(mu_);
  int64_t last_point_ms_ GUARDED_BY(mu_) = 0;
  std::map<std::string, double> last_counters_ GUARDED_BY(mu_);  // at the last point
};

// Smoothed per-second rate of an ever-growing counter, sampled at least
// 500 ms apart (a per-second figure jumps with batching): the snapshot's
// momentary rates. Charts use the mean over their step instead (above).
class RateMeter {
 public:
  double Update(uint64_t counter, int64_t now_mono_ms);

 private:
  int64_t at_ms_ = -1;
  uint64_t last_ = 0;
  double rate_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_STATUS_BOARD_H_

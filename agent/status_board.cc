#include "agent/status_board.h"

#include <algorithm>
#include <set>

#include "platform/files.h"
#include "platform/log.h"

namespace edgesync {

StatusBoard::StatusBoard(std::string status_path, int64_t history_every_ms)
    : status_path_(std::move(status_path)), history_every_ms_(history_every_ms) {}

void StatusBoard::Publish(const nlohmann::json& snapshot, const std::map<std::string, double>& chart_points,
                          int64_t now_wall_ms) {
  std::string text = snapshot.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  {
    MutexLock lock(&mu_);
    latest_ = snapshot;
    // Wall time may step back (NTP); a new point is due after a step either way.
    if (history_.empty() || now_wall_ms - last_point_ms_ >= history_every_ms_ || now_wall_ms < last_point_ms_) {
      Point point{now_wall_ms, {}};
      std::map<std::string, double> counters;
      const std::string kTotal = "_total";
      for (const auto& [name, v] : chart_points) {
        if (name.size() <= kTotal.size() || name.compare(name.size() - kTotal.size(), kTotal.size(), kTotal) != 0) {
          point.values[name] = v;
          continue;
        }
        counters[name] = v;
        auto before = last_counters_.find(name);
        const int64_t step_ms = now_wall_ms - last_point_ms_;
        // No mean without a step before it, across a wall-clock step back,
        // or for a counter that went back (restarted).
        if (history_.empty() || before == last_counters_.end() || step_ms <= 0 || v < before->second) continue;
        point.values[name.substr(0, name.size() - kTotal.size()) + "_per_s"] =
            (v - before->second) * 1000.0 / static_cast<double>(step_ms);
      }
      last_counters_ = std::move(counters);
      history_.push_back(std::move(point));
      while (history_.size() > kHistoryPoints) history_.pop_front();
      last_point_ms_ = now_wall_ms;
    }
  }
  if (status_path_.empty()) return;
  Status w = ReplaceFileSwapped(status_path_, text);
  if (!w.ok()) ES_LOG(kWarn, "status file: {}", w.ToString());
}

nlohmann::json StatusBoard::Latest() const {
  MutexLock lock(&mu_);
  return latest_;
}

nlohmann::json StatusBoard::HistoryJson() const {
  MutexLock lock(&mu_);
  std::set<std::string> names;
  for (const Point& p : history_) {
    for (const auto& [name, v] : p.values) names.insert(name);
  }
  nlohmann::json points = nlohmann::json::array();
  for (const Point& p : history_) {
    nlohmann::json row = nlohmann::json::array({p.t_ms});
    for (const std::string& n : names) {
      auto it = p.values.find(n);
      row.push_back(it == p.values.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second));
    }
    points.push_back(std::move(row));
  }
  return {{"every_ms", history_every_ms_}, {"series", names}, {"points", points}};
}

double RateMeter::Update(uint64_t counter, int64_t now_mono_ms) {
  if (at_ms_ < 0) {
    at_ms_ = now_mono_ms;
    last_ = counter;
    return rate_;
  }
  if (now_mono_ms - at_ms_ < 500) return rate_;
  double secs = static_cast<double>(now_mono_ms - at_ms_) / 1000.0;
  double fresh = static_cast<double>(counter - std::min(counter, last_)) / secs;
  rate_ = rate_ == 0 ? fresh : 0.7 * rate_ + 0.3 * fresh;
  at_ms_ = now_mono_ms;
  last_ = counter;
  return rate_;
}

}  // namespace edgesync

#include "agent/ingest/topic_pattern.h"

namespace edgesync {
namespace {

std::vector<std::string> SplitLevels(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t slash = s.find('/', start);
    out.emplace_back(s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

}  // namespace

Status TopicPattern::Parse(const std::string& pattern, TopicPattern* out) {
  TopicPattern p;
  p.pattern_ = pattern;
  if (pattern.empty()) return Status::InvalidArgument("topic pattern is empty");
  std::vector<std::string> levels = SplitLevels(pattern);
  for (size_t i = 0; i < levels.size(); ++i) {
    const std::string& level = levels[i];
    std::string where = "topic pattern \"" + pattern + "\" level " + std::to_string(i + 1);
    if (level.empty()) return Status::InvalidArgument(where + " is empty");
    if (level == "{deviceId}" || level == "{metric}") {
      int& slot = level == "{deviceId}" ? p.device_level_ : p.metric_level_;
      if (slot >= 0) return Status::InvalidArgument(where + ": " + level + " appears twice");
      slot = static_cast<int>(i);
      p.levels_.emplace_back();
      continue;
    }
    if (level.find_first_of("{}") != std::string::npos) {
      return Status::InvalidArgument(where + ": expected {deviceId} or {metric} filling the whole level");
    }
    if (level.find_first_of("+#") != std::string::npos) {
      return Status::InvalidArgument(where + ": wildcards are not allowed; use {deviceId} or {metric}");
    }
    p.levels_.push_back(level);
  }
  // A metric without its device names nothing the store can key on.
  if (p.metric_level_ >= 0 && p.device_level_ < 0) {
    return Status::InvalidArgument("topic pattern \"" + pattern + "\": {metric} needs {deviceId} too");
  }
  *out = std::move(p);
  return Status::Ok();
}

std::string TopicPattern::Filter() const {
  std::string f;
  for (size_t i = 0; i < levels_.size(); ++i) {
    if (i) f += '/';
    f += levels_[i].empty() ? "+" : levels_[i];
  }
  return f;
}

bool TopicPattern::Match(std::string_view topic, std::string* device_id, std::string* metric) const {
  device_id->clear();
  metric->clear();
  size_t start = 0;
  for (size_t i = 0; i < levels_.size(); ++i) {
    if (start > topic.size()) return false;
    size_t slash = topic.find('/', start);
    bool last = i + 1 == levels_.size();
    if (last != (slash == std::string_view::npos)) return false;
    std::string_view level = topic.substr(start, last ? std::string_view::npos : slash - start);
    if (static_cast<int>(i) == device_level_) {
      device_id->assign(level);
    } else if (static_cast<int>(i) == metric_level_) {
      metric->assign(level);
    } else if (level != levels_[i]) {
      return false;
    }
    start = last ? topic.size() + 1 : slash + 1;
  }
  return true;
}

}  // namespace edgesync

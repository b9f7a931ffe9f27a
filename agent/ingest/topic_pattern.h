// agent/ingest/topic_pattern.h: subscription patterns that name their topic
// levels, e.g. "sensors/{deviceId}/{metric}".
//
// A placeholder fills one whole level; the broker is subscribed to the
// pattern with each placeholder replaced by '+', and a received topic is
// matched back level by level to recover the deviceId and metric.
//
// Thread safety: immutable after Parse; Match may run on any thread.
#ifndef EDGESYNC_AGENT_INGEST_TOPIC_PATTERN_H_
#define EDGESYNC_AGENT_INGEST_TOPIC_PATTERN_H_

#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"

namespace edgesync {

class TopicPattern {
 public:
  // Rejects empty levels, wildcards, unknown or repeated placeholders,
  // placeholders that do not fill a whole level, and {metric} without
  // {deviceId}. A pattern without placeholders takes the device from the
  // payload (SenML bn, FlatBuffers device_id).
  static Status Parse(const std::string& pattern, TopicPattern* out);

  const std::string& pattern() const { return pattern_; }
  // The MQTT subscription filter ("sensors/+/+").
  std::string Filter() const;
  bool has_device() const { return device_level_ >= 0; }
  bool has_metric() const { return metric_level_ >= 0; }
  // True when topic fits; fills the named parts (empty when not named).
  bool Match(std::string_view topic, std::string* device_id, std::string* metric) const;

 private:
  std::string pattern_;
  std::vector<std::string> levels_;  // literal text, or "" for a placeholder
  int device_level_ = -1;
  int metric_level_ = -1;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_TOPIC_PATTERN_H_

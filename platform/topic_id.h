// platform/topic_id.h: the one rule for an id that becomes an MQTT topic
// level or a client id (gateway ids, region names, hub ids, the uplink's
// topic prefix): 1..64 of [A-Za-z0-9_-]. No wildcard, separator or
// character a broker or an ACL pattern would read as something else; safe
// on every broker, including nats-server's MQTT listener.
#ifndef EDGESYNC_PLATFORM_TOPIC_ID_H_
#define EDGESYNC_PLATFORM_TOPIC_ID_H_

#include <cstddef>
#include <string>

namespace edgesync {

constexpr size_t kMaxTopicIdLength = 64;

inline bool IsTopicId(const std::string& id) {
  if (id.empty() || id.size() > kMaxTopicIdLength) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) {
      return false;
    }
  }
  return true;
}

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_TOPIC_ID_H_

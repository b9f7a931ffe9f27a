#include "agent/ingest/redelivery_filter.h"

#include <functional>
#include <string>

#include "platform/log.h"

namespace edgesync {
namespace {

// Packet ids run 1..65535 and wrap to 1.
constexpr int kIdSpace = 65535;

int64_t Step(int from, int to) { return ((to - from) % kIdSpace + kIdSpace) % kIdSpace; }

}  // namespace

uint64_t RedeliveryFilter::Fingerprint(std::string_view topic, std::string_view payload) {
  const uint64_t t = std::hash<std::string_view>()(topic);
  const uint64_t p = std::hash<std::string_view>()(payload);
  return t ^ (p + 0x9e3779b97f4a7c15ULL + (t << 6) + (t >> 2)) ^ (static_cast<uint64_t>(payload.size()) << 48);
}

void RedeliveryFilter::Arrived(int packet_id, bool duplicate) {
  if (packet_id <= 0 || duplicate) return;
  MutexLock lock(&mu_);
  if (last_fresh_ == 0) {
    last_fresh_ = packet_id;
    ++position_;
    return;
  }
  const int64_t step = Step(last_fresh_, packet_id);
  last_fresh_ = packet_id;
  if (step < 1 || step > kMaxStep) {
    if (matching_) {
      matching_ = false;
      ++breaks_;
      entries_.clear();
      order_.clear();
      ES_LOG(kWarn, "ingest: the local broker's packet ids are not in sequence (a step of {}); a bare number "
             "it redelivers after a lost PUBACK can now be stored twice", step);
    }
    return;
  }
  position_ += step;
  while (!order_.empty() && position_ - order_.front().second > kWindow) {
    Forget(order_.front().first, order_.front().second);
    order_.pop_front();
  }
}

void RedeliveryFilter::Taken(int packet_id, std::string_view topic, std::string_view payload) {
  if (packet_id <= 0) return;
  MutexLock lock(&mu_);
  if (!matching_) return;
  entries_[packet_id] = Entry{Fingerprint(topic, payload), position_};
  order_.emplace_back(packet_id, position_);
  while (order_.size() > kCapacity) {
    Forget(order_.front().first, order_.front().second);
    order_.pop_front();
  }
}

bool RedeliveryFilter::AlreadyTaken(int packet_id, std::string_view topic, std::string_view payload) const {
  if (packet_id <= 0) return false;
  MutexLock lock(&mu_);
  if (!matching_) return false;
  auto it = entries_.find(packet_id);
  return it != entries_.end() && position_ - it->second.position <= kWindow &&
         it->second.fingerprint == Fingerprint(topic, payload);
}

void RedeliveryFilter::SessionLost() {
  MutexLock lock(&mu_);
  entries_.clear();
  order_.clear();
  last_fresh_ = 0;
}

bool RedeliveryFilter::matching() const {
  MutexLock lock(&mu_);
  return matching_;
}

int64_t RedeliveryFilter::sequence_breaks() const {
  MutexLock lock(&mu_);
  return breaks_;
}

void RedeliveryFilter::Forget(int packet_id, int64_t position) {
  auto it = entries_.find(packet_id);
  if (it != entries_.end() && it->second.position == position) entries_.erase(it);
}

}  // namespace edgesync

#include "agent/ingest/redelivery_filter.h"

#include <xxhash.h>

#include <string>

#include "platform/log.h"

namespace edgesync {
namespace {

// Packet ids run 1..65535 and wrap to 1.
constexpr int kIdSpace = 65535;

int64_t Step(int from, int to) { return ((to - from) % kIdSpace + kIdSpace) % kIdSpace; }

}  // namespace

uint64_t RedeliveryFilter::Fingerprint(std::string_view topic, std::string_view payload) {
  // XXH3 rather than std::hash: the low byte is kept in the intake journal,
  // so the value must not change with the C++ library a build links.
  return XXH3_64bits_withSeed(payload.data(), payload.size(), XXH3_64bits(topic.data(), topic.size()));
}

bool RedeliveryFilter::Arrived(int packet_id, bool duplicate) {
  if (packet_id <= 0) return false;
  MutexLock lock(&mu_);
  if (duplicate) {
    // A redelivery ahead of the newest id: sent before a cut and never
    // read (with an unlimited in-flight window, thousands of them), it
    // carries the sequence on. One of an id already seen leaves it be.
    const int64_t step = last_fresh_ == 0 ? 0 : Step(last_fresh_, packet_id);
    if (step >= 1 && step <= kMaxStep) {
      last_fresh_ = packet_id;
      position_ += step;
      Evict();
    }
    return false;
  }
  if (last_fresh_ == 0) {
    last_fresh_ = packet_id;
    ++position_;
    return false;
  }
  const int64_t step = Step(last_fresh_, packet_id);
  const int before = last_fresh_;
  last_fresh_ = packet_id;
  const bool in_sequence = step >= 1 && step <= kMaxStep;
  if (replay_end_ != 0) {
    // Inside the window the ids run on towards its end; past it, or
    // anything else, closes it.
    replay_left_ = in_sequence ? replay_left_ - step : -1;
    if (replay_left_ < 0) replay_end_ = 0;
  }
  if (!in_sequence && step > kIdSpace - kWindow) {
    // A step back (within the ids still remembered): a broker restored
    // from a saved state numbers on from there.
    replay_end_ = before;
    replay_left_ = kIdSpace - step;
  }
  if (restored_) {
    // The previous run's entries: trusted only if the broker's numbering
    // goes on from them.
    restored_ = false;
    if (!in_sequence) {
      Clear();
      ++position_;
      return replay_end_ != 0;
    }
  }
  if (!in_sequence) {
    if (matching_) {
      matching_ = false;
      ++breaks_;
      Clear();
      ES_LOG(kWarn, "ingest: the local broker's packet ids are not in sequence (a step of {}); a bare number "
             "it redelivers after a lost PUBACK can now be stored twice", step);
    }
    return replay_end_ != 0;
  }
  position_ += step;
  Evict();
  return replay_end_ != 0;
}

void RedeliveryFilter::Taken(int packet_id, uint64_t fingerprint) {
  if (packet_id <= 0) return;
  MutexLock lock(&mu_);
  if (!matching_) return;
  Put(packet_id, Entry{fingerprint, false, position_});
}

void RedeliveryFilter::Restored(int packet_id, bool duplicate, uint8_t fingerprint_low) {
  if (packet_id <= 0 || packet_id > kIdSpace) return;
  MutexLock lock(&mu_);
  if (!matching_) return;
  if (!duplicate) {
    if (last_fresh_ != 0) {
      const int64_t step = Step(last_fresh_, packet_id);
      if (step < 1 || step > kMaxStep) {
        Clear();  // a gap we cannot vouch for: only what follows it counts
        ++position_;
      } else {
        position_ += step;
      }
    } else {
      ++position_;
    }
    last_fresh_ = packet_id;
  } else if (last_fresh_ != 0) {
    const int64_t step = Step(last_fresh_, packet_id);
    if (step >= 1 && step <= kMaxStep) {
      last_fresh_ = packet_id;
      position_ += step;
    }
  }
  restored_ = true;
  Put(packet_id, Entry{fingerprint_low, true, position_});
  Evict();
}

void RedeliveryFilter::Evict() {
  while (!order_.empty() && position_ - order_.front().second > kWindow) {
    Forget(order_.front().first, order_.front().second);
    order_.pop_front();
  }
}

bool RedeliveryFilter::AlreadyTaken(int packet_id, uint64_t fingerprint) const {
  if (packet_id <= 0) return false;
  MutexLock lock(&mu_);
  if (!matching_) return false;
  auto it = entries_.find(packet_id);
  if (it == entries_.end() || position_ - it->second.position > kWindow) return false;
  return it->second.low_byte_only ? (it->second.fingerprint & 0xff) == (fingerprint & 0xff)
                                  : it->second.fingerprint == fingerprint;
}

void RedeliveryFilter::SessionLost() {
  MutexLock lock(&mu_);
  Clear();
  last_fresh_ = 0;
  restored_ = false;
  replay_end_ = 0;
}

bool RedeliveryFilter::MayBeReplayed(int packet_id) const {
  if (packet_id <= 0) return false;
  MutexLock lock(&mu_);
  return replay_end_ != 0 && packet_id == last_fresh_;
}

bool RedeliveryFilter::matching() const {
  MutexLock lock(&mu_);
  return matching_;
}

int64_t RedeliveryFilter::sequence_breaks() const {
  MutexLock lock(&mu_);
  return breaks_;
}

void RedeliveryFilter::Put(int packet_id, Entry entry) {
  order_.emplace_back(packet_id, entry.position);
  entries_[packet_id] = entry;
  while (order_.size() > kCapacity) {
    Forget(order_.front().first, order_.front().second);
    order_.pop_front();
  }
}

void RedeliveryFilter::Forget(int packet_id, int64_t position) {
  auto it = entries_.find(packet_id);
  if (it != entries_.end() && it->second.position == position) entries_.erase(it);
}

void RedeliveryFilter::Clear() {
  entries_.clear();
  order_.clear();
}

}  // namespace edgesync

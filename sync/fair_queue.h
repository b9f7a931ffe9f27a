// sync/fair_queue.h: a bounded queue fair between keys, for the region hub's
// receive queue (key: the sender, the authenticated identity of the inbox
// topic).
//
// One FIFO per key; Take serves the keys round-robin, one item of each in
// turn, so a key with a thousand items queued gets one turn in n when n
// keys have items, not a thousand. Push refuses an item when the queue
// holds `capacity` items, or when its key already holds `share` of them:
// one key cannot fill the queue either. Items of one key keep their order.
//
// Not thread-safe: the hub guards it with its queue mutex.
#ifndef EDGESYNC_SYNC_FAIR_QUEUE_H_
#define EDGESYNC_SYNC_FAIR_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace edgesync {

template <typename T>
class FairQueue {
 public:
  FairQueue(size_t capacity, size_t share) : capacity_(capacity), share_(std::max<size_t>(1, share)) {}

  // False (nothing queued) when full, or when `key` holds its share already.
  bool Push(const std::string& key, T item) {
    if (size_ >= capacity_) return false;
    std::deque<T>& q = queues_[key];
    if (q.size() >= share_) return false;
    if (q.empty()) turns_.push_back(key);
    q.push_back(std::move(item));
    ++size_;
    return true;
  }

  // Moves up to max items to *out: the first of the key whose turn it is,
  // then the next key's, and so on round after round.
  void Take(size_t max, std::vector<T>* out) {
    while (size_ > 0 && max > 0) {
      std::string key = std::move(turns_.front());
      turns_.pop_front();
      auto it = queues_.find(key);
      out->push_back(std::move(it->second.front()));
      it->second.pop_front();
      --size_;
      --max;
      if (it->second.empty()) {
        queues_.erase(it);
      } else {
        turns_.push_back(std::move(key));
      }
    }
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t held(const std::string& key) const {
    auto it = queues_.find(key);
    return it == queues_.end() ? 0 : it->second.size();
  }

 private:
  size_t capacity_;
  size_t share_;
  size_t size_ = 0;
  std::unordered_map<std::string, std::deque<T>> queues_;  // keys with items only
  std::deque<std::string> turns_;                          // each key with items once
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_FAIR_QUEUE_H_

// sync/fair_queue.h: a bounded queue fair between keys, for the region hub's
// receive queue (key: the sender, the authenticated identity of the inbox
// topic).
//
// One FIFO per key, served by deficit round-robin: each item has a cost (the
// hub's batches cost 1 each; its feed requests queue apart, in
// sync/feed_queue.h), each key's turn adds `quantum` to its credit, and a
// key's items are taken while their cost fits its credit. So each key with
// items gets the same share of the work per round, whatever it sends and
// however much: a key with a thousand items queued does not get a thousand
// turns. Push refuses an item when the queue
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
  FairQueue(size_t capacity, size_t share, size_t quantum = 1)
      : capacity_(capacity), share_(std::max<size_t>(1, share)), quantum_(std::max<size_t>(1, quantum)) {}

  // False (nothing queued) when full, or when `key` holds its share already.
  bool Push(const std::string& key, T item, size_t cost = 1) {
    if (size_ >= capacity_) return false;
    Lane& lane = lanes_[key];
    if (lane.items.size() >= share_) return false;
    if (lane.items.empty()) turns_.push_back(key);
    lane.items.emplace_back(std::move(item), std::max<size_t>(1, cost));
    ++size_;
    return true;
  }

  // Moves up to max items to *out, by deficit round-robin. A turn cut short
  // by max goes on at the next Take.
  void Take(size_t max, std::vector<T>* out) {
    while (size_ > 0 && max > 0) {
      auto it = lanes_.find(turns_.front());
      Lane& lane = it->second;
      if (!lane.in_turn) {
        lane.credit += quantum_;
        lane.in_turn = true;
      }
      while (!lane.items.empty() && max > 0 && lane.items.front().second <= lane.credit) {
        lane.credit -= lane.items.front().second;
        out->push_back(std::move(lane.items.front().first));
        lane.items.pop_front();
        --size_;
        --max;
      }
      if (max == 0 && !lane.items.empty() && lane.items.front().second <= lane.credit) return;
      lane.in_turn = false;
      std::string key = std::move(turns_.front());
      turns_.pop_front();
      if (lane.items.empty()) {
        lanes_.erase(it);  // an idle key keeps no credit
      } else {
        turns_.push_back(std::move(key));
      }
    }
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t held(const std::string& key) const {
    auto it = lanes_.find(key);
    return it == lanes_.end() ? 0 : it->second.items.size();
  }

 private:
  struct Lane {
    std::deque<std::pair<T, size_t>> items;  // (item, cost)
    size_t credit = 0;
    bool in_turn = false;
  };
  size_t capacity_;
  size_t share_;
  size_t quantum_;
  size_t size_ = 0;
  std::unordered_map<std::string, Lane> lanes_;  // keys with items only
  std::deque<std::string> turns_;               // each key with items once
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_FAIR_QUEUE_H_

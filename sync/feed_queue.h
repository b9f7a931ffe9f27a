// sync/feed_queue.h: the region hub's queue of feed requests (key: the
// sender, the authenticated identity of the inbox topic).
//
// At most one request per key: a reader has one request outstanding at a
// time (sync/feed_puller.cc) and ignores a page that answers an older one,
// so a newer request supersedes the one still queued, which is dropped
// unanswered, and keeps its key's place in turn. Keys are served in turn,
// one request each: a key flooding requests costs one page per round of
// the readers waiting, however many it sends, and a reader alone gets its
// pages back to back. Push refuses a request of a new key when `max_keys`
// keys are waiting.
//
// Not thread-safe: the hub guards it with its feed mutex.
#ifndef EDGESYNC_SYNC_FEED_QUEUE_H_
#define EDGESYNC_SYNC_FEED_QUEUE_H_

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

namespace edgesync {

template <typename T>
class FeedQueue {
 public:
  explicit FeedQueue(size_t max_keys) : max_keys_(max_keys) {}

  enum class Pushed {
    kQueued,      // the key's only request
    kSuperseded,  // replaced the key's queued one, which is dropped
    kRefused,     // max_keys other keys are waiting: nothing queued
  };
  Pushed Push(const std::string& key, T item) {
    auto it = waiting_.find(key);
    if (it != waiting_.end()) {
      it->second = std::move(item);
      return Pushed::kSuperseded;
    }
    if (waiting_.size() >= max_keys_) return Pushed::kRefused;
    waiting_.emplace(key, std::move(item));
    turns_.push_back(key);
    return Pushed::kQueued;
  }

  // The request of the key whose turn it is; false when none waits.
  bool Take(std::string* key, T* item) {
    if (turns_.empty()) return false;
    auto it = waiting_.find(turns_.front());
    *key = std::move(turns_.front());
    turns_.pop_front();
    *item = std::move(it->second);
    waiting_.erase(it);
    return true;
  }

  size_t size() const { return waiting_.size(); }
  bool empty() const { return waiting_.empty(); }

 private:
  size_t max_keys_;
  std::unordered_map<std::string, T> waiting_;  // one request per key
  std::deque<std::string> turns_;               // each waiting key once, in turn
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_FEED_QUEUE_H_

// agent/ingest/rate_limiter.h: a token bucket per deviceId, so one flooding
// device (a hot partition) cannot crowd out the others.
//
// Memory is bounded: at most max_devices buckets are kept. When full, a
// bucket that has refilled completely (an idle device, indistinguishable
// from a new one) is evicted first, else the least recently seen; an
// evicted device's rejection count moves into evicted_rejections.
//
// Thread safety: not thread-safe; the ingest owns one and serialises calls.
#ifndef EDGESYNC_AGENT_INGEST_RATE_LIMITER_H_
#define EDGESYNC_AGENT_INGEST_RATE_LIMITER_H_

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace edgesync {

class RateLimiter {
 public:
  RateLimiter(double rate_per_s, double burst, size_t max_devices = 10000);
  // Takes n tokens from the device's bucket at monotonic time now_ns; false
  // (and counted) when the bucket holds fewer than n.
  bool Allow(const std::string& device_id, int64_t now_ns, double n = 1);
  size_t tracked() const { return buckets_.size(); }
  int64_t evicted_rejections() const { return evicted_rejections_; }
  // The devices with the most rejections, most first.
  std::vector<std::pair<std::string, int64_t>> TopRejected(size_t n) const;

 private:
  struct Bucket {
    double tokens;
    int64_t last_ns;
    int64_t rejected = 0;
    std::list<std::string>::iterator lru;
  };
  void Refill(Bucket* b, int64_t now_ns) const;
  void EvictOne(int64_t now_ns);

  double rate_;
  double burst_;
  size_t max_devices_;
  std::unordered_map<std::string, Bucket> buckets_;
  std::list<std::string> lru_;  // most recently seen at the front
  int64_t evicted_rejections_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_RATE_LIMITER_H_

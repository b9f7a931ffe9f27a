// tests/bench/subscriber.h: the baseline of the ingest figures, a
// subscriber that only counts what the local broker delivers.
//
// Thread safety: one call at a time.
#ifndef EDGESYNC_TESTS_BENCH_SUBSCRIBER_H_
#define EDGESYNC_TESTS_BENCH_SUBSCRIBER_H_

#include <cstdint>
#include <functional>
#include <string>

namespace edgesync::bench {

// Subscribes to sensors/# at QoS 1 on uri, runs start_publisher (false =
// failed), and returns messages received per second once `total` arrived
// (0 on failure or after 10 minutes).
double CountingSubscriberRate(const std::string& uri, int64_t total, const std::function<bool()>& start_publisher);

}  // namespace edgesync::bench

#endif  // EDGESYNC_TESTS_BENCH_SUBSCRIBER_H_

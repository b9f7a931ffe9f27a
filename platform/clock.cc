#include "platform/clock.h"

#include <time.h>

#include <fstream>
#include <string>

namespace edgesync {
namespace {

class RealClock : public Clock {
 public:
  int64_t MonotonicNanos() const override {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
  int64_t WallMillis() const override {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
  }
  std::string BootId() const override {
    // Read once: it cannot change while this process lives.
    static const std::string id = [] {
      std::ifstream in("/proc/sys/kernel/random/boot_id");
      std::string line;
      std::getline(in, line);
      return line;
    }();
    return id;
  }
};

}  // namespace

Clock* SystemClock() {
  static RealClock clock;
  return &clock;
}

}  // namespace edgesync

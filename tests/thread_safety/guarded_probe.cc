// Built only by the thread_safety.* tests (CMakeLists.txt), never by the
// build: unguarded_probe.cc's class keeping its lock rule, which
// tests/thread_safety/check.sh must accept (the other test's failure is the
// rule's, not the check's).
#include "platform/mutex.h"

namespace edgesync {

class Counter {
 public:
  void Add() {
    MutexLock lock(&mu_);
    ++count_;
  }
  int count() const {
    MutexLock lock(&mu_);
    return count_;
  }

 private:
  mutable Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};

}  // namespace edgesync

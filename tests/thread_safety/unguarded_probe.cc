// Built only by the thread_safety.* tests (CMakeLists.txt), never by the
// build: reads a GUARDED_BY member without its mutex, which
// tests/thread_safety/check.sh must reject. guarded_probe.cc is the same
// class holding the lock, which it must accept.
#include "platform/mutex.h"

namespace edgesync {

class Counter {
 public:
  void Add() {
    MutexLock lock(&mu_);
    ++count_;
  }
  int count() const { return count_; }  // the broken rule: mu_ not held

 private:
  mutable Mutex mu_;
  int count_ GUARDED_BY(mu_) = 0;
};

}  // namespace edgesync

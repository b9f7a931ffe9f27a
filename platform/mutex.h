// platform/mutex.h: std::mutex and std::shared_mutex with Clang's
// thread-safety annotations (platform/thread_annotations.h), and the scoped
// locks that hold them. Members declared GUARDED_BY(mu_) can then only be
// touched where the analysis sees mu_ held.
//
//   Mutex mu_;                     MutexLock lock(&mu_);   // like lock_guard
//   int n_ GUARDED_BY(mu_);        lock.Unlock(); ... lock.Lock();
//                                  lock.Wait(&cv_);        // cv: std::condition_variable
//
// MutexLock is a std::unique_lock underneath, so it waits on a plain
// std::condition_variable. A wait releases the mutex and holds it again
// before it returns, so to the analysis the mutex stays held; a predicate
// passed to a wait is a lambda, which the analysis checks as a function of
// its own: it states what it reads under with REQUIRES(mu_).
//
// Thread safety: as std::mutex and std::shared_mutex.
#ifndef EDGESYNC_PLATFORM_MUTEX_H_
#define EDGESYNC_PLATFORM_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "platform/thread_annotations.h"

namespace edgesync {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope; Unlock/Lock let a stretch in the middle run
// without it (the destructor releases it only when held).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : lock_(mu->mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }

  // As std::condition_variable's waits on the held mutex.
  void Wait(std::condition_variable* cv) { cv->wait(lock_); }
  template <typename Predicate>
  void Wait(std::condition_variable* cv, Predicate ready) {
    cv->wait(lock_, ready);
  }
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(std::condition_variable* cv, std::chrono::duration<Rep, Period> timeout, Predicate ready) {
    return cv->wait_for(lock_, timeout, ready);
  }
  template <typename Clock, typename Duration, typename Predicate>
  bool WaitUntil(std::condition_variable* cv, std::chrono::time_point<Clock, Duration> deadline,
                 Predicate ready) {
    return cv->wait_until(lock_, deadline, ready);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A reader-writer mutex: held exclusively (WriterLock) or shared by readers
// (ReaderLock).
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* mu_;
};

class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() RELEASE() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* mu_;
};

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_MUTEX_H_

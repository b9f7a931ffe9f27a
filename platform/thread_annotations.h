// platform/thread_annotations.h: Clang's thread-safety attributes, so the
// lock rules of a class are declarations the compiler checks (`make
// thread-safety`, part of `make test`) instead of comments.
//
// A mutex type is a CAPABILITY; a member is GUARDED_BY the mutex it may only
// be touched under (PT_GUARDED_BY: the object a pointer member points at); a
// function REQUIRES the mutexes its caller must hold (REQUIRES_SHARED: at
// least as a reader), or EXCLUDES those it takes itself; ACQUIRE/RELEASE
// mark what a function leaves locked or unlocked. NO_THREAD_SAFETY_ANALYSIS
// turns the check off for one function and always carries a comment saying
// why. Under any other compiler (GCC builds what ships) the macros are empty.
//
// As https://clang.llvm.org/docs/ThreadSafetyAnalysis.html defines them.
#ifndef EDGESYNC_PLATFORM_THREAD_ANNOTATIONS_H_
#define EDGESYNC_PLATFORM_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define EDGESYNC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define EDGESYNC_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) EDGESYNC_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY EDGESYNC_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) EDGESYNC_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) EDGESYNC_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) EDGESYNC_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) EDGESYNC_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) EDGESYNC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) EDGESYNC_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) EDGESYNC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) EDGESYNC_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) EDGESYNC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) EDGESYNC_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) EDGESYNC_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) EDGESYNC_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) EDGESYNC_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) EDGESYNC_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) EDGESYNC_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) EDGESYNC_THREAD_ANNOTATION(assert_shared_capability(x))
#define RETURN_CAPABILITY(x) EDGESYNC_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS EDGESYNC_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // EDGESYNC_PLATFORM_THREAD_ANNOTATIONS_H_

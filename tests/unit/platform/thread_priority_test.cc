// LowerThisThreadPriority: raises the calling thread's nice value alone.
#include "platform/thread_priority.h"
#include "tests/support/status_assert.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

namespace edgesync {
namespace {

int NiceOf(id_t tid) { return ::getpriority(PRIO_PROCESS, tid); }
id_t ThisThread() { return static_cast<id_t>(::syscall(SYS_gettid)); }

TEST(ThreadPriorityTest, RaisesTheCallingThreadsNiceValueAndNoOtherThreads) {
  const int before = NiceOf(ThisThread());
  int seen = before;
  Status st;
  std::thread t([&] {
    st = LowerThisThreadPriority(5);
    seen = NiceOf(ThisThread());
  });
  t.join();
  ASSERT_OK(st);
  EXPECT_EQ(seen, std::min(19, before + 5));
  EXPECT_EQ(NiceOf(ThisThread()), before) << "another thread's priority moved";
}

TEST(ThreadPriorityTest, RefusesIncrementsOutsideOneToNineteen) {
  const int before = NiceOf(ThisThread());
  EXPECT_EQ(LowerThisThreadPriority(0).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(LowerThisThreadPriority(-3).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(LowerThisThreadPriority(20).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(NiceOf(ThisThread()), before);
}

}  // namespace
}  // namespace edgesync

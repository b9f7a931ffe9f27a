#include "platform/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace edgesync {

Status LowerThisThreadPriority(int increment) {
  if (increment < 1 || increment > 19) return Status::InvalidArgument("thread priority: increment must be 1..19");
  // PRIO_PROCESS with a thread id acts on that thread alone (Linux).
  const id_t tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return Status::IoError(std::string("getpriority: ") + std::strerror(errno));
  if (::setpriority(PRIO_PROCESS, tid, std::min(19, now + increment)) != 0) {
    return Status::IoError(std::string("setpriority: ") + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace edgesync

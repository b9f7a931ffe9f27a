// platform/thread_priority.h: a thread's share of the CPU.
//
// Linux keeps a nice value per thread: a thread whose value is raised by N
// gets about 1/1.25^N of the CPU time of a normal one while both want it,
// and every idle cycle when the normal ones wait. Raising it needs no
// privilege; lowering it back does.
//
// Thread safety: acts on the calling thread only.
#ifndef EDGESYNC_PLATFORM_THREAD_PRIORITY_H_
#define EDGESYNC_PLATFORM_THREAD_PRIORITY_H_

#include "platform/status.h"

namespace edgesync {

// Raises the calling thread's nice value by `increment` (1..19).
Status LowerThisThreadPriority(int increment);

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_THREAD_PRIORITY_H_

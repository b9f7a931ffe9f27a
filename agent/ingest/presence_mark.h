// agent/ingest/presence_mark.h: when this gateway was last seen taking
// messages from its local broker, kept in a small file so that the next
// run can measure how long the broker queued for it (the absence credit of
// rate_limiter.h).
//
// The time is the monotonic clock (platform/clock.h), tagged with the boot
// id: one clock for every process of a boot, never stepped by NTP or a user,
// so a wrong wall clock cannot lengthen or shorten a measured absence. It
// starts again at a reboot, where the mark says so (kOtherBoot) and the
// caller falls back on the time since boot.
//
// The file (<dir>/ingest-presence, 0600) holds one fixed-size line,
// rewritten in place every second or so without fsync: the page cache
// coalesces the rewrites (one page written back every ~30 s), it survives a
// kill of the process, and a power cut is a reboot, which the mark does not
// claim to span.
//
// Thread safety: not thread-safe; Ingest serialises calls.
#ifndef EDGESYNC_AGENT_INGEST_PRESENCE_MARK_H_
#define EDGESYNC_AGENT_INGEST_PRESENCE_MARK_H_

#include <cstdint>
#include <string>

#include "platform/clock.h"
#include "platform/status.h"

namespace edgesync {

class PresenceMark {
 public:
  static constexpr const char* kFileName = "ingest-presence";
  enum class Found { kThisBoot, kOtherBoot, kNone };

  // dir "": no file (Read finds nothing, Write does nothing).
  PresenceMark(std::string dir, Clock* clock);
  ~PresenceMark();
  PresenceMark(const PresenceMark&) = delete;
  PresenceMark& operator=(const PresenceMark&) = delete;

  // The monotonic ms of the last mark when it was written in this boot;
  // kNone for a missing or unreadable file.
  Found Read(int64_t* mono_ms) const;
  // Marks mono_ms (one pwrite of the whole line).
  Status Write(int64_t mono_ms);

 private:
  std::string path_;
  Clock* clock_;
  int fd_ = -1;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_PRESENCE_MARK_H_

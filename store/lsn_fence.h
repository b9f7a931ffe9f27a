// store/lsn_fence.h: the LSN fence of a SQLite store, the highest LSN it may
// give out, recorded durably in meta ('lsn_fence', with the boot id of the
// machine that recorded it in 'lsn_fence_boot'). Why LSNs need a fence with
// sync = normal, and what each step guarantees: store/lsn_fence.cc.
//
// Thread safety: none of its own; the store holds it under the write
// connection's mutex (GUARDED_BY), and every call takes that connection.
#ifndef EDGESYNC_STORE_LSN_FENCE_H_
#define EDGESYNC_STORE_LSN_FENCE_H_

#include <cstdint>
#include <string>

#include "platform/status.h"
#include "store/sqlite_util.h"

namespace edgesync {

class LsnFence {
 public:
  // enabled: the store writes with sync = normal (and not read-only); only
  // then are fences recorded. path names the store in log lines.
  LsnFence(bool enabled, std::string path) : enabled_(enabled), path_(std::move(path)) {}

  // At open: reads the recorded fence. If it was recorded in another boot
  // (boot_id differs) and next (the LSN the file would give out next) is at
  // or below it, *floor is the fence (no LSN at or below it may be given
  // out); else *floor is left as is.
  Status Load(Db* db, const std::string& boot_id, uint64_t next, uint64_t* floor);
  // Before a write that gives out LSNs up to `last` (outside a
  // transaction): records a fence past it if `last` is beyond the fence.
  Status Reserve(Db* db, const std::string& boot_id, uint64_t last);
  // At a clean close: lowers the fence to `last` (the last LSN given out).
  void Release(Db* db, uint64_t last);

  // LSNs up to it may be given out (0 = none reserved).
  uint64_t reserved() const { return reserved_; }
  bool enabled() const { return enabled_; }

 private:
  const bool enabled_;
  const std::string path_;
  uint64_t reserved_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_LSN_FENCE_H_

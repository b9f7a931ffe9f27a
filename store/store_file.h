// store/store_file.h: a gateway store's file before SQLite keeps it open:
// made atomically, and checked before SQLite ever touches it.
//
// Create makes a new store at a temporary path beside the real one (schema,
// identity: gateway id and a fresh random epoch, the initial ranges), syncs
// it and renames it into place without replacing anything: a crash
// mid-creation never leaves a half-made store at the real path, and when
// another process made one first, theirs is used. The file is 0600
// whatever the umask, and SQLite gives its -wal and -shm files that mode.
//
// Precheck reads the SQLite header itself: an empty, truncated, foreign or
// garbage file is refused by name without a byte written to it.
//
// Thread safety: no state; any thread.
#ifndef EDGESYNC_STORE_STORE_FILE_H_
#define EDGESYNC_STORE_STORE_FILE_H_

#include <string>

#include "platform/status.h"
#include "store/store.h"

namespace edgesync {
namespace store_file {

// Needs options.gateway_id and options.initial_ranges (checked by the caller).
Status Create(const StoreOptions& options);
Status Precheck(const std::string& path);
// A new epoch: 16 random bytes as 32 lower-case hex.
Status MakeEpoch(std::string* epoch);

}  // namespace store_file
}  // namespace edgesync

#endif  // EDGESYNC_STORE_STORE_FILE_H_

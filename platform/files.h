// platform/files.h: the few file operations that must survive power loss.
//
// Thread safety: functions are independent; callers serialise access to the
// same path.
#ifndef EDGESYNC_PLATFORM_FILES_H_
#define EDGESYNC_PLATFORM_FILES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace edgesync {

// Writes data to path so that after a power cut the file holds either the
// old or the new content, never a mix: temp file, fsync, rename, fsync dir.
// The file is 0600 (OpenPrivateFile).
// durable=false skips the fsyncs, for files rewritten every second that may
// be stale after a power cut (status): syncing them would wear an SD card
// for nothing.
Status WriteFileAtomic(const std::string& path, const std::string& data, bool durable = true);
// For a file rewritten every second that may be stale after a power cut
// (status): readers see the old or the new content, never a mix, but the
// card is spared. A temp file replaced over the old one makes ext4 (its
// auto_da_alloc) write the new one out at each rename, one 4 KiB block a
// second; here the new content goes in place into a sibling `<path>.tmp`
// that is then exchanged with path (renameat2 RENAME_EXCHANGE), so both
// stay in the page cache and the kernel writes them back at its own pace.
// Falls back to WriteFileAtomic(path, data, false) where exchange is not
// supported or path does not exist yet. Not durable.
Status ReplaceFileSwapped(const std::string& path, const std::string& data);
Status ReadFile(const std::string& path, std::string* data);
// Writes all of data at offset (retrying short writes and EINTR).
Status WriteAllAt(int fd, const std::string& path, std::string_view data, int64_t offset);
// The Status for the errno a failed call left: NoSpace for a full disk
// (ENOSPC, EDQUOT, EFBIG), IoError otherwise; "<what> <path>: <strerror>".
Status ErrnoStatus(const std::string& what, const std::string& path);
// The directory part of path: "." for a bare name, "/" for a file in the root.
std::string DirOf(const std::string& path);
// fsync of a file or a directory (after a rename, the directory holds the
// new name: without its fsync a power cut can bring back the old one).
Status SyncPath(const std::string& path);
// Creates the directory and its parents (mode 0750).
Status MakeDirs(const std::string& path);
// A directory only its owner may enter (data: readings, credentials' users,
// the journal). Created 0700 whatever the umask (chmod after mkdir; parents
// as MakeDirs). One that exists is left as it is (it may be shared, such as
// /var/lib, and must not be narrowed), with a warning when others may enter
// it: the files edgesync puts in it are 0600 either way.
Status MakePrivateDir(const std::string& path);
// Opens path with flags | O_CREAT | O_CLOEXEC as a file only its owner may
// read (0600, whatever the umask; an existing file is narrowed to 0600).
// Returns the fd, or -1 with errno set.
int OpenPrivateFile(const std::string& path, int flags);
// Narrows an existing file to 0600 (a store or journal made by an older
// version); a missing file is fine.
Status MakeFilePrivate(const std::string& path);
bool FileExists(const std::string& path);
// Bytes available to an unprivileged writer on the filesystem holding path.
Result<uint64_t> FreeBytes(const std::string& path);

// Process figures read from /proc (Linux): resident set size now and at peak,
// and bytes this process caused to be written to storage.
struct ProcessStats {
  uint64_t rss_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  uint64_t write_bytes = 0;
};
ProcessStats ReadProcessStats(int pid = 0);  // 0 = this process

}  // namespace edgesync

#endif  // EDGESYNC_PLATFORM_FILES_H_

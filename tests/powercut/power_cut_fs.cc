// tests/powercut/power_cut_fs.cc: a simulated power cut under a real
// process, as SQLite's crash tests and RocksDB's FaultInjectionTestFS do it,
// loaded with LD_PRELOAD (libes_power_cut.so).
//
// It interposes the libc calls that change files (open with O_CREAT or
// O_TRUNC, write, pwrite, ftruncate, fsync, fdatasync, rename, unlink) for
// paths under one directory, and keeps what a disk would have made durable:
// - every write or truncate records the bytes it replaces (an undo record)
//   until the file's next fsync/fdatasync, which makes its content durable;
// - creating, renaming or unlinking a name is durable only once the
//   directory holding it is fsync'ed (POSIX; ext4 and SD cards do not
//   promise more).
// At the POWER_CUT_AT-th such operation (counted from process start,
// recovery included) it stops every thread's file operations, puts every
// file back as the disk would hold it after a power cut, and SIGKILLs the
// process:
// - mode "drop": everything not synced is gone (undo records applied newest
//   first, the size back to the synced size, unsynced names undone);
// - mode "torn": as drop, but the last write (the one in progress, else the
//   newest unsynced one) reached the disk in part: a random prefix of it
//   (whole 512-byte sectors when it spans more than one) is put back on top.
// The real fsync is skipped: this machine does not lose power, so what is
// durable is what the layer says, and the tests run at memory speed.
//
// Environment: POWER_CUT_DIR (absolute directory; nothing else is touched),
// POWER_CUT_AT (0 or absent: record, never cut), POWER_CUT_MODE (drop|torn),
// POWER_CUT_SEED (the torn prefix), POWER_CUT_REPORT (a file outside the
// directory: "sync <name>" after each sync of a file, "cut <op> ..." at the
// cut; a test orders them against its own lines in the same file).
// The store's -shm file is not tracked: SQLite rebuilds it after a crash
// (it is shared memory, not data).
//
// Thread safety: every tracked operation runs under one mutex, so the cut
// sees no operation half done; untracked descriptors pass straight through.
// Both the plain calls and their *64 twins are interposed. With
// _FILE_OFFSET_BITS=64 (the armhf build) glibc's headers would rename the
// plain ones to the twins and the two definitions would collide, so the layer
// is compiled without it and keeps its own offsets 64-bit (off64_t).
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

struct Undo {
  bool truncate = false;  // else a write
  off64_t offset = 0;
  std::string old_bytes;  // what the range held before (within the old size)
};

struct FileState {
  off64_t synced_size = 0;
  off64_t size = 0;
  std::vector<Undo> undo;  // since the last sync, oldest first
};

struct DirOp {
  enum Kind { kCreate, kRename, kUnlink } kind;
  std::string path;          // created / unlinked / rename target
  std::string from;          // rename source
  bool had_old = false;      // rename over, or unlink of, a file with durable content
  std::string old_content;   // that content (as the disk held it)
};

struct LastWrite {
  bool valid = false;
  std::string path;
  off64_t offset = 0;
  std::string bytes;
};

using OpenFn = int (*)(const char*, int, ...);
using OpenAtFn = int (*)(int, const char*, int, ...);
using WriteFn = ssize_t (*)(int, const void*, size_t);
using PwriteFn = ssize_t (*)(int, const void*, size_t, off_t);
using Pwrite64Fn = ssize_t (*)(int, const void*, size_t, off64_t);
using FtruncateFn = int (*)(int, off_t);
using Ftruncate64Fn = int (*)(int, off64_t);
using FsyncFn = int (*)(int);
using CloseFn = int (*)(int);
using RenameFn = int (*)(const char*, const char*);
using UnlinkFn = int (*)(const char*);

struct Real {
  OpenFn open, open64;
  OpenAtFn openat, openat64;
  WriteFn write;
  PwriteFn pwrite;
  Pwrite64Fn pwrite64;
  Pwrite64Fn pread64;
  FtruncateFn ftruncate;
  Ftruncate64Fn ftruncate64;
  FsyncFn fsync, fdatasync;
  CloseFn close;
  RenameFn rename;
  UnlinkFn unlink;
};

Real real;
pthread_once_t once = PTHREAD_ONCE_INIT;
pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
bool enabled = false;
std::string* dir;                           // with a trailing '/'
std::map<int, std::string>* fd_paths;       // tracked descriptors (files and directories)
std::map<std::string, FileState>* files;    // by path
std::map<std::string, std::vector<DirOp>>* dir_ops;  // by directory, since its last sync
LastWrite* last_write;
uint64_t ops = 0;
uint64_t cut_at = 0;
bool torn = false;
uint64_t seed = 1;
int report_fd = -1;

template <typename T>
T Next(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

void Init() {
  real.open = Next<OpenFn>("open");
  real.open64 = Next<OpenFn>("open64");
  real.openat = Next<OpenAtFn>("openat");
  real.openat64 = Next<OpenAtFn>("openat64");
  real.write = Next<WriteFn>("write");
  real.pwrite = Next<PwriteFn>("pwrite");
  real.pwrite64 = Next<Pwrite64Fn>("pwrite64");
  real.pread64 = reinterpret_cast<Pwrite64Fn>(dlsym(RTLD_NEXT, "pread64"));
  real.ftruncate = Next<FtruncateFn>("ftruncate");
  real.ftruncate64 = Next<Ftruncate64Fn>("ftruncate64");
  real.fsync = Next<FsyncFn>("fsync");
  real.fdatasync = Next<FsyncFn>("fdatasync");
  real.close = Next<CloseFn>("close");
  real.rename = Next<RenameFn>("rename");
  real.unlink = Next<UnlinkFn>("unlink");
  const char* d = getenv("POWER_CUT_DIR");
  if (!d || d[0] != '/') return;
  dir = new std::string(d);
  if (dir->back() != '/') dir->push_back('/');
  fd_paths = new std::map<int, std::string>();
  files = new std::map<std::string, FileState>();
  dir_ops = new std::map<std::string, std::vector<DirOp>>();
  last_write = new LastWrite();
  if (const char* at = getenv("POWER_CUT_AT")) cut_at = strtoull(at, nullptr, 10);
  if (const char* m = getenv("POWER_CUT_MODE")) torn = strcmp(m, "torn") == 0;
  if (const char* s = getenv("POWER_CUT_SEED")) seed = strtoull(s, nullptr, 10) | 1;
  if (const char* r = getenv("POWER_CUT_REPORT")) {
    report_fd = real.open(r, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  }
  enabled = true;
}

void EnsureInit() { pthread_once(&once, Init); }

uint64_t Random() {  // xorshift64*
  seed ^= seed >> 12;
  seed ^= seed << 25;
  seed ^= seed >> 27;
  return seed * 2685821657736338717ull;
}

void Report(const std::string& line) {
  if (report_fd < 0) return;
  std::string l = line + "\n";
  ssize_t n = real.write(report_fd, l.data(), l.size());
  (void)n;
}

bool Under(const std::string& path) {
  return path.compare(0, dir->size(), *dir) == 0 || path + "/" == *dir;
}

bool Tracked(const std::string& path) {
  if (!Under(path)) return false;
  const std::string shm = "-shm";
  return !(path.size() >= shm.size() && path.compare(path.size() - shm.size(), shm.size(), shm) == 0);
}

std::string Absolute(int dirfd, const char* path) {
  if (path[0] == '/') return path;
  std::string base;
  if (dirfd == AT_FDCWD) {
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return path;
    base = cwd;
  } else {
    auto it = fd_paths->find(dirfd);
    if (it == fd_paths->end()) return path;  // not ours: relative stays relative, never Under
    base = it->second;
  }
  return base + "/" + path;
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string ReadAll(const std::string& path) {
  std::string out;
  int fd = real.open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (off64_t off = 0;;) {
    ssize_t n = real.pread64(fd, buf, sizeof buf, off);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    off += n;
  }
  real.close(fd);
  return out;
}

void WriteAll(int fd, const char* data, size_t size, off64_t offset) {
  while (size > 0) {
    ssize_t n = real.pwrite(fd, data, size, offset);
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
}

FileState& StateOf(const std::string& path) {
  auto it = files->find(path);
  if (it != files->end()) return it->second;
  FileState& s = (*files)[path];
  struct stat64 st;
  if (stat64(path.c_str(), &st) == 0) s.synced_size = s.size = st.st_size;
  return s;
}

// The content the disk holds for path: its undo records applied to a copy.
std::string DurableContent(const std::string& path) {
  std::string content = ReadAll(path);
  auto it = files->find(path);
  if (it == files->end()) return content;
  for (auto u = it->second.undo.rbegin(); u != it->second.undo.rend(); ++u) {
    size_t end = static_cast<size_t>(u->offset) + u->old_bytes.size();
    if (content.size() < end) content.resize(end);
    memcpy(&content[static_cast<size_t>(u->offset)], u->old_bytes.data(), u->old_bytes.size());
  }
  content.resize(static_cast<size_t>(it->second.synced_size));
  return content;
}

void RecordRange(FileState& s, int fd, bool truncate, off64_t offset, off64_t end) {
  Undo u;
  u.truncate = truncate;
  u.offset = offset;
  off64_t stop = end < s.size ? end : s.size;
  if (stop > offset) {
    u.old_bytes.resize(static_cast<size_t>(stop - offset));
    ssize_t n = real.pread64(fd, &u.old_bytes[0], u.old_bytes.size(), offset);
    u.old_bytes.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  s.undo.push_back(std::move(u));
}

void Cut(const std::string& op);

// Counts one tracked operation; cuts the power when it is the chosen one.
// The caller holds mu and calls it before doing the operation.
void Count(const std::string& op) {
  ++ops;
  if (cut_at != 0 && ops == cut_at) Cut(op);
}

void Revert() {
  for (auto& [path, s] : *files) {
    if (s.undo.empty() && s.size == s.synced_size) continue;
    int fd = real.open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    for (auto u = s.undo.rbegin(); u != s.undo.rend(); ++u) {
      WriteAll(fd, u->old_bytes.data(), u->old_bytes.size(), u->offset);
    }
    if (real.ftruncate(fd, s.synced_size) != 0) Report("revert: ftruncate failed " + path);
    real.close(fd);
  }
  // Names: newest first, per directory.
  for (auto& [d, list] : *dir_ops) {
    for (auto op = list.rbegin(); op != list.rend(); ++op) {
      switch (op->kind) {
        case DirOp::kCreate:
          real.unlink(op->path.c_str());
          break;
        case DirOp::kRename:
          real.rename(op->path.c_str(), op->from.c_str());
          if (op->had_old) {
            int fd = real.open(op->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (fd >= 0) {
              WriteAll(fd, op->old_content.data(), op->old_content.size(), 0);
              real.close(fd);
            }
          }
          break;
        case DirOp::kUnlink:
          if (op->had_old) {
            int fd = real.open(op->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            if (fd >= 0) {
              WriteAll(fd, op->old_content.data(), op->old_content.size(), 0);
              real.close(fd);
            }
          }
          break;
      }
    }
  }
}

void Cut(const std::string& op) {
  std::string detail = "cut " + std::to_string(ops) + " " + op;
  // In torn mode the write in progress is the one torn; otherwise the newest
  // unsynced write (if it is still unsynced: its file's undo list says so).
  LastWrite tear = *last_write;
  Revert();
  if (torn && tear.valid) {
    auto it = files->find(tear.path);
    bool in_progress = op.compare(0, 5, "write") == 0;
    bool unsynced = in_progress || (it != files->end() && !it->second.undo.empty());
    if (unsynced && tear.bytes.size() > 1) {
      size_t keep = 1 + Random() % (tear.bytes.size() - 1);
      if (tear.bytes.size() > 1024) keep = (keep / 512 == 0 ? 1 : keep / 512) * 512;
      int fd = real.open(tear.path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0) {
        WriteAll(fd, tear.bytes.data(), keep, tear.offset);
        real.close(fd);
        detail += " torn " + tear.path.substr(dir->size()) + "@" + std::to_string(tear.offset) + "+" +
                  std::to_string(keep) + "/" + std::to_string(tear.bytes.size());
      }
    }
  }
  Report(detail);
  kill(getpid(), SIGKILL);
  for (;;) pause();
}

// Tracks a descriptor just opened (mu held).
void Opened(int fd, const std::string& path, bool created) {
  (*fd_paths)[fd] = path;
  struct stat64 st;
  if (fstat64(fd, &st) != 0 || S_ISDIR(st.st_mode)) return;
  if (created) {
    (*dir_ops)[ParentOf(path)].push_back(DirOp{DirOp::kCreate, path, "", false, ""});
    FileState& s = (*files)[path];
    s = FileState();
  } else {
    StateOf(path);
  }
}

int DoOpen(int dirfd, const char* path, int flags, mode_t mode, bool at, bool is64) {
  EnsureInit();
  auto call = [&]() {
    if (at) return (is64 ? real.openat64 : real.openat)(dirfd, path, flags, mode);
    return (is64 ? real.open64 : real.open)(path, flags, mode);
  };
  if (!enabled || !path) return call();
  pthread_mutex_lock(&mu);
  std::string abs = Absolute(dirfd, path);
  if (!Tracked(abs)) {
    pthread_mutex_unlock(&mu);
    return call();
  }
  bool existed = access(abs.c_str(), F_OK) == 0;
  bool creates = (flags & O_CREAT) && !existed;
  bool truncates = (flags & O_TRUNC) && existed && (flags & (O_WRONLY | O_RDWR));
  if (creates) Count("create " + abs.substr(dir->size()));
  if (truncates) {
    Count("truncate-open " + abs.substr(dir->size()));
    FileState& s = StateOf(abs);
    int rfd = real.open(abs.c_str(), O_RDONLY | O_CLOEXEC);
    if (rfd >= 0) {
      RecordRange(s, rfd, true, 0, s.size);
      real.close(rfd);
    }
    s.size = 0;
  }
  int fd = call();
  if (fd >= 0) Opened(fd, abs, creates);
  pthread_mutex_unlock(&mu);
  return fd;
}

ssize_t DoWrite(int fd, const void* buf, size_t count, off64_t offset, bool positional, bool is64) {
  EnsureInit();
  auto call = [&]() -> ssize_t {
    if (!positional) return real.write(fd, buf, count);
    if (is64) return real.pwrite64(fd, buf, count, offset);
    return real.pwrite(fd, buf, count, static_cast<off_t>(offset));
  };
  if (!enabled) return call();
  pthread_mutex_lock(&mu);
  auto it = fd_paths->find(fd);
  if (it == fd_paths->end() || files->find(it->second) == files->end()) {
    pthread_mutex_unlock(&mu);
    return call();
  }
  const std::string path = it->second;
  FileState& s = (*files)[path];
  off64_t at = offset;
  if (!positional) {
    int fl = fcntl(fd, F_GETFL);
    at = (fl >= 0 && (fl & O_APPEND)) ? s.size : lseek64(fd, 0, SEEK_CUR);
  }
  last_write->valid = true;
  last_write->path = path;
  last_write->offset = at;
  last_write->bytes.assign(static_cast<const char*>(buf), count);
  Count("write " + path.substr(dir->size()) + "@" + std::to_string(at) + "+" + std::to_string(count));
  RecordRange(s, fd, false, at, at + static_cast<off64_t>(count));
  ssize_t n = call();
  if (n > 0 && at + n > s.size) s.size = at + n;
  pthread_mutex_unlock(&mu);
  return n;
}

int DoTruncate(int fd, off64_t length, bool is64) {
  EnsureInit();
  auto call = [&]() {
    return is64 ? real.ftruncate64(fd, length) : real.ftruncate(fd, static_cast<off_t>(length));
  };
  if (!enabled) return call();
  pthread_mutex_lock(&mu);
  auto it = fd_paths->find(fd);
  if (it == fd_paths->end() || files->find(it->second) == files->end()) {
    pthread_mutex_unlock(&mu);
    return call();
  }
  FileState& s = (*files)[it->second];
  Count("truncate " + it->second.substr(dir->size()) + " " + std::to_string(length));
  RecordRange(s, fd, true, length, s.size);
  int r = call();
  if (r == 0) s.size = length;
  pthread_mutex_unlock(&mu);
  return r;
}

int DoSync(int fd, bool data_only) {
  EnsureInit();
  if (!enabled) return (data_only ? real.fdatasync : real.fsync)(fd);
  pthread_mutex_lock(&mu);
  auto it = fd_paths->find(fd);
  if (it == fd_paths->end()) {
    pthread_mutex_unlock(&mu);
    return (data_only ? real.fdatasync : real.fsync)(fd);
  }
  const std::string path = it->second;
  Count("sync " + (Under(path) && path.size() >= dir->size() ? path.substr(dir->size()) : path));
  auto f = files->find(path);
  if (f != files->end()) {
    f->second.undo.clear();
    f->second.synced_size = f->second.size;
  } else {
    // A directory: the names in it are durable now.
    std::string d = path;
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    dir_ops->erase(d);
  }
  Report("sync " + (path.size() > dir->size() ? path.substr(dir->size()) : std::string(".")));
  pthread_mutex_unlock(&mu);
  return 0;  // durability is the layer's to decide (see the header)
}

// How many operations a run did, for a test to pick cut points across a
// whole run.
__attribute__((destructor)) void ReportOps() {
  if (enabled) Report("ops " + std::to_string(ops));
}

}  // namespace

extern "C" {

int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return DoOpen(AT_FDCWD, path, flags, mode, false, false);
}

int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return DoOpen(AT_FDCWD, path, flags, mode, false, true);
}

int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return DoOpen(dirfd, path, flags, mode, true, false);
}

int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return DoOpen(dirfd, path, flags, mode, true, true);
}

int close(int fd) {
  EnsureInit();
  if (enabled) {
    pthread_mutex_lock(&mu);
    fd_paths->erase(fd);
    pthread_mutex_unlock(&mu);
  }
  return real.close(fd);
}

ssize_t write(int fd, const void* buf, size_t count) { return DoWrite(fd, buf, count, 0, false, false); }
ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  return DoWrite(fd, buf, count, offset, true, false);
}
ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t offset) {
  return DoWrite(fd, buf, count, offset, true, true);
}
int ftruncate(int fd, off_t length) { return DoTruncate(fd, length, false); }
int ftruncate64(int fd, off64_t length) { return DoTruncate(fd, length, true); }
int fsync(int fd) { return DoSync(fd, false); }
int fdatasync(int fd) { return DoSync(fd, true); }

int rename(const char* from, const char* to) {
  EnsureInit();
  if (!enabled) return real.rename(from, to);
  pthread_mutex_lock(&mu);
  std::string f = Absolute(AT_FDCWD, from), t = Absolute(AT_FDCWD, to);
  if (!Tracked(f) && !Tracked(t)) {
    pthread_mutex_unlock(&mu);
    return real.rename(from, to);
  }
  Count("rename " + f.substr(dir->size()) + " " + t.substr(dir->size()));
  DirOp op{DirOp::kRename, t, f, false, ""};
  if (access(t.c_str(), F_OK) == 0) {
    op.had_old = true;
    op.old_content = DurableContent(t);
  }
  int r = real.rename(from, to);
  if (r == 0) {
    // The file's own state moves with its name.
    auto it = files->find(f);
    if (it != files->end()) {
      (*files)[t] = it->second;
      files->erase(it);
    }
    for (auto& [fd, p] : *fd_paths) {
      if (p == f) p = t;
    }
    (*dir_ops)[ParentOf(t)].push_back(std::move(op));
  }
  pthread_mutex_unlock(&mu);
  return r;
}

int unlink(const char* path) {
  EnsureInit();
  if (!enabled) return real.unlink(path);
  pthread_mutex_lock(&mu);
  std::string p = Absolute(AT_FDCWD, path);
  if (!Tracked(p)) {
    pthread_mutex_unlock(&mu);
    return real.unlink(path);
  }
  Count("unlink " + p.substr(dir->size()));
  DirOp op{DirOp::kUnlink, p, "", true, DurableContent(p)};
  int r = real.unlink(path);
  if (r == 0) {
    files->erase(p);
    (*dir_ops)[ParentOf(p)].push_back(std::move(op));
  }
  pthread_mutex_unlock(&mu);
  return r;
}

}  // extern "C"

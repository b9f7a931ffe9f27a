#include "platform/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "platform/log.h"

namespace edgesync {
namespace {

}  // namespace

std::string DirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status SyncPath(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open", path);
  int rc = fsync(fd);
  Status s = rc == 0 ? Status::Ok() : ErrnoStatus("fsync", path);
  close(fd);
  return s;
}

Status ErrnoStatus(const std::string& what, const std::string& path) {
  int e = errno;
  std::string msg = what + " " + path + ": " + std::strerror(e);
  if (e == ENOSPC || e == EDQUOT || e == EFBIG) return Status::NoSpace(msg);
  return Status::IoError(msg);
}

Status WriteAllAt(int fd, const std::string& path, std::string_view data, int64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return ErrnoStatus("write", path);
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, const std::string& data, bool durable) {
  std::string tmp = path + ".tmp";
  int fd = OpenPrivateFile(tmp, O_WRONLY | O_TRUNC);
  if (fd < 0) return ErrnoStatus("create", tmp);
  Status written = WriteAllAt(fd, tmp, data, 0);
  if (!written.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return written;
  }
  if (durable && fsync(fd) != 0) {
    Status s = ErrnoStatus("fsync", tmp);
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus("rename", tmp);
    unlink(tmp.c_str());
    return s;
  }
  // Best effort: the new content is in place either way.
  if (durable) SyncPath(DirOf(path));
  return Status::Ok();
}

Status ReplaceFileSwapped(const std::string& path, const std::string& data) {
  const std::string next = path + ".tmp";
  int fd = OpenPrivateFile(next, O_RDWR);
  if (fd < 0) return ErrnoStatus("create", next);
  // In place, never truncated to zero first: a truncation to zero also
  // makes ext4 write the file out when it is closed.
  Status written = WriteAllAt(fd, next, data, 0);
  if (written.ok() && ftruncate(fd, static_cast<off_t>(data.size())) != 0) written = ErrnoStatus("truncate", next);
  close(fd);
  if (!written.ok()) {
    unlink(next.c_str());
    return written;
  }
  if (renameat2(AT_FDCWD, next.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) == 0) return Status::Ok();
  if (errno != ENOENT && errno != EINVAL && errno != ENOSYS) return ErrnoStatus("exchange", next);
  // No file to exchange with yet (or a filesystem without exchange).
  if (rename(next.c_str(), path.c_str()) != 0) {
    Status s = ErrnoStatus("rename", next);
    unlink(next.c_str());
    return s;
  }
  return Status::Ok();
}

Status ReadFile(const std::string& path, std::string* data) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  *data = ss.str();
  return Status::Ok();
}

Status MakeDirs(const std::string& path) {
  if (path.empty()) return Status::Ok();
  std::string cur;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    cur = path.substr(0, pos);
    if (cur.empty()) continue;
    if (mkdir(cur.c_str(), 0750) != 0 && errno != EEXIST) return ErrnoStatus("mkdir", cur);
  }
  return Status::Ok();
}

Status MakePrivateDir(const std::string& dir) {
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) return Status::InvalidArgument("empty directory path");
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(path + " is not a directory");
    if ((st.st_mode & 077) != 0) {
      ES_LOG(kWarn, "directory {} is open to other users (mode {:o}); edgesync's files in it are 0600, "
             "but chmod 700 it unless it is shared on purpose", path, st.st_mode & 07777);
    }
    return Status::Ok();
  }
  std::string parent = DirOf(path);
  if (parent != path) ES_RETURN_IF_ERROR(MakeDirs(parent));
  if (mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return Status::Ok();  // made meanwhile by someone else
    return ErrnoStatus("mkdir", path);
  }
  // mkdir's mode passes through the umask, which could only narrow 0700;
  // chmod says it outright all the same.
  if (chmod(path.c_str(), 0700) != 0) return ErrnoStatus("chmod", path);
  return Status::Ok();
}

int OpenPrivateFile(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || ((st.st_mode & 077) != 0 && fchmod(fd, 0600) != 0)) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

Status MakeFilePrivate(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return errno == ENOENT ? Status::Ok() : ErrnoStatus("stat", path);
  if ((st.st_mode & 077) == 0) return Status::Ok();
  if (chmod(path.c_str(), st.st_mode & 0700) != 0) return ErrnoStatus("chmod", path);
  return Status::Ok();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

Result<uint64_t> FreeBytes(const std::string& path) {
  struct statvfs vfs;
  if (statvfs(path.c_str(), &vfs) != 0) return ErrnoStatus("statvfs", path);
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

ProcessStats ReadProcessStats(int pid) {
  ProcessStats stats;
  std::string base = pid == 0 ? "/proc/self" : "/proc/" + std::to_string(pid);
  std::ifstream status(base + "/status");
  std::string line;
  while (std::getline(status, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %llu kB", &kb) == 1) stats.rss_bytes = kb * 1024;
    if (std::sscanf(line.c_str(), "VmHWM: %llu kB", &kb) == 1) stats.peak_rss_bytes = kb * 1024;
  }
  std::ifstream io(base + "/io");
  while (std::getline(io, line)) {
    unsigned long long v = 0;
    if (std::sscanf(line.c_str(), "write_bytes: %llu", &v) == 1) stats.write_bytes = v;
  }
  return stats;
}

}  // namespace edgesync

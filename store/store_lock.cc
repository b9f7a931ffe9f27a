#include "store/store_lock.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platform/log.h"

namespace edgesync {
namespace {

// Far past SQLite's lock bytes (PENDING_BYTE 0x40000000 and the 510 after)
// and below 2^31 (a 32-bit off_t on armhf); locks past the end of a file are
// allowed and never change its size.
constexpr off_t kWritersByte = off_t{0x7ffff000};
constexpr off_t kGateByte = kWritersByte + 1;

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

struct flock Range(off_t byte, short type) {
  struct flock f;
  std::memset(&f, 0, sizeof f);
  f.l_type = type;
  f.l_whence = SEEK_SET;
  f.l_start = byte;
  f.l_len = 1;
  return f;
}

}  // namespace

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);
}

Status StoreLock::Open(const std::string& path, bool for_writing) {
  path_ = path;
  if (fd_ >= 0) return Status::Ok();
  // A write lock needs a descriptor open for writing.
  fd_ = ::open(path.c_str(), (for_writing ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd_ < 0) return Status::IoError("open " + path + " to lock it: " + std::strerror(errno));
  return Status::Ok();
}

int StoreLock::Lock(off_t byte, short type, int timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  for (;;) {
    struct flock f = Range(byte, type);
    if (::fcntl(fd_, F_OFD_SETLK, &f) == 0) return 0;
    if (errno != EAGAIN && errno != EACCES && errno != EINTR) return errno;
    if (NowMs() >= deadline) return EAGAIN;
    ::usleep(2000);
  }
}

Status StoreLock::BeginWriterOpen(const std::string& path, int timeout_ms) {
  ES_RETURN_IF_ERROR(Open(path, true));
  int e = Lock(kGateByte, F_WRLCK, timeout_ms);
  if (e == EAGAIN) {
    return Status::Unavailable(path + " is being read by another process (edgesync query or feed) for more than " +
                               std::to_string(timeout_ms) + " ms; try again");
  }
  if (e == 0) e = Lock(kWritersByte, F_RDLCK, timeout_ms);
  if (e != 0) return Status::IoError(path + ": locking it for writing: " + std::strerror(e));
  writer_ = true;
  return Status::Ok();
}

void StoreLock::BeginWriterClose(int timeout_ms) {
  if (!writer_) return;  // never opened: nothing of ours to close
  if (Lock(kGateByte, F_WRLCK, timeout_ms) != 0) {
    ES_LOG(kWarn, "store {}: closing while a reader still has it open", path_);
  }
}

void StoreLock::EndTransition() {
  if (fd_ < 0) return;
  struct flock f = Range(kGateByte, F_UNLCK);
  ::fcntl(fd_, F_OFD_SETLK, &f);
}
Status StoreLock::OtherWriterOpen(bool* other) {
  // Our own shared lock on the byte is no conflict for our descriptor.
  struct flock f = Range(kWritersByte, F_WRLCK);
  if (::fcntl(fd_, F_OFD_GETLK, &f) != 0) return Status::IoError(path_ + ": F_OFD_GETLK: " + std::strerror(errno));
  *other = f.l_type != F_UNLCK;
  return Status::Ok();
}

Status StoreLock::OpenReader(const std::string& path, int timeout_ms, bool* writer_open) {
  ES_RETURN_IF_ERROR(Open(path, false));
  int e = Lock(kGateByte, F_RDLCK, timeout_ms);
  if (e == EAGAIN) {
    return Status::Unavailable(path + " is being opened or closed by a writer for more than " +
                               std::to_string(timeout_ms) + " ms; try again");
  }
  if (e != 0) return Status::IoError(path + ": locking it for reading: " + std::strerror(e));
  struct flock f = Range(kWritersByte, F_WRLCK);
  if (::fcntl(fd_, F_OFD_GETLK, &f) != 0) return Status::IoError(path + ": F_OFD_GETLK: " + std::strerror(errno));
  *writer_open = f.l_type != F_UNLCK;
  return Status::Ok();
}

}  // namespace edgesync

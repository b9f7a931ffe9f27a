#include "agent/ingest/presence_mark.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "platform/files.h"

namespace edgesync {

namespace {
// "edgesync-presence 1 <boot id> <monotonic ms>", padded with spaces to a
// fixed size so that a rewrite in place never leaves a longer old tail.
constexpr size_t kLineBytes = 96;
constexpr const char* kMagic = "edgesync-presence";
}  // namespace

PresenceMark::PresenceMark(std::string dir, Clock* clock)
    : path_(dir.empty() ? std::string() : dir + "/" + kFileName), clock_(clock) {}

PresenceMark::~PresenceMark() {
  if (fd_ >= 0) ::close(fd_);
}

PresenceMark::Found PresenceMark::Read(int64_t* mono_ms) const {
  std::string text;
  if (path_.empty() || !ReadFile(path_, &text).ok()) return Found::kNone;
  char magic[32] = {0};
  int version = 0;
  char boot[64] = {0};
  long long ms = 0;
  if (std::sscanf(text.c_str(), "%31s %d %63s %lld", magic, &version, boot, &ms) != 4 ||
      std::strcmp(magic, kMagic) != 0 || version != 1 || ms < 0) {
    return Found::kNone;
  }
  if (clock_->BootId() != boot) return Found::kOtherBoot;
  *mono_ms = ms;
  return Found::kThisBoot;
}

Status PresenceMark::Write(int64_t mono_ms) {
  if (path_.empty()) return Status::Ok();
  if (fd_ < 0) {
    fd_ = OpenPrivateFile(path_, O_RDWR);
    if (fd_ < 0) return ErrnoStatus("opening", path_);
  }
  std::string line(kLineBytes, ' ');
  const int n = std::snprintf(line.data(), line.size(), "%s 1 %s %" PRId64, kMagic, clock_->BootId().c_str(),
                              mono_ms);
  if (n < 0 || static_cast<size_t>(n) >= kLineBytes - 1) return Status::InvalidArgument("boot id too long");
  line[static_cast<size_t>(n)] = ' ';
  line.back() = '\n';
  return WriteAllAt(fd_, path_, line, 0);
}

}  // namespace edgesync

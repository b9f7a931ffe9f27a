#include "tests/support/notify_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

namespace edgesync::test {

NotifySocket::NotifySocket(std::string path) : path_(std::move(path)) {
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
  bound_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) close(fd_);
  unlink(path_.c_str());
}

std::vector<std::string> NotifySocket::Drain() {
  std::vector<std::string> out;
  char buf[1024];
  ssize_t n;
  while ((n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT)) > 0) out.emplace_back(buf, static_cast<size_t>(n));
  return out;
}

std::string NotifySocket::Next(int64_t timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout_ms)) <= 0) return "";
  char buf[1024];
  ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

}  // namespace edgesync::test

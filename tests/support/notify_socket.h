// tests/support/notify_socket.h: a real AF_UNIX datagram socket standing in
// for systemd's notify socket (NOTIFY_SOCKET), to read what a process sends
// with sd_notify: READY=1, WATCHDOG=1, STATUS=...
//
// Thread safety: one thread at a time.
#ifndef EDGESYNC_TESTS_SUPPORT_NOTIFY_SOCKET_H_
#define EDGESYNC_TESTS_SUPPORT_NOTIFY_SOCKET_H_

#include <cstdint>
#include <string>
#include <vector>

namespace edgesync::test {

class NotifySocket {
 public:
  explicit NotifySocket(std::string path);  // binds path
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  bool bound() const { return bound_; }
  const std::string& path() const { return path_; }
  // Every datagram waiting now, oldest first.
  std::vector<std::string> Drain();
  // Waits up to timeout_ms for the next datagram; "" on timeout.
  std::string Next(int64_t timeout_ms);

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_NOTIFY_SOCKET_H_

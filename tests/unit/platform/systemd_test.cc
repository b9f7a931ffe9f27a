// Talks to a real datagram socket standing in for systemd's notify socket.
#include "platform/systemd.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tests/support/process.h"

namespace edgesync {
namespace {

std::string Receive(int fd) {
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST(SystemdTest, DisabledWithoutNotifySocket) {
  unsetenv("NOTIFY_SOCKET");
  SystemdNotifier n;
  EXPECT_FALSE(n.enabled());
  EXPECT_EQ(n.watchdog_interval_ms(), 0);
  n.Ready();  // a no-op, must not fail
}

TEST(SystemdTest, SendsReadyStatusAndWatchdogToNotifySocket) {
  test::TempDir dir;
  std::string path = dir.File("notify.sock");
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  setenv("WATCHDOG_USEC", "2000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  SystemdNotifier n;
  EXPECT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval_ms(), 2000);
  n.Ready();
  EXPECT_EQ(Receive(fd), "READY=1");
  n.Status("ingesting");
  EXPECT_EQ(Receive(fd), "STATUS=ingesting");
  n.WatchdogPing();
  EXPECT_EQ(Receive(fd), "WATCHDOG=1");
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  close(fd);
}

}  // namespace
}  // namespace edgesync

#include "platform/signals.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace edgesync {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
int g_pipe[2] = {-1, -1};

void OnSignal(int signo) {
  int saved = errno;  // a handler must not disturb the interrupted code's errno
  if (signo == SIGHUP) {
    g_reload.store(true);
  } else {
    g_stop.store(true);
  }
  if (g_pipe[1] >= 0) {
    char b = 1;
    ssize_t ignored = write(g_pipe[1], &b, 1);
    (void)ignored;
  }
  errno = saved;
}

void Drain() {
  char buf[64];
  while (g_pipe[0] >= 0 && read(g_pipe[0], buf, sizeof buf) > 0) {
  }
}

}  // namespace

void Signals::Install() {
  if (g_pipe[0] < 0) {
    if (pipe2(g_pipe, O_NONBLOCK | O_CLOEXEC) != 0) g_pipe[0] = g_pipe[1] = -1;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool Signals::StopRequested() { return g_stop.load(); }

bool Signals::TakeReload() { return g_reload.exchange(false); }

void Signals::RequestStop() { OnSignal(SIGTERM); }

void Signals::ResetForTest() {
  g_stop = false;
  g_reload = false;
  Drain();
}

bool Signals::WaitForSignal(int64_t timeout_ms) {
  if (g_stop.load() || g_reload.load()) return true;
  if (g_pipe[0] < 0) {
    usleep(static_cast<useconds_t>(timeout_ms * 1000));
    return g_stop.load() || g_reload.load();
  }
  pollfd pfd{g_pipe[0], POLLIN, 0};
  int rc = poll(&pfd, 1, static_cast<int>(timeout_ms));
  if (rc > 0) Drain();
  return g_stop.load() || g_reload.load();
}

}  // namespace edgesync

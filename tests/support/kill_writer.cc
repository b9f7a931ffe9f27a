#include "tests/support/kill_writer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/support/process.h"

namespace edgesync::test {

::testing::AssertionResult RunAndKill(const std::function<void(int fd)>& writer, const KillRound& round,
                                      size_t record_size, std::string* reports) {
  reports->clear();
  int fds[2];
  if (::pipe(fds) != 0) return ::testing::AssertionFailure() << "pipe: " << std::strerror(errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  }
  if (pid == 0) {
    ::close(fds[0]);
    writer(fds[1]);
    _exit(100);  // a writer must not return
  }
  ::close(fds[1]);
  // Reads whole records until EOF (the child gone) or, with one_record,
  // until the first arrived.
  auto read_records = [&](bool one_record) {
    std::string buf(record_size, '\0');
    size_t have = 0;
    for (;;) {
      const ssize_t got = ::read(fds[0], &buf[have], record_size - have);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      have += static_cast<size_t>(got);
      if (have < record_size) continue;
      *reports += buf;
      have = 0;
      if (one_record) return true;
    }
  };
  const bool first = !round.wait_for_first || read_records(true);
  SleepMs(round.run_ms);
  ::kill(pid, SIGKILL);
  int status = 0;
  const bool reaped = ::waitpid(pid, &status, 0) == pid;
  read_records(false);
  ::close(fds[0]);
  if (!reaped) return ::testing::AssertionFailure() << "waitpid: " << std::strerror(errno);
  if (!WIFSIGNALED(status)) {
    return ::testing::AssertionFailure() << "writer exited early with " << WEXITSTATUS(status);
  }
  if (!first) return ::testing::AssertionFailure() << "the writer died before its first report";
  return ::testing::AssertionSuccess();
}

}  // namespace edgesync::test

// tests/support/process.h: real child processes for tests (brokers, the
// edgesync binary, publishers), with real signals.
#ifndef EDGESYNC_TESTS_SUPPORT_PROCESS_H_
#define EDGESYNC_TESTS_SUPPORT_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace edgesync::test {

class Process {
 public:
  Process() = default;
  ~Process();  // SIGKILLs and reaps a child still running
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // Starts argv[0] (searched in PATH) with stdout+stderr appended to log_path
  // ("" = inherit). False if it could not start.
  bool Start(const std::vector<std::string>& argv, const std::string& log_path = "",
             const std::vector<std::string>& extra_env = {});
  // The next Start runs the program as this user (the caller must be root).
  void RunAs(uid_t uid, gid_t gid) {
    run_as_uid_ = uid;
    run_as_gid_ = gid;
  }
  bool running();
  pid_t pid() const { return pid_; }
  // Sends sig; with wait, reaps and returns the exit status (see Wait).
  void Signal(int sig);
  void Kill9() { Signal(9); Wait(10000); }
  // SIGTERM, then SIGKILL after grace_ms. Returns the exit code, or -signal.
  int Stop(int64_t grace_ms = 5000);
  // Waits up to timeout_ms; returns exit code, -signal, or INT32_MIN on timeout.
  int Wait(int64_t timeout_ms);

 private:
  pid_t pid_ = -1;
  uid_t run_as_uid_ = 0;  // 0 = as ourselves
  gid_t run_as_gid_ = 0;
};

// A fresh directory under $TMPDIR, removed with everything in it at the end.
class TempDir {
 public:
  TempDir();
  // Under `base` instead of $TMPDIR (e.g. /dev/shm for a tmpfs).
  explicit TempDir(const std::string& base);
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A TCP port on 127.0.0.1 nobody listens on right now.
int FreePort();
// True once something accepts TCP connections on 127.0.0.1:port.
bool WaitForPort(int port, int64_t timeout_ms);
// Sleeps in small steps until pred() holds or timeout_ms passes.
template <typename Pred>
bool WaitFor(Pred pred, int64_t timeout_ms);
void SleepMs(int64_t ms);
int64_t NowMs();

template <typename Pred>
bool WaitFor(Pred pred, int64_t timeout_ms) {
  int64_t deadline = NowMs() + timeout_ms;
  while (NowMs() < deadline) {
    if (pred()) return true;
    SleepMs(20);
  }
  return pred();
}

// libfaketime from the faketime package, wherever the architecture puts it
// ("" if not installed): preloaded with FAKETIME_TIMESTAMP_FILE, a test steps
// a live process's wall clock by rewriting that file. In a ThreadSanitizer
// build the value is an LD_PRELOAD list with TSan's runtime first.
std::string FakeTimeLibrary();
// The environment of a program run under libfaketime with its wall clock
// read from spec_file ("+3h", "-90m", "+0"), re-read at every clock read, so
// rewriting the file steps the live process; the monotonic clock is left
// alone. Empty where libfaketime is not installed.
std::vector<std::string> FakeTimeEnv(const std::string& spec_file);

std::string ReadAll(const std::string& path);
void WriteAll(const std::string& path, const std::string& text);
// Appends to `path` (a ballast file) until its filesystem has no block free;
// true if it ended on ENOSPC. Written, not fallocated, so nothing is left.
bool FillFilesystem(const std::string& path);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_PROCESS_H_

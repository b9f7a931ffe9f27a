#include "tests/support/process.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

extern char** environ;

namespace edgesync::test {

Process::~Process() {
  if (pid_ > 0) Kill9();
}

namespace {

// execvp's PATH search, done in the parent so the child needs no allocation.
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return name;
}

}  // namespace

bool Process::Start(const std::vector<std::string>& argv, const std::string& log_path,
                    const std::vector<std::string>& extra_env) {
  if (argv.empty()) return false;
  // Everything the child needs is built before fork: the test process has
  // other threads (MQTT clients, proxies), and one of them may hold an
  // allocator lock at the fork. A child that allocates can then block
  // forever, which the sanitizer builds' allocator (no fork handlers) did:
  // a broker "did not start" with an empty log. The child calls only
  // async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& x : extra_env) overridden = overridden || x.compare(0, key.size() + 1, key + "=") == 0;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& x : extra_env) env_strings.push_back(x);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_strings = argv;
  arg_strings[0] = ResolveProgram(argv[0]);
  std::vector<char*> args;
  for (auto& a : arg_strings) args.push_back(a.data());
  args.push_back(nullptr);
  const char* log_file = log_path.empty() ? nullptr : log_path.c_str();
  const uid_t uid = run_as_uid_;
  const gid_t gid = run_as_gid_;

  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    setpgid(0, 0);  // its own group: a Ctrl-C on the test does not hit it twice
    if (log_file != nullptr) {
      int fd = open(log_file, O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
      }
    }
    if (uid != 0 && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) _exit(126);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  pid_ = pid;
  return true;
}

bool Process::running() {
  if (pid_ <= 0) return false;
  int status;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void Process::Signal(int sig) {
  if (pid_ > 0) kill(pid_, sig);
}

int Process::Wait(int64_t timeout_ms) {
  if (pid_ <= 0) return 0;
  int64_t deadline = NowMs() + timeout_ms;
  while (true) {
    int status;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return -WTERMSIG(status);
      return 0;
    }
    if (NowMs() >= deadline) return INT32_MIN;
    SleepMs(5);
  }
}

int Process::Stop(int64_t grace_ms) {
  if (pid_ <= 0) return 0;
  Signal(SIGTERM);
  int rc = Wait(grace_ms);
  if (rc == INT32_MIN) {
    Signal(SIGKILL);
    rc = Wait(10000);
  }
  return rc;
}

TempDir::TempDir() : TempDir(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp") {}

TempDir::TempDir(const std::string& base) {
  std::string tmpl = base + "/edgesync-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  char* made = mkdtemp(buf.data());
  path_ = made != nullptr ? made : "";
}

TempDir::~TempDir() {
  if (path_.empty() || std::getenv("EDGESYNC_KEEP_TEST_DIRS") != nullptr) return;
  std::string cmd = "rm -rf '" + path_ + "'";
  int rc = std::system(cmd.c_str());
  (void)rc;
}

int FreePort() {
  // Not a kernel-chosen port: those come from the ephemeral range, which
  // every outgoing connection of the parallel tests also draws from, so a
  // client socket could take the port between this pick and the broker's
  // bind (seen as a fixture that "did not start" at load average ~20). A
  // random port below that range is only ever taken by another fixture's
  // pick, one chance in ~12,000 per pair.
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int picked = 0;
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = attempt < 199 ? 20000 + static_cast<int>(rng() % 12000) : 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) continue;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    socklen_t len = sizeof addr;
    if (ok) ok = getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
    close(fd);
    if (ok) {
      picked = ntohs(addr.sin_port);
      break;
    }
  }
  return picked;
}

bool WaitForPort(int port, int64_t timeout_ms) {
  return WaitFor(
      [port] {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(port));
        bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        close(fd);
        return ok;
      },
      timeout_ms);
}

void SleepMs(int64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  nanosleep(&ts, nullptr);
}

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_init();
#endif

std::string FakeTimeLibrary() {
  glob_t g;
  std::string found;
  if (::glob("/usr/lib/*/faketime/libfaketime.so.1", 0, nullptr, &g) == 0 && g.gl_pathc > 0) found = g.gl_pathv[0];
  ::globfree(&g);
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's runtime goes first: libfaketime wraps
  // pthread_cond_timedwait, and preloaded alone it shadowed TSan's
  // interceptor, so TSan missed the wait's unlock and relock of the mutex
  // and reported a double lock inside Paho C's timed waits. In this order
  // TSan's interceptor runs and calls on into libfaketime's.
  Dl_info tsan{};
  if (!found.empty() && ::dladdr(reinterpret_cast<void*>(&__tsan_init), &tsan) != 0 && tsan.dli_fname != nullptr) {
    found = std::string(tsan.dli_fname) + ":" + found;
  }
#endif
  return found;
}

std::vector<std::string> FakeTimeEnv(const std::string& spec_file) {
  std::string lib = FakeTimeLibrary();
  if (lib.empty()) return {};
  return {"LD_PRELOAD=" + lib, "FAKETIME_TIMESTAMP_FILE=" + spec_file, "FAKETIME_NO_CACHE=1",
          "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool FillFilesystem(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // A 1 MiB write fails while smaller ones still fit: finish in pages.
  static const std::string zeros(size_t{1} << 20, '\0');
  int err = 0;
  for (size_t chunk : {zeros.size(), size_t{4096}}) {
    while (::write(fd, zeros.data(), chunk) == static_cast<ssize_t>(chunk)) {
    }
    err = errno;
  }
  ::close(fd);
  return err == ENOSPC;
}

}  // namespace edgesync::test

// Replays every file of the given directories (or files) through a fuzz
// target's LLVMFuzzerTestOneInput, so the seed corpus and every crash once
// found run as a regression test without libFuzzer.
//
// Each input runs in a forked child whose address space is capped at
// kAddressLimit (RLIMIT_AS): a decoder that reserves memory on a claim
// instead of on bytes it holds (a count field, a declared size) fails its
// allocation and the child dies, naming the input. A gateway has far less
// memory than a fuzzing machine; the cap stands for it. Not in a sanitizer
// build: AddressSanitizer and ThreadSanitizer reserve terabytes of shadow
// address space at start, so any cap fails them before the input is read;
// the release tree's replay enforces the cap on the same corpora.
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr rlim_t kAddressLimit = rlim_t{256} << 20;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCapAddressSpace = false;
#else
constexpr bool kCapAddressSpace = true;
#endif

int RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    return -1;
  }
  if (pid == 0) {
    struct rlimit lim = {kAddressLimit, kAddressLimit};
    if (kCapAddressSpace && setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "%s: killed by signal %d (%s) under a %llu MiB address-space limit\n", path.c_str(),
                 WTERMSIG(status), strsignal(WTERMSIG(status)), static_cast<unsigned long long>(kAddressLimit >> 20));
  } else {
    std::fprintf(stderr, "%s: exited with %d\n", path.c_str(), WEXITSTATUS(status));
  }
  return -1;
}

int RunPath(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "no such corpus: %s\n", path.c_str());
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return RunFile(path);
  int n = 0;
  DIR* dir = opendir(path.c_str());
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    int r = RunPath(path + "/" + name);
    if (r < 0) return r;
    n += r;
  }
  closedir(dir);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int total = 0;
  for (int i = 1; i < argc; ++i) {
    int n = RunPath(argv[i]);
    if (n < 0) return 1;
    total += n;
  }
  if (total == 0) {
    std::fprintf(stderr, "empty corpus: a replay of nothing proves nothing\n");
    return 1;
  }
  std::printf("replayed %d inputs\n", total);
  return 0;
}

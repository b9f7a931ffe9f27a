// Replays every file of the given directories (or files) through a fuzz
// target's LLVMFuzzerTestOneInput, so the seed corpus and every crash once
// found run as a regression test without libFuzzer.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 1;
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

#include "tests/support/cli_run.h"

#include <sstream>

#include "tests/support/process.h"

namespace edgesync::test {

int RunEdgesync(std::vector<std::string> args, const std::string& log_path, std::string* out, int64_t timeout_ms) {
  args.insert(args.begin(), EDGESYNC_BINARY);
  Process p;
  if (!p.Start(args, log_path)) {
    out->clear();
    return -1;
  }
  const int rc = p.Wait(timeout_ms);
  *out = ReadAll(log_path);
  return rc;
}

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) v.push_back(j);
  }
  return v;
}

}  // namespace edgesync::test

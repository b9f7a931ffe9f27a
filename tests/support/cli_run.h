// tests/support/cli_run.h: the edgesync program's commands (`query`,
// `feed`, `devices`, ...) run as a user runs them, as a separate process,
// and their JSON lines output read back.
//
// Thread safety: free functions, no shared state.
#ifndef EDGESYNC_TESTS_SUPPORT_CLI_RUN_H_
#define EDGESYNC_TESTS_SUPPORT_CLI_RUN_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace edgesync::test {

// Runs `edgesync ARGS...` with stdout and stderr to log_path (kept for a
// failure's reader) and waits up to timeout_ms; *out gets the log. Returns
// the exit code, -signal, INT32_MIN on timeout, or -1 if it did not start.
int RunEdgesync(std::vector<std::string> args, const std::string& log_path, std::string* out,
                int64_t timeout_ms = 60000);

// The lines of text that are JSON objects (other lines are passed over).
std::vector<nlohmann::json> JsonLines(const std::string& text);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_CLI_RUN_H_

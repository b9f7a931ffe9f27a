// tests/support/status_file.h: reading the status file a running edgesync
// writes every second (gateway.status_file, default <data_dir>/status.json),
// as integration tests watch a process from outside.
//
// Thread safety: free functions, no shared state.
#ifndef EDGESYNC_TESTS_SUPPORT_STATUS_FILE_H_
#define EDGESYNC_TESTS_SUPPORT_STATUS_FILE_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace edgesync::test {

// The status file's JSON; an empty object while it is missing or half
// written.
nlohmann::json ReadStatusFile(const std::string& path);
namespace detail {
// A number (or bool as 0/1) from a section of the status ("" = the top
// level); 0 when absent. Tests read a figure by its name in the metrics
// table, StatusField(json, metrics::kX) (tests/support/status_metrics.h),
// never by a string a typo could turn into a silent 0.
int64_t StatusNumber(const nlohmann::json& status, const std::string& section, const std::string& key);
}  // namespace detail

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_STATUS_FILE_H_

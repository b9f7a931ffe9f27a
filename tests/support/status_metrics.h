// tests/support/status_metrics.h: reading a figure of the status file by
// its one name in the metrics table (agent/metrics_table.h):
// StatusField(json, metrics::kUplinkAcksLate). A figure the table does not
// have is a compile error, where a misspelt string key read as 0.
//
// Header-only: for the tests that link the agent layer (es_agent). Lists
// inside the status (per region, per origin) are read as JSON by the tests
// that need them; top-level facts that are not figures (pid, time_ms) with
// json::at, which throws when the key is missing.
//
// Thread safety: free functions, no shared state.
#ifndef EDGESYNC_TESTS_SUPPORT_STATUS_METRICS_H_
#define EDGESYNC_TESTS_SUPPORT_STATUS_METRICS_H_

#include <cstdint>
#include <nlohmann/json.hpp>

#include "agent/metrics_table.h"
#include "tests/support/status_file.h"

namespace edgesync::test {

inline int64_t StatusField(const nlohmann::json& status, const StatusKey& figure) {
  return detail::StatusNumber(status, figure.section, figure.key);
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_STATUS_METRICS_H_

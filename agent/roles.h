// agent/roles.h: what each subcommand runs once the config is loaded.
// Each returns the process exit code: 0 on success or graceful stop.
#ifndef EDGESYNC_AGENT_ROLES_H_
#define EDGESYNC_AGENT_ROLES_H_

#include <cstdint>
#include <string>

#include "firmware-config/config.h"

namespace edgesync {

struct QueryOptions {
  std::string device_id;
  std::string metric;
  int64_t from_ms = INT64_MIN;
  int64_t to_ms = INT64_MAX;
  int64_t limit = 1000;
};

struct FeedOptions {
  bool list_ranges = false;
  int64_t range_id = -1;
  std::string from = "beginning";
  int64_t max_entries = 100;
};

int RunGateway(const Config& config);
int RunRegionHub(const Config& config);
int RunQuery(const Config& config, const QueryOptions& options);
int RunFeed(const Config& config, const FeedOptions& options);
// one_line: a single human line (ingested, backlog, sent, acknowledged,
// rates, time to drain) instead of the whole JSON document.
int RunStatus(const Config& config, bool one_line);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_ROLES_H_

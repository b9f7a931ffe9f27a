// agent/role_support.h: what both running roles (gateway, region hub) share
// around their metrics snapshot: the process section (memory, recent error
// lines), histograms as JSON, starting the HTTP views, and SIGHUP's reload.
//
// Thread safety: pure functions, except StartHttp (role's main thread).
#ifndef EDGESYNC_AGENT_ROLE_SUPPORT_H_
#define EDGESYNC_AGENT_ROLE_SUPPORT_H_

#include <nlohmann/json.hpp>

#include "agent/http_status.h"
#include "firmware-config/config.h"
#include "platform/histogram.h"

namespace edgesync {

nlohmann::json HistogramJson(const HistogramSnapshot& h);
// Adds "process" (rss) and "recent_errors" (platform/log.h's ring).
void AddProcessFigures(nlohmann::json* snapshot);
// Starts the server on config.metrics_listen unless it is "". A failure is
// logged, not fatal: the data path matters more than its view.
void StartHttp(const Config& config, HttpStatusServer* http);
// Re-reads the config file for what changes without a restart: the log level.
void ReloadLogLevel(const Config& config, ConfigRole role);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_ROLE_SUPPORT_H_

#include "agent/role_support.h"

#include <vector>

#include "platform/files.h"
#include "platform/log.h"

namespace edgesync {

nlohmann::json HistogramJson(const HistogramSnapshot& h) {
  return {{"bounds", h.bounds}, {"counts", h.counts}, {"count", h.count}, {"sum", h.sum}};
}

void AddProcessFigures(nlohmann::json* j) {
  ProcessStats p = ReadProcessStats();
  (*j)["process"] = {{"rss_bytes", p.rss_bytes}, {"peak_rss_bytes", p.peak_rss_bytes}};
  nlohmann::json errors = nlohmann::json::array();
  for (const RecentLogLine& l : RecentErrors()) {
    errors.push_back({{"wall_ms", l.wall_ms}, {"level", LogLevelName(l.level)}, {"text", l.text}});
  }
  (*j)["recent_errors"] = errors;
}

void StartHttp(const Config& config, HttpStatusServer* http) {
  if (config.metrics_listen.empty()) return;
  Status s = http->Start(config.metrics_listen);
  if (!s.ok()) ES_LOG(kError, "status page and metrics off: {}", s.ToString());
}

void ReloadLogLevel(const Config& config, ConfigRole role) {
  Config fresh;
  std::vector<ConfigError> errors;
  if (!config.source.empty() && LoadConfig(config.source, role, &fresh, &errors).ok()) {
    LogLevel level;
    if (ParseLogLevel(fresh.log_level, &level)) SetLogLevel(level);
    ES_LOG(kInfo, "reloaded {}: log level {}", config.source, fresh.log_level);
  } else {
    for (const auto& e : errors) ES_LOG(kError, "reload: {}", e.ToString());
  }
}

}  // namespace edgesync

// agent/prometheus.h: the metrics snapshot (agent/status_board.h) in
// Prometheus' text exposition format 0.0.4, for /metrics: names by
// Prometheus' conventions (edgesync_ prefix, _total for counters, base
// units _bytes and _seconds), one HELP and TYPE line per family, labels for
// regions, origins and reasons, histograms for the uplink's acknowledgement
// latency and the store's commit latency.
//
// Contract: a pure function of the snapshot; fields a snapshot lacks (a
// gateway without regions, the hub's fields on a gateway) are left out.
// Checked by `promtool check metrics` in tests/integration/status_views_test.cc.
//
// Thread safety: pure functions.
#ifndef EDGESYNC_AGENT_PROMETHEUS_H_
#define EDGESYNC_AGENT_PROMETHEUS_H_

#include <nlohmann/json.hpp>
#include <string>

namespace edgesync {

std::string PrometheusText(const nlohmann::json& snapshot);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_PROMETHEUS_H_

// `edgesync status [--json|--line]`: the metrics snapshot of a gateway or
// region hub. While the process runs it publishes the snapshot every second
// in its status file (agent/status_board.h), live counters included; when
// it is stopped (no fresh status file from a live process) the store is
// opened for reading and the store's figures are shown, saying so; for a
// region hub, the hub store's (SQLite or PostgreSQL, agent/hub_reads.h).
#include <signal.h>

#include <algorithm>
#include <cerrno>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/hub_reads.h"
#include "agent/metrics_table.h"
#include "agent/roles.h"
#include "agent/status_text.h"
#include "agent/store_figures.h"
#include "platform/clock.h"
#include "platform/files.h"
#include "store/store.h"

namespace edgesync {
namespace {

using json = nlohmann::json;

// A status file counts as live when its process still exists and it was
// written recently (the process rewrites it every second).
constexpr int64_t kLiveWithinMs = 10000;

bool LiveSnapshot(const Config& config, json* out) {
  std::string text;
  if (!ReadFile(config.StatusPath(), &text).ok()) return false;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.value("running", false)) return false;
  int64_t pid = j.value("pid", int64_t{0});
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
  if (SystemClock()->WallMillis() - j.value("time_ms", int64_t{0}) > kLiveWithinMs) return false;
  *out = std::move(j);
  return true;
}

// A stopped hub's region feed, whichever store holds it: the same figures
// for the same entries (the PostgreSQL store has no file figures).
Status HubStoreFigures(const Config& config, json* j) {
  HubStoreHandle hub;
  ES_RETURN_IF_ERROR(OpenHubStoreForReading(config, &hub));
  Store* sqlite = hub.sqlite();
  FeedBoundsInfo bounds;
  ES_RETURN_IF_ERROR(hub->FeedBounds(&bounds));
  (*j)["region_feed"] = {{"backend", hub->backend()}, {"entries", bounds.numbered}, {"epoch", hub->epoch()}};
  (*j)["hub"] = {{"region", config.hub_region}, {"feed_head", bounds.numbered}};
  if (sqlite) {
    StoreStats stats;
    ES_RETURN_IF_ERROR(sqlite->Stats(&stats));
    j->update(StoreFigures(sqlite, stats, config.data_dir, {}, SystemClock()->WallMillis()));
  } else {
    HubStoreStats hs;
    ES_RETURN_IF_ERROR(hub->Stats(&hs));
    (*j)["store"] = {{"backend", hs.backend}, {"ok", true}, {"feed_oldest", hs.feed_oldest}, {"feed_head", hs.feed_head}};
  }
  return Status::Ok();
}

Status StoppedSnapshot(const Config& config, json* out) {
  json j;
  j["role"] = config.hub_region.empty() ? "gateway" : "region";
  if (!config.gateway_id.empty()) j["gateway_id"] = config.gateway_id;
  // Where a running hub's snapshot names its region (every view reads it there).
  if (!config.hub_region.empty()) j["hub"] = {{"region", config.hub_region}};
  j["running"] = false;
  j["note"] = "not running: figures read from the store (read-only); live counters appear while it runs";
  j["time_ms"] = SystemClock()->WallMillis();
  if (!config.hub_region.empty()) {
    ES_RETURN_IF_ERROR(HubStoreFigures(config, &j));
    *out = std::move(j);
    return Status::Ok();
  }
  std::unique_ptr<Store> store;
  ES_RETURN_IF_ERROR(OpenStoreForReading(config, &store));
  StoreStats stats;
  ES_RETURN_IF_ERROR(store->Stats(&stats));
  std::vector<std::string> regions;
  for (const RegionConfig& r : config.regions) regions.push_back(r.name);
  j.update(StoreFigures(store.get(), stats, config.data_dir, regions, SystemClock()->WallMillis()));
  *out = std::move(j);
  return Status::Ok();
}

std::string Line(const json& j) {
  double committed = StatusNumber(j, metrics::kStoreLastLsn);
  double backlog = StatusNumber(j, metrics::kBacklogReadings);
  double sent = StatusNumber(j, metrics::kUplinkEntriesSent);
  double acked = StatusNumber(j, metrics::kUpstreamCheckpoint);
  double in_rate = StatusNumber(j, "rates", "ingest_per_s");
  double ack_rate = StatusNumber(j, "rates", "acked_per_s");
  std::string region = j.contains("uplink") ? j["uplink"].value("write_region", "") : "";
  char buf[512];
  if (j.value("role", "") == "region") {
    std::snprintf(buf, sizeof buf, "region %s | applied %.0f batches, %.0f readings | %.0f/s | head %.0f | %s",
                  j.value("hub", json::object()).value("region", "").c_str(),
                  StatusNumber(j, metrics::kHubBatchesApplied), StatusNumber(j, metrics::kHubEntriesApplied),
                  StatusNumber(j, "rates", "readings_per_s"), StatusNumber(j, metrics::kHubFeedHead),
                  j.value("running", false) ? "running" : "not running");
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "ingested %.0f | backlog %.0f | sent %.0f | acked %.0f | region %s | in %.0f/s, acked %.0f/s",
                committed, backlog, sent, acked, region.empty() ? "none" : region.c_str(), in_rate, ack_rate);
  std::string line = buf;
  if (!j.value("running", false)) return line + " | not running";
  if (backlog > 0) {
    // Draining at the acknowledgement rate net of what keeps arriving.
    double net = ack_rate - in_rate;
    if (region.empty()) {
      line += " | drain: waiting for a region";
    } else if (net > 1) {
      std::snprintf(buf, sizeof buf, " | drain ~%.0fs", backlog / net);
      line += buf;
    } else if (backlog <= std::max(in_rate, 1.0)) {
      // Under a second of input: batches in flight, not a backlog.
      line += " | in flight";
    } else {
      line += " | drain: not gaining (acks no faster than input)";
    }
  } else {
    line += " | caught up";
  }
  return line;
}

}  // namespace

int RunStatus(const Config& config, StatusFormat format) {
  json j;
  if (!LiveSnapshot(config, &j)) {
    Status s = StoppedSnapshot(config, &j);
    if (!s.ok()) {
      std::fprintf(stderr, "edgesync status: not running, and the store cannot be read: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  switch (format) {
    case StatusFormat::kJson:
      std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
      break;
    case StatusFormat::kLine:
      std::printf("%s\n", Line(j).c_str());
      break;
    case StatusFormat::kText:
      std::fputs(StatusText(j).c_str(), stdout);
      break;
  }
  return 0;
}

}  // namespace edgesync

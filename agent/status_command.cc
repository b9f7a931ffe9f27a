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
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/hub_reads.h"
#include "agent/metrics_table.h"
#include "agent/roles.h"
#include "agent/store_figures.h"
#include "platform/clock.h"
#include "platform/files.h"
#include "store/store.h"
#include "sync/wire.h"

namespace edgesync {
namespace {

using json = nlohmann::json;

// A status file counts as live when its process still exists and it was
// written recently (the process rewrites it every second).
constexpr int64_t kLiveWithinMs = 10000;

// A completeness watermark for people: "<UTC time> (<age> s ago)", or
// "unknown" when none is known (0).
std::string Watermark(int64_t through_ms, double age_ms) {
  if (through_ms <= 0) return "unknown";
  const time_t secs = static_cast<time_t>(through_ms / 1000);
  struct tm tm_utc {};
  gmtime_r(&secs, &tm_utc);
  char at[32];
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
  char out[80];
  std::snprintf(out, sizeof out, "%s (%.1f s ago)", at, age_ms / 1000.0);
  return out;
}

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
  std::unique_ptr<Store> sqlite;
  HubStoreHandle hub;
  ES_RETURN_IF_ERROR(OpenHubStoreForReading(config, &sqlite, &hub));
  FeedBoundsInfo bounds;
  ES_RETURN_IF_ERROR(hub->FeedBounds(&bounds));
  (*j)["region_feed"] = {{"backend", hub->backend()}, {"entries", bounds.numbered}, {"epoch", hub->epoch()}};
  (*j)["hub"] = {{"region", config.hub_region}, {"feed_head", bounds.numbered}};
  if (sqlite) {
    StoreStats stats;
    ES_RETURN_IF_ERROR(sqlite->Stats(&stats));
    j->update(StoreFigures(sqlite.get(), stats, config.data_dir, {}, SystemClock()->WallMillis()));
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

double Num(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].is_object() || !j[a].contains(b) || !j[a][b].is_number()) return 0;
  return j[a][b].get<double>();
}

// A figure of the metrics table (agent/metrics_table.h) by its one name.
double Num(const json& j, const StatusKey& k) {
  if (*k.section) return Num(j, k.section, k.key);
  return j.contains(k.key) && j[k.key].is_number() ? j[k.key].get<double>() : 0;
}

std::string Line(const json& j) {
  double committed = Num(j, metrics::kStoreLastLsn);
  double backlog = Num(j, metrics::kBacklogReadings);
  double sent = Num(j, metrics::kUplinkEntriesSent);
  double acked = Num(j, metrics::kUpstreamCheckpoint);
  double in_rate = Num(j, "rates", "ingest_per_s");
  double ack_rate = Num(j, "rates", "acked_per_s");
  std::string region = j.contains("uplink") ? j["uplink"].value("write_region", "") : "";
  char buf[512];
  if (j.value("role", "") == "region") {
    std::snprintf(buf, sizeof buf, "region %s | applied %.0f batches, %.0f readings | %.0f/s | head %.0f | %s",
                  j.value("hub", json::object()).value("region", "").c_str(), Num(j, metrics::kHubBatchesApplied),
                  Num(j, metrics::kHubEntriesApplied), Num(j, "rates", "readings_per_s"), Num(j, metrics::kHubFeedHead),
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

std::string Bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

// The snapshot for people: one section per part, the figures a field
// engineer looks at first.
void PrintText(const json& j) {
  std::printf("role      %s %s (%s)\n", j.value("role", "").c_str(),
              j.value("gateway_id", j.value("hub", json::object()).value("region", "")).c_str(),
              j.value("running", false) ? "running" : "not running");
  if (j.contains("note")) std::printf("          %s\n", j["note"].get<std::string>().c_str());
  if (j.contains("store") && j["store"].value("backend", "") == "postgresql") {
    std::printf("store     PostgreSQL, region feed head %.0f, oldest %.0f\n", Num(j, "store", "feed_head"),
                Num(j, "store", "feed_oldest"));
  } else if (j.contains("store")) {
    const json& s = j["store"];
    std::printf("store     %s, %s free, %.0f entries (%.0f in the read view), LSN head %.0f, %zu ranges\n",
                Bytes(Num(j, metrics::kStoreFileBytes)).c_str(), Bytes(Num(j, metrics::kStoreFreeBytes)).c_str(),
                Num(j, metrics::kStoreEntries), Num(j, metrics::kStoreRemoteEntries), Num(j, metrics::kStoreLastLsn),
                s.value("ranges", json::array()).size());
    std::printf("          dead letters %.0f, refused when full %.0f, dropped oldest %.0f (acknowledged %.0f)\n",
                Num(j, metrics::kStoreDeadLetters), Num(j, metrics::kStoreRejectedFull),
                Num(j, metrics::kStoreDroppedOldest), Num(j, metrics::kStoreDroppedAcked));
  }
  if (j.contains("backlog") && j.value("role", "") == "gateway") {
    std::printf("backlog   %.0f readings, ~%s, oldest %.0f s; upstream checkpoint %.0f\n",
                Num(j, metrics::kBacklogReadings), Bytes(Num(j, metrics::kBacklogBytes)).c_str(),
                Num(j, metrics::kBacklogOldestAgeS), Num(j, metrics::kUpstreamCheckpoint));
  }
  if (j.contains("ingest")) {
    std::printf("ingest    %.0f messages, %.0f readings committed, %.1f/s; dead letters %.0f\n",
                Num(j, metrics::kIngestMessages), Num(j, metrics::kIngestReadingsCommitted),
                Num(j, "rates", "ingest_per_s"), Num(j, metrics::kIngestDeadLetters));
    const json rejected = j["ingest"].value("rejected", json::object());
    for (const auto& [reason, n] : rejected.items()) {
      if (n.is_number() && n.get<double>() > 0) std::printf("          rejected %s: %.0f\n", reason.c_str(), n.get<double>());
    }
    if (j["ingest"].value("paused", false)) {
      std::printf("          PAUSED (%s): the local broker keeps new readings; %.0f pauses so far\n",
                  j["ingest"].value("pause_reason", "").c_str(), Num(j, metrics::kIngestPauses));
    } else if (Num(j, metrics::kIngestPauses) > 0) {
      std::printf("          %.0f pauses (store refusing commits), %.0f s in all\n", Num(j, metrics::kIngestPauses),
                  Num(j, metrics::kIngestPausedMs) / 1000);
    }
  }
  if (j.contains("ingest_mqtt")) {
    std::printf("          local broker %s %s, %.0f connection losses\n", j["ingest_mqtt"].value("uri", "").c_str(),
                j["ingest_mqtt"].value("connected", false) ? "connected"
                : j["ingest_mqtt"].value("paused", false)  ? "paused"
                                                            : "DISCONNECTED",
                Num(j, metrics::kIngestMqttConnectionLosses));
  }
  if (j.contains("clock")) {
    const json& c = j["clock"];
    if (c.value("trusted", false)) {
      std::printf("clock     trusted (%s)\n", c.value("source", "").c_str());
    } else {
      std::printf("clock     NOT TRUSTED (%s: %s): times the gateway stamps are flagged untrusted_clock; "
                  "%.0f readings so far\n",
                  c.value("source", "").c_str(), c.value("sync", "").c_str(), Num(j, metrics::kIngestUntrustedClock));
    }
    if (c.contains("periods")) {
      std::printf("          untrusted periods: %.0f open (%.0f readings, corrected once trusted), %.0f corrected "
                  "(%.0f readings), %.0f uncorrectable (%.0f readings keep untrusted_clock: their boot ended "
                  "untrusted)\n",
                  Num(c, "periods", "open"), Num(c, "periods", "readings_open"), Num(c, "periods", "corrected"),
                  Num(c, "periods", "readings_corrected"), Num(c, "periods", "uncorrectable"),
                  Num(c, "periods", "readings_uncorrectable"));
    }
  }
  if (j.contains("uplink")) {
    const json& u = j["uplink"];
    std::printf("uplink    write region %s, %.0f batches sent, %.0f acknowledgements, %.1f readings/s acknowledged\n",
                u.value("write_region", "").empty() ? "none" : u.value("write_region", "").c_str(),
                Num(j, metrics::kUplinkBatchesSent), Num(j, metrics::kUplinkAcks), Num(j, "rates", "acked_per_s"));
    std::printf("          %.0f resends, %.0f answer timeouts; answers ignored %.0f (late, to resent batches: %.0f)\n",
                Num(j, metrics::kUplinkResends), Num(j, metrics::kUplinkAckTimeouts),
                Num(j, metrics::kUplinkAcksIgnored), Num(j, metrics::kUplinkAcksLate));
    if (Num(j, metrics::kUplinkCorrectionsWithheld) > 0) {
      std::printf("          %.0f time corrections withheld from a region of protocol 5 or older (its readings keep "
                  "their stamped times)\n",
                  Num(j, metrics::kUplinkCorrectionsWithheld));
    }
    const double cap = Num(j, metrics::kUplinkMaxBytesPerS);
    std::printf("          link %.0f bytes sent (MQTT packets), %.0f bytes/s; cap %s",
                Num(j, metrics::kUplinkLinkBytesSent), Num(j, metrics::kUplinkLinkBytesPerS),
                cap > 0 ? (std::to_string(static_cast<int64_t>(cap)) + " bytes/s").c_str() : "none");
    if (cap > 0) std::printf(", waited on it %.1f s", Num(j, metrics::kUplinkCapWaitMs) / 1000.0);
    std::printf("\n");
    std::printf("          complete through %s (every reading committed before it is held by a region)\n",
                Watermark(u.value("complete_through_ms", int64_t{0}), Num(j, metrics::kUplinkCompleteAgeMs)).c_str());
    for (const json& r : u.value("regions", json::array())) {
      double rtt = r.value("rtt_ms", -1.0);
      std::printf("  region  %-12s %s, round trip %s\n", r.value("name", "").c_str(),
                  r.value("healthy", false) ? "healthy" : r.value("connected", false) ? "unhealthy" : "disconnected",
                  rtt < 0 ? "unknown" : (std::to_string(static_cast<int64_t>(rtt)) + " ms").c_str());
    }
  }
  if (j.contains("read_view")) {
    for (const json& r : j["read_view"].value("regions", json::array())) {
      std::printf("  feed    %-12s position %.0f, head %.0f, lag %.0f entries; pages ignored %.0f (late: %.0f)\n",
                  r.value("name", "").c_str(), r.value("position", 0.0), r.value("head", 0.0), r.value("lag", 0.0),
                  r.value("pages_ignored", 0.0), r.value("pages_late", 0.0));
    }
    const json marks = j["read_view"].value("watermarks", json::array());
    if (j["read_view"].value("watermark_origins", 0.0) > static_cast<double>(marks.size())) {
      std::printf("          read view: the %zu oldest watermarks of %.0f origins\n", marks.size(),
                  j["read_view"].value("watermark_origins", 0.0));
    }
    for (const json& m : marks) {
      std::printf("  view    %s complete through %s\n", m.value("origin", "").c_str(),
                  Watermark(m.value("complete_through_ms", int64_t{0}), m.value("complete_age_ms", 0.0)).c_str());
    }
  }
  if (j.contains("hub")) {
    const json& h = j["hub"];
    std::printf("hub       %.0f batches and %.0f readings applied (%.1f/s), feed head %.0f\n",
                Num(j, metrics::kHubBatchesApplied), Num(j, metrics::kHubEntriesApplied),
                Num(j, "rates", "readings_per_s"), Num(j, metrics::kHubFeedHead));
    if (Num(j, metrics::kHubPriorityBatchesApplied) > 0) {
      std::printf("          of those, %.0f priority batches, %.0f readings ahead of their backlog\n",
                  Num(j, metrics::kHubPriorityBatchesApplied), Num(j, metrics::kHubPriorityEntriesApplied));
    }
    if (h.contains("feed_requests")) {
      std::printf("          feed pages %.0f served, %.0f resets; %.0f requests superseded by a newer one of their "
                  "sender\n",
                  Num(j, metrics::kHubFeedRequests), Num(j, metrics::kHubFeedResets),
                  Num(j, metrics::kHubFeedRequestsSuperseded));
      if (Num(j, metrics::kHubFeedCorrectionsWithheld) > 0) {
        std::printf("          %.0f time corrections left out of pages to readers of protocol 5 or older\n",
                    Num(j, metrics::kHubFeedCorrectionsWithheld));
      }
    }
    if (h.contains("shards") && h["shards"].is_array()) {
      std::string renewed = "never";
      if (Num(j, metrics::kHubLeaseRenewedAgoMs) >= 0 && h.contains("lease_renewed_ago_ms")) {
        char ago[32];
        std::snprintf(ago, sizeof ago, "%.1f s ago", Num(j, metrics::kHubLeaseRenewedAgoMs) / 1000.0);
        renewed = ago;
      }
      std::printf("shards    hub %s holds %zu of %d (%.0f live hubs); taken %.0f, stolen %.0f, handed over %.0f; "
                  "leases renewed %s, %.0f renew failures\n",
                  h.value("hub_id", "").c_str(), h["shards"].size(), kRegionShards, Num(j, metrics::kHubLiveHubs),
                  Num(j, metrics::kHubShardsTaken), Num(j, metrics::kHubShardsStolen),
                  Num(j, metrics::kHubShardsHandedOver),
                  renewed.c_str(), Num(j, metrics::kHubLeaseErrors));
    }
    const json refusals = h.value("refusals", json::object());
    for (const auto& [reason, n] : refusals.items()) {
      std::printf("          refused %s: %.0f\n", reason.c_str(), n.get<double>());
    }
    const json origins = h.value("origins", json::array());
    if (h.contains("origin_count")) {
      const double count = Num(j, metrics::kHubOriginCount);
      if (count > static_cast<double>(origins.size())) {
        std::printf("origins   %.0f; the %zu most lagging:\n", count, origins.size());
      } else {
        std::printf("origins   %.0f\n", count);
      }
    }
    for (const json& o : origins) {
      std::printf("  origin  %s high water %.0f, lag %.1f s, complete through %s, late readings %.0f\n",
                  o.value("origin", "").c_str(), o.value("high_water", 0.0), o.value("lag_ms", 0.0) / 1000.0,
                  Watermark(o.value("complete_through_ms", int64_t{0}), o.value("complete_age_ms", 0.0)).c_str(),
                  o.value("late_readings", 0.0));
    }
  }
  if (j.contains("region_feed")) {
    std::printf("feed      region feed: %.0f entries numbered (%s store)\n", Num(j, "region_feed", "entries"),
                j["region_feed"].value("backend", "").c_str());
  }
  const json errors = j.value("recent_errors", json::array());
  if (!errors.empty()) {
    std::printf("recent errors\n");
    for (const json& e : errors) {
      std::printf("  %s %s\n", e.value("level", "").c_str(), e.value("text", "").c_str());
    }
  }
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
      PrintText(j);
      break;
  }
  return 0;
}

}  // namespace edgesync

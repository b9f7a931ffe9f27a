#include "agent/prometheus.h"

#include <fmt/format.h>

#include <map>
#include <utility>
#include <vector>

namespace edgesync {
namespace {

using json = nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Number(double v) {
  if (v != v) return "NaN";
  return fmt::format("{}", v);
}

// Families are written whole (HELP, TYPE, then every sample): the format
// requires a family's samples to be together.
class Writer {
 public:
  void Sample(const std::string& name, const char* type, const std::string& help, double value,
              const Labels& labels = {}) {
    Family& f = Get(name, type, help);
    f.samples += name + LabelText(labels) + " " + Number(value) + "\n";
  }

  // A snapshot's histogram: {"bounds": [...], "counts": [...], "count", "sum"}.
  void Histogram(const std::string& name, const std::string& help, const json& h) {
    if (!h.is_object() || !h.contains("bounds")) return;
    Family& f = Get(name, "histogram", help);
    const json& bounds = h["bounds"];
    const json& counts = h["counts"];
    uint64_t cumulative = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      cumulative += counts[i].get<uint64_t>();
      std::string le = i < bounds.size() ? Number(bounds[i].get<double>()) : "+Inf";
      f.samples += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
    }
    f.samples += name + "_sum " + Number(h.value("sum", 0.0)) + "\n";
    f.samples += name + "_count " + std::to_string(h.value("count", uint64_t{0})) + "\n";
  }

  std::string Text() const {
    std::string out;
    for (const std::string& name : order_) {
      const Family& f = families_.at(name);
      out += "# HELP " + name + " " + f.help + "\n# TYPE " + name + " " + f.type + "\n" + f.samples;
    }
    return out;
  }

 private:
  struct Family {
    std::string type, help, samples;
  };
  Family& Get(const std::string& name, const char* type, const std::string& help) {
    auto it = families_.find(name);
    if (it != families_.end()) return it->second;
    order_.push_back(name);
    return families_[name] = Family{type, help, ""};
  }
  static std::string LabelText(const Labels& labels) {
    if (labels.empty()) return "";
    std::string out = "{";
    for (const auto& [k, v] : labels) out += (out.size() > 1 ? "," : "") + k + "=\"" + Escape(v) + "\"";
    return out + "}";
  }
  std::vector<std::string> order_;
  std::map<std::string, Family> families_;
};

double Num(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<double>();
}

void Counter(Writer* w, const std::string& name, const std::string& help, const json& section, const char* key,
             const Labels& labels = {}) {
  w->Sample(name, "counter", help, Num(section, key), labels);
}

void Gauge(Writer* w, const std::string& name, const std::string& help, const json& section, const char* key,
           const Labels& labels = {}) {
  w->Sample(name, "gauge", help, Num(section, key), labels);
}

void StoreMetrics(Writer* w, const json& s) {
  if (s.contains("store")) {
    const json& st = s["store"];
    Gauge(w, "edgesync_store_file_bytes", "Size of the store file and its WAL.", st, "file_bytes");
    Gauge(w, "edgesync_store_free_bytes", "Free space on the store's filesystem.", st, "free_bytes");
    Gauge(w, "edgesync_store_entries", "Local change-log entries held.", st, "entries");
    Gauge(w, "edgesync_store_remote_entries", "Entries held in the read view (other origins).", st,
          "remote_entries");
    Gauge(w, "edgesync_store_last_lsn", "The LSN head: the last local log sequence number.", st, "last_lsn");
    Counter(w, "edgesync_store_dead_letters_total", "Rejected payloads recorded since the store was created.", st,
            "dead_letters");
    Counter(w, "edgesync_store_rejected_full_total", "Appends refused because the store was full.", st,
            "rejected_full");
    Counter(w, "edgesync_store_dropped_oldest_total",
            "Unacknowledged readings dropped by the drop-oldest disk policy since creation.", st, "dropped_oldest");
    Counter(w, "edgesync_store_dropped_acked_total",
            "Acknowledged readings dropped to make room when the store or its filesystem was full, since creation.",
            st, "dropped_acked");
    Counter(w, "edgesync_store_corrupt_chunks_total",
            "Read view and region feed chunks refused as damaged since the store was opened.", st, "corrupt_chunks");
    w->Sample("edgesync_store_ranges", "gauge", "Active partition key ranges.",
              st.contains("ranges") ? static_cast<double>(st["ranges"].size()) : 0);
  }
  if (s.contains("upstream")) {
    Gauge(w, "edgesync_upstream_checkpoint", "Highest LSN acknowledged by a region.", s["upstream"], "checkpoint");
  }
  if (s.contains("backlog")) {
    const json& b = s["backlog"];
    Gauge(w, "edgesync_backlog_readings", "Entries not yet acknowledged by a region.", b, "readings");
    Gauge(w, "edgesync_backlog_bytes", "Estimated bytes of the entries not yet acknowledged.", b, "bytes");
    Gauge(w, "edgesync_backlog_oldest_age_seconds", "Age of the oldest entry not yet acknowledged.", b,
          "oldest_age_s");
  }
}

void GatewayMetrics(Writer* w, const json& s) {
  if (s.contains("clock")) {
    w->Sample("edgesync_clock_trusted", "gauge",
              "1 once the gateway trusts its wall clock in this boot (ingest.clock_trust), else 0.",
              s["clock"].value("trusted", false) ? 1 : 0);
    if (s["clock"].contains("periods")) {
      const json& p = s["clock"]["periods"];
      for (const char* state : {"open", "corrected", "uncorrectable"}) {
        Gauge(w, "edgesync_clock_periods",
              "Untrusted clock periods by state: open (this boot, corrected once the clock is trusted), corrected, "
              "uncorrectable (their boot ended untrusted).",
              p, state, {{"state", state}});
      }
      for (const char* state : {"open", "corrected", "uncorrectable"}) {
        Gauge(w, "edgesync_clock_period_readings",
              "Readings stamped on arrival while the clock was untrusted, by their period's state.", p,
              (std::string("readings_") + state).c_str(), {{"state", state}});
      }
    }
  }
  if (s.contains("ingest")) {
    const json& in = s["ingest"];
    Counter(w, "edgesync_ingest_messages_total", "MQTT messages received from the local broker.", in, "messages");
    Counter(w, "edgesync_ingest_readings_accepted_total", "Readings accepted by ingest.", in, "readings_accepted");
    Counter(w, "edgesync_ingest_readings_committed_total", "Readings committed to the store.", in,
            "readings_committed");
    Counter(w, "edgesync_ingest_batches_total", "Group commits to the store.", in, "batches");
    Counter(w, "edgesync_ingest_commit_failures_total", "Group commits that failed.", in, "commit_failures");
    Counter(w, "edgesync_ingest_duplicates_skipped_total", "Redelivered messages skipped.", in,
            "duplicates_skipped");
    Counter(w, "edgesync_ingest_dead_letters_total", "Payloads dead-lettered by ingest.", in, "dead_letters");
    Counter(w, "edgesync_ingest_untrusted_clock_total",
            "Readings stamped by the gateway while its clock was not trusted (quality untrusted_clock).", in,
            "untrusted_clock");
    Gauge(w, "edgesync_ingest_journal_bytes", "Bytes of the intake journal on disk.", in, "journal_bytes");
    w->Sample("edgesync_ingest_paused", "gauge",
              "1 while ingest takes no messages from the local broker (the store refuses commits).",
              in.value("paused", false) ? 1 : 0);
    Counter(w, "edgesync_ingest_pauses_total", "Times ingest stopped taking messages from the local broker.", in,
            "pauses");
    w->Sample("edgesync_ingest_paused_seconds_total", "counter",
              "Time ingest spent not taking messages from the local broker.",
              static_cast<double>(in.value("paused_ms", int64_t{0})) / 1000.0);
    if (in.contains("rejected") && in["rejected"].is_object()) {
      for (const auto& [reason, n] : in["rejected"].items()) {
        w->Sample("edgesync_ingest_rejected_total", "counter", "Readings or messages rejected, by reason.",
                  n.is_number() ? n.get<double>() : 0, {{"reason", reason}});
      }
    }
  }
  if (s.contains("ingest_mqtt")) {
    const json& m = s["ingest_mqtt"];
    w->Sample("edgesync_ingest_broker_connected", "gauge", "1 when connected to the local broker.",
              m.value("connected", false) ? 1 : 0);
    Counter(w, "edgesync_ingest_broker_connection_losses_total", "Connections to the local broker lost.", m,
            "connection_losses");
  }
  w->Histogram("edgesync_store_commit_latency_seconds", "Time of a group commit of readings to the store.",
               s.value("commit_latency", json()));
  if (s.contains("uplink")) {
    const json& u = s["uplink"];
    Counter(w, "edgesync_uplink_batches_sent_total", "Batches sent to the write region (resends included).", u,
            "batches_sent");
    Counter(w, "edgesync_uplink_entries_sent_total", "Entries sent to the write region (resends included).", u,
            "entries_sent");
    Counter(w, "edgesync_uplink_sent_bytes_total", "Payload bytes of the batches sent.", u, "bytes_sent");
    Counter(w, "edgesync_uplink_link_sent_bytes_total",
            "MQTT PUBLISH packets sent to regions, framing included (batches, resends, probes).", u,
            "link_bytes_sent");
    Gauge(w, "edgesync_uplink_link_send_rate_bytes_per_second",
          "Bytes per second of MQTT PUBLISH packets sent to regions, over the last seconds.", u, "link_bytes_per_s");
    Gauge(w, "edgesync_uplink_cap_bytes_per_second", "The uplink's cap (uplink.max_bytes_per_s); 0 = none.", u,
          "max_bytes_per_s");
    w->Sample("edgesync_uplink_cap_wait_seconds_total", "counter",
              "Time a batch was ready and waited for the uplink's cap.",
              static_cast<double>(u.value("cap_wait_ms", int64_t{0})) / 1000.0);
    Counter(w, "edgesync_uplink_acks_total", "Acknowledgements received from regions.", u, "acks");
    // Unknown (0) is left out rather than read as "complete through 1970".
    if (u.value("complete_through_ms", int64_t{0}) > 0) {
      w->Sample("edgesync_uplink_complete_through_seconds", "gauge",
                "This gateway's acknowledged completeness watermark (Unix time): every reading committed before it "
                "is held by a region.",
                static_cast<double>(u.value("complete_through_ms", int64_t{0})) / 1000.0);
      w->Sample("edgesync_uplink_complete_age_seconds", "gauge", "Age of this gateway's acknowledged watermark.",
                static_cast<double>(u.value("complete_age_ms", int64_t{0})) / 1000.0);
    }
    Counter(w, "edgesync_uplink_resends_total", "Times the uplink resent from its checkpoint.", u, "resends");
    Counter(w, "edgesync_uplink_ack_timeouts_total", "Batches not acknowledged in time.", u, "ack_timeouts");
    Counter(w, "edgesync_uplink_refusals_total", "Batches a region refused.", u, "refusals");
    Counter(w, "edgesync_uplink_acks_ignored_total",
            "Answers ignored: to no batch in flight, from another region or for another origin.", u, "acks_ignored");
    Counter(w, "edgesync_uplink_acks_late_total",
            "Of the answers ignored, late answers to batches given up on and resent (routine after an outage).", u,
            "acks_late");
    Counter(w, "edgesync_uplink_region_switches_total", "Changes of the write region.", u, "region_switches");
    Counter(w, "edgesync_uplink_region_regressions_total",
            "Answers saying a region's store lost what it had acknowledged (it is refilled).", u, "region_regressions");
    Gauge(w, "edgesync_uplink_refills_pending", "Regions to refill (or to ask) after losing what they acknowledged.", u,
          "refills_pending");
    Counter(w, "edgesync_uplink_refill_lost_total",
            "LSNs a region had acknowledged and lost that this gateway no longer held to refill it with.", u,
            "refill_lost");
    Counter(w, "edgesync_uplink_corrections_withheld_total",
            "Time corrections left out of batches to a region of protocol 5 or older (its readings keep their "
            "stamped times).",
            u, "corrections_withheld");
    Gauge(w, "edgesync_uplink_inflight_batches", "Batches sent and not yet acknowledged.", u, "inflight");
    w->Histogram("edgesync_uplink_ack_latency_seconds", "Time from sending a batch to its acknowledgement.",
                 u.value("ack_latency", json()));
    std::string write_region = u.value("write_region", "");
    for (const json& r : u.value("regions", json::array())) {
      Labels l = {{"region", r.value("name", "")}};
      w->Sample("edgesync_region_write", "gauge", "1 for the region that takes the writes.",
                r.value("name", "") == write_region ? 1 : 0, l);
      w->Sample("edgesync_region_connected", "gauge", "1 when the region's broker is connected.",
                r.value("connected", false) ? 1 : 0, l);
      w->Sample("edgesync_region_healthy", "gauge", "1 when the region answers probes.",
                r.value("healthy", false) ? 1 : 0, l);
      double rtt = Num(r, "rtt_ms");
      if (rtt >= 0) {
        w->Sample("edgesync_region_round_trip_seconds", "gauge", "Last measured round trip to the region.",
                  rtt / 1000.0, l);
      }
    }
  }
  if (s.contains("read_view")) {
    const json& f = s["read_view"];
    Counter(w, "edgesync_feed_pages_total", "Feed pages pulled from regions.", f, "pages");
    Counter(w, "edgesync_feed_timeouts_total", "Feed requests not answered in time.", f, "timeouts");
    for (const json& r : f.value("regions", json::array())) {
      Labels l = {{"region", r.value("name", "")}};
      w->Sample("edgesync_feed_lag_entries", "gauge",
                "Region feed entries not yet pulled (the most behind shard: head - position).",
                Num(r, "lag"), l);
      Counter(w, "edgesync_feed_applied_total", "Feed entries new to the read view.", r, "applied", l);
      Counter(w, "edgesync_feed_pages_ignored_total", "Feed pages ignored: not to our request, or out of bounds.", r,
              "pages_ignored", l);
      Counter(w, "edgesync_feed_pages_late_total",
              "Of the pages ignored, late answers to requests given up on (routine after an outage).", r,
              "pages_late", l);
      Counter(w, "edgesync_feed_resets_total", "Explicit feed resets.", r, "resets", l);
    }
    for (const json& m : f.value("watermarks", json::array())) {
      Labels l = {{"origin", m.value("origin", "")}};
      w->Sample("edgesync_read_view_origin_complete_through_seconds", "gauge",
                "The origin's completeness watermark the read view holds (Unix time): every reading its gateway "
                "committed before it is in the read view.",
                static_cast<double>(m.value("complete_through_ms", int64_t{0})) / 1000.0, l);
      w->Sample("edgesync_read_view_origin_complete_age_seconds", "gauge",
                "Age of the origin's completeness watermark in the read view.",
                static_cast<double>(m.value("complete_age_ms", int64_t{0})) / 1000.0, l);
    }
  }
}

void HubMetrics(Writer* w, const json& s) {
  const json& h = s.value("hub", json::object());
  Counter(w, "edgesync_hub_batches_applied_total", "Batches applied.", h, "batches_applied");
  Counter(w, "edgesync_hub_batches_already_held_total", "Batches answered OK that held nothing new (resends).", h,
          "already_held");
  Counter(w, "edgesync_hub_batches_shed_total",
          "Messages dropped because the receive queue was full (their gateways resend them).", h, "shed");
  Counter(w, "edgesync_hub_entries_received_total", "Entries received in batches.", h, "entries_received");
  Counter(w, "edgesync_hub_entries_applied_total", "Entries new to the region.", h, "entries_applied");
  Gauge(w, "edgesync_hub_feed_head", "The region feed's head sequence number.", h, "feed_head");
  Counter(w, "edgesync_hub_feed_requests_total", "Feed pages served.", h, "feed_requests");
  Counter(w, "edgesync_hub_feed_requests_superseded_total",
          "Feed requests dropped unanswered: a newer one of the same sender came before their turn.", h,
          "feed_requests_superseded");
  Counter(w, "edgesync_hub_pings_total", "Round-trip probes answered.", h, "pings");
  Counter(w, "edgesync_hub_feed_resets_total", "Explicit resets sent to feed readers.", h, "feed_resets");
  Counter(w, "edgesync_hub_feed_corrections_withheld_total",
          "Time corrections left out of feed pages to readers of protocol 5 or older.", h, "feed_corrections_withheld");
  Counter(w, "edgesync_hub_hole_jumps_total", "Batches applied from a base above the high-water mark (failover).", h,
          "hole_jumps");
  Counter(w, "edgesync_hub_regressed_total",
          "Batches answered Regressed: the sender's record names a store of another epoch or a higher mark.", h,
          "regressed");
  Counter(w, "edgesync_hub_lost_at_origin_total",
          "LSNs refilling gateways no longer held (pruned after this region acknowledged them and lost them).", h,
          "lost_at_origin");
  Counter(w, "edgesync_hub_late_readings_total",
          "Readings that arrived stamped over a minute before their origin's watermark, all origins.", h,
          "late_readings");
  // Shards and their leases (store/hub_store_leases.h; one hub on SQLite
  // holds every shard for good).
  w->Sample("edgesync_hub_shards_held", "gauge", "Region shards this hub holds (listens to and applies).",
            h.contains("shards") && h["shards"].is_array() ? static_cast<double>(h["shards"].size()) : 0);
  Gauge(w, "edgesync_hub_live_hubs", "The region's live hubs, as this hub's last lease round counted them.", h,
        "live_hubs");
  Counter(w, "edgesync_hub_shard_takeovers_total", "Free or expired shards this hub took.", h, "shards_taken");
  Counter(w, "edgesync_hub_shard_steals_total", "Shards this hub took from a busier hub.", h, "shards_stolen");
  Counter(w, "edgesync_hub_shard_handovers_total",
          "Shards this hub gave up: taken by another hub, expired, or released at shutdown.", h,
          "shards_handed_over");
  Counter(w, "edgesync_hub_lease_renew_failures_total",
          "Lease rounds that failed to renew this hub's leases (database unreachable).", h, "lease_errors");
  if (Num(h, "lease_renewed_ago_ms") >= 0 && h.contains("lease_renewed_ago_ms")) {
    w->Sample("edgesync_hub_lease_renewal_age_seconds", "gauge",
              "Time since this hub last renewed its shard leases.", Num(h, "lease_renewed_ago_ms") / 1000.0);
  }
  Counter(w, "edgesync_hub_messages_not_owned_total",
          "Messages of a shard this hub does not hold: dropped, resent by their gateway to the holder.", h,
          "not_owned");
  const json refusals = h.value("refusals", json::object());
  for (const auto& [reason, n] : refusals.items()) {
    w->Sample("edgesync_hub_refusals_total", "counter", "Messages refused, by reason.",
              n.is_number() ? n.get<double>() : 0, {{"reason", reason}});
  }
  if (h.contains("origin_count")) {
    Gauge(w, "edgesync_hub_origins", "Origins (gateway stores) this hub answered since it started.", h,
          "origin_count");
  }
  // The snapshot lists every origin of a small region, else only the most
  // lagging (docs/STATUS.md): the per-origin series are those listed.
  for (const json& o : h.value("origins", json::array())) {
    Labels l = {{"origin", o.value("origin", "")}};
    w->Sample("edgesync_hub_origin_high_water", "gauge", "Highest contiguous LSN held per origin.",
              Num(o, "high_water"), l);
    w->Sample("edgesync_hub_origin_lag_seconds", "gauge",
              "Age of the origin's newest reading applied while its gateway drains a backlog; 0 when caught up.", Num(o, "lag_ms") / 1000.0,
              l);
    if (o.value("complete_through_ms", int64_t{0}) > 0) {
      w->Sample("edgesync_hub_origin_complete_through_seconds", "gauge",
                "The origin's completeness watermark (Unix time): every reading its gateway committed before it is "
                "held by this region.",
                static_cast<double>(o.value("complete_through_ms", int64_t{0})) / 1000.0, l);
      w->Sample("edgesync_hub_origin_complete_age_seconds", "gauge", "Age of the origin's completeness watermark.",
                static_cast<double>(o.value("complete_age_ms", int64_t{0})) / 1000.0, l);
    }
    Counter(w, "edgesync_hub_origin_entries_applied_total", "Entries applied per origin.", o, "entries", l);
    Counter(w, "edgesync_hub_origin_late_readings_total",
            "Readings that arrived stamped over a minute before the origin's watermark (a device replaying its "
            "buffer).",
            o, "late_readings", l);
    Counter(w, "edgesync_hub_origin_lost_total",
            "LSNs the origin no longer held when it refilled this region after the region lost them.", o, "lost", l);
  }
}

}  // namespace

std::string PrometheusText(const json& s) {
  Writer w;
  bool gateway = s.value("role", "") == "gateway";
  w.Sample("edgesync_up", "gauge", "1 while the process runs; role label: gateway or region.", 1,
           {{"role", gateway ? "gateway" : "region"}});
  w.Sample("edgesync_start_time_seconds", "gauge", "Start time of the process since the Unix epoch.",
           Num(s, "started_ms") / 1000.0);
  StoreMetrics(&w, s);
  if (gateway) {
    GatewayMetrics(&w, s);
  } else {
    HubMetrics(&w, s);
  }
  if (s.contains("process")) {
    Gauge(&w, "edgesync_process_resident_memory_bytes", "Resident set size.", s["process"], "rss_bytes");
  }
  if (s.contains("recent_errors")) {
    w.Sample("edgesync_log_recent_errors", "gauge", "Warning and error lines held in the recent-errors ring.",
             static_cast<double>(s["recent_errors"].size()));
  }
  return w.Text();
}

}  // namespace edgesync

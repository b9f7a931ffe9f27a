#include "agent/prometheus.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "agent/metrics_table.h"

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

// The table's rows of one section (agent/metrics_table.h) that a process of
// `role` has: the snapshot's `section` object, or the snapshot itself for
// the top-level rows (section "").
void TableSection(Writer* w, MetricRole role, const char* section, const json& sec) {
  for (const Metric& m : AllMetrics()) {
    if ((m.role != MetricRole::kBoth && m.role != role) || std::strcmp(m.field.section, section) != 0) continue;
    const char* key = m.field.key;
    const bool present = sec.is_object() && sec.contains(key);
    switch (m.when) {
      case MetricWhen::kAlways:
        break;
      case MetricWhen::kKeyPresent:
        if (!present) continue;
        break;
      case MetricWhen::kGatePositive:
        // Unknown (0) is left out rather than read as "1970".
        if (!(Num(sec, m.gate) > 0)) continue;
        break;
      case MetricWhen::kNonNegative:
        if (!present || Num(sec, key) < 0) continue;
        break;
    }
    double v = 0;
    switch (m.value) {
      case MetricValue::kNumber:
        v = Num(sec, key);
        break;
      case MetricValue::kBool:
        v = present && sec[key].is_boolean() && sec[key].get<bool>() ? 1 : 0;
        break;
      case MetricValue::kMillisAsSeconds:
      case MetricValue::kMillisSinceEpoch:
        v = Num(sec, key) / 1000.0;
        break;
      case MetricValue::kArraySize:
        v = present && sec[key].is_array() ? static_cast<double>(sec[key].size()) : 0;
        break;
    }
    w->Sample(m.prometheus, m.type == MetricType::kCounter ? "counter" : "gauge", m.help, v);
  }
}

// The sections both roles have, where the snapshot has them.
void CommonSections(Writer* w, MetricRole role, const json& s) {
  for (const char* section : {"store", "upstream", "backlog", "process"}) {
    if (s.contains(section)) TableSection(w, role, section, s[section]);
  }
}

// A gateway's plain figures come from the table; what follows here are
// the families with labels and the histograms, which are lists inside the
// snapshot rather than one number at a section and key.
void GatewayMetrics(Writer* w, const json& s) {
  constexpr MetricRole kRole = MetricRole::kGateway;
  if (s.contains("clock")) {
    TableSection(w, kRole, "clock", s["clock"]);
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
    TableSection(w, kRole, "ingest", in);
    if (in.contains("rejected") && in["rejected"].is_object()) {
      for (const auto& [reason, n] : in["rejected"].items()) {
        w->Sample("edgesync_ingest_rejected_total", "counter", "Readings or messages rejected, by reason.",
                  n.is_number() ? n.get<double>() : 0, {{"reason", reason}});
      }
    }
  }
  if (s.contains("ingest_mqtt")) TableSection(w, kRole, "ingest_mqtt", s["ingest_mqtt"]);
  w->Histogram("edgesync_store_commit_latency_seconds", "Time of a group commit of readings to the store.",
               s.value("commit_latency", json()));
  for (const char* lane : {"uplink_live_lane", "uplink_backlog_lane"}) {
    if (s.contains(lane)) TableSection(w, kRole, lane, s[lane]);
  }
  if (s.contains("uplink")) {
    const json& u = s["uplink"];
    TableSection(w, kRole, "uplink", u);
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
    TableSection(w, kRole, "read_view", f);
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
  if (s.contains("retention")) TableSection(w, kRole, "retention", s["retention"]);
}

// A hub's plain figures come from the table; the refusals by reason and the
// per-origin families are hand-written (lists inside the snapshot).
void HubMetrics(Writer* w, const json& s) {
  const json& h = s.value("hub", json::object());
  // Shards and their leases (store/hub_store_leases.h; one hub on SQLite
  // holds every shard for good) are rows of the table too.
  TableSection(w, MetricRole::kHub, "hub", h);
  const json refusals = h.value("refusals", json::object());
  for (const auto& [reason, n] : refusals.items()) {
    w->Sample("edgesync_hub_refusals_total", "counter", "Messages refused, by reason.",
              n.is_number() ? n.get<double>() : 0, {{"reason", reason}});
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
  const MetricRole role = gateway ? MetricRole::kGateway : MetricRole::kHub;
  w.Sample("edgesync_up", "gauge", "1 while the process runs; role label: gateway or region.", 1,
           {{"role", gateway ? "gateway" : "region"}});
  TableSection(&w, role, "", s);
  CommonSections(&w, role, s);
  if (gateway) {
    GatewayMetrics(&w, s);
  } else {
    HubMetrics(&w, s);
  }
  return w.Text();
}

}  // namespace edgesync

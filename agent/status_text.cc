#include "agent/status_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <string>
#include <vector>

#include "agent/metrics_table.h"
#include "store/feed_cursor.h"

namespace edgesync {

using json = nlohmann::json;

// A figure of the snapshot, 0 where it is missing or not a number.
double StatusNumber(const json& j, const char* section, const char* key) {
  if (!j.contains(section) || !j[section].is_object() || !j[section].contains(key) || !j[section][key].is_number()) {
    return 0;
  }
  return j[section][key].get<double>();
}

// A figure of the metrics table (agent/metrics_table.h) by its one name.
double StatusNumber(const json& j, const StatusKey& k) {
  if (*k.section) return StatusNumber(j, k.section, k.key);
  return j.contains(k.key) && j[k.key].is_number() ? j[k.key].get<double>() : 0;
}

namespace {

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

std::string Utc(int64_t ms) {
  const time_t secs = static_cast<time_t>(ms / 1000);
  struct tm tm_utc {};
  gmtime_r(&secs, &tm_utc);
  char at[32];
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
  return at;
}

// A count exactly, anything else to a tenth.
std::string Number(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, v == std::floor(v) && std::fabs(v) < 1e15 ? "%.0f" : "%.1f", v);
  return buf;
}

std::string Seconds(double ms) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f", ms / 1000.0);
  return buf;
}

// A completeness watermark for people: "<UTC time> (<age> s ago)", or
// "unknown" when none is known (0).
std::string Watermark(int64_t through_ms, double age_ms) {
  if (through_ms <= 0) return "unknown";
  return Utc(through_ms) + " (" + Seconds(age_ms) + " s ago)";
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The row's group and name: "store: size" is `size` of `store`; a label
// without ": " is a group of one figure with no name of its own.
void SplitLabel(const Metric& m, std::string* group, std::string* name) {
  const std::string label = m.status_text;
  const size_t colon = label.find(": ");
  *group = colon == std::string::npos ? label : label.substr(0, colon);
  *name = colon == std::string::npos ? "" : label.substr(colon + 2);
}

// The row's value as the text shows it; false when the snapshot lacks it.
bool FigureValue(const Metric& m, const json& snapshot, std::string* out) {
  const json* sec = &snapshot;
  if (*m.field.section) {
    if (!snapshot.contains(m.field.section) || !snapshot[m.field.section].is_object()) return false;
    sec = &snapshot[m.field.section];
  }
  if (!sec->is_object() || !sec->contains(m.field.key)) return false;
  const json& v = (*sec)[m.field.key];
  switch (m.when) {
    case MetricWhen::kAlways:
    case MetricWhen::kKeyPresent:
      break;
    case MetricWhen::kGatePositive:
      if (!(sec->contains(m.gate) && (*sec)[m.gate].is_number() && (*sec)[m.gate].get<double>() > 0)) {
        *out = "unknown";
        return true;
      }
      break;
    case MetricWhen::kNonNegative:
      if (!v.is_number() || v.get<double>() < 0) {
        *out = "unknown";
        return true;
      }
      break;
  }
  const double n = v.is_number() ? v.get<double>() : 0;
  switch (m.value) {
    case MetricValue::kNumber:
      // Sizes for people; the Prometheus name carries the unit (base
      // units by its conventions), rates of bytes per second stay numbers.
      if (EndsWith(m.prometheus, "_bytes") || EndsWith(m.prometheus, "_bytes_total")) {
        *out = Bytes(n);
      } else {
        *out = Number(n);
      }
      break;
    case MetricValue::kBool:
      *out = v.is_boolean() && v.get<bool>() ? "yes" : "no";
      break;
    case MetricValue::kMillisAsSeconds:
      *out = Seconds(n);
      break;
    case MetricValue::kMillisSinceEpoch:
      *out = n > 0 ? Utc(static_cast<int64_t>(n)) : "unknown";
      break;
    case MetricValue::kArraySize:
      *out = std::to_string(v.is_array() ? v.size() : 0);
      break;
  }
  return true;
}

// The lines of the text, grouped in the order they are added.
class Text {
 public:
  Text(const json& snapshot, MetricRole role) : snapshot_(snapshot), role_(role) {}

  void Add(const std::string& group, const std::string& name, const std::string& value, bool figure = false) {
    lines_.push_back({group, name, value, figure});
  }

  // The table's rows of `group`, in table order.
  void Figures(const std::string& group) {
    shown_.insert(group);
    for (const Metric& m : AllMetrics()) {
      if (!*m.status_text || (m.role != MetricRole::kBoth && m.role != role_)) continue;
      std::string g, name, value;
      SplitLabel(m, &g, &name);
      if (g != group || !FigureValue(m, snapshot_, &value)) continue;
      Add(group, name, value, /*figure=*/true);
    }
  }

  // Rows of groups placed neither above nor in `later`, so that a row
  // added to the table is shown even before the text places its group.
  void OtherFigures(const std::set<std::string>& later) {
    std::vector<std::string> groups;
    for (const Metric& m : AllMetrics()) {
      if (!*m.status_text || (m.role != MetricRole::kBoth && m.role != role_)) continue;
      std::string g, name;
      SplitLabel(m, &g, &name);
      if (!shown_.count(g) && !later.count(g) && std::find(groups.begin(), groups.end(), g) == groups.end()) {
        groups.push_back(g);
      }
    }
    for (const std::string& g : groups) Figures(g);
  }

  std::string Render() const {
    size_t group_width = 10, name_width = 0;
    for (const Line& l : lines_) {
      group_width = std::max(group_width, l.group.size() + 2);
      if (l.figure) name_width = std::max(name_width, l.name.size() + 2);
    }
    std::string out, previous;
    bool first = true;
    for (const Line& l : lines_) {
      std::string line = first || l.group != previous ? l.group : "";
      first = false;
      previous = l.group;
      line.resize(group_width, ' ');
      line += l.name;
      if (!l.value.empty()) {
        // A name longer than the column (a region's or origin's) keeps two
        // spaces before its value.
        line.resize(std::max(group_width + name_width, line.size() + 2), ' ');
        line += l.value;
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  struct Line {
    std::string group, name, value;
    bool figure;
  };
  const json& snapshot_;
  MetricRole role_;
  std::vector<Line> lines_;
  std::set<std::string> shown_;
};

std::string Rate(double per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", per_s);
  return buf;
}

void StoreLines(const json& j, Text* t) {
  if (j.contains("store") && j["store"].value("backend", "") == "postgresql") {
    t->Add("store", "backend", "PostgreSQL");
    t->Add("store", "region feed head", Number(StatusNumber(j, "store", "feed_head")));
    t->Add("store", "region feed oldest", Number(StatusNumber(j, "store", "feed_oldest")));
  }
  t->Figures("store");
  t->Figures("backlog");
}

void IngestLines(const json& j, Text* t) {
  if (!j.contains("ingest")) return;
  const json& in = j["ingest"];
  t->Add("ingest", "readings/s (momentary)", Rate(StatusNumber(j, "rates", "ingest_per_s")));
  t->Figures("ingest");
  if (in.value("paused", false)) {
    t->Add("ingest", "PAUSED (" + in.value("pause_reason", std::string()) + "): the local broker keeps new readings",
           "");
  }
  const json rejected = in.value("rejected", json::object());
  for (const auto& [reason, n] : rejected.items()) {
    if (n.is_number() && n.get<double>() > 0) t->Add("ingest", "rejected " + reason, Number(n.get<double>()));
  }
  if (j.contains("ingest_mqtt")) t->Add("local broker", "uri", j["ingest_mqtt"].value("uri", ""));
  t->Figures("local broker");
}

void ClockLines(const json& j, Text* t) {
  if (!j.contains("clock")) return;
  const json& c = j["clock"];
  t->Figures("clock");
  std::string source = c.value("source", "");
  if (c.contains("sync") && c["sync"].is_string() && !c["sync"].get<std::string>().empty()) {
    source += ": " + c["sync"].get<std::string>();
  }
  t->Add("clock", "source", source.empty() ? "-" : source);
  if (!c.value("trusted", false)) {
    t->Add("clock", "NOT TRUSTED: times the gateway stamps are flagged untrusted_clock", "");
  }
  if (c.contains("periods")) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%.0f open (%.0f readings, corrected once trusted), %.0f corrected (%.0f readings), %.0f "
                  "uncorrectable (%.0f readings keep untrusted_clock: their boot ended untrusted)",
                  StatusNumber(c, "periods", "open"), StatusNumber(c, "periods", "readings_open"),
                  StatusNumber(c, "periods", "corrected"), StatusNumber(c, "periods", "readings_corrected"),
                  StatusNumber(c, "periods", "uncorrectable"), StatusNumber(c, "periods", "readings_uncorrectable"));
    t->Add("clock", "untrusted periods", buf);
  }
}

void UplinkLines(const json& j, Text* t) {
  if (!j.contains("uplink")) return;
  const json& u = j["uplink"];
  const std::string region = u.value("write_region", "");
  t->Add("uplink", "write region", region.empty() ? "none (no healthy region: the backlog waits in the store)" : region);
  t->Add("uplink", "readings/s acknowledged (momentary)", Rate(StatusNumber(j, "rates", "acked_per_s")));
  t->Figures("uplink");
  for (const json& r : u.value("regions", json::array())) {
    const double rtt = r.value("rtt_ms", -1.0);
    t->Add("uplink", "region " + r.value("name", std::string()),
           std::string(r.value("healthy", false)     ? "healthy"
                       : r.value("connected", false) ? "unhealthy"
                                                     : "disconnected") +
               ", round trip " + (rtt < 0 ? "unknown" : std::to_string(static_cast<int64_t>(rtt)) + " ms"));
  }
  t->Figures("live lane");
  t->Figures("backlog lane");
}

void ReadViewLines(const json& j, Text* t) {
  if (!j.contains("read_view")) return;
  const json& rv = j["read_view"];
  t->Figures("read view");
  for (const json& r : rv.value("regions", json::array())) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "position %.0f, head %.0f, lag %.0f entries; pages ignored %.0f (late: %.0f)",
                  r.value("position", 0.0), r.value("head", 0.0), r.value("lag", 0.0), r.value("pages_ignored", 0.0),
                  r.value("pages_late", 0.0));
    t->Add("read view", "feed " + r.value("name", std::string()), buf);
  }
  const json marks = rv.value("watermarks", json::array());
  const double origins = rv.value("watermark_origins", 0.0);
  if (origins > static_cast<double>(marks.size())) {
    t->Add("read view", "the " + std::to_string(marks.size()) + " oldest watermarks of " + Number(origins) + " origins",
           "");
  }
  for (const json& m : marks) {
    t->Add("read view", "view " + m.value("origin", std::string()),
           "complete through " +
               Watermark(m.value("complete_through_ms", int64_t{0}), m.value("complete_age_ms", 0.0)));
  }
}

void HubLines(const json& j, Text* t) {
  if (!j.contains("hub") || !j["hub"].is_object()) return;
  const json& h = j["hub"];
  if (j.contains("rates")) {
    t->Add("hub", "readings/s applied (momentary)", Rate(StatusNumber(j, "rates", "readings_per_s")));
  }
  t->Figures("hub");
  const json refusals = h.value("refusals", json::object());
  for (const auto& [reason, n] : refusals.items()) {
    t->Add("hub", "refused " + reason, Number(n.is_number() ? n.get<double>() : 0));
  }
  if (h.contains("shards")) {
    t->Add("shards", "hub id", h.value("hub_id", std::string()).empty() ? "-" : h.value("hub_id", std::string()));
    t->Add("shards", "in the region", std::to_string(kRegionShards));
  }
  t->Figures("shards");
  t->Figures("origins");
  const json origins = h.value("origins", json::array());
  if (StatusNumber(j, metrics::kHubOriginCount) > static_cast<double>(origins.size())) {
    t->Add("origins", "the " + std::to_string(origins.size()) + " most lagging:", "");
  }
  for (const json& o : origins) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "high water %.0f, lag %.1f s, ", o.value("high_water", 0.0),
                  o.value("lag_ms", 0.0) / 1000.0);
    t->Add("origins", "origin " + o.value("origin", std::string()),
           buf + ("complete through " +
                  Watermark(o.value("complete_through_ms", int64_t{0}), o.value("complete_age_ms", 0.0))) +
               ", late readings " + Number(o.value("late_readings", 0.0)));
  }
}

}  // namespace

std::string StatusText(const json& j) {
  const MetricRole role = j.value("role", "") == "region" ? MetricRole::kHub : MetricRole::kGateway;
  Text t(j, role);
  const std::string who = role == MetricRole::kHub ? j.value("hub", json::object()).value("region", "")
                                                   : j.value("gateway_id", std::string());
  t.Add("role",
        j.value("role", "") + (who.empty() ? "" : " " + who) + " (" +
            (j.value("running", false) ? "running" : "not running") + ")",
        "");
  if (j.contains("note") && j["note"].is_string()) t.Add("role", j["note"].get<std::string>(), "");
  StoreLines(j, &t);
  IngestLines(j, &t);
  ClockLines(j, &t);
  UplinkLines(j, &t);
  ReadViewLines(j, &t);
  HubLines(j, &t);
  if (j.contains("region_feed")) {
    t.Add("region feed", "entries numbered", Number(StatusNumber(j, "region_feed", "entries")));
    t.Add("region feed", "store", j["region_feed"].value("backend", ""));
  }
  t.OtherFigures({"recent errors"});
  // Last: the lines themselves follow the count.
  t.Figures("recent errors");
  for (const json& e : j.value("recent_errors", json::array())) {
    t.Add("recent errors", e.value("level", std::string()), e.value("text", std::string()));
  }
  return t.Render();
}

}  // namespace edgesync

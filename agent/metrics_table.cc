#include "agent/metrics_table.h"

namespace edgesync {

const std::vector<Metric>& AllMetrics() {
#define EDGESYNC_METRIC_ROW(name, role, section, key, prometheus, type, value, when, gate, on_page, status_text, help) \
  Metric{{section, key},       prometheus,         MetricType::type, MetricValue::value, MetricWhen::when, gate,   \
         MetricRole::role,     on_page,            status_text,      help},
  static const std::vector<Metric> rows = {EDGESYNC_METRICS(EDGESYNC_METRIC_ROW)};
#undef EDGESYNC_METRIC_ROW
  return rows;
}

std::vector<Metric> MetricsOf(MetricRole role) {
  std::vector<Metric> out;
  for (const Metric& m : AllMetrics()) {
    if (m.role == MetricRole::kBoth || m.role == role) out.push_back(m);
  }
  return out;
}

namespace {

std::string Path(const StatusKey& k) { return *k.section ? std::string(k.section) + "." + k.key : std::string(k.key); }

std::string Unit(const Metric& m) {
  switch (m.value) {
    case MetricValue::kBool:
      return "true/false (1/0)";
    case MetricValue::kMillisAsSeconds:
      return "ms (s in /metrics)";
    case MetricValue::kArraySize:
      return "list (its length)";
    case MetricValue::kMillisSinceEpoch:
      return "ms since the Unix epoch (s in /metrics)";
    case MetricValue::kNumber:
      break;
  }
  return "";
}

std::string When(const Metric& m) {
  switch (m.when) {
    case MetricWhen::kKeyPresent:
      return " Only while the snapshot has it.";
    case MetricWhen::kGatePositive:
      return std::string(" Only while `") + m.gate + "` is known (above 0).";
    case MetricWhen::kNonNegative:
      return " Only once known (-1 before).";
    case MetricWhen::kAlways:
      break;
  }
  return "";
}

void Table(std::string* out, MetricRole role) {
  *out +=
      "| snapshot | Prometheus | type | `edgesync status` | page | what |\n"
      "|---|---|---|---|---|---|\n";
  for (const Metric& m : AllMetrics()) {
    if (m.role != role) continue;
    std::string unit = Unit(m);
    *out += "| `" + Path(m.field) + "`" + (unit.empty() ? "" : " " + unit) + " | `" + m.prometheus + "` | " +
            (m.type == MetricType::kCounter ? "counter" : "gauge") + " | " + (*m.status_text ? m.status_text : "-") +
            " | " + (m.on_page ? "yes" : "-") + " | " + m.help + When(m) + " |\n";
  }
}

}  // namespace

std::string MetricsReference() {
  std::string out =
      "## Every figure\n"
      "\n"
      "<!-- Generated from agent/metrics_table.h by `edgesync metrics reference`; edit the table, not this list. -->\n"
      "\n"
      "Each figure once: where the snapshot holds it, its Prometheus name and type, how `edgesync status` labels it\n"
      "(`-`: not printed) and whether the status page shows it. Families with labels (per region, origin, reason,\n"
      "clock period state) and the histograms are listed under \"Prometheus names\" below.\n"
      "\n"
      "Both roles:\n"
      "\n";
  Table(&out, MetricRole::kBoth);
  out += "\nGateway:\n\n";
  Table(&out, MetricRole::kGateway);
  out += "\nRegion hub:\n\n";
  Table(&out, MetricRole::kHub);
  return out;
}

}  // namespace edgesync

// tests/support/status_text_lines.h: reading `edgesync status` text
// (agent/status_text.h) back into its lines, and what a metrics table row
// (agent/metrics_table.h) must read there, written here from the row's
// kind on its own so that a test compares two ways of getting there.
//
// The text's columns: a group name at the start of its first line, a name,
// a value; separated by two spaces or more, which no group or name holds.
// A note (a name with no value) and a figure with no name of its own (a
// value alone) are told apart by the column their text starts at.
//
// Header-only: for the tests that link the agent layer (es_agent).
//
// Thread safety: free functions, no shared state.
#ifndef EDGESYNC_TESTS_SUPPORT_STATUS_TEXT_LINES_H_
#define EDGESYNC_TESTS_SUPPORT_STATUS_TEXT_LINES_H_

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "agent/metrics_table.h"

namespace edgesync::test {

struct StatusTextLine {
  std::string group, name, value;
};

// A line's text past the group column starts at the name column, or
// further right at the value column when the figure has no name of its own
// ("origins"); a note has a name and no value.
inline std::vector<StatusTextLine> StatusTextLines(const std::string& text) {
  struct Raw {
    std::string group;
    size_t at;
    std::string rest;
  };
  std::vector<Raw> raw;
  std::istringstream in(text);
  std::string line, group;
  size_t name_column = std::string::npos;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t from = 0;
    if (line[0] != ' ') {
      const size_t gap = line.find("  ");
      group = line.substr(0, gap);
      if (gap == std::string::npos) {
        raw.push_back({group, line.size(), ""});
        continue;
      }
      from = gap;
    }
    const size_t at = line.find_first_not_of(' ', from);
    if (at == std::string::npos) continue;
    raw.push_back({group, at, line.substr(at)});
    name_column = std::min(name_column, at);
  }
  std::vector<StatusTextLine> out;
  for (const Raw& r : raw) {
    if (r.at > name_column) {
      out.push_back({r.group, "", r.rest});
      continue;
    }
    const size_t gap = r.rest.find("  ");
    if (gap == std::string::npos) {
      out.push_back({r.group, r.rest, ""});
    } else {
      out.push_back({r.group, r.rest.substr(0, gap), r.rest.substr(r.rest.find_first_not_of(' ', gap))});
    }
  }
  return out;
}

// The values of the lines that carry the row's label: one when it is shown.
inline std::vector<std::string> StatusTextValues(const std::vector<StatusTextLine>& lines, const Metric& m) {
  const std::string label = m.status_text;
  const size_t colon = label.find(": ");
  const std::string group = colon == std::string::npos ? label : label.substr(0, colon);
  const std::string name = colon == std::string::npos ? "" : label.substr(colon + 2);
  std::vector<std::string> out;
  for (const StatusTextLine& l : lines) {
    if (l.group == group && l.name == name) out.push_back(l.value);
  }
  return out;
}

// The value of the first line `name` of `group`; "" when there is none.
inline std::string StatusTextValue(const std::string& text, const std::string& group, const std::string& name) {
  for (const StatusTextLine& l : StatusTextLines(text)) {
    if (l.group == group && l.name == name) return l.value;
  }
  return "";
}

// What the row reads as in the text, from the snapshot; "" when the
// snapshot lacks it (no line then).
inline std::string ExpectedStatusText(const Metric& m, const nlohmann::json& snapshot) {
  const nlohmann::json& sec = *m.field.section ? snapshot.value(m.field.section, nlohmann::json::object()) : snapshot;
  if (!sec.is_object() || !sec.contains(m.field.key)) return "";
  const nlohmann::json& v = sec[m.field.key];
  const double n = v.is_number() ? v.get<double>() : 0;
  if (m.when == MetricWhen::kGatePositive && !(sec.value(m.gate, 0.0) > 0)) return "unknown";
  if (m.when == MetricWhen::kNonNegative && n < 0) return "unknown";
  char buf[64];
  switch (m.value) {
    case MetricValue::kBool:
      return v == true ? "yes" : "no";
    case MetricValue::kArraySize:
      return std::to_string(v.is_array() ? v.size() : 0);
    case MetricValue::kMillisAsSeconds:
      std::snprintf(buf, sizeof buf, "%.1f", n / 1000);
      return buf;
    case MetricValue::kMillisSinceEpoch: {
      if (n <= 0) return "unknown";
      time_t secs = static_cast<time_t>(n / 1000);
      struct tm tm_utc {};
      gmtime_r(&secs, &tm_utc);
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm_utc);
      return buf;
    }
    case MetricValue::kNumber:
      break;
  }
  const std::string prom = m.prometheus;
  auto ends = [&](const std::string& s) {
    return prom.size() >= s.size() && prom.compare(prom.size() - s.size(), s.size(), s) == 0;
  };
  if (ends("_bytes") || ends("_bytes_total")) {
    static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double b = n;
    int u = 0;
    for (; b >= 1024 && u < 4; ++u) b /= 1024;
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, kUnits[u]);
    return buf;
  }
  std::snprintf(buf, sizeof buf, n == std::floor(n) ? "%.0f" : "%.1f", n);
  return buf;
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_STATUS_TEXT_LINES_H_

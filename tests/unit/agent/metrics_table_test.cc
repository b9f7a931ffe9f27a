// The metrics table (agent/metrics_table.h) is the one home of each plain
// status figure: every row appears under its one name in every view. In
// /metrics with its value (and promtool accepts the text), in `edgesync
// status` text under its label with its value, in docs/STATUS.md (the
// generated "Every figure" part), and on the status page exactly where the
// row says the page shows it. That each row's key is in a real
// process's snapshot is checked against running programs in
// tests/integration/status_views_test.cc.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "agent/metrics_table.h"
#include "agent/prometheus.h"
#include "agent/status_text.h"
#include "tests/support/http_get.h"
#include "tests/support/process.h"
#include "tests/support/status_metrics.h"
#include "tests/support/status_text_lines.h"

namespace edgesync {
namespace {

using json = nlohmann::json;

std::string Source(const std::string& path) {
  std::ifstream in(std::string(EDGESYNC_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string Path(const Metric& m) {
  return *m.field.section ? std::string(m.field.section) + "." + m.field.key : m.field.key;
}

// A snapshot of `role` holding every row of its table, each with a value
// of its own (a row read at another's key, or scaled wrongly, shows), and
// every gate open. Returns the sample line each row must have.
json SnapshotOfEveryRow(MetricRole role, std::map<std::string, std::string>* expected) {
  json s = {{"role", role == MetricRole::kGateway ? "gateway" : "region"}};
  int n = 0;
  for (const Metric& m : MetricsOf(role)) {
    ++n;
    json& sec = *m.field.section ? s[m.field.section] : s;
    std::string value;
    switch (m.value) {
      case MetricValue::kNumber:
        sec[m.field.key] = 1000 + n;
        value = std::to_string(1000 + n);
        break;
      case MetricValue::kBool:
        sec[m.field.key] = true;
        value = "1";
        break;
      case MetricValue::kMillisAsSeconds:
      case MetricValue::kMillisSinceEpoch:
        sec[m.field.key] = 1000 * (1000 + n) + 500;
        value = std::to_string(1000 + n) + ".5";
        break;
      case MetricValue::kArraySize:
        sec[m.field.key] = json::array();
        for (int i = 0; i < n % 5 + 1; ++i) sec[m.field.key].push_back({{"id", i}});
        value = std::to_string(n % 5 + 1);
        break;
    }
    (*expected)[m.prometheus] = value;
  }
  // Every gate is a row too, so it is above 0 here: each conditional row
  // has its sample.
  return s;
}

TEST(MetricsTable, NamesAreUniqueAndFollowPrometheusConventions) {
  std::set<std::string> names, paths;
  for (const Metric& m : AllMetrics()) {
    const std::string name = m.prometheus;
    EXPECT_TRUE(names.insert(name).second) << "twice: " << name;
    // One figure, one row: a role's snapshot holds a path once.
    std::string path = Path(m) + (m.role == MetricRole::kHub ? "@hub" : m.role == MetricRole::kGateway ? "@gw" : "");
    EXPECT_TRUE(paths.insert(path).second) << "twice: " << path;
    EXPECT_EQ(name.rfind("edgesync_", 0), 0u) << name;
    EXPECT_EQ(m.type == MetricType::kCounter, name.size() > 6 && name.substr(name.size() - 6) == "_total") << name;
    EXPECT_STRNE(m.help, "") << name;
    EXPECT_EQ(m.when == MetricWhen::kGatePositive, *m.gate != '\0') << name;
  }
}

TEST(MetricsTable, EveryRowIsInPrometheusTextWithItsValue) {
  for (MetricRole role : {MetricRole::kGateway, MetricRole::kHub}) {
    std::map<std::string, std::string> expected;
    json s = SnapshotOfEveryRow(role, &expected);
    const std::string text = PrometheusText(s);
    for (const Metric& m : MetricsOf(role)) {
      const std::string name = m.prometheus;
      EXPECT_NE(text.find("# HELP " + name + " " + m.help + "\n# TYPE " + name + " " +
                          (m.type == MetricType::kCounter ? "counter" : "gauge") + "\n" + name + " " +
                          expected[name] + "\n"),
                std::string::npos)
          << Path(m) << " as " << name << " " << expected[name] << " in\n" << text;
    }
    // Nothing of the other role's table.
    for (const Metric& m : MetricsOf(role == MetricRole::kGateway ? MetricRole::kHub : MetricRole::kGateway)) {
      if (m.role == MetricRole::kBoth) continue;
      EXPECT_EQ(text.find(std::string("\n") + m.prometheus + " "), std::string::npos) << m.prometheus;
    }
    test::TempDir dir;
    std::string out;
    EXPECT_EQ(test::PromtoolCheck(text, dir.File("metrics.prom"), &out), 0) << out << text;
  }
}

TEST(MetricsTable, ConditionalRowsAreLeftOutWhileUnknown) {
  json gw = {{"role", "gateway"}, {"uplink", {{"complete_through_ms", 0}, {"complete_age_ms", 0}}}};
  std::string text = PrometheusText(gw);
  EXPECT_EQ(text.find("edgesync_uplink_complete_through_seconds"), std::string::npos) << text;
  EXPECT_EQ(text.find("edgesync_uplink_complete_age_seconds"), std::string::npos) << text;
  EXPECT_EQ(text.find("edgesync_log_recent_errors"), std::string::npos) << text;
  json hub = {{"role", "region"}, {"hub", {{"lease_renewed_ago_ms", -1}}}};
  text = PrometheusText(hub);
  EXPECT_EQ(text.find("edgesync_hub_lease_renewal_age_seconds"), std::string::npos) << text;
  EXPECT_EQ(text.find("edgesync_hub_origins "), std::string::npos) << text;
  // A plain row with its section absent from a hub snapshot reads 0.
  EXPECT_NE(text.find("edgesync_hub_batches_applied_total 0\n"), std::string::npos) << text;
}

// The labels of a role's rows: each names one line, and the text's
// columns split on two spaces, which no label holds.
TEST(MetricsTable, StatusTextLabelsAreOnePerRowAndSplitIntoGroupAndName) {
  for (MetricRole role : {MetricRole::kGateway, MetricRole::kHub}) {
    std::set<std::string> labels;
    for (const Metric& m : MetricsOf(role)) {
      const std::string label = m.status_text;
      if (label.empty()) continue;
      EXPECT_TRUE(labels.insert(label).second) << "twice: " << label;
      EXPECT_EQ(label.find("  "), std::string::npos) << label;
      EXPECT_NE(label.front(), ' ') << label;
      EXPECT_NE(label.back(), ' ') << label;
    }
    EXPECT_GE(labels.size(), 20u);
  }
}

// A snapshot of `role` with every row of its table at a value of its own,
// and what `edgesync status` must print for each: written out here, not
// computed the way the text view computes it.
json TextSnapshotOfEveryRow(MetricRole role, std::map<std::string, std::string>* expected) {
  json s = {{"role", role == MetricRole::kGateway ? "gateway" : "region"}, {"running", true}};
  // The lists beside the figures, whose lines must not take a row's label.
  s["rates"] = {{"ingest_per_s", 12.5}, {"acked_per_s", 11}, {"readings_per_s", 7}};
  int n = 0;
  for (const Metric& m : MetricsOf(role)) {
    ++n;
    json& sec = *m.field.section ? s[m.field.section] : s;
    const std::string name = m.prometheus;
    const bool size = name.size() > 6 && (name.substr(name.size() - 6) == "_bytes" ||
                                          (name.size() > 12 && name.substr(name.size() - 12) == "_bytes_total"));
    std::string text;
    char buf[64];
    switch (m.value) {
      case MetricValue::kNumber:
        if (size) {
          sec[m.field.key] = (100 + n) * 1024;  // KiB for people
          text = std::to_string(100 + n) + ".0 KiB";
        } else {
          sec[m.field.key] = 1000 + n;
          text = std::to_string(1000 + n);
        }
        break;
      case MetricValue::kBool:
        sec[m.field.key] = n % 2 == 0;
        text = n % 2 == 0 ? "yes" : "no";
        break;
      case MetricValue::kMillisAsSeconds:
        sec[m.field.key] = 1000 * (1000 + n) + 500;
        text = std::to_string(1000 + n) + ".5";
        break;
      case MetricValue::kMillisSinceEpoch:
        // 1800000000 s since the epoch is 2027-01-15 08:00:00 UTC.
        sec[m.field.key] = 1800000000000 + 1000 * (n % 60);
        std::snprintf(buf, sizeof buf, "2027-01-15T08:00:%02dZ", n % 60);
        text = buf;
        break;
      case MetricValue::kArraySize:
        sec[m.field.key] = json::array();
        for (int i = 0; i < n % 5 + 1; ++i) {
          sec[m.field.key].push_back({{"id", i}, {"level", "warning"}, {"text", "line " + std::to_string(i)}});
        }
        text = std::to_string(n % 5 + 1);
        break;
    }
    if (*m.status_text) (*expected)[m.status_text] = text;
  }
  if (role == MetricRole::kGateway) {
    s["ingest"]["rejected"] = {{"bad_json", 2}};
    s["ingest_mqtt"]["uri"] = "tcp://127.0.0.1:1883";
    s["clock"]["source"] = "file";
    s["uplink"]["write_region"] = "eu";
    s["uplink"]["regions"] = json::array({{{"name", "eu"}, {"healthy", true}, {"rtt_ms", 12}}});
    s["read_view"]["regions"] = json::array({{{"name", "eu"}, {"position", 3}, {"head", 4}, {"lag", 1}}});
  } else {
    s["hub"]["region"] = "eu";
    s["hub"]["hub_id"] = "h1";
    s["hub"]["refusals"] = {{"gap", 0}};
    s["hub"]["origins"] = json::array({{{"origin", "gw1/abc"}, {"high_water", 9}}});
  }
  return s;
}

TEST(MetricsTable, EveryLabelledRowIsInStatusTextWithItsValue) {
  for (MetricRole role : {MetricRole::kGateway, MetricRole::kHub}) {
    std::map<std::string, std::string> expected;
    const json s = TextSnapshotOfEveryRow(role, &expected);
    const std::string text = StatusText(s);
    const std::vector<test::StatusTextLine> lines = test::StatusTextLines(text);
    int checked = 0;
    for (const Metric& m : MetricsOf(role)) {
      if (!*m.status_text) continue;
      std::vector<std::string> values = test::StatusTextValues(lines, m);
      ASSERT_EQ(values.size(), 1u) << m.status_text << " (" << Path(m) << ") once in\n" << text;
      EXPECT_EQ(values[0], expected[m.status_text]) << m.status_text << " (" << Path(m) << ") in\n" << text;
      // The tests' own reading of a row agrees (tests/integration/status_views_test.cc uses it).
      EXPECT_EQ(test::ExpectedStatusText(m, s), expected[m.status_text]) << Path(m);
      ++checked;
    }
    EXPECT_GE(checked, 20);
    // Nothing of the other role's table.
    for (const Metric& m : MetricsOf(role == MetricRole::kGateway ? MetricRole::kHub : MetricRole::kGateway)) {
      if (m.role == MetricRole::kBoth || !*m.status_text) continue;
      EXPECT_TRUE(test::StatusTextValues(lines, m).empty()) << m.status_text << " in\n" << text;
    }
  }
}

TEST(MetricsTable, StatusTextSaysUnknownAndLeavesOutWhatTheSnapshotLacks) {
  json gw = {{"role", "gateway"},
             {"running", true},
             {"uplink", {{"complete_through_ms", 0}, {"complete_age_ms", 0}, {"acks", 3}}}};
  const std::string text = StatusText(gw);
  const std::vector<test::StatusTextLine> lines = test::StatusTextLines(text);
  auto row = [&](const StatusKey& k) -> const Metric& {
    for (const Metric& m : AllMetrics()) {
      if (std::string(m.field.section) == k.section && std::string(m.field.key) == k.key) return m;
    }
    ADD_FAILURE() << k.section << "." << k.key;
    return AllMetrics().front();
  };
  EXPECT_EQ(test::StatusTextValues(lines, row(metrics::kUplinkCompleteThroughMs)), std::vector<std::string>{"unknown"})
      << text;
  EXPECT_EQ(test::StatusTextValues(lines, row(metrics::kUplinkCompleteAgeMs)), std::vector<std::string>{"unknown"})
      << text;
  EXPECT_EQ(test::StatusTextValues(lines, row(metrics::kUplinkAcks)), std::vector<std::string>{"3"}) << text;
  // Not in the snapshot (a stopped gateway has no live counters): no line.
  EXPECT_TRUE(test::StatusTextValues(lines, row(metrics::kUplinkBatchesSent)).empty()) << text;
  EXPECT_TRUE(test::StatusTextValues(lines, row(metrics::kStoreFileBytes)).empty()) << text;
  EXPECT_EQ(text.find("store "), std::string::npos) << text;

  json hub = {{"role", "region"}, {"hub", {{"region", "eu"}, {"lease_renewed_ago_ms", -1}, {"shards", json::array()}}}};
  const std::string hub_text = StatusText(hub);
  EXPECT_EQ(test::StatusTextValues(test::StatusTextLines(hub_text), row(metrics::kHubLeaseRenewedAgoMs)),
            std::vector<std::string>{"unknown"})
      << hub_text;
  EXPECT_EQ(hub_text.rfind("role", 0), 0u) << hub_text;
  EXPECT_NE(hub_text.find("region eu (not running)"), std::string::npos) << hub_text;
}

TEST(MetricsTable, DocsStatusPageHoldsTheGeneratedReference) {
  const std::string doc = Source("docs/STATUS.md");
  const std::string ref = MetricsReference();
  EXPECT_NE(doc.find(ref), std::string::npos)
      << "docs/STATUS.md lacks the table's reference: replace its \"## Every figure\" part with the output of "
         "`build/edgesync metrics reference`";
  for (const Metric& m : AllMetrics()) {
    EXPECT_NE(ref.find("| `" + Path(m) + "`"), std::string::npos) << Path(m);
    EXPECT_NE(ref.find(std::string("| `") + m.prometheus + "` |"), std::string::npos) << m.prometheus;
  }
}

// The page's figure lists name snapshot paths (["uplink.acks_late",
// "late answers ignored"]): a row the table says the page shows is there,
// and a figure the page shows that the table has is marked so.
TEST(MetricsTable, StatusPageShowsTheRowsMarkedOnPage) {
  const std::string page = Source("agent/status_page.html");
  std::set<std::string> shown;
  std::regex entry("\\[\"([a-z_]+\\.[a-z_]+)\",");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), entry); it != std::sregex_iterator(); ++it) {
    shown.insert((*it)[1]);
  }
  ASSERT_GE(shown.size(), 20u) << "the page's figure lists were not found";
  for (const Metric& m : AllMetrics()) {
    EXPECT_EQ(m.on_page, shown.count(Path(m)) == 1) << Path(m) << (m.on_page ? " is not on the page" : " is on the page");
  }
}

TEST(MetricsTable, TypedReadsNameTheTablesFigure) {
  json s = {{"uplink", {{"acks_late", 7}}}, {"ingest", {{"paused", true}}}, {"started_ms", 5}};
  EXPECT_EQ(test::StatusField(s, metrics::kUplinkAcksLate), 7);
  EXPECT_EQ(test::StatusField(s, metrics::kIngestPaused), 1);
  EXPECT_EQ(test::StatusField(s, metrics::kStartedMs), 5);
  EXPECT_STREQ(metrics::kHubShardsStolen.section, "hub");
  EXPECT_STREQ(metrics::kHubShardsStolen.key, "shards_stolen");
}

}  // namespace
}  // namespace edgesync

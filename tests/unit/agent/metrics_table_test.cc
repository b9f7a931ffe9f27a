// The metrics table (agent/metrics_table.h) is the one home of each plain
// status figure: every row appears under its one name in every view. In
// /metrics with its value (and promtool accepts the text), in docs/STATUS.md
// (the generated "Every figure" part), and on the status page exactly where
// the row says the page shows it. That each row's key is in a real
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
#include "tests/support/http_get.h"
#include "tests/support/process.h"
#include "tests/support/status_metrics.h"

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

// The three views of one metrics snapshot against real running programs:
// sensors -> Mosquitto -> `edgesync gateway` -> region broker -> `edgesync
// region`. /metrics passes `promtool check metrics` (Debian prometheus) for
// both roles; the status page renders in headless Chromium (Debian
// chromium; screenshots of the gateway during and after a cable pull and of
// the hub go to build/test-output/status_views/) and the figures in its DOM
// equal `edgesync status --json` taken at the same moment; its charts plot
// the sensors' steady rate as that rate; a cable pull (the region's broker
// hangs, then comes back) leaves the error card and the warn-level log free
// of its routine consequences, which are counted instead; `status` reads a
// stopped gateway's store and says so. Every row of the metrics table
// (agent/metrics_table.h) is in each role's real snapshot and /metrics, and
// every row with a label in `edgesync status` text once, with its value.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <regex>
#include <string>

#include "agent/metrics_table.h"
#include "platform/files.h"
#include "tests/support/broker.h"
#include "tests/support/http_get.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_text_lines.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

using json = nlohmann::json;

std::string OutputDir() {
  std::string dir = std::string(EDGESYNC_TEST_OUTPUT_DIR) + "/status_views";
  EXPECT_OK(MakeDirs(dir));
  return dir;
}

// Runs a command line through sh; returns the exit code, stdout+stderr in *out.
int Shell(const std::string& command, const std::string& log, std::string* out) {
  Process p;
  if (!p.Start({"/bin/sh", "-c", command}, log)) return -1;
  int rc = p.Wait(120000);
  *out = ReadAll(log);
  return rc;
}

std::string Get(int port, const std::string& path, int* status = nullptr) { return HttpGet(port, path, status); }

class GatewayUnderTest {
 public:
  GatewayUnderTest(const std::string& root, const std::string& local_uri, RegionSite* region)
      : dir_(root + "/gw"), port_(FreePort()) {
    RegionSite::MakeDir(dir_);
    ::chmod(dir_.c_str(), 0700);  // else the gateway warns that others may read it
    std::ofstream(config()) << "[gateway]\nid = \"gw-views\"\ndata_dir = " << Q(dir_) << "\n\n"
                            << "[ingest]\nbroker_uri = " << Q(local_uri)
                            << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
                            << "[uplink]\nbatch_max_delay_ms = 20\nprobe_interval_ms = 200\n\n"
                            << "[metrics]\nlisten = \"127.0.0.1:" << port_ << "\"\n\n"
                            << "[[region]]\nname = " << Q(region->name()) << "\nuri = " << Q(region->broker().uri())
                            << "\n";
  }
  ~GatewayUnderTest() { process_.Stop(5000); }
  bool Start() { return process_.Start({EDGESYNC_BINARY, "gateway", "--config", config()}, dir_ + "/gateway.log"); }
  int Stop() { return process_.Stop(10000); }
  std::string config() const { return dir_ + "/gateway.toml"; }
  std::string log() const { return ReadAll(dir_ + "/gateway.log"); }
  int port() const { return port_; }
  json Status() {
    std::string out;
    int rc = Shell(std::string(EDGESYNC_BINARY) + " status --json --config " + config() + " 2>/dev/null",
                   dir_ + "/status-" + std::to_string(runs_++) + ".txt", &out);
    EXPECT_EQ(rc, 0) << out;
    return json::parse(out, nullptr, false);
  }

 private:
  std::string dir_;
  int port_;
  int runs_ = 0;
  Process process_;
};

double At(const json& j, const std::string& path) {
  const json* cur = &j;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (cur->is_array()) {
      cur = &(*cur)[std::stoul(key)];
    } else if (cur->is_object() && cur->contains(key)) {
      cur = &(*cur)[key];
    } else {
      ADD_FAILURE() << "no " << path << " in " << j.dump();
      return -1;
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur->is_number() ? cur->get<double>() : -1;
}

// A figure of the metrics table (agent/metrics_table.h) by its one name.
double At(const json& j, const StatusKey& figure) {
  return At(j, *figure.section ? std::string(figure.section) + "." + figure.key : std::string(figure.key));
}

std::string Chromium(const std::string& flags, const std::string& url, const std::string& profile) {
  std::string out;
  Shell("chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
            profile + " " + flags + " " + url + " 2>/dev/null",
        profile + ".out", &out);
  return out;
}

// The rows a chart of the page plotted (its data-plotted attribute:
// [[t_ms, series...], ...]), from a dumped DOM.
json Plotted(const std::string& dom, const std::string& chart_id) {
  std::smatch m;
  std::regex attr("id=\"" + chart_id + "\"[^>]*data-plotted=\"([^\"]*)\"");
  if (!std::regex_search(dom, m, attr)) return json();
  std::string text = std::regex_replace(m[1].str(), std::regex("&quot;"), "\"");
  return json::parse(text, nullptr, false);
}

// Every point of `rows` (column `column`) whose step lies inside
// [from_ms, to_ms] (all of it at the steady rate) is that rate, within 15%
// (the edges of a step cut a group commit or a batch). A momentary rate
// sampled at the point would not be: it follows the bursts. Returns the
// number of points checked.
int ExpectSteady(const json& rows, size_t column, int64_t from_ms, int64_t to_ms, double rate, const char* what) {
  int checked = 0;
  for (size_t i = 1; rows.is_array() && i < rows.size(); ++i) {
    int64_t begin = rows[i - 1][0].get<int64_t>(), end = rows[i][0].get<int64_t>();
    if (begin < from_ms || end > to_ms || !rows[i][column].is_number()) continue;
    double v = rows[i][column].get<double>();
    EXPECT_GE(v, 0.85 * rate) << what << " at " << end << ": " << rows.dump();
    EXPECT_LE(v, 1.15 * rate) << what << " at " << end << ": " << rows.dump();
    ++checked;
  }
  return checked;
}

// What the log says at warn level of a region's link going down: the
// outage itself, which an operator may need to act on if it lasts.
constexpr char kOutageLines[] = "connection lost|cannot connect|a connect never completed|no healthy region";

// The log's warn and error lines ("<time> warning <text>") other than those
// saying that a region's link is down: the outage itself, said once per
// link and reconnect attempt series.
std::vector<std::string> UnexpectedWarnings(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  std::string line;
  std::regex level("^\\S+ (warning|error|critical) ");
  std::regex outage(kOutageLines);
  while (std::getline(in, line)) {
    if (std::regex_search(line, level) && !std::regex_search(line, outage)) out.push_back(line);
  }
  return out;
}

// Every row of the role's metrics table (agent/metrics_table.h) is in the
// real snapshot at its section and key, and in the real /metrics under its
// one name. A row /metrics has only while something is known (a watermark
// this gateway has acknowledged, leases renewed) is looked for while the
// snapshot says it is known: a gateway here may not trust its clock, and
// then has no watermark.
void ExpectEveryTableRow(MetricRole role, const json& snapshot, const std::string& metrics) {
  int looked_for = 0;
  for (const Metric& m : MetricsOf(role)) {
    const json& section = *m.field.section ? snapshot.value(m.field.section, json::object()) : snapshot;
    ASSERT_TRUE(section.is_object() && section.contains(m.field.key))
        << m.field.section << "." << m.field.key << " not in the snapshot: " << snapshot.dump();
    const json& v = section[m.field.key];
    if (m.when == MetricWhen::kGatePositive && !(section.value(m.gate, 0.0) > 0)) continue;
    if (m.when == MetricWhen::kNonNegative && !(v.is_number() && v.get<double>() >= 0)) continue;
    EXPECT_NE(metrics.find(std::string("\n") + m.prometheus + " "), std::string::npos)
        << m.prometheus << " not in /metrics:\n" << metrics;
    ++looked_for;
  }
  EXPECT_GE(looked_for, static_cast<int>(MetricsOf(role).size()) - 2);
}

// Every row of the role's metrics table with a `status_text` label is in
// the real `edgesync status` text once, under that label, when the snapshot
// has it (none when it lacks it: a stopped gateway). The text reads a
// status file written between the snapshots `before` and `after`: a figure
// that reads the same in both reads so in the text (a count only grows);
// one that moved between them (rates, ages, link bytes of probes) is looked
// for, not compared. Returns the rows compared.
int ExpectEveryLabelledRow(MetricRole role, const json& before, const std::string& text, const json& after) {
  const std::vector<StatusTextLine> lines = StatusTextLines(text);
  int compared = 0;
  for (const Metric& m : MetricsOf(role)) {
    if (!*m.status_text) continue;
    const std::string was = ExpectedStatusText(m, before), is = ExpectedStatusText(m, after);
    const std::vector<std::string> values = StatusTextValues(lines, m);
    if (was.empty() && is.empty()) {
      EXPECT_TRUE(values.empty()) << m.status_text << ": not in the snapshot, yet in\n" << text;
      continue;
    }
    EXPECT_EQ(values.size(), 1u) << m.status_text << " (" << m.field.section << "." << m.field.key << ") once in\n"
                                 << text;
    if (values.size() != 1 || was != is) continue;
    EXPECT_EQ(values[0], was) << m.status_text << " in\n" << text;
    ++compared;
  }
  return compared;
}

int LabelledRows(MetricRole role) {
  int n = 0;
  for (const Metric& m : MetricsOf(role)) n += *m.status_text ? 1 : 0;
  return n;
}

bool PromtoolAccepts(const std::string& metrics, const std::string& file) {
  std::string out;
  int rc = PromtoolCheck(metrics, file, &out);
  EXPECT_EQ(rc, 0) << out;
  return rc == 0;
}

TEST(StatusViewsTest, GatewayAndHubShowOneSnapshotThreeWays) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  int hub_port = FreePort();
  ASSERT_TRUE(eu.Start("", "\n[metrics]\nlisten = \"127.0.0.1:" + std::to_string(hub_port) + "\""));
  GatewayUnderTest gw(dir.path(), local.uri(), &eu);
  ASSERT_TRUE(gw.Start());
  ASSERT_TRUE(WaitForPort(gw.port(), 30000)) << gw.log();
  ASSERT_TRUE(WaitForPort(hub_port, 30000));
  SleepMs(500);  // the subscription must exist before the sensors publish

  // Sensors at a steady 100 readings/s for 40 s. The steady span is from
  // the first snapshot with a reading committed to the last one short of
  // all of them (the page's snapshot times).
  constexpr double kRate = 100;
  Process sensors;
  ASSERT_TRUE(sensors.Start({EDGESYNC_PUBLISHER, local.uri(), "views-sensors", "10", "400", "views", "1800000000000",
                             "100"}));
  int64_t steady_from = -1, steady_to = -1;
  while (sensors.running()) {
    json j = json::parse(Get(gw.port(), "/status.json"), nullptr, false);
    if (j.is_object() && j.contains("ingest")) {
      double committed = At(j, metrics::kIngestReadingsCommitted);
      if (committed > 0 && steady_from < 0) steady_from = j["time_ms"].get<int64_t>();
      if (committed > 0 && committed < 4000) steady_to = j["time_ms"].get<int64_t>();
    }
    SleepMs(100);
  }
  ASSERT_EQ(sensors.Wait(1000), 0);
  ASSERT_GT(steady_from, 0);
  ASSERT_GT(steady_to, steady_from);
  ASSERT_TRUE(WaitFor([&] { return At(gw.Status(), metrics::kBacklogReadings) == 0; }, 60000)) << gw.log();

  // The cable pull: the region's broker hangs (as an unplugged uplink
  // looks) while more sensors publish: batches are in flight when it
  // hangs, and answers to them may come after the resend.
  eu.broker().Freeze();
  Process more;
  ASSERT_TRUE(more.Start({EDGESYNC_PUBLISHER, local.uri(), "views-more", "10", "200", "views-more",
                          "1800000000000", "200"}));
  json during;
  ASSERT_TRUE(WaitFor(
      [&] {
        during = gw.Status();
        return during.is_object() && during.contains("uplink") && during["uplink"].value("write_region", "x").empty() &&
               At(during, metrics::kBacklogReadings) > 0;
      },
      60000))
      << during.dump() << gw.log();
  const std::string out = OutputDir();
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/";
  std::string during_dom = Chromium("--virtual-time-budget=15000 --dump-dom", url, dir.File("chrome-during"));
  WriteAll(out + "/gateway_during_outage_dom.html", during_dom);
  // No write region says so, and why.
  EXPECT_NE(during_dom.find("data-key=\"uplink.write_region\" data-value=\"\" title=\"no healthy region"),
            std::string::npos)
      << during_dom;
  std::string during_png = out + "/gateway_during_outage.png";
  std::remove(during_png.c_str());
  Chromium("--virtual-time-budget=15000 --window-size=1280,1500 --screenshot=" + during_png, url,
           dir.File("chrome-during-shot"));
  EXPECT_GT(ReadAll(during_png).size(), 10000u) << "no screenshot at " << during_png;
  ASSERT_EQ(more.Wait(120000), 0);
  eu.broker().Thaw();

  // Every figure below is stable once the backlog is drained.
  json s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = gw.Status();
        // The live snapshot: a figure read from the store while the
        // gateway's first status is not written yet would pass too early.
        return s.is_object() && s.value("running", false) && At(s, metrics::kStoreLastLsn) == 6000 &&
               At(s, metrics::kBacklogReadings) == 0 && !s["uplink"].value("write_region", "").empty();
      },
      90000))
      << s.dump() << gw.log();
  ASSERT_TRUE(WaitFor([&] { return At(json::parse(Get(hub_port, "/status.json"), nullptr, false),
                                      "hub.entries_applied") == 6000; }, 60000));
  // Late answers are said in one line once they stop.
  ASSERT_TRUE(WaitFor(
      [&] {
        s = gw.Status();
        return At(s, metrics::kUplinkAcksLate) == 0 ||
               gw.log().find("late answer(s) to batches resent") != std::string::npos;
      },
      30000))
      << gw.log();
  EXPECT_EQ(s["running"], true);
  // The entry count is current (it read 0 for 30 s after a start before).
  EXPECT_EQ(At(s, metrics::kStoreEntries), 6000) << s.dump();
  EXPECT_EQ(At(s, metrics::kIngestReadingsCommitted), 6000);
  EXPECT_EQ(s["uplink"]["write_region"], "eu");
  EXPECT_GT(At(s, metrics::kStoreFreeBytes), 0);
  EXPECT_GT(At(s, metrics::kStoreFileBytes), 0);
  EXPECT_EQ(s["store"]["ranges"].size(), 4u);
  EXPECT_EQ(At(s, metrics::kUpstreamCheckpoint), 6000);
  ASSERT_TRUE(WaitFor([&] { return At(gw.Status(), "uplink.regions.0.rtt_ms") >= 0; }, 30000));

  // What the outage did is counted: batches in flight when the broker hung
  // were given up and resent; the answers ignored were all late ones
  // (nothing forged here).
  EXPECT_GE(At(s, metrics::kUplinkResends), 1) << s.dump();
  EXPECT_EQ(At(s, metrics::kUplinkAcksIgnored), At(s, metrics::kUplinkAcksLate)) << s.dump();
  EXPECT_EQ(At(s, "read_view.regions.0.pages_ignored"), At(s, "read_view.regions.0.pages_late")) << s.dump();
  // ... and none of it is in the error card nor warned about in the log:
  // only that the region's link was down.
  EXPECT_TRUE(s["recent_errors"].is_array());
  for (const json& e : s["recent_errors"]) {
    std::string text = e.value("text", "");
    EXPECT_TRUE(std::regex_search(text, std::regex(kOutageLines)))
        << "routine line in recent errors: " << text;
  }
  WriteAll(out + "/gateway.log", gw.log());
  EXPECT_EQ(UnexpectedWarnings(gw.log()), std::vector<std::string>()) << gw.log();
  json before = gw.Status();
  std::string status_text;
  ASSERT_EQ(Shell(std::string(EDGESYNC_BINARY) + " status --config " + gw.config(), dir.File("gw-status.txt"),
                  &status_text),
            0);
  json after = gw.Status();
  WriteAll(out + "/gateway_status.txt", status_text);
  // Most figures stand still once drained (rates decay, ages and probes move).
  EXPECT_GE(ExpectEveryLabelledRow(MetricRole::kGateway, before, status_text, after),
            LabelledRows(MetricRole::kGateway) * 2 / 3)
      << status_text;
  EXPECT_EQ(StatusTextValue(status_text, "uplink", "write region"), "eu") << status_text;
  EXPECT_EQ(StatusTextValue(status_text, "store", "entries"), "6000") << status_text;
  EXPECT_EQ(StatusTextValue(status_text, "uplink", "answers ignored (late, to resent batches)"),
            std::to_string(static_cast<int64_t>(At(after, metrics::kUplinkAcksLate))))
      << status_text;
  EXPECT_EQ(StatusTextValue(status_text, "uplink", "region eu").rfind("healthy, round trip ", 0), 0u) << status_text;

  // Prometheus, gateway.
  int code = 0;
  std::string metrics = Get(gw.port(), "/metrics", &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(PromtoolAccepts(metrics, dir.File("gateway.prom")));
  ExpectEveryTableRow(MetricRole::kGateway, gw.Status(), metrics);
  EXPECT_NE(metrics.find("edgesync_ingest_readings_committed_total 6000\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("edgesync_uplink_ack_latency_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  EXPECT_NE(metrics.find("edgesync_store_commit_latency_seconds_count"), std::string::npos);
  EXPECT_NE(metrics.find("edgesync_region_round_trip_seconds{region=\"eu\"}"), std::string::npos);
  EXPECT_NE(metrics.find("edgesync_backlog_readings 0\n"), std::string::npos);
  json late_now = gw.Status();
  EXPECT_NE(metrics.find("edgesync_uplink_acks_late_total " +
                         std::to_string(static_cast<int64_t>(At(late_now, metrics::kUplinkAcksLate))) + "\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("edgesync_feed_pages_late_total{region=\"eu\"} " +
                         std::to_string(static_cast<int64_t>(At(late_now, "read_view.regions.0.pages_late"))) + "\n"),
            std::string::npos)
      << metrics;

  // The status page: nothing from outside (every script and style is ours).
  std::string page = Get(gw.port(), "/", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_GT(Get(gw.port(), "/dygraph.min.js").size(), 100000u);
  json history = json::parse(Get(gw.port(), "/history.json"), nullptr, false);
  ASSERT_TRUE(history.is_object());
  EXPECT_GE(history["points"].size(), 1u);

  std::string dom = Chromium("--virtual-time-budget=15000 --dump-dom", url, dir.File("chrome-dom"));
  json now = gw.Status();
  WriteAll(out + "/gateway_dom.html", dom);
  std::regex cell("data-key=\"([a-z_.0-9]+)\"(?: data-value=\"([^\"]*)\")?[^>]*>([^<]*)<");
  int compared = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), cell); it != std::sregex_iterator(); ++it) {
    std::string key = (*it)[1], value = (*it)[2], text = (*it)[3];
    if (key.find("bytes") != std::string::npos) {
      // Sizes for people, as `edgesync status` prints them.
      EXPECT_TRUE(std::regex_match(text, std::regex("[0-9]+ B|[0-9]+\\.[0-9] (KiB|MiB|GiB|TiB)"))) << key << ": " << text;
    }
    if (key.find("age_s") != std::string::npos) {
      // An age, or none with nothing waiting.
      EXPECT_TRUE(std::regex_match(text, std::regex("[0-9]+ s|[0-9]+ (min|h|d) [0-9]+ (s|min|h)")) ||
                  (text == "-" && At(now, metrics::kBacklogReadings) == 0))
          << key << ": " << text;
    }
    if (key.find("complete_through_ms") != std::string::npos) {
      // A watermark is a time, shown as how long ago ("-" while unknown).
      EXPECT_TRUE(value == "0" ? text == "-" : text.size() > 4 && text.substr(text.size() - 4) == " ago")
          << key << ": " << text;
      continue;
    }
    // Figures that move while nothing is ingested (rates decay, sizes and
    // round trips change with checkpoints and probes) are not compared.
    if (key.rfind("rates.", 0) == 0 || key.find("rtt_ms") != std::string::npos || key.find("bytes") != std::string::npos ||
        key.find("age") != std::string::npos || key.find("_per_s") != std::string::npos ||
        key.find("eta_s") != std::string::npos || key == "role" || key.find("healthy") != std::string::npos ||
        key == "uplink.write_region") {
      continue;
    }
    EXPECT_EQ(value, std::to_string(static_cast<int64_t>(At(now, key)))) << key;
    EXPECT_EQ(text, value) << key << ": a count is shown exactly";
    ++compared;
  }
  EXPECT_GE(compared, 12) << dom;
  EXPECT_NE(dom.find("data-key=\"uplink.write_region\" data-value=\"eu\">eu<"), std::string::npos);
  // The page's error card: nothing routine either.
  std::smatch card;
  ASSERT_TRUE(std::regex_search(dom, card, std::regex("<div id=\"errors\">([^<]*)</div>"))) << dom;
  std::istringstream card_lines(card[1].str());
  for (std::string line; std::getline(card_lines, line);) {
    EXPECT_TRUE(line == "none" || std::regex_search(line, std::regex(kOutageLines))) << "in the error card: " << line;
  }
  EXPECT_NE(dom.find("data-key=\"uplink.acks_late\""), std::string::npos) << dom;
  EXPECT_NE(dom.find("data-history-points"), std::string::npos) << "charts were drawn";
  // The ingest chart plots the sensors' rate over the steady span.
  json plotted = Plotted(dom, "c_ingest");
  ASSERT_TRUE(plotted.is_array()) << dom;
  EXPECT_GE(ExpectSteady(plotted, 1, steady_from, steady_to, kRate, "gateway ingest chart"), 1)
      << "no chart point inside " << steady_from << ".." << steady_to << ": " << plotted.dump();

  std::string png = out + "/gateway_status_page.png";
  std::remove(png.c_str());
  Chromium("--virtual-time-budget=15000 --window-size=1280,1500 --screenshot=" + png, url, dir.File("chrome-shot"));
  std::string bytes = ReadAll(png);
  ASSERT_GT(bytes.size(), 10000u) << "no screenshot at " << png;
  EXPECT_EQ(bytes.substr(1, 3), "PNG");

  // The region hub: the same three views.
  json hub = json::parse(Get(hub_port, "/status.json"), nullptr, false);
  ASSERT_TRUE(hub.is_object());
  EXPECT_EQ(hub["role"], "region");
  EXPECT_EQ(At(hub, metrics::kHubEntriesApplied), 6000) << hub.dump();
  EXPECT_EQ(At(hub, metrics::kStoreRemoteEntries), 6000) << "the count is current on a hub too";
  ASSERT_EQ(hub["hub"]["origins"].size(), 1u);
  EXPECT_EQ(At(hub, "hub.origins.0.high_water"), 6000);
  // Caught up (its last batch left nothing behind it): no lag, however old
  // that batch's readings are by now.
  EXPECT_EQ(At(hub, "hub.origins.0.lag_ms"), 0) << hub.dump();
  EXPECT_EQ(hub["hub"]["refusals"]["gap"], 0);
  std::string hub_metrics = Get(hub_port, "/metrics");
  EXPECT_TRUE(PromtoolAccepts(hub_metrics, dir.File("hub.prom")));
  ExpectEveryTableRow(MetricRole::kHub, hub, hub_metrics);
  EXPECT_NE(hub_metrics.find("edgesync_hub_entries_applied_total 6000\n"), std::string::npos) << hub_metrics;
  // One hub on SQLite holds every shard for good.
  EXPECT_NE(hub_metrics.find("edgesync_hub_shards_held 32\n"), std::string::npos) << hub_metrics;
  EXPECT_NE(hub_metrics.find("edgesync_hub_lease_renewal_age_seconds "), std::string::npos) << hub_metrics;
  std::string hub_status, hub_json;
  ASSERT_EQ(Shell(std::string(EDGESYNC_BINARY) + " status --json --config " + eu.config(), dir.File("hub-before.json"),
                  &hub_json),
            0);
  json hub_before = json::parse(hub_json, nullptr, false);
  ASSERT_EQ(Shell(std::string(EDGESYNC_BINARY) + " status --config " + eu.config(), dir.File("hub-status.txt"),
                  &hub_status),
            0);
  ASSERT_EQ(Shell(std::string(EDGESYNC_BINARY) + " status --json --config " + eu.config(), dir.File("hub-after.json"),
                  &hub_json),
            0);
  json hub_after = json::parse(hub_json, nullptr, false);
  WriteAll(out + "/hub_status.txt", hub_status);
  EXPECT_GE(ExpectEveryLabelledRow(MetricRole::kHub, hub_before, hub_status, hub_after),
            LabelledRows(MetricRole::kHub) * 2 / 3)
      << hub_status;
  EXPECT_EQ(StatusTextValue(hub_status, "hub", "readings applied"), "6000") << hub_status;
  EXPECT_EQ(StatusTextValue(hub_status, "shards", "holds"), "32") << hub_status;
  EXPECT_EQ(StatusTextValue(hub_status, "origins", "origin " + hub_after["hub"]["origins"][0].value("origin", ""))
                .rfind("high water 6000, ", 0),
            0u)
      << hub_status;
  const std::string hub_url = "http://127.0.0.1:" + std::to_string(hub_port) + "/";
  std::string hub_dom = Chromium("--virtual-time-budget=15000 --dump-dom", hub_url, dir.File("chrome-hub"));
  WriteAll(out + "/hub_dom.html", hub_dom);
  EXPECT_NE(hub_dom.find("data-key=\"hub.entries_applied\" data-value=\"6000\">6000<"), std::string::npos) << hub_dom;
  // The gateway's name in its own column, beside the origin's figures.
  EXPECT_NE(hub_dom.find("<td>gw-views</td>"), std::string::npos) << hub_dom;
  EXPECT_NE(hub_dom.find("data-key=\"hub.origins.0.high_water\" data-value=\"6000\">6000<"), std::string::npos);
  EXPECT_NE(hub_dom.find("data-key=\"hub.origins.0.lag_ms\" data-value=\"0\""), std::string::npos) << hub_dom;
  // The hub's chart: the readings it applied per second over the steady
  // span are the sensors' rate (a second inside each end: the uplink's
  // batching shifts the hub's span).
  json hub_plotted = Plotted(hub_dom, "c_hub");
  ASSERT_TRUE(hub_plotted.is_array()) << hub_dom;
  EXPECT_GE(ExpectSteady(hub_plotted, 2, steady_from + 1000, steady_to - 1000, kRate, "hub readings chart"), 1)
      << hub_plotted.dump();
  std::string hub_png = out + "/hub_status_page.png";
  std::remove(hub_png.c_str());
  Chromium("--virtual-time-budget=15000 --window-size=1280,1200 --screenshot=" + hub_png, hub_url,
           dir.File("chrome-hub-shot"));
  EXPECT_GT(ReadAll(hub_png).size(), 10000u) << "no screenshot at " << hub_png;

  // Stopped: the store's figures, read-only, marked as such.
  EXPECT_EQ(gw.Stop(), 0);
  json stopped = gw.Status();
  EXPECT_EQ(stopped["running"], false) << stopped.dump();
  EXPECT_NE(stopped.value("note", "").find("not running"), std::string::npos);
  EXPECT_EQ(At(stopped, metrics::kStoreEntries), 6000);
  EXPECT_EQ(At(stopped, metrics::kUpstreamCheckpoint), 6000);
  EXPECT_EQ(At(stopped, metrics::kBacklogReadings), 0);
  EXPECT_FALSE(stopped.contains("ingest"));
  std::string stopped_text;
  ASSERT_EQ(Shell(std::string(EDGESYNC_BINARY) + " status --config " + gw.config(), dir.File("gw-stopped.txt"),
                  &stopped_text),
            0);
  WriteAll(out + "/gateway_stopped_status.txt", stopped_text);
  // The store's figures it read, nothing of the live counters.
  EXPECT_GE(ExpectEveryLabelledRow(MetricRole::kGateway, stopped, stopped_text, gw.Status()), 8) << stopped_text;
  EXPECT_EQ(StatusTextLines(stopped_text).at(0).name, "gateway gw-views (not running)") << stopped_text;
}

}  // namespace
}  // namespace edgesync::test

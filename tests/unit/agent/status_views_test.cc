// The pieces behind the three status views: Prometheus rendering, the chart
// history ring, rates, time arguments of the CLI.
#include <gtest/gtest.h>

#include <sstream>

#include "agent/http_status.h"
#include "agent/prometheus.h"
#include "agent/roles.h"
#include "agent/status_board.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

using json = nlohmann::json;

json GatewaySnapshot() {
  return {{"role", "gateway"},
          {"started_ms", 1700000000000},
          {"store", {{"file_bytes", 4096}, {"entries", 50000}, {"ranges", json::array({{{"id", 1}}})}}},
          {"backlog", {{"readings", 12}, {"bytes", 480}, {"oldest_age_s", 3.5}}},
          {"ingest", {{"messages", 7}, {"readings_committed", 50000}, {"rejected", {{"bad_json", 2}, {"too_large", 1}}}}},
          {"commit_latency", {{"bounds", {0.001, 0.01}}, {"counts", {3, 2, 1}}, {"count", 6}, {"sum", 0.5}}},
          {"uplink",
           {{"write_region", "eu"},
            {"acks", 4},
            {"regions", json::array({{{"name", "eu"}, {"healthy", true}, {"connected", true}, {"rtt_ms", 12.5}},
                                     {{"name", "us"}, {"healthy", false}, {"connected", false}, {"rtt_ms", -1}}})},
            {"ack_latency", {{"bounds", {0.1}}, {"counts", {4, 0}}, {"count", 4}, {"sum", 0.2}}}}}};
}

// Every sample line's family was announced by HELP and TYPE lines before it,
// and each family appears in one block.
void ExpectWellFormed(const std::string& text) {
  std::istringstream in(text);
  std::string line, family;
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(seen.insert(family).second) << "family twice: " << family;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) continue;
    EXPECT_EQ(line.rfind(family, 0), 0u) << line << " outside its family " << family;
  }
}

TEST(PrometheusText, NamesFollowConventionsWithHelpAndType) {
  std::string text = PrometheusText(GatewaySnapshot());
  ExpectWellFormed(text);
  EXPECT_NE(text.find("# TYPE edgesync_ingest_readings_committed_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("edgesync_ingest_readings_committed_total 50000\n"), std::string::npos);
  EXPECT_NE(text.find("edgesync_store_entries 50000\n"), std::string::npos);
  EXPECT_NE(text.find("edgesync_backlog_oldest_age_seconds 3.5\n"), std::string::npos);
  EXPECT_NE(text.find("edgesync_ingest_rejected_total{reason=\"bad_json\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("edgesync_region_round_trip_seconds{region=\"eu\"} 0.0125\n"), std::string::npos);
  // An unmeasured round trip is left out, not shown as -1.
  EXPECT_EQ(text.find("edgesync_region_round_trip_seconds{region=\"us\"}"), std::string::npos);
  EXPECT_NE(text.find("edgesync_region_write{region=\"eu\"} 1\n"), std::string::npos);
}

TEST(PrometheusText, ClockPeriodsByState) {
  json s = GatewaySnapshot();
  s["clock"] = {{"trusted", true},
                {"periods",
                 {{"open", 0},
                  {"corrected", 2},
                  {"uncorrectable", 1},
                  {"readings_open", 0},
                  {"readings_corrected", 120},
                  {"readings_uncorrectable", 7}}}};
  std::string text = PrometheusText(s);
  ExpectWellFormed(text);
  EXPECT_NE(text.find("# TYPE edgesync_clock_periods gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("edgesync_clock_periods{state=\"corrected\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("edgesync_clock_periods{state=\"uncorrectable\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("edgesync_clock_period_readings{state=\"corrected\"} 120\n"), std::string::npos) << text;
  EXPECT_NE(text.find("edgesync_clock_period_readings{state=\"uncorrectable\"} 7\n"), std::string::npos) << text;
}

TEST(PrometheusText, HistogramBucketsAreCumulativeAndEndInInf) {
  std::string text = PrometheusText(GatewaySnapshot());
  EXPECT_NE(text.find("# TYPE edgesync_store_commit_latency_seconds histogram\n"
                      "edgesync_store_commit_latency_seconds_bucket{le=\"0.001\"} 3\n"
                      "edgesync_store_commit_latency_seconds_bucket{le=\"0.01\"} 5\n"
                      "edgesync_store_commit_latency_seconds_bucket{le=\"+Inf\"} 6\n"
                      "edgesync_store_commit_latency_seconds_sum 0.5\n"
                      "edgesync_store_commit_latency_seconds_count 6\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("edgesync_uplink_ack_latency_seconds_count 4\n"), std::string::npos);
}

TEST(PrometheusText, HubSnapshotHasRefusalsAndOriginsByLabel) {
  json hub = {{"role", "region"},
              {"hub",
               {{"entries_applied", 9},
                {"feed_head", 9},
                {"feed_requests_superseded", 4},
                {"refusals", {{"gap", 1}, {"bad_message", 0}}},
                {"origins", json::array({{{"origin", "gw-1/ab\"c"}, {"high_water", 9}, {"lag_ms", 1500}}})}}}};
  std::string text = PrometheusText(hub);
  ExpectWellFormed(text);
  EXPECT_NE(text.find("edgesync_hub_refusals_total{reason=\"gap\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE edgesync_hub_feed_requests_superseded_total counter\n"
                      "edgesync_hub_feed_requests_superseded_total 4\n"),
            std::string::npos)
      << text;
  // Label values are escaped.
  EXPECT_NE(text.find("edgesync_hub_origin_lag_seconds{origin=\"gw-1/ab\\\"c\"} 1.5\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("edgesync_ingest"), std::string::npos);
}

TEST(StatusBoard, HistoryKeepsTheLastHourAtItsStep) {
  StatusBoard board("", 10000);
  for (int i = 0; i < 400; ++i) {
    board.Publish({{"n", i}}, {{"ingest_per_s", i}}, 1000000 + i * 10000);
    board.Publish({{"n", i}}, {{"ingest_per_s", -1}}, 1000000 + i * 10000 + 5000);  // between steps: not kept
  }
  json h = board.HistoryJson();
  ASSERT_EQ(h["points"].size(), StatusBoard::kHistoryPoints);
  EXPECT_EQ(h["series"], json::array({"ingest_per_s"}));
  EXPECT_EQ(h["points"][0][1], 40);
  EXPECT_EQ(h["points"].back()[1], 399);
  EXPECT_EQ(board.Latest()["n"], 399);
}

TEST(StatusBoard, SeriesMissingAtAPointAreNull) {
  StatusBoard board("", 1);
  board.Publish({}, {{"rtt_ms:eu", 5}}, 10);
  board.Publish({}, {{"rtt_ms:eu", 6}, {"rtt_ms:us", 7}}, 20);
  json h = board.HistoryJson();
  EXPECT_EQ(h["series"], json::array({"rtt_ms:eu", "rtt_ms:us"}));
  EXPECT_TRUE(h["points"][0][2].is_null());
  EXPECT_EQ(h["points"][1][2], 7);
}

TEST(StatusBoard, CountersChartAsTheirMeanRateOverEachStep) {
  StatusBoard board("", 10000);
  // 160 readings/s, committed in bursts every 2 s: every step's mean is 160
  // though the rate at the moment of a point is 320 or 0.
  uint64_t total = 0;
  for (int s = 0; s <= 30; ++s) {
    total += (s % 2 == 0) ? 320 : 0;
    board.Publish({}, {{"ingest_total", static_cast<double>(total)}, {"backlog", 5}}, 1000000 + s * 1000);
  }
  json h = board.HistoryJson();
  EXPECT_EQ(h["series"], json::array({"backlog", "ingest_per_s"}));
  ASSERT_EQ(h["points"].size(), 4u);
  EXPECT_TRUE(h["points"][0][2].is_null()) << "no step before the first point";
  for (size_t i = 1; i < 4; ++i) EXPECT_DOUBLE_EQ(h["points"][i][2].get<double>(), 160.0) << i;
  EXPECT_EQ(h["points"][3][1], 5);
  // A counter that went back (a restart) has no mean at that point.
  board.Publish({}, {{"ingest_total", 10}}, 1000000 + 40000);
  EXPECT_TRUE(board.HistoryJson()["points"].back()[2].is_null());
}

TEST(RateMeter, PerSecondFromACounter) {
  RateMeter r;
  EXPECT_EQ(r.Update(0, 0), 0);
  EXPECT_DOUBLE_EQ(r.Update(1000, 1000), 1000);
  EXPECT_DOUBLE_EQ(r.Update(1000, 1200), 1000);  // under 500 ms: unchanged
  EXPECT_LT(r.Update(1000, 2000), 1000);         // nothing new: decays
}

TEST(ParseTimeArg, Rfc3339RelativeAndMillis) {
  const int64_t now = 1772366400000;  // 2026-03-01T12:00:00Z
  int64_t ms = 0;
  ASSERT_OK(ParseTimeArg("2026-03-01T12:00:00Z", now, &ms));
  EXPECT_EQ(ms, now);
  ASSERT_OK(ParseTimeArg("2026-03-01T13:00:00.250+01:00", now, &ms));
  EXPECT_EQ(ms, now + 250);
  ASSERT_OK(ParseTimeArg("2026-03-01 11:30:00-00:30", now, &ms));
  EXPECT_EQ(ms, now);
  ASSERT_OK(ParseTimeArg("-1h", now, &ms));
  EXPECT_EQ(ms, now - 3600000);
  ASSERT_OK(ParseTimeArg("-2d", now, &ms));
  EXPECT_EQ(ms, now - 2 * 86400000);
  ASSERT_OK(ParseTimeArg("+30s", now, &ms));
  EXPECT_EQ(ms, now + 30000);
  ASSERT_OK(ParseTimeArg("now", now, &ms));
  EXPECT_EQ(ms, now);
  ASSERT_OK(ParseTimeArg("1005", now, &ms));
  EXPECT_EQ(ms, 1005);
  for (const char* bad : {"", "-1", "-1y", "yesterday", "2026-13-01T00:00:00Z", "2026-03-01T12:00:00",
                          "2026-03-01T12:00:00+1", "2026-03-01T12:00:00.Z", "-h"}) {
    Status s = ParseTimeArg(bad, now, &ms);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("RFC 3339"), std::string::npos) << bad;
  }
}

TEST(SplitHostPort, AcceptsHostPortOnly) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(SplitHostPort("127.0.0.1:9464", &host, &port));
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 9464);
  ASSERT_TRUE(SplitHostPort("[::1]:80", &host, &port));
  EXPECT_EQ(host, "::1");
  for (const char* bad : {"9464", ":9464", "host:", "host:99999", "host:12a"}) EXPECT_FALSE(SplitHostPort(bad, &host, &port)) << bad;
}

}  // namespace
}  // namespace edgesync

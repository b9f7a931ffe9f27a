// The three views of one metrics snapshot against real running programs:
// sensors -> Mosquitto -> `edgesync gateway` -> region broker -> `edgesync
// region`. /metrics passes `promtool check metrics` (Debian prometheus) for
// both roles; the status page renders in headless Chromium (Debian
// chromium; a screenshot goes to build/test-output/) and the figures in its
// DOM equal `edgesync status --json` taken at the same moment; `status`
// reads a stopped gateway's store and says so.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "platform/files.h"
#include "tests/integration/sync_sites.h"
#include "tests/support/broker.h"
#include "tests/support/http_get.h"
#include "tests/support/process.h"

namespace edgesync::test {
namespace {

using json = nlohmann::json;

std::string OutputDir() {
  std::string dir = std::string(EDGESYNC_TEST_OUTPUT_DIR) + "/status_views";
  EXPECT_TRUE(MakeDirs(dir).ok());
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

std::string Chromium(const std::string& flags, const std::string& url, const std::string& profile) {
  std::string out;
  Shell("chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
            profile + " " + flags + " " + url + " 2>/dev/null",
        profile + ".out", &out);
  return out;
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
  SleepMs(500);  // the subscription must exist before the sensors publish
  Process sensors;
  ASSERT_TRUE(sensors.Start({EDGESYNC_PUBLISHER, local.uri(), "views-sensors", "10", "300", "views", "1800000000000"}));
  ASSERT_EQ(sensors.Wait(120000), 0);
  // Sensors stopped: every figure below is stable once the backlog is drained.
  json s;
  ASSERT_TRUE(WaitFor(
      [&] {
        s = gw.Status();
        // The live snapshot: a figure read from the store while the
        // gateway's first status is not written yet would pass too early.
        return s.is_object() && s.value("running", false) && At(s, "store.last_lsn") == 3000 &&
               At(s, "backlog.readings") == 0;
      },
      60000))
      << s.dump() << gw.log();
  EXPECT_EQ(s["running"], true);
  // The entry count is current (it read 0 for 30 s after a start before).
  EXPECT_EQ(At(s, "store.entries"), 3000) << s.dump();
  EXPECT_EQ(At(s, "ingest.readings_committed"), 3000);
  EXPECT_EQ(s["uplink"]["write_region"], "eu");
  EXPECT_GT(At(s, "store.free_bytes"), 0);
  EXPECT_GT(At(s, "store.file_bytes"), 0);
  EXPECT_EQ(s["store"]["ranges"].size(), 4u);
  EXPECT_EQ(At(s, "upstream.checkpoint"), 3000);
  EXPECT_TRUE(s["recent_errors"].is_array());
  ASSERT_TRUE(WaitFor([&] { return At(gw.Status(), "uplink.regions.0.rtt_ms") >= 0; }, 30000));

  // Prometheus, gateway.
  int code = 0;
  std::string metrics = Get(gw.port(), "/metrics", &code);
  EXPECT_EQ(code, 200);
  EXPECT_TRUE(PromtoolAccepts(metrics, dir.File("gateway.prom")));
  EXPECT_NE(metrics.find("edgesync_ingest_readings_committed_total 3000\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("edgesync_uplink_ack_latency_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
  EXPECT_NE(metrics.find("edgesync_store_commit_latency_seconds_count"), std::string::npos);
  EXPECT_NE(metrics.find("edgesync_region_round_trip_seconds{region=\"eu\"}"), std::string::npos);
  EXPECT_NE(metrics.find("edgesync_backlog_readings 0\n"), std::string::npos);

  // The status page: nothing from outside (every script and style is ours).
  std::string page = Get(gw.port(), "/", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_GT(Get(gw.port(), "/dygraph.min.js").size(), 100000u);
  json history = json::parse(Get(gw.port(), "/history.json"), nullptr, false);
  ASSERT_TRUE(history.is_object());
  EXPECT_GE(history["points"].size(), 1u);

  const std::string out = OutputDir();
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/";
  std::string dom = Chromium("--virtual-time-budget=15000 --dump-dom", url, dir.File("chrome-dom"));
  json now = gw.Status();
  WriteAll(out + "/gateway_dom.html", dom);
  std::regex cell("data-key=\"([a-z_.0-9]+)\"[^>]*>([^<]*)<");
  int compared = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), cell); it != std::sregex_iterator(); ++it) {
    std::string key = (*it)[1], text = (*it)[2];
    // Figures that move while nothing is ingested (rates decay, sizes and
    // round trips change with checkpoints and probes) are not compared.
    if (key.rfind("rates.", 0) == 0 || key.find("rtt_ms") != std::string::npos || key.find("bytes") != std::string::npos ||
        key.find("age") != std::string::npos || key == "role" || key.find("healthy") != std::string::npos ||
        key == "uplink.write_region") {
      continue;
    }
    EXPECT_EQ(text, std::to_string(static_cast<int64_t>(At(now, key)))) << key;
    ++compared;
  }
  EXPECT_GE(compared, 10) << dom;
  EXPECT_NE(dom.find("data-key=\"uplink.write_region\">eu<"), std::string::npos);
  EXPECT_NE(dom.find("data-history-points"), std::string::npos) << "charts were drawn";

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
  EXPECT_EQ(At(hub, "hub.entries_applied"), 3000) << hub.dump();
  EXPECT_EQ(At(hub, "store.remote_entries"), 3000) << "the count is current on a hub too";
  ASSERT_EQ(hub["hub"]["origins"].size(), 1u);
  EXPECT_EQ(At(hub, "hub.origins.0.high_water"), 3000);
  EXPECT_EQ(hub["hub"]["refusals"]["gap"], 0);
  std::string hub_metrics = Get(hub_port, "/metrics");
  EXPECT_TRUE(PromtoolAccepts(hub_metrics, dir.File("hub.prom")));
  EXPECT_NE(hub_metrics.find("edgesync_hub_entries_applied_total 3000\n"), std::string::npos) << hub_metrics;
  // One hub on SQLite holds every shard for good.
  EXPECT_NE(hub_metrics.find("edgesync_hub_shards_held 32\n"), std::string::npos) << hub_metrics;
  EXPECT_NE(hub_metrics.find("edgesync_hub_lease_renewal_age_seconds "), std::string::npos) << hub_metrics;
  std::string hub_status;
  ASSERT_EQ(Shell(std::string(EDGESYNC_BINARY) + " status --config " + eu.config(), dir.File("hub-status.txt"),
                  &hub_status),
            0);
  EXPECT_NE(hub_status.find("3000 readings applied"), std::string::npos) << hub_status;
  std::string hub_dom =
      Chromium("--virtual-time-budget=15000 --dump-dom", "http://127.0.0.1:" + std::to_string(hub_port) + "/",
               dir.File("chrome-hub"));
  EXPECT_NE(hub_dom.find("data-key=\"hub.entries_applied\">3000<"), std::string::npos) << hub_dom;
  Chromium("--virtual-time-budget=15000 --window-size=1280,1200 --screenshot=" + out + "/hub_status_page.png",
           "http://127.0.0.1:" + std::to_string(hub_port) + "/", dir.File("chrome-hub-shot"));

  // Stopped: the store's figures, read-only, marked as such.
  EXPECT_EQ(gw.Stop(), 0);
  json stopped = gw.Status();
  EXPECT_EQ(stopped["running"], false) << stopped.dump();
  EXPECT_NE(stopped.value("note", "").find("not running"), std::string::npos);
  EXPECT_EQ(At(stopped, "store.entries"), 3000);
  EXPECT_EQ(At(stopped, "upstream.checkpoint"), 3000);
  EXPECT_EQ(At(stopped, "backlog.readings"), 0);
  EXPECT_FALSE(stopped.contains("ingest"));
}

}  // namespace
}  // namespace edgesync::test

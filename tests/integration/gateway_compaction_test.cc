// Compaction in the `edgesync gateway` program, with real parts: sensors (a
// publishing process) -> local Mosquitto -> gateway -> region hub. Once the
// region acknowledged them, the gateway's retention worker compacts its
// readings into per-series blocks (status.json counts it), and what people
// and consumers read stays the same: `edgesync query` (while the gateway
// runs and after it stopped) and `edgesync feed` from the beginning.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/integration/sync_sites.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/reading_tally.h"

namespace edgesync::test {
namespace {

nlohmann::json StatusOf(const std::string& dir) {
  nlohmann::json j = nlohmann::json::parse(ReadAll(dir + "/status.json"), nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

int64_t Field(const std::string& dir, const char* section, const char* key) {
  nlohmann::json j = StatusOf(dir);
  if (!j.contains(section) || !j[section].is_object() || !j[section].contains(key)) return 0;
  return j[section][key].is_number() ? j[section][key].get<int64_t>() : 0;
}

std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.is_object()) v.push_back(j);
  }
  return v;
}

// Runs `edgesync ARGS...`; its output in *out.
int Cli(const TempDir& dir, std::vector<std::string> args, std::string* out) {
  static int runs = 0;
  const std::string log = dir.File("cli-" + std::to_string(runs++) + ".txt");
  args.insert(args.begin(), EDGESYNC_BINARY);
  Process p;
  if (!p.Start(args, log)) return -1;
  int rc = p.Wait(60000);
  *out = ReadAll(log);
  return rc;
}

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Every device's readings through `edgesync query` (JSON lines, one per row).
void ExpectEveryReading(const TempDir& dir, const std::string& config) {
  for (int d = 0; d < 10; ++d) {
    std::string out;
    ASSERT_EQ(Cli(dir, {"query", "-c", config, "--device", "cmp-" + std::to_string(d), "--from", "0", "--limit",
                        "100000", "--format", "json"},
                  &out),
              0)
        << out;
    EXPECT_EQ(CountLines(out, "\"lsn\""), 300u) << "device cmp-" << d << ":\n" << out.substr(0, 2000);
  }
}

TEST(GatewayCompactionTest, CompactsAcknowledgedReadingsAndReadersSeeTheSame) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  const std::string gw = dir.path() + "/gw";
  RegionSite::MakeDir(gw);
  const std::string config = gw + "/gateway.toml";
  std::ofstream(config) << "[gateway]\nid = \"gw-cmp\"\ndata_dir = " << Q(gw) << "\n\n"
                        << "[store]\ncompact_after_s = 0\ncompact_span_readings = 1000\ncompact_always = true\nretention_interval_s = 1\n\n"
                        << "[ingest]\nbroker_uri = " << Q(local.uri())
                        << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
                        << "[uplink]\nack_timeout_ms = 2000\nbackoff_base_ms = 50\nbackoff_max_ms = 500\n"
                        << "probe_interval_ms = 200\n\n"
                        << "[[region]]\nname = \"eu\"\nuri = " << Q(eu.broker().uri()) << "\n";
  Process gateway;
  ASSERT_TRUE(gateway.Start({EDGESYNC_BINARY, "gateway", "--config", config}, gw + "/gateway.log"));
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json j = StatusOf(gw);
        return j.contains("ingest_mqtt") && j["ingest_mqtt"].value("connected", false);
      },
      60000))
      << ReadAll(gw + "/gateway.log");
  SleepMs(500);  // the subscription exists before the sensors publish
  Process pub;
  ASSERT_TRUE(pub.Start({EDGESYNC_PUBLISHER, local.uri(), "sensors-cmp", "10", "300", "cmp-", "1800000000000", "0"}));
  ASSERT_EQ(pub.Wait(120000), 0);
  ASSERT_TRUE(WaitFor([&] { return Field(gw, "uplink", "checkpoint") == 3000; }, 60000))
      << ReadAll(gw + "/gateway.log");
  // Spans close at 1,000 readings: at least two of the three thousand.
  ASSERT_TRUE(WaitFor([&] { return Field(gw, "retention", "compacted_readings") >= 2000; }, 60000))
      << StatusOf(gw).dump(2);
  EXPECT_GE(Field(gw, "retention", "compacted_spans"), 2);
  EXPECT_GT(Field(gw, "retention", "compacted_bytes_before"), 0);
  EXPECT_GT(Field(gw, "retention", "compacted_bytes_after"), 0);
  EXPECT_EQ(Field(gw, "retention", "errors"), 0);
  EXPECT_EQ(Field(gw, "retention", "readings_pruned"), 0) << "compaction keeps every reading";
  ExpectEveryReading(dir, config);  // read-only, beside the running gateway
  EXPECT_EQ(gateway.Stop(10000), 0);
  EXPECT_EQ(StoreStatsOf(gw + "/store.db").entries, 3000);
  ExpectEveryReading(dir, config);
  // A consumer of the range feed from the beginning: every reading once.
  std::string out;
  ASSERT_EQ(Cli(dir, {"feed", "-c", config, "--list"}, &out), 0) << out;
  size_t fed = 0;
  for (const auto& line : JsonLines(out)) {
    std::string from = "beginning";
    for (int guard = 0; guard < 100; ++guard) {
      std::string page;
      ASSERT_EQ(Cli(dir, {"feed", "-c", config, "--range", std::to_string(line["range"].get<int>()), "--from", from,
                          "--max", "700"},
                    &page),
                0)
          << page;
      auto lines = JsonLines(page);
      ASSERT_FALSE(lines.empty());
      fed += lines.size() - 1;
      if (lines.back()["entries"] == 0) break;
      from = lines.back()["continuation"];
    }
  }
  EXPECT_EQ(fed, 3000u);
  EXPECT_EQ(eu.Contents().size(), 3000u);
}

}  // namespace
}  // namespace edgesync::test

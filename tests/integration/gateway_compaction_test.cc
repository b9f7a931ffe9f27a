// Compaction in the `edgesync gateway` program, with real parts: sensors (a
// publishing process) -> local Mosquitto -> gateway -> region hub. Once the
// region acknowledged them, the gateway's retention worker compacts its
// readings into per-series blocks (status.json counts it), and what people
// and consumers read stays the same: `edgesync query` (while the gateway
// runs and after it stopped) and `edgesync feed` from the beginning.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/broker.h"
#include "tests/support/cli_run.h"
#include "tests/support/gateway_program.h"
#include "tests/support/process.h"
#include "tests/support/reading_tally.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

// Runs `edgesync ARGS...`; its output in *out.
int Cli(const TempDir& dir, std::vector<std::string> args, std::string* out) {
  static int runs = 0;
  return RunEdgesync(std::move(args), dir.File("cli-" + std::to_string(runs++) + ".txt"), out);
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
  GatewayProgram gw(dir.path(), "gw-cmp", local.uri(), {&eu},
                    "[store]\ncompact_after_s = 0\ncompact_span_readings = 1000\ncompact_always = true\n"
                    "retention_interval_s = 1\n");
  const std::string config = gw.config();
  ASSERT_TRUE(gw.StartWithIngest());
  ASSERT_EQ(Publish(local.uri(), "sensors-cmp", 10, 300, "cmp-"), 0);
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kUplinkCheckpoint) == 3000; }, 60000)) << gw.log();
  // Spans close at 1,000 readings: at least two of the three thousand.
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kRetentionCompactedReadings) >= 2000; }, 60000))
      << gw.StatusDump();
  EXPECT_GE(gw.Field(metrics::kRetentionCompactedSpans), 2);
  EXPECT_GT(gw.Field(metrics::kRetentionCompactedBytesBefore), 0);
  EXPECT_GT(gw.Field(metrics::kRetentionCompactedBytesAfter), 0);
  EXPECT_EQ(gw.Field(metrics::kRetentionErrors), 0);
  EXPECT_EQ(gw.Field(metrics::kRetentionReadingsPruned), 0) << "compaction keeps every reading";
  ExpectEveryReading(dir, config);  // read-only, beside the running gateway
  EXPECT_EQ(gw.Stop(), 0);
  EXPECT_EQ(StoreStatsOf(gw.store_path()).entries, 3000);
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

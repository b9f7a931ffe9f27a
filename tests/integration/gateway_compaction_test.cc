// Compaction in the `edgesync gateway` program, with real parts: sensors (a
// publishing process) -> local Mosquitto -> gateway -> region hub. Once the
// region acknowledged them, the gateway's retention worker compacts its
// readings into per-series blocks (status.json counts it), and what people
// and consumers read stays the same: `edgesync query` (while the gateway
// runs and after it stopped) and `edgesync feed` from the beginning.
//
// The store decides its spans itself (no option sizes them): enough readings
// are sent to fill one whole span of store_options::kCompactSpanReadings, and
// a tail that stays in commit chunks, so readers cross from one to the other.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "store/store_defaults.h"
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

constexpr int kDevices = 10;
// One whole span and a tail of about a tenth of one.
constexpr int kPerDevice = static_cast<int>(store_options::kCompactSpanReadings * 11 / 10 / kDevices);
constexpr int64_t kReadings = int64_t{kDevices} * kPerDevice;

// Every device's readings through `edgesync query` (JSON lines, one per row).
void ExpectEveryReading(const TempDir& dir, const std::string& config) {
  for (int d = 0; d < kDevices; ++d) {
    std::string out;
    ASSERT_EQ(Cli(dir, {"query", "-c", config, "--device", "cmp-" + std::to_string(d), "--from", "0", "--limit",
                        "100000", "--format", "json"},
                  &out),
              0)
        << out;
    EXPECT_EQ(CountLines(out, "\"lsn\""), static_cast<size_t>(kPerDevice))
        << "device cmp-" << d << ":\n"
        << out.substr(0, 2000);
  }
}

TEST(GatewayCompactionTest, CompactsAcknowledgedReadingsAndReadersSeeTheSame) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  GatewayProgram gw(dir.path(), "gw-cmp", local.uri(), {&eu},
                    "[store]\ncompact_after_s = 0\nretention_interval_s = 1\n");
  const std::string config = gw.config();
  ASSERT_TRUE(gw.StartWithIngest());
  ASSERT_EQ(Publish(local.uri(), "sensors-cmp", kDevices, kPerDevice, "cmp-"), 0);
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kUplinkCheckpoint) == kReadings; }, 120000)) << gw.log();
  // A span closes once full (at most kCompactSpanReadings readings, cut at a
  // commit chunk's edge): the first one is, the tail is not.
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kRetentionCompactedSpans) >= 1; }, 60000)) << gw.StatusDump();
  EXPECT_EQ(gw.Field(metrics::kRetentionCompactedSpans), 1);
  EXPECT_GT(gw.Field(metrics::kRetentionCompactedReadings), store_options::kCompactSpanReadings * 9 / 10);
  EXPECT_LE(gw.Field(metrics::kRetentionCompactedReadings), store_options::kCompactSpanReadings);
  EXPECT_GT(gw.Field(metrics::kRetentionCompactedBytesBefore), 0);
  EXPECT_GT(gw.Field(metrics::kRetentionCompactedBytesAfter), 0);
  EXPECT_LT(gw.Field(metrics::kRetentionCompactedBytesAfter), gw.Field(metrics::kRetentionCompactedBytesBefore))
      << "a span is compacted only where that makes it smaller";
  EXPECT_EQ(gw.Field(metrics::kRetentionErrors), 0);
  EXPECT_EQ(gw.Field(metrics::kRetentionReadingsPruned), 0) << "compaction keeps every reading";
  ExpectEveryReading(dir, config);  // read-only, beside the running gateway
  EXPECT_EQ(gw.Stop(), 0);
  EXPECT_EQ(StoreStatsOf(gw.store_path()).entries, kReadings);
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
                          "--max", "7000"},
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
  EXPECT_EQ(fed, static_cast<size_t>(kReadings));
  EXPECT_EQ(eu.Contents().size(), static_cast<size_t>(kReadings));
}

}  // namespace
}  // namespace edgesync::test

// `edgesync status` of a region hub that is not running: the figures come
// from its store, and every view still names the hub's region.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cli_run.h"
#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/status_text_lines.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

TEST(StatusStoppedHubTest, EveryViewNamesTheRegion) {
  TempDir dir;
  RegionSite eu(dir.path(), "eu-west");
  ASSERT_TRUE(eu.Start());
  // Up (its store made, its status file written), then stopped gracefully.
  const std::string status_path = dir.path() + "/eu-west/hub/status.json";
  ASSERT_TRUE(WaitFor([&] { return ReadStatusFile(status_path).value("running", false); }, 60000)) << eu.hub_log();
  ASSERT_EQ(eu.StopHub(), 0);
  std::string out;
  ASSERT_EQ(RunEdgesync({"status", "--json", "-c", eu.config()}, dir.File("json.txt"), &out), 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_FALSE(j.value("running", true));
  EXPECT_EQ(j.value("role", ""), "region");
  EXPECT_EQ(j["hub"].value("region", ""), "eu-west") << out;
  ASSERT_EQ(RunEdgesync({"status", "--line", "-c", eu.config()}, dir.File("line.txt"), &out), 0) << out;
  EXPECT_EQ(out.rfind("region eu-west |", 0), 0u) << out;
  EXPECT_NE(out.find("not running"), std::string::npos) << out;
  ASSERT_EQ(RunEdgesync({"status", "-c", eu.config()}, dir.File("text.txt"), &out), 0) << out;
  ASSERT_FALSE(StatusTextLines(out).empty()) << out;
  EXPECT_EQ(StatusTextLines(out)[0].group, "role") << out;
  EXPECT_EQ(StatusTextLines(out)[0].name, "region eu-west (not running)") << out;
}

}  // namespace
}  // namespace edgesync::test

// `edgesync reidentify` on a gateway whose store holds readings, some
// acknowledged by its region and some not: with the program, a real local
// Mosquitto and a real region hub. Every reading stays queryable on the
// gateway, and the region holds every LSN exactly once: the acknowledged
// ones under the old origin, the rest under the new one.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "tests/support/broker.h"
#include "tests/support/cli_run.h"
#include "tests/support/gateway_program.h"
#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

void SetGatewayId(const std::string& config, const std::string& from, const std::string& to) {
  std::string text = ReadAll(config);
  const std::string line = "id = \"" + from + "\"";
  size_t at = text.find(line);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, line.size(), "id = \"" + to + "\"");
  std::ofstream(config) << text;
}

TEST(ReidentifyTest, ReadingsBeforeAndAfterStayQueryableAndHeldByTheRegion) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  GatewayProgram gw(dir.path(), "gw-old", local.uri(), {&eu});
  int cli_runs = 0;
  auto cli = [&](std::vector<std::string> args, std::string* out) {
    return RunEdgesync(std::move(args), dir.File("cli-" + std::to_string(cli_runs++) + ".txt"), out);
  };
  auto rows = [&](const std::string& device) {
    std::string out;
    EXPECT_EQ(cli({"query", "-c", gw.config(), "--device", device, "--format", "json", "--limit", "1000"}, &out), 0)
        << out;
    return JsonLines(out);
  };

  // Acknowledged by the region under the old origin.
  ASSERT_TRUE(gw.StartWithIngest());
  ASSERT_EQ(Publish(local.uri(), "sensors-1", 2, 50, "acked-"), 0);
  ASSERT_TRUE(WaitFor([&] { return gw.CaughtUp(100); }, 60000)) << gw.StatusLine() << gw.log();
  // Stored while the region is down: not acknowledged at the re-identification.
  ASSERT_EQ(eu.StopHub(), 0);
  ASSERT_EQ(Publish(local.uri(), "sensors-2", 2, 50, "pending-"), 0);
  ASSERT_TRUE(WaitFor([&] { return gw.StatusLine().rfind("ingested 200 ", 0) == 0; }, 60000)) << gw.StatusLine();
  ASSERT_EQ(gw.Stop(), 0);
  std::string old_origin;
  {
    std::string out;
    ASSERT_EQ(cli({"status", "--json", "-c", gw.config()}, &out), 0) << out;
    old_origin = nlohmann::json::parse(out)["store"].value("origin", "");
  }
  ASSERT_EQ(old_origin.rfind("gw-old/", 0), 0u) << old_origin;

  // The new id in the config: the gateway refuses the store and says how.
  SetGatewayId(gw.config(), "gw-old", "gw-new");
  std::string out;
  EXPECT_NE(cli({"gateway", "-c", gw.config()}, &out), 0);
  EXPECT_NE(out.find("holds its readings"), std::string::npos) << out;
  EXPECT_NE(out.find("edgesync reidentify"), std::string::npos) << out;
  ASSERT_EQ(cli({"reidentify", "-c", gw.config()}, &out), 0) << out;
  EXPECT_NE(out.find("every reading kept"), std::string::npos) << out;

  ASSERT_TRUE(eu.StartHub());
  ASSERT_TRUE(gw.StartWithIngest());
  ASSERT_EQ(Publish(local.uri(), "sensors-3", 2, 50, "after-"), 0);
  ASSERT_TRUE(WaitFor([&] { return gw.CaughtUp(300); }, 60000)) << gw.StatusLine() << gw.log();
  // The gateway's feed puller has read the whole region feed, which holds
  // the old origin's readings: they must not come back as a second copy.
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = ReadStatusFile(dir.path() + "/gw-old/status.json");
        if (!s.contains("read_view") || s["read_view"]["regions"].empty()) return false;
        const nlohmann::json& r = s["read_view"]["regions"][0];
        return r.value("head", int64_t{0}) >= 300 && r.value("lag", int64_t{-1}) == 0;
      },
      60000))
      << gw.StatusDump();
  ASSERT_EQ(gw.Stop(), 0);

  // Locally: every reading once, as the store's own (now the new origin's).
  std::string new_origin;
  for (const char* device : {"acked-0", "acked-1", "pending-0", "pending-1", "after-0", "after-1"}) {
    std::vector<nlohmann::json> got = rows(device);
    EXPECT_EQ(got.size(), 50u) << device;
    std::set<uint64_t> lsns;
    for (const nlohmann::json& r : got) {
      lsns.insert(r.value("lsn", uint64_t{0}));
      new_origin = r.value("origin", "");
      EXPECT_EQ(new_origin.rfind("gw-new/", 0), 0u) << device << ": " << r.dump();
    }
    EXPECT_EQ(lsns.size(), 50u) << device;
  }
  EXPECT_NE(new_origin.substr(7), old_origin.substr(7)) << "a new epoch";

  // The region: LSNs 1..100 (acknowledged before) under the old origin,
  // 101..300 under the new one, each once.
  std::map<std::string, std::set<uint64_t>> held;
  for (const auto& [key, count] : eu.Contents()) {
    EXPECT_EQ(count, 1) << key.first << " LSN " << key.second;
    held[key.first].insert(key.second);
  }
  ASSERT_EQ(held.size(), 2u);
  ASSERT_EQ(held[old_origin].size(), 100u);
  EXPECT_EQ(*held[old_origin].begin(), 1u);
  EXPECT_EQ(*held[old_origin].rbegin(), 100u);
  ASSERT_EQ(held[new_origin].size(), 200u);
  EXPECT_EQ(*held[new_origin].begin(), 101u);
  EXPECT_EQ(*held[new_origin].rbegin(), 300u);
}

}  // namespace
}  // namespace edgesync::test

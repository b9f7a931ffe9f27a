// `edgesync query` and `edgesync feed` against a real store file, run as the
// real program.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "store/store.h"
#include "tests/support/process.h"

namespace edgesync::test {
namespace {

class StoreCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.File("edgesync.toml");
    WriteAll(config_, "[gateway]\nid = \"gw-cli\"\ndata_dir = \"" + dir_.path() + "\"\n");
  }
  // Runs edgesync with args; returns the exit code, output in *out.
  int Run(std::vector<std::string> args, std::string* out) {
    args.insert(args.begin(), EDGESYNC_BINARY);
    std::string log = dir_.File("out-" + std::to_string(runs_++) + ".txt");
    Process p;
    EXPECT_TRUE(p.Start(args, log));
    int rc = p.Wait(20000);
    *out = ReadAll(log);
    return rc;
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
  void Fill() {
    StoreOptions o;
    o.path = dir_.File("store.db");
    o.gateway_id = "gw-cli";
    o.initial_ranges = 2;
    std::unique_ptr<Store> s;
    ASSERT_TRUE(Store::Open(o, &s).ok());
    std::vector<Reading> v;
    for (int i = 0; i < 20; ++i) v.push_back(Reading{"dev" + std::to_string(i % 4), "temp", 1000 + i, i * 1.5, "C", 0});
    AppendResult r;
    ASSERT_TRUE(s->AppendReadings(v, &r).ok());
    uint64_t lsn = 0;
    ASSERT_TRUE(s->UpsertDevice(DeviceRecord{"dev1", "Boiler", "cellar", "C", false}, &lsn).ok());
  }

  TempDir dir_;
  std::string config_;
  int runs_ = 0;
};

TEST_F(StoreCliTest, QueryPrintsRowsOfOneDevice) {
  Fill();
  std::string out;
  ASSERT_EQ(Run({"query", "-c", config_, "--device", "dev1", "--from", "1005"}, &out), 0) << out;
  auto rows = JsonLines(out);
  ASSERT_EQ(rows.size(), 4u) << out;
  EXPECT_EQ(rows[0]["device"], "dev1");
  EXPECT_EQ(rows[0]["ts"], 1005);
  EXPECT_EQ(rows[0]["unit"], "C");
  EXPECT_EQ(rows[0]["local"], true);
  EXPECT_EQ(rows[0]["lsn"], 6);
}

TEST_F(StoreCliTest, FeedListsRangesAndPagesWithContinuation) {
  Fill();
  std::string out;
  ASSERT_EQ(Run({"feed", "-c", config_, "--list"}, &out), 0) << out;
  auto ranges = JsonLines(out);
  ASSERT_EQ(ranges.size(), 2u) << out;
  size_t total = 0;
  for (const auto& r : ranges) {
    std::string from = "beginning";
    for (int guard = 0; guard < 100; ++guard) {
      ASSERT_EQ(Run({"feed", "-c", config_, "--range", std::to_string(r["range"].get<int>()), "--from", from, "--max",
                     "3"},
                    &out),
                0)
          << out;
      auto lines = JsonLines(out);
      ASSERT_FALSE(lines.empty());
      const auto& tail = lines.back();
      ASSERT_TRUE(tail.contains("continuation")) << out;
      total += lines.size() - 1;
      if (tail["entries"] == 0) break;
      from = tail["continuation"];
    }
  }
  EXPECT_EQ(total, 21u);  // 20 readings and one device record
}

TEST_F(StoreCliTest, ErrorsGoToStderrWithNonZeroExit) {
  std::string out;
  EXPECT_NE(Run({"query", "-c", config_, "--device", "dev1"}, &out), 0);
  EXPECT_NE(out.find("no store"), std::string::npos) << out;
  Fill();
  EXPECT_NE(Run({"feed", "-c", config_, "--range", "1", "--from", "v1.garbage"}, &out), 0);
  EXPECT_NE(out.find("InvalidArgument"), std::string::npos) << out;
  EXPECT_NE(Run({"feed", "-c", config_}, &out), 0);
  EXPECT_NE(Run({"query", "-c", config_, "--device", "a/b"}, &out), 0);
}

}  // namespace
}  // namespace edgesync::test

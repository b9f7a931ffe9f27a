// `edgesync query`, `devices` and `feed` against a real store file, run as
// the real program.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <signal.h>

#include "store/store.h"
#include "tests/support/cli_run.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

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
    return RunEdgesync(std::move(args), dir_.File("out-" + std::to_string(runs_++) + ".txt"), out);
  }
  // Same, with stdout and stderr apart.
  int Run2(std::vector<std::string> args, std::string* out, std::string* err) {
    std::string cmd = EDGESYNC_BINARY;
    for (const auto& a : args) cmd += " '" + a + "'";
    std::string o = dir_.File("o-" + std::to_string(runs_)), e = dir_.File("e-" + std::to_string(runs_++));
    Process p;
    EXPECT_TRUE(p.Start({"/bin/sh", "-c", cmd + " >" + o + " 2>" + e}));
    int rc = p.Wait(20000);
    *out = ReadAll(o);
    *err = ReadAll(e);
    return rc;
  }
  void Fill() {
    StoreOptions o;
    o.path = dir_.File("store.db");
    o.gateway_id = "gw-cli";
    o.initial_ranges = 2;
    std::unique_ptr<Store> s;
    ASSERT_OK(Store::Open(o, &s));
    std::vector<Reading> v;
    for (int i = 0; i < 20; ++i) v.push_back(Reading{"dev" + std::to_string(i % 4), "temp", 1000 + i, i * 1.5, "C", 0});
    AppendResult r;
    ASSERT_OK(s->AppendReadings(v, &r));
    uint64_t lsn = 0;
    ASSERT_OK(s->UpsertDevice(DeviceRecord{"dev1", "Boiler", "cellar", "C", false}, &lsn));
  }

  std::string RunOut(std::vector<std::string> args) {
    std::string out;
    Run(std::move(args), &out);
    return out;
  }

  TempDir dir_;
  std::string config_;
  int runs_ = 0;
};

TEST_F(StoreCliTest, QueryPrintsRowsOfOneDeviceNewestFirst) {
  Fill();
  std::string out;
  ASSERT_EQ(Run({"query", "-c", config_, "--device", "dev1", "--from", "1005"}, &out), 0) << out;
  auto rows = JsonLines(out);
  ASSERT_EQ(rows.size(), 4u) << out;
  EXPECT_EQ(rows[0]["device"], "dev1");
  EXPECT_EQ(rows[0]["ts"], 1017);
  EXPECT_EQ(rows[0]["unit"], "C");
  EXPECT_EQ(rows[0]["local"], true);
  EXPECT_EQ(rows[0]["lsn"], 18);
  EXPECT_EQ(rows[3]["ts"], 1005);
  ASSERT_EQ(Run({"query", "-c", config_, "--device", "dev1", "--from", "1005", "--oldest-first"}, &out), 0) << out;
  EXPECT_EQ(JsonLines(out)[0]["ts"], 1005);
}

TEST_F(StoreCliTest, QueryLimitKeepsTheNewestAndSaysWhenItCut) {
  Fill();
  std::string out, err;
  ASSERT_EQ(Run2({"query", "-c", config_, "--device", "dev2", "--limit", "2"}, &out, &err), 0) << err;
  auto rows = JsonLines(out);
  ASSERT_EQ(rows.size(), 2u) << out;
  EXPECT_EQ(rows[0]["ts"], 1018);
  EXPECT_EQ(rows[1]["ts"], 1014);
  EXPECT_NE(err.find("showing the newest 2 rows; more match"), std::string::npos) << err;
  // Exactly as many rows as the limit: nothing was cut, no note.
  ASSERT_EQ(Run2({"query", "-c", config_, "--device", "dev2", "--limit", "5"}, &out, &err), 0) << err;
  EXPECT_EQ(JsonLines(out).size(), 5u);
  EXPECT_EQ(err, "");
  EXPECT_NE(Run2({"query", "-c", config_, "--device", "dev2", "--limit", "5000000"}, &out, &err), 0);
  EXPECT_NE(err.find("--limit"), std::string::npos) << err;
}

TEST_F(StoreCliTest, QueryFormatsAndTimes) {
  Fill();
  std::string out, err;
  // 1000 ms after the epoch + i: RFC 3339 bounds.
  ASSERT_EQ(Run2({"query", "-c", config_, "--device", "dev3", "--from", "1970-01-01T00:00:01.007Z", "--to",
                  "1970-01-01T01:00:01.015+01:00", "--format", "csv"},
                 &out, &err),
            0)
      << err;
  EXPECT_EQ(out,
            "time,device,metric,value,unit,quality,origin,lsn,local,clock\r\n"
            "1970-01-01T00:00:01.011Z,dev3,temp,16.5,C,0," +
                JsonLines(RunOut({"query", "-c", config_, "--device", "dev3", "--limit", "1"}))[0]["origin"]
                    .get<std::string>() +
                ",12,true,sensor\r\n"
                "1970-01-01T00:00:01.007Z,dev3,temp,10.5,C,0," +
                JsonLines(RunOut({"query", "-c", config_, "--device", "dev3", "--limit", "1"}))[0]["origin"]
                    .get<std::string>() +
                ",8,true,sensor\r\n");
  ASSERT_EQ(Run2({"query", "-c", config_, "--device", "dev3", "--format", "table", "--limit", "1"}, &out, &err), 0);
  EXPECT_EQ(out.rfind("time                      device  metric  value", 0), 0u) << out;
  EXPECT_NE(out.find("1970-01-01T00:00:01.019Z  dev3    temp    28.5"), std::string::npos) << out;
  // Relative times: everything in the store is from 1970, long before -1h.
  ASSERT_EQ(Run2({"query", "-c", config_, "--device", "dev3", "--from", "-1h"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "");
  EXPECT_NE(Run2({"query", "-c", config_, "--device", "dev3", "--from", "yesterday"}, &out, &err), 0);
  EXPECT_NE(err.find("RFC 3339"), std::string::npos) << err;
  EXPECT_NE(Run2({"query", "-c", config_, "--device", "dev3", "--format", "xml"}, &out, &err), 0);
}

TEST_F(StoreCliTest, DevicesListsLocalAndReadViewDevices) {
  Fill();
  {
    StoreOptions o;
    o.path = dir_.File("store.db");
    std::unique_ptr<Store> s;
    ASSERT_OK(Store::Open(o, &s));
    RemoteEntry e;
    e.origin = Origin{"gw-other", std::string(32, 'b')};
    e.origin_lsn = 7;
    e.entry.lsn = 7;
    e.entry.kind = ChangeEntry::Kind::kReading;
    e.entry.reading = Reading{"far-1", "hum", 5000, 40, "%", 0};
    int64_t applied = 0;
    ASSERT_OK(s->ApplyRemote({e}, &applied));
    ASSERT_EQ(applied, 1);
  }
  std::string out;
  ASSERT_EQ(Run({"devices", "-c", config_, "--format", "json"}, &out), 0) << out;
  auto rows = JsonLines(out);
  ASSERT_EQ(rows.size(), 5u) << out;
  EXPECT_EQ(rows[0]["device"], "dev0");
  EXPECT_EQ(rows[0]["readings"], 5);
  EXPECT_EQ(rows[0]["first_ts"], 1000);
  EXPECT_EQ(rows[0]["last_ts"], 1016);
  EXPECT_EQ(rows[0]["local"], true);
  EXPECT_EQ(rows[4]["device"], "far-1");
  EXPECT_EQ(rows[4]["origin"], "gw-other/" + std::string(32, 'b'));
  EXPECT_EQ(rows[4]["local"], false);
  EXPECT_EQ(rows[4]["readings"], 1);
  ASSERT_EQ(Run({"devices", "-c", config_}, &out), 0) << out;
  EXPECT_EQ(out.rfind("device  origin", 0), 0u) << out;
  EXPECT_NE(out.find("far-1   gw-other/bbbb"), std::string::npos) << out;
}

TEST_F(StoreCliTest, FeedFollowPrintsChangesAsTheyArrive) {
  Fill();
  std::string log = dir_.File("follow.txt");
  Process follow;
  ASSERT_TRUE(follow.Start({"/bin/sh", "-c",
                            "exec " + std::string(EDGESYNC_BINARY) + " feed -c " + config_ +
                                " --range 1 --from now --follow --poll-ms 50 >" + log + " 2>&1"}));
  SleepMs(1000);  // it has read the head ("now") and waits
  StoreOptions o;
  o.path = dir_.File("store.db");
  std::unique_ptr<Store> s;
  ASSERT_OK(Store::Open(o, &s));
  std::vector<Reading> v;
  for (int i = 0; i < 40; ++i) v.push_back(Reading{"late" + std::to_string(i), "temp", 9000 + i, 1, "", 0});
  AppendResult r;
  ASSERT_OK(s->AppendReadings(v, &r));
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  size_t in_range_1 = 0;
  for (const Reading& x : v) {
    for (const RangeInfo& ri : ranges) {
      if (ri.id == 1 && ri.Contains(PartitionHash(x.device_id))) ++in_range_1;
    }
  }
  ASSERT_GT(in_range_1, 0u);
  ASSERT_TRUE(WaitFor(
      [&] {
        size_t n = 0;
        for (const auto& j : JsonLines(ReadAll(log))) n += j.contains("lsn") ? 1 : 0;
        return n == in_range_1;
      },
      20000))
      << ReadAll(log);
  EXPECT_TRUE(follow.running()) << "it keeps following";
  follow.Signal(SIGTERM);
  EXPECT_EQ(follow.Wait(10000), 0);
  uint64_t last = 0;
  for (const auto& j : JsonLines(ReadAll(log))) {
    if (!j.contains("lsn")) continue;
    EXPECT_GT(j["lsn"].get<uint64_t>(), last);
    EXPECT_GT(j["lsn"].get<uint64_t>(), 21u) << "only changes after --from now";
    last = j["lsn"];
  }
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

// `edgesync query`, `devices`, `feed` (once and --follow) and `status` of a
// stopped region hub, on a SQLite hub store and on a PostgreSQL one (a real
// server, tests/support/postgres.h) fed the same batches: the answers are
// the same, and they are what was fed. Run as the real program, which
// reaches PostgreSQL through its module as the region role does.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "platform/files.h"
#include "store/hub_store.h"
#include "store/store.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/cli_run.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/workload.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_text_lines.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL
using json = nlohmann::json;

const Origin kOrigins[] = {{"gw-north", "0123456789abcdef0123456789abcdef"},
                           {"gw-south", "fedcba9876543210fedcba9876543210"},
                           {"gw-east", "00000000000000000000000000000003"}};
constexpr size_t kBatch = 150;
constexpr size_t kBatchesPerOrigin = 4;

// One origin's log: sensor readings with a device record among them. Every
// origin has the same devices and timestamps, so rows of one instant come
// from several origins and their order is put to the test.
std::vector<ChangeEntry> OriginLog(size_t n) {
  SensorWorkload workload(4, 1780000000000);
  std::vector<ChangeEntry> log;
  for (uint64_t lsn = 1; lsn <= n; ++lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    if (lsn == 7) {
      e.kind = ChangeEntry::Kind::kDeviceUpsert;
      e.device = DeviceRecord{"dev-00001", "Boiler", "cellar", "C", false};
    } else {
      e.reading = workload.Next();
    }
    log.push_back(e);
  }
  return log;
}

class HubCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(MakeDirs(dir_.File("sqlite")));
    ASSERT_OK(MakeDirs(dir_.File("pg-hub")));
    pg_ = std::make_unique<Postgres>(dir_.File("pg"));
    ASSERT_TRUE(pg_->Start()) << pg_->log();
    ASSERT_TRUE(pg_->CreateDatabase("region")) << pg_->log();
    WriteAll(sqlite_config(), "[gateway]\ndata_dir = " + Quote(dir_.File("sqlite")) + "\n\n[hub]\nregion = \"eu\"\n");
    WriteAll(pg_config(), "[gateway]\ndata_dir = " + Quote(dir_.File("pg-hub")) + "\n\n[hub]\nregion = \"eu\"\n" +
                              "store = " + Quote(pg_->Uri("region")) + "\npassword_file = " +
                              Quote(pg_->password_file()) + "\n");
    for (size_t i = 0; i < std::size(kOrigins); ++i) logs_.push_back(OriginLog(kBatch * kBatchesPerOrigin));
  }
  void TearDown() override {
    if (pg_) pg_->Stop();
  }
  static std::string Quote(const std::string& s) { return "\"" + s + "\""; }
  std::string sqlite_config() const { return dir_.File("sqlite.toml"); }
  std::string pg_config() const { return dir_.File("pg.toml"); }

  // Applies batches [from, to) of every origin, origins taking turns, to
  // both stores, as a hub would (the SQLite one as `edgesync region` opens it).
  void Feed(size_t from, size_t to) {
    StoreOptions so;
    so.path = dir_.File("sqlite/store.db");
    so.gateway_id = "hub-eu";
    std::unique_ptr<SqliteHubStore> opened;
    ASSERT_OK(OpenSqliteHubStore(so, &opened));
    std::unique_ptr<HubStore> sqlite = std::move(opened);
    std::unique_ptr<HubStore> pg;
    Status st = OpenPostgresHubStore(HubStoreOptionsFor(*pg_, "region"), &pg);
    ASSERT_OK(st);
    for (size_t b = from; b < to; ++b) {
      for (size_t i = 0; i < logs_.size(); ++i) {
        std::vector<ChangeEntry> part(logs_[i].begin() + b * kBatch, logs_[i].begin() + (b + 1) * kBatch);
        OriginBatch batch;
        batch.origin = kOrigins[i];
        batch.first_lsn = part.front().lsn;
        batch.entries = &part;
        for (HubStore* hub : {sqlite.get(), pg.get()}) {
          ApplyResult r;
          st = hub->Apply(batch, &r);
          ASSERT_OK(st) << hub->backend() << ": " << st.ToString();
          ASSERT_EQ(r.outcome, ApplyOutcome::kApplied) << hub->backend() << ": " << r.detail;
        }
      }
    }
  }

  // Runs edgesync; stdout in *out, stderr in *err.
  int Run(std::vector<std::string> args, std::string* out, std::string* err = nullptr) {
    std::string cmd = EDGESYNC_BINARY;
    for (const auto& a : args) cmd += " '" + a + "'";
    std::string o = dir_.File("o-" + std::to_string(runs_)), e = dir_.File("e-" + std::to_string(runs_++));
    Process p;
    EXPECT_TRUE(p.Start({"/bin/sh", "-c", cmd + " >" + o + " 2>" + e}));
    int rc = p.Wait(60000);
    *out = ReadAll(o);
    if (err) *err = ReadAll(e);
    return rc;
  }
  // The same command against both hubs: its output on each, which must
  // succeed.
  std::pair<std::string, std::string> Both(std::vector<std::string> args) {
    std::string a, b, ea, eb;
    std::vector<std::string> on_sqlite = args, on_pg = args;
    on_sqlite.insert(on_sqlite.begin() + 1, {"-c", sqlite_config()});
    on_pg.insert(on_pg.begin() + 1, {"-c", pg_config()});
    EXPECT_EQ(Run(on_sqlite, &a, &ea), 0) << ea;
    EXPECT_EQ(Run(on_pg, &b, &eb), 0) << eb;
    return {a, b};
  }

  size_t total() const { return logs_.size() * kBatch * kBatchesPerOrigin; }

  TempDir dir_;
  std::unique_ptr<Postgres> pg_;
  std::vector<std::vector<ChangeEntry>> logs_;
  int runs_ = 0;
};

// A feed's lines without what the backend numbers itself (shard sequence
// numbers, continuations), sorted: the entries as a set.
std::vector<std::string> FeedEntries(const std::string& out) {
  std::vector<std::string> entries;
  for (json j : JsonLines(out)) {
    if (!j.contains("lsn")) continue;
    j.erase("seq");
    entries.push_back(j.dump());
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

TEST_F(HubCliTest, QueryDevicesFeedAndStatusAnswerTheSameOnSqliteAndPostgresql) {
  Feed(0, kBatchesPerOrigin);

  // devices: one row per (device, origin), all remote, counts as fed.
  auto [sqlite_devices, pg_devices] = Both({"devices", "--format", "json"});
  EXPECT_EQ(pg_devices, sqlite_devices);
  std::vector<json> devices = JsonLines(pg_devices);
  ASSERT_EQ(devices.size(), 4u * logs_.size()) << pg_devices;
  int64_t readings = 0;
  for (const json& d : devices) {
    EXPECT_FALSE(d["local"].get<bool>());
    readings += d["readings"].get<int64_t>();
  }
  EXPECT_EQ(readings, static_cast<int64_t>(total() - logs_.size())) << "every reading, no device record";

  // query: newest first, oldest first, a metric and a window, a cut.
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"query", "--device", "dev-00002", "--format", "json"},
           {"query", "--device", "dev-00002", "--oldest-first", "--format", "csv"},
           {"query", "--device", "dev-00003", "--metric", "humidity", "--from", "1780000010000", "--to", "1780000050000",
            "--format", "json"},
           {"query", "--device", "dev-00001", "--limit", "7", "--format", "table"}}) {
    auto [sqlite_rows, pg_rows] = Both(args);
    EXPECT_EQ(pg_rows, sqlite_rows) << args[2] << " " << args.back();
    EXPECT_FALSE(pg_rows.empty());
  }
  auto [newest, unused] = Both({"query", "--device", "dev-00002", "--format", "json"});
  std::vector<json> rows = JsonLines(newest);
  size_t expected = 0;
  for (const auto& log : logs_) {
    for (const ChangeEntry& e : log) expected += e.kind == ChangeEntry::Kind::kReading && e.reading.device_id == "dev-00002";
  }
  ASSERT_EQ(rows.size(), expected);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1]["ts"], rows[i]["ts"]);
  std::set<std::string> origins;
  for (const json& r : rows) origins.insert(r["origin"].get<std::string>());
  EXPECT_EQ(origins.size(), logs_.size()) << "every origin's rows of the device";

  // feed: every entry once, with its origin; each origin's in LSN order.
  auto [sqlite_feed, pg_feed] = Both({"feed", "--max", "100000"});
  EXPECT_EQ(FeedEntries(pg_feed), FeedEntries(sqlite_feed));
  EXPECT_EQ(FeedEntries(pg_feed).size(), total());
  std::map<std::string, uint64_t> last;
  for (const json& j : JsonLines(pg_feed)) {
    if (!j.contains("lsn")) continue;
    uint64_t& l = last[j["origin"].get<std::string>()];
    EXPECT_EQ(j["lsn"].get<uint64_t>(), l + 1) << j.dump();
    l = j["lsn"].get<uint64_t>();
  }
  EXPECT_NE(pg_feed.find("\"kind\":\"device-upsert\""), std::string::npos);

  // Paged: the continuation resumes where the page ended, on each backend.
  for (const std::string& config : {sqlite_config(), pg_config()}) {
    std::vector<std::string> seen;
    std::string from = "beginning";
    for (int pages = 0; pages < 100; ++pages) {
      std::string out, err;
      ASSERT_EQ(Run({"feed", "-c", config, "--from", from, "--max", "400"}, &out, &err), 0) << err;
      std::vector<std::string> page = FeedEntries(out);
      seen.insert(seen.end(), page.begin(), page.end());
      from = JsonLines(out).back()["continuation"].get<std::string>();
      if (page.empty()) break;
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, FeedEntries(pg_feed)) << config;
  }

  // status of the stopped hub: the region feed's figures.
  auto [sqlite_status, pg_status] = Both({"status", "--json"});
  json s = json::parse(sqlite_status), p = json::parse(pg_status);
  EXPECT_FALSE(p["running"].get<bool>());
  EXPECT_EQ(p["role"], "region");
  EXPECT_EQ(p["region_feed"]["backend"], "postgresql");
  EXPECT_EQ(s["region_feed"]["backend"], "sqlite");
  EXPECT_EQ(p["region_feed"]["entries"], s["region_feed"]["entries"]);
  EXPECT_EQ(p["region_feed"]["entries"].get<uint64_t>(), total());
  auto [sqlite_text, pg_text] = Both({"status"});
  EXPECT_EQ(test::StatusTextValue(pg_text, "region feed", "entries numbered"), std::to_string(total())) << pg_text;
  EXPECT_EQ(test::StatusTextValue(pg_text, "region feed", "store"), "postgresql") << pg_text;
}

TEST_F(HubCliTest, FeedFollowShowsWhatArrivesWhileItWaits) {
  Feed(0, 1);
  std::map<std::string, Process> followers;
  std::map<std::string, std::string> out;
  for (const std::string& config : {sqlite_config(), pg_config()}) {
    out[config] = dir_.File("follow-" + std::to_string(out.size()));
    ASSERT_TRUE(followers[config].Start({"/bin/sh", "-c",
                                         std::string("exec ") + EDGESYNC_BINARY + " feed -c '" + config +
                                             "' --follow --poll-ms 50 --max 100 >" + out[config]}));
  }
  auto entries = [&](const std::string& config) { return FeedEntries(ReadAll(out[config])).size(); };
  for (const auto& [config, file] : out) {
    ASSERT_TRUE(WaitFor([&] { return entries(config) == logs_.size() * kBatch; }, 60000)) << ReadAll(file);
  }
  Feed(1, kBatchesPerOrigin);  // while they follow
  for (const auto& [config, file] : out) {
    ASSERT_TRUE(WaitFor([&] { return entries(config) == total(); }, 60000)) << entries(config);
  }
  for (auto& [config, p] : followers) {
    p.Signal(SIGTERM);
    EXPECT_EQ(p.Wait(10000), 0);
  }
  EXPECT_EQ(FeedEntries(ReadAll(out[pg_config()])), FeedEntries(ReadAll(out[sqlite_config()])));
}

TEST_F(HubCliTest, AReaderOfTheHubStoreSaysWhatWentWrongInsteadOfAnEmptyRegion) {
  Feed(0, 1);
  std::string out, err;
  WriteAll(dir_.File("bad.toml"), "[gateway]\ndata_dir = " + Quote(dir_.File("pg-hub")) +
                                      "\n\n[hub]\nregion = \"eu\"\nstore = " + Quote(pg_->Uri("nosuchdb")) +
                                      "\npassword_file = " + Quote(pg_->password_file()) + "\n");
  EXPECT_NE(Run({"devices", "-c", dir_.File("bad.toml")}, &out, &err), 0);
  EXPECT_NE(err.find("nosuchdb"), std::string::npos) << err;
  EXPECT_EQ(err.find("store.db"), std::string::npos) << err;
  EXPECT_EQ(Run({"feed", "-c", pg_config(), "--from", "region:0000:00"}, &out, &err) == 0, false);
  EXPECT_NE(err.find("another hub store"), std::string::npos) << err;
}
#endif

}  // namespace
}  // namespace edgesync::test

// Several hubs share one region by shards (store/hub_store_leases.h): three
// `edgesync region` processes on one real PostgreSQL server and one real
// Mosquitto, eight gateways uplinking and pulling the region feed into their
// read views. Mid-run one hub is SIGKILLed (its shards are taken over after
// its leases expire) and later a fourth hub joins (it steals its share).
// Nothing is lost, nothing is applied twice, and every gateway's read view
// ends up with every other gateway's readings exactly once.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sync/feed_puller.h"
#include "sync/wire.h"
#include "tests/support/http_get.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_text_lines.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

// SQLite is one hub per store file: a second `edgesync region` on the same
// data folder is refused with a message saying what to do, and the first
// goes on applying.
TEST(HubShardsTest, ASecondHubOnOneSqliteStoreIsRefused) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(WaitFor([&] { return eu.hub_log().find("holding 32 of 32 shards") != std::string::npos; }, 30000))
      << eu.hub_log();
  std::string config = ReadAll(eu.config());
  config += "\n[metrics]\nlisten = \"\"\n";
  std::string second = tmp.File("second.toml");
  WriteAll(second, config);
  Process p;
  ASSERT_TRUE(p.Start({EDGESYNC_BINARY, "region", "--config", second}, tmp.File("second.log")));
  EXPECT_EQ(p.Wait(30000), 1) << ReadAll(tmp.File("second.log"));
  std::string log = ReadAll(tmp.File("second.log"));
  EXPECT_NE(log.find("another hub runs on the SQLite store"), std::string::npos) << log;
  EXPECT_NE(log.find("PostgreSQL"), std::string::npos) << log;
  EXPECT_TRUE(eu.hub_running());
  // The first hub still applies.
  auto store = OpenGatewayStore(tmp.File("gw.db"), "gw-1");
  SensorWorkload w(10, 1780000000000);
  Fill(store.get(), &w, 500);
  UplinkOptions uo = FastUplinkOptions("gw-1");
  uo.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink up(store.get(), uo);
  ASSERT_OK(up.Start());
  EXPECT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == store->LastLsn(); }, 60000)) << eu.hub_log();
  up.Stop();
}

#ifdef EDGESYNC_HAVE_POSTGRESQL
constexpr int kGateways = 8;
constexpr size_t kReadingsPerRound = 3000;
constexpr int kRounds = 4;

class HubProcess {
 public:
  // metrics_port: its /metrics and status page (0 = none).
  HubProcess(const std::string& root, const std::string& id, Broker* broker, Postgres* pg, int metrics_port = 0)
      : id_(id) {
    dir_ = root + "/" + id;
    RegionSite::MakeDir(dir_);
    const std::string listen = metrics_port > 0 ? "127.0.0.1:" + std::to_string(metrics_port) : "";
    std::ofstream(dir_ + "/hub.toml") << "[gateway]\ndata_dir = " << Q(dir_ + "/data") << "\nlog_level = \"info\"\n\n"
                                      << "[metrics]\nlisten = " << Q(listen) << "\n\n"
                                      << "[hub]\nregion = \"eu\"\nid = " << Q(id) << "\nlease_ttl_s = 3\n"
                                      << "broker_uri = " << Q(broker->uri()) << "\nstore = " << Q(pg->Uri("hub"))
                                      << "\npassword_file = " << Q(pg->password_file()) << "\n";
  }
  bool Start() { return process_.Start({EDGESYNC_BINARY, "region", "--config", config()}, log_path()); }
  std::string config() const { return dir_ + "/hub.toml"; }
  std::string log_path() const { return dir_ + "/hub.log"; }
  std::string log() const { return ReadAll(log_path()); }
  Process& process() { return process_; }

 private:
  std::string id_;
  std::string dir_;
  Process process_;
};

struct Gateway {
  std::string id;
  std::unique_ptr<Store> store;
  std::unique_ptr<SensorWorkload> workload;
  std::unique_ptr<Uplink> uplink;
  std::unique_ptr<FeedPuller> puller;
  size_t readings = 0;
};

// Readings of each other origin in the gateway's read view.
std::map<std::string, int64_t> ReadView(Store* store) {
  std::vector<DeviceSummary> devices;
  EXPECT_OK(store->ListDevices(&devices));
  std::map<std::string, int64_t> by_origin;
  for (const auto& d : devices) {
    if (!d.local) by_origin[d.origin.gateway_id] += d.readings;
  }
  return by_origin;
}

// Hubs that hold at least one shard, by the lease table.
int HubsHoldingShards(Postgres* pg) {
  std::string out;
  if (!pg->Query("hub", "SELECT count(DISTINCT owner) FROM es_shard_leases WHERE owner <> '' AND "
                 "expires_at > clock_timestamp()", &out)) {
    return -1;
  }
  return std::atoi(out.c_str());
}

// What every hub of a region shares here: one broker and one PostgreSQL
// with the hubs' database.
struct SharedRegion {
  explicit SharedRegion(const TempDir& tmp) : broker(tmp.File("broker")), pg(tmp.File("pg")) {}
  bool Start() { return broker.Start() && pg.Start() && pg.CreateDatabase("hub"); }
  Broker broker;
  Postgres pg;
};

std::string Owners(Postgres* pg) {
  std::string out;
  pg->Query("hub", "SELECT owner || '=' || count(*) FROM es_shard_leases GROUP BY owner ORDER BY owner", &out);
  return out;
}

// A sample's value in Prometheus text (-1 when absent).
double Sample(const std::string& metrics, const std::string& name) {
  size_t at = metrics.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::atof(metrics.c_str() + at + name.size() + 2);
}

// Each hub's lease figures in /metrics (checked by promtool) and in
// `edgesync status`: two hubs on one PostgreSQL share the 32 shards, the
// second steals its share from the first (which counts them handed over),
// and when the second stops the first takes them back.
TEST(HubShardsTest, HubsShowTheirShardsAndLeasesInMetricsAndStatus) {
  TempDir tmp;
  SharedRegion shared(tmp);
  ASSERT_TRUE(shared.Start()) << shared.pg.log();
  Broker& broker = shared.broker;
  Postgres& pg = shared.pg;
  const int port1 = FreePort();
  HubProcess h1(tmp.path(), "h1", &broker, &pg, port1);
  ASSERT_TRUE(h1.Start());
  ASSERT_TRUE(WaitForPort(port1, 60000)) << h1.log();
  ASSERT_TRUE(WaitFor([&] { return Sample(HttpGet(port1, "/metrics"), "edgesync_hub_shards_held") == 32; }, 60000))
      << HttpGet(port1, "/metrics") << h1.log();
  const int port2 = FreePort();
  HubProcess h2(tmp.path(), "h2", &broker, &pg, port2);
  ASSERT_TRUE(h2.Start());
  ASSERT_TRUE(WaitForPort(port2, 60000)) << h2.log();
  std::string m1, m2;
  // The first learns what it lost at its next lease round (ttl 3 s: one a second).
  ASSERT_TRUE(WaitFor(
      [&] {
        m1 = HttpGet(port1, "/metrics");
        m2 = HttpGet(port2, "/metrics");
        const double a = Sample(m1, "edgesync_hub_shards_held"), b = Sample(m2, "edgesync_hub_shards_held");
        return a > 0 && b > 0 && a + b == 32 && Sample(m1, "edgesync_hub_live_hubs") == 2;
      },
      60000))
      << m1 << m2 << Owners(&pg);
  std::string out;
  EXPECT_EQ(PromtoolCheck(m1, tmp.File("h1.prom"), &out), 0) << out;
  EXPECT_EQ(PromtoolCheck(m2, tmp.File("h2.prom"), &out), 0) << out;
  EXPECT_EQ(Sample(m1, "edgesync_hub_shard_takeovers_total"), 32) << m1;  // every shard was free
  EXPECT_GT(Sample(m2, "edgesync_hub_shard_steals_total"), 0) << m2;
  EXPECT_EQ(Sample(m1, "edgesync_hub_shard_handovers_total"), 32 - Sample(m1, "edgesync_hub_shards_held")) << m1;
  EXPECT_EQ(Sample(m1, "edgesync_hub_lease_renew_failures_total"), 0) << m1;
  const double age = Sample(m1, "edgesync_hub_lease_renewal_age_seconds");
  EXPECT_GE(age, 0) << m1;
  EXPECT_LT(age, 30) << "renewed every second (a third of lease_ttl_s), not tens of seconds ago\n" << m1;
  // The same figures in `edgesync status`.
  Process status;
  ASSERT_TRUE(status.Start({EDGESYNC_BINARY, "status", "--config", h2.config()}, tmp.File("status.txt")));
  ASSERT_EQ(status.Wait(60000), 0) << ReadAll(tmp.File("status.txt"));
  const std::string text = ReadAll(tmp.File("status.txt"));
  EXPECT_EQ(StatusTextValue(text, "shards", "hub id"), "h2") << text;
  EXPECT_EQ(StatusTextValue(text, "shards", "holds"),
            std::to_string(static_cast<int>(Sample(m2, "edgesync_hub_shards_held"))))
      << text;
  EXPECT_EQ(StatusTextValue(text, "shards", "in the region"), "32") << text;
  EXPECT_EQ(StatusTextValue(text, "shards", "live hubs"), "2") << text;
  EXPECT_EQ(StatusTextValue(text, "shards", "renew failures"), "0") << text;
  // SIGTERM hands h2's shards over; h1 takes them at its next round.
  EXPECT_EQ(h2.process().Stop(10000), 0) << h2.log();
  EXPECT_TRUE(WaitFor([&] { return Sample(HttpGet(port1, "/metrics"), "edgesync_hub_shards_held") == 32; }, 60000))
      << HttpGet(port1, "/metrics") << Owners(&pg);
  EXPECT_EQ(h1.process().Stop(10000), 0) << h1.log();
}

TEST(HubShardsTest, ThreeHubsOneKilledAndAFourthAddedLoseAndDuplicateNothing) {
  TempDir tmp;
  SharedRegion shared(tmp);
  ASSERT_TRUE(shared.Start()) << shared.pg.log();
  Broker& broker = shared.broker;
  Postgres& pg = shared.pg;
  std::vector<std::unique_ptr<HubProcess>> hubs;
  for (const char* id : {"h1", "h2", "h3", "h4"}) {
    hubs.push_back(std::make_unique<HubProcess>(tmp.path(), id, &broker, &pg));
  }
  // One after the other: each joins, then takes its share from the others.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(hubs[static_cast<size_t>(i)]->Start());
  ASSERT_TRUE(WaitFor([&] { return HubsHoldingShards(&pg) == 3; }, 60000)) << Owners(&pg) << hubs[0]->log();

  std::vector<Gateway> gateways(kGateways);
  for (int i = 0; i < kGateways; ++i) {
    Gateway& g = gateways[static_cast<size_t>(i)];
    g.id = "gw-" + std::to_string(i + 1);
    g.store = OpenGatewayStore(tmp.File(g.id + ".db"), g.id);
    g.workload = std::make_unique<SensorWorkload>(20, 1780000000000, 1000, static_cast<uint64_t>(i + 1), g.id + "-d");
    UplinkOptions uo = FastUplinkOptions(g.id);
    uo.batch_max_readings = 500;
    uo.regions.push_back(RegionAt("eu", broker.uri()));
    g.uplink = std::make_unique<Uplink>(g.store.get(), uo);
    FeedPullerOptions fo;
    fo.gateway_id = g.id;
    fo.page_max_entries = 2000;
    fo.poll_interval_ms = 500;
    fo.answer_timeout_ms = 3000;
    fo.backoff_base_ms = 50;
    fo.backoff_max_ms = 1000;
    fo.regions.push_back(RegionAt("eu", broker.uri()));
    g.puller = std::make_unique<FeedPuller>(g.store.get(), fo);
    ASSERT_OK(g.uplink->Start());
    ASSERT_OK(g.puller->Start());
  }
  auto write_round = [&] {
    for (Gateway& g : gateways) {
      Fill(g.store.get(), g.workload.get(), kReadingsPerRound);
      g.readings += kReadingsPerRound;
    }
  };
  auto acked = [&](const Gateway& g) { return Checkpoint(g.store.get()); };

  write_round();
  ASSERT_TRUE(WaitFor([&] { return acked(gateways[0]) > 0 && acked(gateways[kGateways - 1]) > 0; }, 60000))
      << hubs[0]->log();
  // Mid-run, with batches in flight: h2 dies without handing anything over.
  // It holds some gateway's shard, so what follows needs the takeover.
  std::string h2_shards;
  ASSERT_TRUE(pg.Query("hub", "SELECT string_agg(shard::text, ',') FROM es_shard_leases WHERE owner = 'h2'",
                       &h2_shards));
  std::set<std::string> held_by_h2;
  for (const std::string& x : SplitCommas(h2_shards.substr(0, h2_shards.find('\n')))) held_by_h2.insert(x);
  int gateways_of_h2 = 0;
  for (const Gateway& g : gateways) gateways_of_h2 += held_by_h2.count(std::to_string(RegionShardOf(g.id))) > 0;
  ASSERT_GT(gateways_of_h2, 0) << "h2 holds " << h2_shards;
  hubs[1]->process().Kill9();
  write_round();
  // Its shards come back once its leases (3 s) expired: every gateway drains.
  for (Gateway& g : gateways) {
    Store* s = g.store.get();
    ASSERT_TRUE(WaitFor([&] { return Checkpoint(s) == s->LastLsn(); }, 120000))
        << g.id << " " << Checkpoint(s) << " of " << s->LastLsn() << "\n" << Owners(&pg);
  }
  // h2's other shards (no gateway of this test maps to them) are taken at
  // a live hub's next lease round after their expiry, which the drain need
  // not wait for: under load it finished first and h2 still held some.
  EXPECT_TRUE(WaitFor([&] { return HubsHoldingShards(&pg) == 2; }, 60000)) << Owners(&pg);
  // A fourth hub joins while the gateways write on.
  ASSERT_TRUE(hubs[3]->Start());
  for (int r = 2; r < kRounds; ++r) write_round();
  ASSERT_TRUE(WaitFor([&] { return HubsHoldingShards(&pg) == 3; }, 60000)) << Owners(&pg) << hubs[3]->log();
  for (Gateway& g : gateways) {
    Store* s = g.store.get();
    ASSERT_TRUE(WaitFor([&] { return Checkpoint(s) == s->LastLsn(); }, 120000))
        << g.id << " " << Checkpoint(s) << " of " << s->LastLsn() << "\n" << Owners(&pg);
  }
  // The new hub took a fair share (32 shards, 3 live hubs: 10 or 11 each).
  std::string owners = Owners(&pg);
  EXPECT_NE(owners.find("h4=1"), std::string::npos) << owners;
  // Every gateway's read view converges on everyone else's readings.
  for (Gateway& g : gateways) {
    Store* s = g.store.get();
    ASSERT_TRUE(WaitFor(
        [&] {
          auto view = ReadView(s);
          for (const Gateway& other : gateways) {
            if (other.id == g.id) continue;
            if (view[other.id] != static_cast<int64_t>(other.readings)) return false;
          }
          return view.size() == static_cast<size_t>(kGateways - 1);
        },
        120000))
        << g.id << "'s read view did not converge";
  }
  for (Gateway& g : gateways) {
    g.puller->Stop();
    g.uplink->Stop();
  }
  // The region holds every entry of every gateway exactly once.
  std::unique_ptr<HubStore> region;
  ASSERT_OK(OpenPostgresHubStore(HubStoreOptionsFor(pg, "hub"), &region));
  std::map<std::pair<std::string, uint64_t>, int> held;
  ShardPositions after{};
  FeedRead read;
  std::vector<RegionFeedEntry>& page = read.entries;
  do {
    ASSERT_OK(region->ReadFeed(after, 10000, &read));
    ASSERT_FALSE(read.reset);
    after = read.next;
    for (const auto& e : page) {
      ++held[{e.remote.origin.gateway_id, e.remote.origin_lsn}];
    }
  } while (!page.empty());
  int twice = 0;
  for (const auto& [key, n] : held) twice += n > 1;
  EXPECT_EQ(twice, 0) << "entries applied twice";
  for (const Gateway& g : gateways) {
    const uint64_t last = g.store->LastLsn();
    for (uint64_t lsn = 1; lsn <= last; ++lsn) {
      if (!held.count({g.id, lsn})) {
        ADD_FAILURE() << g.id << " LSN " << lsn << " of " << last << " is missing from the region";
        break;
      }
    }
  }
  // SIGTERM hands shards over: the three survivors leave the table empty.
  for (size_t i : {0u, 2u, 3u}) EXPECT_EQ(hubs[i]->process().Stop(10000), 0) << hubs[i]->log();
  EXPECT_EQ(HubsHoldingShards(&pg), 0) << Owners(&pg);
  const std::string log4 = hubs[3]->log();
  EXPECT_NE(log4.find("h4 now holds"), std::string::npos) << log4;
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test

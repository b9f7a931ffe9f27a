// Shard leases of the hubs sharing a region (store/hub_store_leases.h), what
// only PostgreSQL's do: on a real server, hubs take a fair share, steal from
// a busier hub, hand over on release, take a silent hub's shards after its
// expiry, and refuse a second live hub under one id. Every check reads the
// lease table itself: no shard has two owners. What a hub alone keeps on
// both implementations (the SQLite store's sole owner too) is
// tests/unit/store/shard_leases_conformance_test.cc's.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/hub_store_leases.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL
constexpr int kShards = 32;

class PgShardLeasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(pg_.Start()) << pg_.log();
    ASSERT_TRUE(pg_.CreateDatabase("hub"));
    std::unique_ptr<HubStore> store;  // migrates the schema the leases live in
    Status st = OpenPostgresHubStore(Options(), &store);
    ASSERT_OK(st);
  }
  HubStoreOptions Options() { return HubStoreOptionsFor(pg_, "hub"); }
  std::unique_ptr<ShardLeases> Hub(const std::string& id, int64_t ttl_ms = 60000) {
    ShardLeaseOptions lo;
    lo.hub_id = id;
    lo.shards = kShards;
    lo.ttl_ms = ttl_ms;
    std::unique_ptr<ShardLeases> leases;
    Status st = OpenPostgresShardLeases(Options(), lo, &leases);
    EXPECT_OK(st);
    return leases;
  }
  std::vector<int> Round(ShardLeases* leases, ShardLeaseStats* stats = nullptr) {
    std::vector<int> owned;
    ShardLeaseStats s;
    Status st = leases->Balance(&owned, &s);
    EXPECT_OK(st);
    if (stats) *stats = s;
    return owned;
  }
  // owner -> number of shards, from the table (unexpired leases only).
  std::map<std::string, int> Owners() {
    std::string out;
    EXPECT_TRUE(pg_.Query("hub",
                          "SELECT owner || ':' || count(*) FROM es_shard_leases WHERE owner <> '' AND "
                          "expires_at > clock_timestamp() GROUP BY owner ORDER BY owner",
                          &out));
    std::map<std::string, int> owners;
    size_t at = 0;
    while (at < out.size()) {
      size_t nl = out.find('\n', at);
      std::string line = out.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
      at = nl == std::string::npos ? out.size() : nl + 1;
      size_t colon = line.rfind(':');
      if (colon != std::string::npos) owners[line.substr(0, colon)] = std::stoi(line.substr(colon + 1));
    }
    return owners;
  }
  static void ExpectDisjoint(const std::vector<std::vector<int>>& sets, size_t total) {
    std::set<int> all;
    size_t n = 0;
    for (const auto& s : sets) {
      n += s.size();
      all.insert(s.begin(), s.end());
    }
    EXPECT_EQ(all.size(), n) << "a shard is held by two hubs";
    EXPECT_EQ(n, total);
  }

  TempDir dir_;
  Postgres pg_{dir_.File("pg")};
};

TEST_F(PgShardLeasesTest, HubsTakeAFairShareAndANewHubStealsItsOwn) {
  auto a = Hub("a");
  ASSERT_OK(a->Join());
  EXPECT_EQ(Round(a.get()).size(), 32u);  // alone: everything
  auto b = Hub("b");
  ASSERT_OK(b->Join());
  ShardLeaseStats stats;
  std::vector<int> got_b = Round(b.get(), &stats);
  EXPECT_EQ(stats.live_hubs, 2);
  EXPECT_EQ(stats.stolen, 16);  // nothing free: b steals up to its share at once
  std::vector<int> got_a = Round(a.get());  // a learns what it lost at its own round
  EXPECT_EQ(got_a.size(), 16u);
  EXPECT_EQ(got_b.size(), 16u);
  ExpectDisjoint({got_a, got_b}, 32);
  auto c = Hub("c");
  ASSERT_OK(c->Join());
  std::vector<int> got_c = Round(c.get());
  got_a = Round(a.get());
  got_b = Round(b.get());
  EXPECT_EQ(got_c.size(), 10u);  // floor(32 / 3), taken from the two busier hubs
  ExpectDisjoint({got_a, got_b, got_c}, 32);
  std::map<std::string, int> owners = Owners();
  EXPECT_EQ(owners.size(), 3u);
  for (const auto& [owner, n] : owners) {
    EXPECT_GE(n, 10) << owner;
    EXPECT_LE(n, 11) << owner;
  }
  // Further rounds change nothing: the shares are fair.
  EXPECT_EQ(Round(a.get()), got_a);
  EXPECT_EQ(Round(b.get()), got_b);
  EXPECT_EQ(Round(c.get()), got_c);
}

TEST_F(PgShardLeasesTest, ALeavingHubHandsItsShardsOverAtOnce) {
  auto a = Hub("a");
  auto b = Hub("b");
  ASSERT_OK(a->Join());
  ASSERT_OK(b->Join());
  Round(a.get());
  Round(b.get());
  Round(a.get());
  ASSERT_OK(b->Release());
  ShardLeaseStats stats;
  std::vector<int> got = Round(a.get(), &stats);  // long before b's 60 s expiry
  EXPECT_EQ(got.size(), 32u);
  EXPECT_EQ(stats.live_hubs, 1);
  EXPECT_EQ(Owners(), (std::map<std::string, int>{{"a", 32}}));
}

TEST_F(PgShardLeasesTest, AKilledHubsShardsAreTakenAfterItsLeasesExpire) {
  auto a = Hub("a", 60000);
  auto k = Hub("k", 1500);  // stops renewing after its first rounds, as if SIGKILLed
  ASSERT_OK(a->Join());
  ASSERT_OK(k->Join());
  Round(k.get());
  std::vector<int> held_by_k = Round(k.get());
  std::vector<int> got_a = Round(a.get());
  ASSERT_EQ(held_by_k.size(), 16u);  // its share of two live hubs; a takes the free half
  ASSERT_EQ(got_a.size(), 16u);
  SleepMs(300);
  EXPECT_EQ(Round(a.get()).size(), 16u) << "taken before the expiry";
  SleepMs(1700);
  ShardLeaseStats stats;
  got_a = Round(a.get(), &stats);
  EXPECT_EQ(got_a.size(), 32u);
  EXPECT_EQ(stats.taken, 16);
  EXPECT_EQ(stats.live_hubs, 1);
  // The silent hub comes back: its old shards are a's now, it gets none by
  // renewal and has to take its share like a new hub.
  std::vector<int> back = Round(k.get());
  got_a = Round(a.get());
  ExpectDisjoint({back, got_a}, 32);
}

TEST_F(PgShardLeasesTest, ASecondLiveHubUnderOneIdIsRefused) {
  auto first = Hub("same", 1500);
  ASSERT_OK(first->Join());
  auto second = Hub("same", 1500);
  Status st = second->Join();
  EXPECT_EQ(st.code(), Status::Code::kConflict) << st.ToString();
  EXPECT_NE(st.message().find("give every hub its own [hub] id"), std::string::npos) << st.ToString();
  // Once the first stops renewing and its membership expires, the id is free
  // (a killed hub restarted under its id), and the first learns it lost it.
  SleepMs(2000);
  ASSERT_OK(second->Join());
  std::vector<int> owned;
  ShardLeaseStats stats;
  EXPECT_EQ(first->Balance(&owned, &stats).code(), Status::Code::kRejected);
  EXPECT_TRUE(owned.empty());
  EXPECT_EQ(Round(second.get()).size(), 32u);
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test

// The shard leases' contract (store/hub_store_leases.h) as a hub alone in its
// region meets it, run against both implementations: the sole owner of a
// SQLite hub store (NewSoleOwnerLeases) and the leases in a PostgreSQL hub
// store's database (a real server started by the fixture in
// tests/support/postgres.h, a fresh database per test). What only PostgreSQL
// does (fair shares among several hubs, steals, expiry, a second live hub
// under one id refused) is tests/unit/store/hub_store_leases_test.cc's.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/hub_store_leases.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

std::vector<int> AllShards(int shards) {
  std::vector<int> all(static_cast<size_t>(shards));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

class ShardLeasesContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() {
    pg_.reset();
    pg_dir_.reset();
  }

  void SetUp() override {
    if (GetParam() != "postgresql") return;
    if (!pg_) {
      pg_dir_ = std::make_unique<TempDir>();
      pg_ = std::make_unique<Postgres>(pg_dir_->File("pg"));
      ASSERT_TRUE(pg_->Start()) << pg_->log();
    }
    static int n = 0;
    db_ = "leases_test_" + std::to_string(++n);
    ASSERT_TRUE(pg_->CreateDatabase(db_)) << ReadAll(pg_dir_->File("pg/psql.log"));
    std::unique_ptr<HubStore> store;  // migrates the schema the leases live in
    ASSERT_OK(OpenPostgresHubStore(HubStoreOptionsFor(*pg_, db_), &store));
  }
  void TearDown() override {
    if (pg_ && !db_.empty()) pg_->DropDatabase(db_);
  }

  // The leases of hub `id` of this test's implementation. `instance` is
  // who the process is among restarts ("" = a new one each time).
  std::unique_ptr<ShardLeases> Leases(int shards, const std::string& id = "hub-a", const std::string& instance = "") {
    if (GetParam() == "sole_owner") return NewSoleOwnerLeases(shards);
    ShardLeaseOptions lo;
    lo.hub_id = id;
    lo.shards = shards;
    lo.ttl_ms = 60000;  // no lease of a test expires on its own
    lo.instance = instance;
    std::unique_ptr<ShardLeases> leases;
    Status st = OpenPostgresShardLeases(HubStoreOptionsFor(*pg_, db_), lo, &leases);
    EXPECT_OK(st);
    return leases;
  }

  static std::vector<int> Round(ShardLeases* leases, ShardLeaseStats* stats = nullptr) {
    std::vector<int> owned;
    ShardLeaseStats s;
    EXPECT_OK(leases->Balance(&owned, &s));
    if (stats != nullptr) *stats = s;
    return owned;
  }

  static std::unique_ptr<TempDir> pg_dir_;
  static std::unique_ptr<Postgres> pg_;
  std::string db_;
};

std::unique_ptr<TempDir> ShardLeasesContractTest::pg_dir_;
std::unique_ptr<Postgres> ShardLeasesContractTest::pg_;

TEST_P(ShardLeasesContractTest, AHubAloneHoldsEveryShardAscendingFromItsFirstRound) {
  auto leases = Leases(32);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  ShardLeaseStats stats;
  std::vector<int> owned = Round(leases.get(), &stats);
  EXPECT_EQ(owned, AllShards(32));
  EXPECT_EQ(stats.live_hubs, 1);
  EXPECT_EQ(stats.stolen, 0) << "nobody to steal from";
  EXPECT_LE(stats.taken, 32);
}

// The shard count is the options', not the protocol's 32 built in.
TEST_P(ShardLeasesContractTest, ARegionOfOneShardHasItHeld) {
  auto leases = Leases(1);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  EXPECT_EQ(Round(leases.get()), AllShards(1));
}

TEST_P(ShardLeasesContractTest, ARegionOfSevenShardsHasEachHeldOnce) {
  auto leases = Leases(7);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  EXPECT_EQ(Round(leases.get()), AllShards(7));
  EXPECT_EQ(Round(leases.get()), AllShards(7));
}

TEST_P(ShardLeasesContractTest, BalanceReplacesWhatTheCallerPassedIn) {
  auto leases = Leases(32);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  std::vector<int> owned = {99, 7, 7};
  ShardLeaseStats stats{5, 6, 7};
  ASSERT_OK(leases->Balance(&owned, &stats));
  EXPECT_EQ(owned, AllShards(32));
  EXPECT_EQ(stats.live_hubs, 1);
  EXPECT_EQ(stats.stolen, 0);
  owned = {1000};
  stats = ShardLeaseStats{5, 6, 7};
  ASSERT_OK(leases->Balance(&owned, &stats));
  EXPECT_EQ(owned, AllShards(32));
  EXPECT_EQ(stats.live_hubs, 1);
  EXPECT_EQ(stats.taken, 0) << "everything was held already";
  EXPECT_EQ(stats.stolen, 0);
}

TEST_P(ShardLeasesContractTest, LaterRoundsRenewWhatIsHeldAndTakeNothing) {
  auto leases = Leases(32);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  const std::vector<int> first = Round(leases.get());
  ASSERT_EQ(first, AllShards(32));
  for (int round = 0; round < 5; ++round) {
    ShardLeaseStats stats;
    EXPECT_EQ(Round(leases.get(), &stats), first) << "round " << round;
    EXPECT_EQ(stats.live_hubs, 1);
    EXPECT_EQ(stats.taken, 0);
    EXPECT_EQ(stats.stolen, 0);
  }
}

TEST_P(ShardLeasesContractTest, AReleasedHubJoinsAgainAndHoldsEveryShardAgain) {
  auto leases = Leases(32);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  ASSERT_EQ(Round(leases.get()), AllShards(32));
  ASSERT_OK(leases->Release());
  ASSERT_OK(leases->Join());
  ShardLeaseStats stats;
  EXPECT_EQ(Round(leases.get(), &stats), AllShards(32));
  EXPECT_EQ(stats.live_hubs, 1);
  EXPECT_EQ(stats.stolen, 0);
  ASSERT_OK(leases->Release());
}

TEST_P(ShardLeasesContractTest, AHubReleasesBeforeItsFirstRound) {
  auto leases = Leases(32);
  ASSERT_NE(leases, nullptr);
  ASSERT_OK(leases->Join());
  EXPECT_OK(leases->Release());
  // Its id is free at once: another process takes it without waiting for
  // any expiry.
  auto next = Leases(32);
  ASSERT_NE(next, nullptr);
  ASSERT_OK(next->Join());
  EXPECT_EQ(Round(next.get()), AllShards(32));
}

// A hub killed and restarted (the same host and data folder: the same
// instance) is back at once with every shard, without waiting for the
// leases of its previous run to expire.
TEST_P(ShardLeasesContractTest, TheSameInstanceRestartedHoldsEveryShardAtOnce) {
  auto before = Leases(32, "hub-a", "host-1:/var/lib/edgesync");
  ASSERT_NE(before, nullptr);
  ASSERT_OK(before->Join());
  ASSERT_EQ(Round(before.get()), AllShards(32));
  before.reset();  // no Release: as if killed
  auto after = Leases(32, "hub-a", "host-1:/var/lib/edgesync");
  ASSERT_NE(after, nullptr);
  ASSERT_OK(after->Join());
  ShardLeaseStats stats;
  EXPECT_EQ(Round(after.get(), &stats), AllShards(32));
  EXPECT_EQ(stats.live_hubs, 1);
  EXPECT_EQ(stats.stolen, 0);
}

std::vector<std::string> Implementations() {
  std::vector<std::string> v = {"sole_owner"};
#ifdef EDGESYNC_HAVE_POSTGRESQL
  v.push_back("postgresql");
#endif
  return v;
}

INSTANTIATE_TEST_SUITE_P(Implementations, ShardLeasesContractTest, ::testing::ValuesIn(Implementations()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace edgesync::test

// The lease table and the dead letter table through their own APIs on a
// real SQLite file of the store's schema: a lease is exclusive until it
// expires on the renewing boot's monotonic clock (a wall-clock jump moves
// nothing, a reboot frees it), every change moves the version, a child
// range starts from its nearest ancestor's continuation.
#include "store/lease_table.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "store/token.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int64_t kExpiry = 30000;

class LeaseTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("leases.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
  }
  TempDir dir_;
  Db db_;
  ManualClock clock_{1780000000000, 5000LL * 1000000};
};

TEST_F(LeaseTableTest, ALeaseIsExclusiveUntilItExpiresOnTheMonotonicClock) {
  Lease a;
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 3, "alpha", {}, kExpiry, &a));
  EXPECT_EQ(a.owner, "alpha");
  EXPECT_EQ(a.version, 1);
  Lease b;
  Status held = lease_table::Acquire(&db_, clock_, 3, "beta", {}, kExpiry, &b);
  EXPECT_EQ(held.code(), Status::Code::kConflict) << held.ToString();
  EXPECT_NE(held.message().find("alpha"), std::string::npos) << held.message();
  // A wall-clock jump of a day moves nothing.
  clock_.SetWall(clock_.WallMillis() + 86400 * 1000LL);
  EXPECT_EQ(lease_table::Acquire(&db_, clock_, 3, "beta", {}, kExpiry, &b).code(), Status::Code::kConflict);
  // The holder renews; then it stops, and after the expiry beta takes it.
  Lease renewed;
  ASSERT_OK(lease_table::Checkpoint(&db_, clock_, a, "", &renewed));
  EXPECT_EQ(renewed.version, 2);
  clock_.Advance(kExpiry - 1);
  EXPECT_EQ(lease_table::Acquire(&db_, clock_, 3, "beta", {}, kExpiry, &b).code(), Status::Code::kConflict);
  clock_.Advance(1);
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 3, "beta", {}, kExpiry, &b));
  EXPECT_EQ(b.owner, "beta");
  EXPECT_EQ(b.version, 3);
  // alpha's stale lease can neither renew nor release.
  Lease out;
  EXPECT_EQ(lease_table::Checkpoint(&db_, clock_, renewed, "", &out).code(), Status::Code::kConflict);
  EXPECT_EQ(lease_table::Release(&db_, renewed).code(), Status::Code::kConflict);
}

TEST_F(LeaseTableTest, ARenewalFromAnotherBootHasExpired) {
  Lease a, b;
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 1, "alpha", {}, kExpiry, &a));
  clock_.Reboot("manual-boot-2", 1000LL * 1000000);
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 1, "beta", {}, kExpiry, &b));
  EXPECT_EQ(b.owner, "beta");
}

TEST_F(LeaseTableTest, TakeAndReleaseMoveTheVersionAndListShowsEveryLease) {
  Lease a, taken, again;
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 2, "alpha", {}, kExpiry, &a));
  ASSERT_OK(lease_table::Take(&db_, clock_, a, "beta", &taken));
  EXPECT_EQ(taken.owner, "beta");
  EXPECT_EQ(taken.version, a.version + 1);
  EXPECT_EQ(lease_table::Take(&db_, clock_, a, "gamma", &again).code(), Status::Code::kConflict)
      << "a take from a version that moved";
  ASSERT_OK(lease_table::Release(&db_, taken));
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 5, "delta", {}, kExpiry, &again));
  std::vector<Lease> all;
  ASSERT_OK(lease_table::List(&db_, &all));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].range_id, 2u);
  EXPECT_EQ(all[0].owner, "") << "released";
  EXPECT_EQ(all[0].version, taken.version + 1);
  EXPECT_EQ(all[1].owner, "delta");
  EXPECT_EQ(lease_table::ValidateOwner("").code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(lease_table::ValidateOwner(std::string("\xff", 1)).code(), Status::Code::kInvalidArgument);
}

TEST_F(LeaseTableTest, AChildRangeStartsFromItsNearestAncestorsContinuation) {
  // Ancestors: parent 4 (leased, its continuation cleared), grandparent 1
  // (a continuation). The child takes the grandparent's.
  Lease grand, parent, child;
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 1, "alpha", {}, kExpiry, &grand));
  const std::string token = EncodeFeedToken(FeedToken{1, "0123456789abcdef0123456789abcdef", 77});
  ASSERT_OK(lease_table::Checkpoint(&db_, clock_, grand, token, &grand));
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 4, "alpha", {1}, kExpiry, &parent));
  EXPECT_EQ(parent.continuation, token) << "the parent starts where the grandparent was";
  ASSERT_OK(lease_table::Checkpoint(&db_, clock_, parent, "", &parent));
  // A continuation that is not a feed token is refused before anything is written.
  Lease out;
  EXPECT_FALSE(lease_table::Checkpoint(&db_, clock_, parent, "not a token", &out).ok());
  std::vector<Lease> all;
  ASSERT_OK(lease_table::List(&db_, &all));
  EXPECT_EQ(all[1].version, parent.version);
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 9, "beta", {4, 1}, kExpiry, &child));
  EXPECT_EQ(child.continuation, token) << "the parent holds none: the grandparent's";
  Lease sibling;
  ASSERT_OK(lease_table::Acquire(&db_, clock_, 10, "beta", {}, kExpiry, &sibling));
  EXPECT_EQ(sibling.continuation, "") << "a range without ancestors starts from the beginning";
}

}  // namespace
}  // namespace edgesync::test

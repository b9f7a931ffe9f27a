// Leases (compare-and-set, expiry, takeover), named checkpoints, upstream acks.
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

#include <cmath>

namespace edgesync::test {
namespace {

class StoreLeaseTest : public StoreTest {};

TEST_F(StoreLeaseTest, AcquireRenewCheckpointRelease) {
  auto s = OpenStore();
  Lease a;
  ASSERT_OK(s->AcquireLease(1, "alice", &a));
  EXPECT_EQ(a.owner, "alice");
  EXPECT_EQ(a.version, 1);
  Lease b;
  Status st = s->AcquireLease(1, "bob", &b);
  EXPECT_EQ(st.code(), Status::Code::kConflict);
  EXPECT_NE(st.message().find("alice"), std::string::npos);
  FeedPage page;
  ASSERT_OK(s->ReadFeed(1, FeedStart{}, 10, &page));
  Lease a2;
  ASSERT_OK(s->CheckpointLease(a, page.continuation, &a2));
  EXPECT_EQ(a2.version, 2);
  EXPECT_EQ(a2.continuation, page.continuation);
  // The old version lost its right: compare-and-set.
  EXPECT_EQ(s->RenewLease(a, &b).code(), Status::Code::kConflict);
  EXPECT_EQ(s->CheckpointLease(a2, "not a token", &b).code(), Status::Code::kInvalidArgument);
  Lease a3;
  ASSERT_OK(s->RenewLease(a2, &a3));
  EXPECT_EQ(a3.version, 3);
  ASSERT_OK(s->ReleaseLease(a3));
  ASSERT_OK(s->AcquireLease(1, "bob", &b));
  EXPECT_EQ(b.continuation, page.continuation);  // progress kept across owners
  EXPECT_EQ(s->ReleaseLease(a3).code(), Status::Code::kConflict);
  std::vector<Lease> all;
  ASSERT_OK(s->ListLeases(&all));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].owner, "bob");
  EXPECT_EQ(s->AcquireLease(77, "bob", &b).code(), Status::Code::kNotFound);
}

TEST_F(StoreLeaseTest, ExpiredLeaseIsTakenOver) {
  StoreOptions o = Options();
  o.lease_expiry_ms = 1000;
  auto s = OpenStore(o);
  Lease a, b;
  ASSERT_OK(s->AcquireLease(2, "alice", &a));
  clock_.Advance(999);
  EXPECT_EQ(s->AcquireLease(2, "bob", &b).code(), Status::Code::kConflict);
  ASSERT_OK(s->RenewLease(a, &a));
  clock_.Advance(1000);
  ASSERT_OK(s->AcquireLease(2, "bob", &b));
  EXPECT_GT(b.version, a.version);
  EXPECT_EQ(s->RenewLease(a, &a).code(), Status::Code::kConflict);
}

// NTP steps, an RTC reset, `date -s`: the wall clock jumps, the monotonic
// clock does not. Expiry follows the monotonic clock only.
TEST_F(StoreLeaseTest, WallClockStepsNeitherExpireALiveLeaseNorKeepADeadOne) {
  StoreOptions o = Options();
  o.lease_expiry_ms = 1000;
  auto s = OpenStore(o);
  Lease a, b;
  ASSERT_OK(s->AcquireLease(2, "alice", &a));
  clock_.SetWall(clock_.WallMillis() + int64_t{86400} * 1000);  // a day forward
  clock_.Advance(500);
  Status st = s->AcquireLease(2, "bob", &b);
  EXPECT_EQ(st.code(), Status::Code::kConflict) << "a forward step expired a live lease";
  ASSERT_OK(s->RenewLease(a, &a));
  clock_.SetWall(clock_.WallMillis() - int64_t{3} * 86400 * 1000);  // three days back
  clock_.Advance(500);
  EXPECT_EQ(s->AcquireLease(2, "bob", &b).code(), Status::Code::kConflict);
  ASSERT_OK(s->RenewLease(a, &a));  // renewed "in the past" by the wall
  // Alice stops renewing (dies). The wall renewal time lies days ahead of
  // nothing and behind everything; the lease still ends after the expiry.
  clock_.SetWall(clock_.WallMillis() + int64_t{365} * 86400 * 1000);
  clock_.Advance(999);
  EXPECT_EQ(s->AcquireLease(2, "bob", &b).code(), Status::Code::kConflict);
  clock_.Advance(1);
  st = s->AcquireLease(2, "bob", &b);
  ASSERT_OK(st);
  EXPECT_EQ(s->RenewLease(a, &a).code(), Status::Code::kConflict);
}

// After a reboot the monotonic clock starts again near zero: a lease renewed
// in the previous boot belongs to a process that no longer runs.
TEST_F(StoreLeaseTest, ALeaseRenewedInAnEarlierBootIsExpired) {
  StoreOptions o = Options();
  o.lease_expiry_ms = 1000;
  clock_.Advance(int64_t{3600} * 1000);  // an hour of uptime
  Lease a, b;
  {
    auto s = OpenStore(o);
    ASSERT_OK(s->AcquireLease(3, "alice", &a));
  }
  clock_.Reboot("manual-boot-2", 0);
  auto s = OpenStore(o);
  Status st = s->AcquireLease(3, "bob", &b);
  ASSERT_OK(st);
  // And bob's lease, renewed in this boot, lives its full expiry.
  Lease c;
  clock_.Advance(999);
  EXPECT_EQ(s->AcquireLease(3, "carol", &c).code(), Status::Code::kConflict);
}

TEST_F(StoreLeaseTest, ChildLeaseStartsFromParentCheckpoint) {
  StoreOptions o = Options();
  o.initial_ranges = 1;
  o.split_max_entries = 100;
  auto s = OpenStore(o);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(50), &r));
  Lease a;
  ASSERT_OK(s->AcquireLease(1, "alice", &a));
  FeedPage page;
  ASSERT_OK(s->ReadFeed(1, FeedStart{}, 100, &page));
  ASSERT_OK(s->CheckpointLease(a, page.continuation, &a));
  ASSERT_OK(s->AppendReadings(Batch(100), &r));  // split into 2 and 3
  Lease c;
  EXPECT_EQ(s->AcquireLease(1, "alice", &c).code(), Status::Code::kNotFound);
  ASSERT_OK(s->AcquireLease(3, "alice", &c));
  EXPECT_EQ(c.continuation, page.continuation);
  ASSERT_OK(s->ReadFeed(3, FeedStart{FeedStart::Kind::kToken, 0, 0, c.continuation}, 1000, &page));
  for (const auto& e : page.entries) EXPECT_GT(e.lsn, 50u);
}

TEST_F(StoreLeaseTest, CheckpointsOnlyMoveForward) {
  auto s = OpenStore();
  uint64_t v = 9;
  ASSERT_OK(s->GetCheckpoint("upstream:eu", &v));
  EXPECT_EQ(v, 0u);
  ASSERT_OK(s->SetCheckpoint("upstream:eu", 10));
  ASSERT_OK(s->SetCheckpoint("upstream:eu", 5));
  ASSERT_OK(s->GetCheckpoint("upstream:eu", &v));
  EXPECT_EQ(v, 10u);
  EXPECT_EQ(s->SetCheckpoint("", 1).code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreLeaseTest, AMarkedAppendMovesItsCheckpointOnlyWithTheReadings) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadingsMarked(Batch(5), CheckpointMark{"ingest:intake", 5}, &r));
  uint64_t v = 0;
  ASSERT_OK(s->GetCheckpoint("ingest:intake", &v));
  EXPECT_EQ(v, 5u);
  // An append that fails (one invalid reading) moves nothing.
  std::vector<Reading> bad = Batch(3);
  bad[2].value = std::nan("");
  EXPECT_EQ(s->AppendReadingsMarked(bad, CheckpointMark{"ingest:intake", 8}, &r).code(),
            Status::Code::kInvalidArgument);
  ASSERT_OK(s->GetCheckpoint("ingest:intake", &v));
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(s->LastLsn(), 5u);
  // Never back.
  ASSERT_OK(s->AppendReadingsMarked(Batch(1), CheckpointMark{"ingest:intake", 3}, &r));
  ASSERT_OK(s->GetCheckpoint("ingest:intake", &v));
  EXPECT_EQ(v, 5u);
  EXPECT_EQ(s->AppendReadingsMarked(Batch(1), CheckpointMark{"", 9}, &r).code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreLeaseTest, AckUpstreamRefusesTheFuture) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10), &r));
  EXPECT_EQ(s->AckUpstream("eu", 11).code(), Status::Code::kInvalidArgument);
  ASSERT_OK(s->AckUpstream("eu", 7));
  ASSERT_OK(s->AckUpstream("us", 4));
  ASSERT_OK(s->AckUpstream("eu", 3));
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.acked_lsn, 7u);
}

}  // namespace
}  // namespace edgesync::test

// Retention, size limits and disk policies, dead letters, statistics.
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreRetentionTest : public StoreTest {};

constexpr int64_t kDay = 86400LL * 1000;

TEST_F(StoreRetentionTest, PrunesOnlyAcknowledgedAndOld) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100), &r));  // 1..100, old
  clock_.Advance(8 * kDay);
  ASSERT_OK(s->AppendReadings(Batch(100), &r));  // 101..200, young
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 0);  // nothing acknowledged
  ASSERT_OK(s->AckUpstream("eu", 50));
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 50);
  ASSERT_OK(s->AckUpstream("eu", 200));
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 50);  // 101..200 are younger than the retention age
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 1000, &log));
  ASSERT_EQ(log.size(), 100u);
  EXPECT_EQ(log.front().lsn, 101u);
  clock_.Advance(8 * kDay);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 100);
}

// ack_grace_ms: what a region acknowledged stays that long after the
// acknowledgement too (a region that loses its store is refilled from it),
// unless space runs low.
TEST_F(StoreRetentionTest, KeepsAcknowledgedReadingsForTheGraceAfterTheirAcknowledgement) {
  StoreOptions o = Options();
  o.retention_age_ms = 0;
  o.ack_grace_ms = kDay;
  auto s = OpenStore(o);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100), &r));  // 1..100
  ASSERT_OK(s->AckUpstream("eu", 100));
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 0);
  clock_.Advance(kDay / 2);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 0) << "acknowledged half a day ago";
  clock_.Advance(kDay / 2 + kDay / 24);
  ASSERT_OK(s->AppendReadings(Batch(100), &r));  // 101..200, acknowledged now
  ASSERT_OK(s->AckUpstream("eu", 200));
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 100) << "1..100 were acknowledged over a day ago, 101..200 just now";
  clock_.Advance(kDay - 1);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 0) << "101..200: acknowledged a moment less than the grace ago";
  clock_.Advance(1);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 100);
}

TEST_F(StoreRetentionTest, SpacePressurePrunesAcknowledgedReadingsDespiteTheGrace) {
  StoreOptions o = Options();
  o.ack_grace_ms = kDay;
  o.min_free_bytes = INT64_MAX / 4;  // the filesystem always "nears full"
  auto s = OpenStore(o);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100), &r));
  ASSERT_OK(s->AckUpstream("eu", 60));
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 60);
  EXPECT_EQ(p.early, 60);
}

TEST_F(StoreRetentionTest, PrunesLargeBacklogsInChunks) {
  auto s = OpenStore();
  AppendResult r;
  for (int i = 0; i < 50; ++i) ASSERT_OK(s->AppendReadings(Batch(1000, 100, i * 1000), &r));
  uint64_t lsn = 0;
  ASSERT_OK(s->UpsertDevice(DeviceRecord{"dev1", "kept", "", "", false}, &lsn));
  ASSERT_OK(s->AckUpstream("eu", lsn));
  clock_.Advance(8 * kDay);
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 50000);
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 10, &log));
  ASSERT_EQ(log.size(), 1u);  // device records are not readings: they stay
  EXPECT_EQ(log[0].lsn, lsn);
}

TEST_F(StoreRetentionTest, RejectNewWhenMaxBytesReached) {
  StoreOptions o = Options();
  // Readings take a byte or two in chunks: the limit binds within a few
  // batches, with room for what an empty store takes (schema 5 added a table
  // and an index: two pages more than schema 4, which fitted under 32 KiB).
  o.max_bytes = 40 * 1024;
  auto s = OpenStore(o);
  AppendResult r;
  Status st;
  int64_t committed = 0;
  for (int i = 0; i < 200 && st.ok(); ++i) {
    st = s->AppendReadings(Batch(500, 50, i * 500), &r);
    if (st.ok()) committed = static_cast<int64_t>(r.last_lsn);
  }
  ASSERT_EQ(st.code(), Status::Code::kNoSpace) << st.ToString();
  EXPECT_NE(st.message().find("max_bytes"), std::string::npos) << st.message();
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.rejected_full, 500);
  EXPECT_EQ(stats.entries, committed);
  EXPECT_EQ(stats.dropped_oldest, 0);
  EXPECT_EQ(s->LastLsn(), static_cast<uint64_t>(committed));
  // Room comes back once acknowledged data is pruned.
  ASSERT_OK(s->AckUpstream("eu", s->LastLsn()));
  clock_.Advance(8 * kDay);
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, committed);
  st = s->AppendReadings(Batch(500), &r);
  ASSERT_OK(st);
  EXPECT_EQ(r.first_lsn, static_cast<uint64_t>(committed) + 1);
}

TEST_F(StoreRetentionTest, DropOldestCountsEveryDroppedReading) {
  StoreOptions o = Options();
  o.max_bytes = 32 * 1024;  // readings take a byte or two in chunks: the limit binds within a few batches
  o.disk_policy = StoreOptions::DiskPolicy::kDropOldest;
  auto s = OpenStore(o);
  AppendResult r;
  int64_t dropped = 0;
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK(s->AppendReadings(Batch(500, 50, i * 500), &r));
    dropped += r.dropped_oldest;
  }
  EXPECT_GT(dropped, 0);
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.dropped_oldest, dropped);
  EXPECT_EQ(stats.entries + dropped, 40 * 500);
  EXPECT_EQ(stats.last_lsn, 20000u);
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 1, &log));
  EXPECT_EQ(log[0].lsn, static_cast<uint64_t>(dropped) + 1);  // the oldest went first
}

TEST_F(StoreRetentionTest, DeadLettersAreCappedNewestFirst) {
  StoreOptions o = Options();
  o.dead_letter_cap = 3;
  auto s = OpenStore(o);
  std::vector<DeadLetter> in;
  for (int i = 0; i < 5; ++i) in.push_back(DeadLetter{i, "t/" + std::to_string(i), std::string(1000, 'x'), "bad"});
  ASSERT_OK(s->AddDeadLetters(in));
  std::vector<DeadLetter> out;
  ASSERT_OK(s->ListDeadLetters(10, &out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].topic, "t/4");
  EXPECT_EQ(out[2].topic, "t/2");
  EXPECT_LE(out[0].head.size(), 256u);
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.dead_letters, 5);
}

TEST_F(StoreRetentionTest, StatsReportTheStore) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100), &r));
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.last_lsn, 100u);
  EXPECT_EQ(stats.entries, 100);
  EXPECT_GT(stats.file_bytes, 0);
}

}  // namespace
}  // namespace edgesync::test

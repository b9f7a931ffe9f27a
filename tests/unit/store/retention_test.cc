// Retention as it runs in the field (store/retention.h): bounded steps, the
// size limit at steady ingest over simulated hours, acknowledged data first,
// the read view's own retention.
#include "store/retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class RetentionTest : public StoreTest {
 protected:
  int64_t FileBytes(const std::string& suffix = "") {
    struct stat st;
    return ::stat((dir_.File("store.db") + suffix).c_str(), &st) == 0 ? st.st_size : 0;
  }
  // Entries after `after` must be exactly LSNs after+1..last, in order.
  void ExpectContiguousAfter(Store* s, uint64_t after, uint64_t last) {
    uint64_t expect = after + 1;
    for (;;) {
      std::vector<ChangeEntry> page;
      ASSERT_OK(s->ReadLog(after, 50000, &page));
      if (page.empty()) break;
      for (const ChangeEntry& e : page) {
        ASSERT_EQ(e.lsn, expect) << "an unacknowledged reading is missing";
        ++expect;
      }
      after = page.back().lsn;
    }
    EXPECT_EQ(expect, last + 1);
  }
};

constexpr int64_t kMinute = 60 * 1000;
constexpr int64_t kHour = 60 * kMinute;

// Four simulated hours at 20 readings/s under a 320 KiB limit, retention every
// minute, an uplink acknowledging 30 s behind, and a 20-minute outage in the
// third hour. The limit binds after about an hour; from then on acknowledged
// readings are pruned early (oldest first) and the file stays the same size
// (free pages reused), while every unacknowledged reading stays.
TEST_F(RetentionTest, GatewayUnderASizeLimitStaysBoundedForHoursAndLosesNothingUnacknowledged) {
  StoreOptions o = Options();
  o.max_bytes = 320 << 10;
  o.min_free_bytes = 0;  // the test's filesystem is not the subject
  o.retention_age_ms = 24 * kHour;
  auto s = OpenStore(o);
  RetentionOptions ro;
  ro.step_rows = 2000;
  ro.pause_ms = 0;
  Retention retention(s.get(), ro, &clock_);

  constexpr int kPerAppend = 100;  // every 5 s of 20 readings/s
  std::vector<std::pair<int64_t, uint64_t>> appended;  // (time, last LSN)
  int64_t max_file_first_hours = 0, max_file_last_hour = 0, max_wal = 0;
  uint64_t acked = 0;
  const int64_t start = clock_.WallMillis();
  PruneResult total;
  for (int64_t t = 0; t < 4 * kHour; t += 5000) {
    AppendResult r;
    Status st = s->AppendReadings(Batch(kPerAppend, 50, t), &r);
    ASSERT_OK(st) << "at " << t / kMinute << " min: " << st.ToString();
    ASSERT_EQ(r.dropped_oldest, 0);
    appended.emplace_back(clock_.WallMillis(), r.last_lsn);
    const bool outage = t >= 2 * kHour && t < 2 * kHour + 20 * kMinute;
    if (!outage) {
      for (const auto& [at, lsn] : appended) {
        if (at <= clock_.WallMillis() - 30000) acked = std::max(acked, lsn);
      }
      if (acked > 0) {
        ASSERT_OK(s->AckUpstream("eu", acked));
      }
    }
    if (t % kMinute == 0) {
      PruneResult pass;
      ASSERT_OK(retention.RunPass(&pass));
      total.Add(pass);
    }
    int64_t file = FileBytes();
    max_wal = std::max(max_wal, FileBytes("-wal"));
    if (t < 2 * kHour) max_file_first_hours = std::max(max_file_first_hours, file);
    if (t >= 3 * kHour) max_file_last_hour = std::max(max_file_last_hour, file);
    clock_.Advance(5000);
  }
  ASSERT_EQ(clock_.WallMillis() - start, 4 * kHour);
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  std::printf("4 h simulated: %lld readings pruned (%lld early for space), file %lld B (first 2 h max %lld), "
              "WAL max %lld B, longest step %lld ms\n",
              static_cast<long long>(total.readings), static_cast<long long>(total.early),
              static_cast<long long>(max_file_last_hour), static_cast<long long>(max_file_first_hours),
              static_cast<long long>(max_wal), static_cast<long long>(retention.stats().longest_step_ms));
  EXPECT_EQ(stats.dropped_oldest, 0);
  EXPECT_EQ(stats.rejected_full, 0);
  EXPECT_EQ(stats.last_lsn, static_cast<uint64_t>(4 * 720 * kPerAppend));
  // Space, not age, pruned: and only acknowledged readings.
  EXPECT_GT(total.early, 0);
  EXPECT_EQ(total.early, total.readings);
  EXPECT_EQ(stats.entries + total.readings, static_cast<int64_t>(stats.last_lsn));
  // Bounded: the file never passes the limit by more than a few pages, and
  // the last hour needs no more file than the first two (free pages reused).
  EXPECT_LE(max_file_last_hour, o.max_bytes + 64 * 1024);
  EXPECT_LE(max_file_last_hour, max_file_first_hours + 64 * 1024);
  ExpectContiguousAfter(s.get(), stats.acked_lsn, stats.last_lsn);
}

// The outage outlasts the limit: under reject-new the store refuses new
// readings once everything acknowledged is gone; under drop-oldest the
// oldest unacknowledged go, each counted, acknowledged ones before them.
TEST_F(RetentionTest, UnacknowledgedReadingsGoOnlyUnderDropOldestAndAreCounted) {
  for (auto policy : {StoreOptions::DiskPolicy::kRejectNew, StoreOptions::DiskPolicy::kDropOldest}) {
    TempDir dir;
    StoreOptions o = Options();
    o.path = dir.File("store.db");
    o.max_bytes = 64 * 1024;  // readings take a byte or two in chunks
    o.min_free_bytes = 0;
    o.disk_policy = policy;
    auto s = OpenStore(o);
    AppendResult r;
    ASSERT_OK(s->AppendReadings(Batch(2000), &r));
    ASSERT_OK(s->AckUpstream("eu", 1000));
    int64_t dropped = 0;
    Status st;
    for (int i = 0; i < 400 && st.ok(); ++i) {  // enough to fill the limit several times
      st = s->AppendReadings(Batch(500, 10, i * 500), &r);
      if (st.ok()) dropped += r.dropped_oldest;
    }
    StoreStats stats;
    ASSERT_OK(s->Stats(&stats));
    std::vector<ChangeEntry> first;
    ASSERT_OK(s->ReadLog(0, 1, &first));
    ASSERT_EQ(first.size(), 1u);
    EXPECT_GT(first[0].lsn, 1000u) << "acknowledged readings go first";
    if (policy == StoreOptions::DiskPolicy::kRejectNew) {
      EXPECT_EQ(st.code(), Status::Code::kNoSpace) << st.ToString();
      EXPECT_EQ(stats.dropped_oldest, 0);
      EXPECT_EQ(first[0].lsn, 1001u) << "no unacknowledged reading dropped";
    } else {
      EXPECT_OK(st);
      EXPECT_GT(dropped, 0);
      EXPECT_EQ(stats.dropped_oldest, dropped);
      EXPECT_EQ(first[0].lsn, 1001u + static_cast<uint64_t>(dropped));
    }
  }
}

TEST_F(RetentionTest, StepsAreBoundedAndResumable) {
  auto s = OpenStore();
  AppendResult r;
  for (int i = 0; i < 10; ++i) ASSERT_OK(s->AppendReadings(Batch(1000, 10, i * 1000), &r));
  ASSERT_OK(s->AckUpstream("eu", 10000));
  clock_.Advance(8 * 24 * kHour);
  PruneResult p;
  ASSERT_OK(s->PruneStep(3000, &p));
  EXPECT_EQ(p.readings, 3000);
  EXPECT_TRUE(p.more);
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 1, &log));
  EXPECT_EQ(log[0].lsn, 3001u);
  RetentionOptions ro;
  ro.step_rows = 3000;
  ro.pause_ms = 0;
  Retention retention(s.get(), ro, &clock_);
  ASSERT_OK(retention.RunPass(&p));
  EXPECT_EQ(p.readings, 7000);
  EXPECT_EQ(retention.stats().steps, 3);
  EXPECT_EQ(s->LastLsn(), 10000u);
  ASSERT_OK(s->AppendReadings(Batch(1), &r));
  EXPECT_EQ(r.first_lsn, 10001u) << "LSNs are never reused after a prune";
}

TEST_F(RetentionTest, ReadViewHasItsOwnRetention) {
  StoreOptions o = Options();
  o.remote_retention_ms = kHour;
  o.retention_age_ms = 24 * kHour;
  auto s = OpenStore(o);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10), &r));
  ASSERT_OK(s->AckUpstream("eu", 10));
  std::vector<RemoteEntry> remote;
  for (uint64_t i = 1; i <= 5; ++i) {
    RemoteEntry e;
    e.origin = Origin{"gw-other", "0123456789abcdef0123456789abcdef"};
    e.origin_lsn = i;
    e.entry.lsn = i;
    e.entry.reading = MakeReading("other", "temp", 1000 + static_cast<int64_t>(i), 1.0);
    remote.push_back(e);
  }
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(remote, &applied));
  ASSERT_EQ(applied, 5);
  clock_.Advance(2 * kHour);
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.remote, 5);
  EXPECT_EQ(p.readings, 0);  // local readings keep their own, longer age
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.remote_entries, 0);
  EXPECT_EQ(stats.entries, 10);
}

TEST_F(RetentionTest, RunsInTheBackgroundUntilStopped) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100), &r));
  ASSERT_OK(s->AckUpstream("eu", 100));
  clock_.Advance(8 * 24 * kHour);
  RetentionOptions ro;
  ro.interval_ms = 50;
  Retention retention(s.get(), ro, &clock_);
  ASSERT_OK(retention.Start());
  ASSERT_TRUE(WaitFor([&] { return retention.stats().pruned.readings == 100; }, 10000));
  retention.Stop();
  EXPECT_GE(retention.stats().passes, 1);
  EXPECT_EQ(retention.stats().errors, 0);
}

}  // namespace
}  // namespace edgesync::test

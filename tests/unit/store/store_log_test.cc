// The change log: LSNs, validation, device records, ranges and splits, feeds.
#include <map>

#include "store/token.h"
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreLogTest : public StoreTest {};

TEST_F(StoreLogTest, AppendsWithContiguousLsnsAndReadsBack) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100), &r));
  EXPECT_EQ(r.first_lsn, 1u);
  EXPECT_EQ(r.last_lsn, 100u);
  ASSERT_OK(s->AppendReadings(Batch(50), &r));
  EXPECT_EQ(r.first_lsn, 101u);
  EXPECT_EQ(s->LastLsn(), 150u);
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 1000, &log));
  ASSERT_EQ(log.size(), 150u);
  for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].lsn, i + 1);
  EXPECT_EQ(log[3].reading.device_id, "dev3");
  EXPECT_EQ(log[3].reading.metric, "temp");
  EXPECT_EQ(log[3].reading.unit, "C");
  EXPECT_EQ(log[3].reading.ts_ms, 1003);
  EXPECT_DOUBLE_EQ(log[3].reading.value, 1.5);
  ASSERT_OK(s->ReadLog(140, 5, &log));
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[0].lsn, 141u);
}

TEST_F(StoreLogTest, KeepsValuesExactly) {
  auto s = OpenStore();
  std::vector<Reading> v = {MakeReading("a", "m", -5, 3.0), MakeReading("a", "m", 1, -0.1),
                            MakeReading("a", "m", 2, 1e300)};
  v[1].quality = kQualityUntrustedClock | kQualitySensorFlagged;
  AppendResult r;
  ASSERT_OK(s->AppendReadings(v, &r));
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 10, &log));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].reading.value, 3.0);
  EXPECT_EQ(log[0].reading.ts_ms, -5);
  EXPECT_EQ(log[1].reading.value, -0.1);
  EXPECT_EQ(log[1].reading.quality, kQualityUntrustedClock | kQualitySensorFlagged);
  EXPECT_EQ(log[2].reading.value, 1e300);
}

// The uplink's priority read (UplinkSource::ReadLogLevel): only readings
// of the level, in LSN order, never past max_entries nor the scan budget,
// and scanned_to says how far the answer is complete; the store's own
// reading agrees with the plain one through ReadLog.
TEST_F(StoreLogTest, ReadsOneLevelsReadingsWithinTheScanBudget) {
  auto s = OpenStore();
  std::map<uint64_t, uint32_t> level_of;  // LSN -> level, readings only
  AppendResult r;
  for (int group = 0; group < 6; ++group) {
    std::vector<Reading> v = Batch(50, 10, 1000 + group * 100);
    for (size_t i = 0; i < v.size(); ++i) v[i].quality = WithPriority(kQualitySensorFlagged, (i * 7 + group) % 4);
    ASSERT_OK(s->AppendReadings(v, &r));
    for (size_t i = 0; i < v.size(); ++i) level_of[r.first_lsn + i] = QualityPriority(v[i].quality);
    DeviceRecord d{"dev" + std::to_string(group), "n", "l", "C", false};
    uint64_t device_lsn = 0;
    ASSERT_OK(s->UpsertDevice(d, &device_lsn));  // a device record between the groups: no level
  }
  const uint64_t last = s->LastLsn();
  ASSERT_EQ(last, 306u);
  for (uint32_t level = 1; level <= kMaxPriorityLevel; ++level) {
    // Whole, in pages of 7 entries and a scan budget of 40.
    std::vector<uint64_t> want, got, got_plain;
    for (const auto& [lsn, l] : level_of) {
      if (l == level) want.push_back(lsn);
    }
    uint64_t after = 0, after_plain = 0;
    while (after < last) {
      std::vector<ChangeEntry> page, plain;
      uint64_t to = 0, to_plain = 0;
      ASSERT_OK(s->ReadLogLevel(after, level, 7, 40, &page, &to));
      ASSERT_OK(s->UplinkSource::ReadLogLevel(after_plain, level, 7, 40, &plain, &to_plain));
      ASSERT_GT(to, after) << "no progress";
      EXPECT_LE(to - after, 40u) << "more than the scan budget looked at";
      EXPECT_LE(page.size(), 7u);
      for (const ChangeEntry& e : page) {
        EXPECT_GT(e.lsn, after);
        EXPECT_LE(e.lsn, to);
        EXPECT_EQ(e.kind, ChangeEntry::Kind::kReading);
        EXPECT_EQ(QualityPriority(e.reading.quality), level);
        EXPECT_EQ(QualityFlags(e.reading.quality) & kQualitySensorFlagged, kQualitySensorFlagged);
        EXPECT_FALSE(e.reading.device_id.empty());
        got.push_back(e.lsn);
      }
      if (page.size() == 7u) {
        EXPECT_EQ(page.back().lsn, to) << "a full page ends at its last entry";
      }
      for (const ChangeEntry& e : plain) got_plain.push_back(e.lsn);
      after = to;
      after_plain = to_plain;
    }
    EXPECT_EQ(got, want) << "level " << level;
    EXPECT_EQ(got_plain, want) << "level " << level;
  }
  // Past the end: nothing, and scanned_to stays.
  std::vector<ChangeEntry> none;
  uint64_t to = 0;
  ASSERT_OK(s->ReadLogLevel(last, 1, 10, 100, &none, &to));
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(to, last);
  EXPECT_FALSE(s->ReadLogLevel(0, 0, 10, 100, &none, &to).ok()) << "level 0 is not a priority";
}

TEST_F(StoreLogTest, OneInvalidReadingFailsTheWholeBatch) {
  auto s = OpenStore();
  auto v = Batch(10);
  v[7].device_id = "bad/id";
  AppendResult r;
  Status st = s->AppendReadings(v, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("reading 7"), std::string::npos) << st.message();
  v[7].device_id = "ok";
  v[2].value = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(s->AppendReadings(v, &r).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s->LastLsn(), 0u);
}

TEST_F(StoreLogTest, LsnSurvivesReopenAndIsNeverReusedAfterPruningAll) {
  {
    auto s = OpenStore();
    AppendResult r;
    ASSERT_OK(s->AppendReadings(Batch(20), &r));
    ASSERT_OK(s->AckUpstream("eu", 20));
  }
  clock_.Advance(8LL * 86400 * 1000);
  {
    auto s = OpenStore();
    EXPECT_EQ(s->LastLsn(), 20u);
    PruneResult p;
    ASSERT_OK(s->Prune(&p));
    EXPECT_EQ(p.readings, 20);
    std::vector<ChangeEntry> log;
    ASSERT_OK(s->ReadLog(0, 100, &log));
    EXPECT_TRUE(log.empty());
  }
  auto s = OpenStore();
  EXPECT_EQ(s->LastLsn(), 20u);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(1), &r));
  EXPECT_EQ(r.first_lsn, 21u);
}

TEST_F(StoreLogTest, LsnIndependentOfWallClock) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(5), &r));
  clock_.SetWall(0);  // RTC-less board before NTP
  ASSERT_OK(s->AppendReadings(Batch(5), &r));
  EXPECT_EQ(r.first_lsn, 6u);
}

TEST_F(StoreLogTest, DeviceRecordsKeepOnlyLatestVersionInLog) {
  auto s = OpenStore();
  uint64_t l1 = 0, l2 = 0, l3 = 0;
  DeviceRecord d{"dev1", "Boiler", "cellar", "C", false};
  ASSERT_OK(s->UpsertDevice(d, &l1));
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(3), &r));
  d.name = "Boiler 2";
  ASSERT_OK(s->UpsertDevice(d, &l2));
  EXPECT_GT(l2, l1);
  DeviceRecord got;
  ASSERT_OK(s->GetDevice("dev1", &got));
  EXPECT_EQ(got.name, "Boiler 2");
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 100, &log));
  int device_entries = 0;
  for (const auto& e : log) {
    if (e.kind != ChangeEntry::Kind::kReading) {
      ++device_entries;
      EXPECT_EQ(e.lsn, l2);
      EXPECT_EQ(e.device.name, "Boiler 2");
      EXPECT_EQ(e.device_id(), "dev1");
    }
  }
  EXPECT_EQ(device_entries, 1);
  ASSERT_OK(s->DeleteDevice("dev1", &l3));
  ASSERT_OK(s->GetDevice("dev1", &got));
  EXPECT_TRUE(got.deleted);
  ASSERT_OK(s->ReadLog(0, 100, &log));
  ASSERT_EQ(log.back().lsn, l3);
  EXPECT_EQ(log.back().kind, ChangeEntry::Kind::kDeviceDelete);
  EXPECT_TRUE(log.back().device.deleted);
  EXPECT_EQ(log.size(), 4u);
  EXPECT_EQ(s->DeleteDevice("nobody", &l3).code(), Status::Code::kNotFound);
  EXPECT_EQ(s->GetDevice("nobody", &got).code(), Status::Code::kNotFound);
}

TEST_F(StoreLogTest, TombstonesKeptForTheirRetentionThenPruned) {
  StoreOptions o = Options();
  o.tombstone_retention_ms = 1000;
  auto s = OpenStore(o);
  uint64_t lsn = 0;
  ASSERT_OK(s->UpsertDevice(DeviceRecord{"d", "n", "", "", false}, &lsn));
  ASSERT_OK(s->DeleteDevice("d", &lsn));
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.tombstones, 0);
  clock_.Advance(1001);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.tombstones, 1);
  DeviceRecord got;
  EXPECT_EQ(s->GetDevice("d", &got).code(), Status::Code::kNotFound);
  EXPECT_EQ(s->LastLsn(), lsn);
}

TEST_F(StoreLogTest, InitialRangesCoverTheHashSpace) {
  StoreOptions o = Options();
  o.initial_ranges = 3;
  auto s = OpenStore(o);
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0].min, 0u);
  EXPECT_EQ(ranges[0].max, ranges[1].min);
  EXPECT_EQ(ranges[1].max, ranges[2].min);
  EXPECT_EQ(ranges[2].max, UINT64_MAX);
  EXPECT_TRUE(ranges[2].Contains(UINT64_MAX));
  for (const auto& r : ranges) {
    EXPECT_EQ(r.parent, 0u);
    EXPECT_TRUE(r.active);
  }
}

// Feed of one range from the beginning, page by page, until empty.
std::vector<ChangeEntry> DrainRange(Store* s, uint32_t range, FeedStart from, size_t page_size, std::string* last) {
  std::vector<ChangeEntry> all;
  for (int guard = 0; guard < 10000; ++guard) {
    FeedPage page;
    Status st = s->ReadFeed(range, from, page_size, &page);
    EXPECT_OK(st);
    if (!st.ok()) break;
    *last = page.continuation;
    from = FeedStart{FeedStart::Kind::kToken, 0, 0, page.continuation};
    if (page.entries.empty()) break;
    all.insert(all.end(), page.entries.begin(), page.entries.end());
  }
  return all;
}

TEST_F(StoreLogTest, FeedsPartitionTheLogByRangeInLsnOrder) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(1000, 37), &r));
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  std::map<uint64_t, int> seen;
  for (const auto& range : ranges) {
    std::string last;
    auto entries = DrainRange(s.get(), range.id, FeedStart{}, 64, &last);
    uint64_t prev = 0;
    for (const auto& e : entries) {
      EXPECT_TRUE(range.Contains(PartitionHash(e.device_id())));
      EXPECT_GT(e.lsn, prev);
      prev = e.lsn;
      seen[e.lsn]++;
    }
  }
  EXPECT_EQ(seen.size(), 1000u);
  for (const auto& [lsn, n] : seen) EXPECT_EQ(n, 1) << lsn;
}

TEST_F(StoreLogTest, FeedStartsFromNowLsnAndTime) {
  auto s = OpenStore(Options());
  StoreOptions o = Options();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10, 1), &r));
  clock_.Advance(60000);
  int64_t t = clock_.WallMillis();
  ASSERT_OK(s->AppendReadings(Batch(10, 1), &r));
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  uint32_t range = 0;
  for (const auto& rg : ranges) {
    if (rg.Contains(PartitionHash("dev0"))) range = rg.id;
  }
  FeedPage page;
  ASSERT_OK(s->ReadFeed(range, FeedStart{FeedStart::Kind::kNow, 0, 0, ""}, 100, &page));
  EXPECT_TRUE(page.entries.empty());
  std::string now_token = page.continuation;
  ASSERT_OK(s->ReadFeed(range, FeedStart{FeedStart::Kind::kLsn, 15, 0, ""}, 100, &page));
  ASSERT_EQ(page.entries.size(), 5u);
  EXPECT_EQ(page.entries[0].lsn, 16u);
  ASSERT_OK(s->ReadFeed(range, FeedStart{FeedStart::Kind::kTime, 0, t, ""}, 100, &page));
  ASSERT_EQ(page.entries.size(), 10u);
  EXPECT_EQ(page.entries[0].lsn, 11u);
  ASSERT_OK(s->AppendReadings(Batch(3, 1), &r));
  ASSERT_OK(s->ReadFeed(range, FeedStart{FeedStart::Kind::kToken, 0, 0, now_token}, 100, &page));
  ASSERT_EQ(page.entries.size(), 3u);
  EXPECT_EQ(page.entries[0].lsn, 21u);
}

TEST_F(StoreLogTest, FeedRefusesForeignAndHostileTokens) {
  auto s = OpenStore();
  FeedPage page;
  ASSERT_OK(s->ReadFeed(1, FeedStart{}, 10, &page));
  FeedToken t;
  ASSERT_OK(DecodeFeedToken(page.continuation, &t));
  t.epoch = "00000000000000000000000000000000";
  Status st = s->ReadFeed(1, FeedStart{FeedStart::Kind::kToken, 0, 0, EncodeFeedToken(t)}, 10, &page);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("epoch"), std::string::npos);
  // A token of range 1 is not valid for range 2.
  ASSERT_OK(s->ReadFeed(1, FeedStart{}, 10, &page));
  EXPECT_EQ(s->ReadFeed(2, FeedStart{FeedStart::Kind::kToken, 0, 0, page.continuation}, 10, &page).code(),
            Status::Code::kInvalidArgument);
  for (const char* bad : {"", "garbage", "v1.1.zz.1", "\xff\xfe"}) {
    EXPECT_EQ(s->ReadFeed(1, FeedStart{FeedStart::Kind::kToken, 0, 0, bad}, 10, &page).code(),
              Status::Code::kInvalidArgument);
  }
  EXPECT_EQ(s->ReadFeed(99, FeedStart{}, 10, &page).code(), Status::Code::kNotFound);
}

TEST_F(StoreLogTest, RangeSplitsAndChildrenAcceptParentToken) {
  StoreOptions o = Options();
  o.initial_ranges = 1;
  o.split_max_entries = 500;
  auto s = OpenStore(o);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(300, 40), &r));
  FeedPage page;
  ASSERT_OK(s->ReadFeed(1, FeedStart{}, 1000, &page));
  ASSERT_EQ(page.entries.size(), 300u);
  std::string parent_token = page.continuation;
  ASSERT_OK(s->AppendReadings(Batch(300, 40, 5000), &r));  // passes 500: split
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_FALSE(ranges[0].active);
  EXPECT_EQ(ranges[1].parent, 1u);
  EXPECT_EQ(ranges[2].parent, 1u);
  EXPECT_EQ(ranges[1].min, 0u);
  EXPECT_EQ(ranges[1].max, ranges[2].min);
  EXPECT_EQ(ranges[2].max, UINT64_MAX);
  Status st = s->ReadFeed(1, FeedStart{FeedStart::Kind::kToken, 0, 0, parent_token}, 10, &page);
  EXPECT_EQ(st.code(), Status::Code::kNotFound);
  EXPECT_NE(st.message().find("2 and 3"), std::string::npos) << st.message();
  // The children, resumed from the parent's token, hold exactly the rest.
  size_t total = 0;
  for (uint32_t child : {2u, 3u}) {
    std::string last;
    auto entries = DrainRange(s.get(), child, FeedStart{FeedStart::Kind::kToken, 0, 0, parent_token}, 50, &last);
    for (const auto& e : entries) {
      EXPECT_GT(e.lsn, 300u);
      EXPECT_TRUE(ranges[child - 1].Contains(PartitionHash(e.device_id())));
    }
    total += entries.size();
    // A child's own token is not accepted by its sibling.
    uint32_t sibling = child == 2 ? 3 : 2;
    EXPECT_EQ(s->ReadFeed(sibling, FeedStart{FeedStart::Kind::kToken, 0, 0, last}, 10, &page).code(),
              Status::Code::kInvalidArgument);
  }
  EXPECT_EQ(total, 300u);
}

TEST_F(StoreLogTest, SplitByBytes) {
  StoreOptions o = Options();
  o.initial_ranges = 2;
  o.split_max_bytes = 10000;
  auto s = OpenStore(o);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(1000, 100), &r));
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  EXPECT_EQ(ranges.size(), 6u);
}

TEST_F(StoreLogTest, OrderWithinADeviceHoldsInItsRange) {
  StoreOptions o = Options();
  o.initial_ranges = 8;
  auto s = OpenStore(o);
  AppendResult r;
  for (int b = 0; b < 5; ++b) ASSERT_OK(s->AppendReadings(Batch(200, 13, b * 1000), &r));
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  for (const auto& range : ranges) {
    std::string last;
    std::map<std::string, int64_t> last_ts;
    for (const auto& e : DrainRange(s.get(), range.id, FeedStart{}, 33, &last)) {
      auto it = last_ts.find(e.device_id());
      if (it != last_ts.end()) {
        EXPECT_GT(e.reading.ts_ms, it->second);
      }
      last_ts[e.device_id()] = e.reading.ts_ms;
    }
  }
}

}  // namespace
}  // namespace edgesync::test

// Untrusted clock periods in the gateway store (store/time_correction.h):
// readings stamped in a period are shown at their corrected times once it
// is corrected, from commit chunks and from compacted spans alike, exactly
// once; the correction is kept across opens and applied once; a store of
// schema 7 opens with the periods table added.
#include <algorithm>

#include "store/schema.h"
#include "store/time_correction.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int64_t kDay = 86'400'000;
constexpr int64_t kTrue0 = 1'800'000'000'000;   // true time of the first reading
constexpr int64_t kStamped0 = kTrue0 - 3 * kDay;  // what the untrusted clock said then

TEST(TimeOverlayTest, AppliesOnlyToUntrustedReadingsOfCorrectedPeriods) {
  TimeOverlay o;
  o.Add(TimeCorrection{2, 5000, 100, 200});
  const uint32_t in2 = kQualityUntrustedClock | kQualityReceiveTime | (2u << kQualityPeriodShift);
  int64_t ts = 150;
  uint32_t q = in2;
  o.Apply(&ts, &q);
  EXPECT_EQ(ts, 5150);
  EXPECT_EQ(q & kQualityUntrustedClock, 0u);
  EXPECT_NE(q & kQualityCorrectedTime, 0u);
  EXPECT_EQ(QualityPeriod(q), 2u);
  // Another period, no period, and the device's own time stay as they are.
  for (uint32_t other : {kQualityUntrustedClock | (3u << kQualityPeriodShift), uint32_t{kQualityUntrustedClock},
                         (2u << kQualityPeriodShift) | kQualitySensorFlagged}) {
    ts = 150;
    q = other;
    o.Apply(&ts, &q);
    EXPECT_EQ(ts, 150);
    EXPECT_EQ(q, other);
  }
  // Applied again (a correction received twice) nothing changes.
  o.Add(TimeCorrection{2, 5000, 100, 200});
  ts = 150;
  q = in2;
  o.Apply(&ts, &q);
  EXPECT_EQ(ts, 5150);
}

TEST(TimeOverlayTest, ScanWindowsReachTheStampedTimes) {
  TimeOverlay o;
  EXPECT_EQ(o.ScanWindows(10, 20), (std::vector<std::pair<int64_t, int64_t>>{{10, 20}}));
  o.Add(TimeCorrection{1, 1000, 0, 99});
  // Shown [1050, 1200): stamped [50, 200) within the span [0, 99].
  EXPECT_EQ(o.ScanWindows(1050, 1200), (std::vector<std::pair<int64_t, int64_t>>{{50, 100}, {1050, 1200}}));
  // A window the shift does not reach reads itself only.
  EXPECT_EQ(o.ScanWindows(5000, 6000), (std::vector<std::pair<int64_t, int64_t>>{{5000, 6000}}));
  // Unbounded windows do not overflow.
  auto w = o.ScanWindows(INT64_MIN, INT64_MAX);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], (std::pair<int64_t, int64_t>{INT64_MIN, INT64_MAX}));
}

class StoreTimeCorrectionTest : public StoreTest {
 protected:
  // n readings of dev0/temp a second apart stamped in `period` from
  // kStamped0, and one reading carrying the device's own time.
  std::vector<Reading> Untrusted(uint32_t period, int n, int64_t from = kStamped0) {
    std::vector<Reading> v;
    for (int i = 0; i < n; ++i) {
      Reading r = MakeReading("dev0", "temp", from + i * 1000, i, "C");
      r.quality = kQualityReceiveTime | kQualityUntrustedClock | (period << kQualityPeriodShift);
      v.push_back(r);
    }
    return v;
  }
  std::vector<QueryRow> Window(Store* s, int64_t from, int64_t to) {
    QueryRequest q;
    q.device_id = "dev0";
    q.from_ms = from;
    q.to_ms = to;
    q.limit = 10000;
    std::vector<QueryRow> rows;
    EXPECT_OK(s->Query(q, &rows));
    return rows;
  }
  // Every row of dev0 is at its true time, corrected, once.
  void ExpectCorrected(Store* s, int n) {
    auto rows = Window(s, kTrue0 - 10 * kDay, kTrue0 + 10 * kDay);
    ASSERT_EQ(rows.size(), static_cast<size_t>(n) + 1);  // + the device's own reading
    int corrected = 0;
    for (const QueryRow& r : rows) {
      if (r.reading.ts_ms == kTrue0 + 5 * kDay) {  // the device's own
        EXPECT_EQ(r.reading.quality, 0u);
        continue;
      }
      EXPECT_EQ(r.reading.ts_ms, kTrue0 + static_cast<int64_t>(r.reading.value) * 1000);
      EXPECT_EQ(r.reading.quality & kQualityUntrustedClock, 0u);
      EXPECT_NE(r.reading.quality & kQualityCorrectedTime, 0u);
      ++corrected;
    }
    EXPECT_EQ(corrected, n);
    // A window of true times finds exactly the readings inside it; the
    // stamped times find none any more.
    EXPECT_EQ(Window(s, kTrue0 + 10'000, kTrue0 + 20'000).size(), 10u);
    EXPECT_EQ(Window(s, kStamped0 - 1, kStamped0 + n * 1000).size(), 0u);
  }
};

TEST_F(StoreTimeCorrectionTest, CorrectedPeriodShowsTrueTimesOnce) {
  auto s = OpenStore();
  uint32_t period = 0;
  ASSERT_OK(s->OpenClockPeriod("boot-a", kStamped0, kStamped0, &period));
  EXPECT_EQ(period, 1u);
  AppendResult ar;
  ASSERT_OK(s->AppendReadings(Untrusted(period, 60), &ar));
  Reading own = MakeReading("dev0", "temp", kTrue0 + 5 * kDay, -1, "C");
  ASSERT_OK(s->AppendReadings({own}, &ar));
  // Before the correction: at the stamped times, flagged.
  auto before = Window(s.get(), kStamped0, kStamped0 + 60'000);
  ASSERT_EQ(before.size(), 60u);
  EXPECT_NE(before[0].reading.quality & kQualityUntrustedClock, 0u);

  std::vector<ClockPeriod> periods;
  ASSERT_OK(s->ListClockPeriods(&periods));
  ASSERT_EQ(periods.size(), 1u);
  EXPECT_EQ(periods[0].readings, 60);
  EXPECT_EQ(periods[0].first_ts_ms, kStamped0);
  EXPECT_EQ(periods[0].last_ts_ms, kStamped0 + 59'000);
  EXPECT_FALSE(periods[0].corrected);

  bool done = false;
  ASSERT_OK(s->CorrectClockPeriod(period, 3 * kDay, kTrue0 + 60'000, &done));
  EXPECT_TRUE(done);
  ExpectCorrected(s.get(), 60);
  // `devices` gives the span of the times a query shows.
  std::vector<DeviceSummary> devices;
  ASSERT_OK(s->ListDevices(&devices));
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].readings, 61);
  EXPECT_EQ(devices[0].first_ts_ms, kTrue0);
  EXPECT_EQ(devices[0].last_ts_ms, kTrue0 + 5 * kDay);
  // Once only: a second correction changes nothing.
  ASSERT_OK(s->CorrectClockPeriod(period, 7, kTrue0 + 70'000, &done));
  EXPECT_FALSE(done);
  ExpectCorrected(s.get(), 60);
  EXPECT_EQ(s->CorrectClockPeriod(99, 7, 0, &done).code(), Status::Code::kNotFound);

  // Kept across opens, and through compaction into series blocks.
  s.reset();
  s = OpenStore(CompactingOptions(20));
  ExpectCorrected(s.get(), 60);
  ASSERT_OK(s->AckUpstream("eu", s->LastLsn()));
  clock_.Advance(120000);
  CompactResult cr;
  do {
    cr = CompactResult{};
    ASSERT_OK(s->CompactStep(&cr));
  } while (cr.more);
  int64_t spans = 0;
  ExpectCorrected(s.get(), 60);
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READONLY));
    ASSERT_OK(db.QueryInt("SELECT count(*) FROM series_chunks", &spans));
  }
  EXPECT_GT(spans, 0);
}

// The correction travels like a write: an entry of the change log, after
// the readings it moves, which the uplink reads (a range's feed has no use
// for it: it names no device). Another store that applies the log, as a
// read view or as a region hub, shows the origin's readings at their true
// times, once, however often the entries come.
TEST_F(StoreTimeCorrectionTest, TheCorrectionIsAnEntryOfTheChangeLogThatReplicasApply) {
  auto s = OpenStore();
  uint32_t period = 0;
  ASSERT_OK(s->OpenClockPeriod("boot-a", kStamped0, kStamped0, &period));
  AppendResult ar;
  ASSERT_OK(s->AppendReadings(Untrusted(period, 60), &ar));
  ASSERT_OK(s->AppendReadings({MakeReading("dev0", "temp", kTrue0 + 5 * kDay, -1, "C")}, &ar));
  std::vector<ChangeEntry> readings;
  ASSERT_OK(s->ReadLog(0, 1000, &readings));
  ASSERT_EQ(readings.size(), 61u);
  bool done = false;
  const int64_t corrected_at = kTrue0 + 60'000;
  ASSERT_OK(s->CorrectClockPeriod(period, 3 * kDay, corrected_at, &done));
  ASSERT_TRUE(done);
  EXPECT_EQ(s->LastLsn(), 62u);
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(61, 1000, &log));
  ASSERT_EQ(log.size(), 1u);
  const ChangeEntry& c = log[0];
  EXPECT_EQ(c.lsn, 62u);
  ASSERT_EQ(c.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_OK(ValidateChangeEntry(c));
  EXPECT_EQ(c.correction.period, period);
  EXPECT_EQ(c.correction.delta_ms, 3 * kDay);
  // The span: from the period's opening to what the untrusted clock read
  // at the correction, which covers every reading stamped in it.
  EXPECT_LE(c.correction.from_ms, kStamped0);
  EXPECT_EQ(c.correction.to_ms, corrected_at - 3 * kDay);
  EXPECT_GE(c.correction.to_ms, kStamped0 + 59'000);
  // Corrected once: no second entry.
  ASSERT_OK(s->CorrectClockPeriod(period, 7, corrected_at + 1, &done));
  EXPECT_FALSE(done);
  EXPECT_EQ(s->LastLsn(), 62u);
  // Not in a range's feed.
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  ASSERT_FALSE(ranges.empty());
  size_t fed_readings = 0;
  for (const RangeInfo& r : ranges) {
    if (!r.active) continue;
    FeedStart from;
    from.kind = FeedStart::Kind::kBeginning;
    FeedPage feed;
    ASSERT_OK(s->ReadFeed(r.id, from, 1000, &feed));
    fed_readings += feed.entries.size();
    for (const ChangeEntry& e : feed.entries) EXPECT_NE(e.kind, ChangeEntry::Kind::kTimeCorrection);
  }
  EXPECT_EQ(fed_readings, 61u);
  const Origin origin = s->origin();
  s.reset();

  std::vector<ChangeEntry> all = readings;
  all.push_back(c);
  // A read view: the readings in one page, the correction in a later one
  // (twice, as a resent page would bring it).
  {
    StoreOptions o = Options();
    o.path = dir_.File("view.db");
    o.gateway_id = "gw2";
    auto view = OpenStore(o);
    std::vector<RemoteEntry> page;
    for (const ChangeEntry& e : readings) page.push_back(RemoteEntry{origin, e.lsn, e});
    int64_t applied = 0;
    ASSERT_OK(view->ApplyRemote(page, &applied));
    EXPECT_EQ(Window(view.get(), kStamped0, kStamped0 + 60'000).size(), 60u);  // as stamped, before
    for (int i = 0; i < 2; ++i) ASSERT_OK(view->ApplyRemote({RemoteEntry{origin, c.lsn, c}}, &applied));
    ExpectCorrected(view.get(), 60);
    std::vector<DeviceSummary> devices;
    ASSERT_OK(view->ListDevices(&devices));
    ASSERT_EQ(devices.size(), 1u);
    EXPECT_EQ(devices[0].first_ts_ms, kTrue0);
    view.reset();
    ExpectCorrected(OpenStore(o).get(), 60);  // kept across opens
  }
  // A region hub: one batch with both, then the same batch again.
  {
    StoreOptions o = Options();
    o.path = dir_.File("hub.db");
    o.gateway_id = "hub";
    std::unique_ptr<SqliteHubStore> hub;
    ASSERT_OK(OpenSqliteHubStore(o, &hub));
    uint64_t high_water = 0;
    ASSERT_OK(ApplyOriginBatch(hub.get(), origin, 0, all, &high_water));
    EXPECT_EQ(high_water, 62u);
    ASSERT_OK(ApplyOriginBatch(hub.get(), origin, 0, all, &high_water));
    ExpectCorrected(hub->store(), 60);
    // Its feed serves the correction on, to read views.
    std::vector<RegionFeedEntry> fed;
    uint64_t head = 0;
    bool reset = false;
    ASSERT_OK(ReadRegionFeed(hub.get(), 0, 1000, &fed, &head, &reset));
    ASSERT_EQ(fed.size(), 62u);
    EXPECT_EQ(fed.back().remote.entry.kind, ChangeEntry::Kind::kTimeCorrection);
    EXPECT_EQ(fed.back().remote.entry.correction.delta_ms, 3 * kDay);
  }
}

TEST_F(StoreTimeCorrectionTest, ReadingOfAnUnknownPeriodIsRefused) {
  auto s = OpenStore();
  AppendResult ar;
  EXPECT_EQ(s->AppendReadings(Untrusted(4, 3), &ar).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(s->LastLsn(), 0u);
}

TEST_F(StoreTimeCorrectionTest, TwoPeriodsCorrectSeparately) {
  auto s = OpenStore();
  uint32_t p1 = 0, p2 = 0;
  ASSERT_OK(s->OpenClockPeriod("boot-a", 0, kStamped0, &p1));
  ASSERT_OK(s->OpenClockPeriod("boot-a", kDay, kStamped0 + kDay, &p2));
  EXPECT_EQ(p2, p1 + 1);
  AppendResult ar;
  ASSERT_OK(s->AppendReadings(Untrusted(p1, 5, kStamped0), &ar));
  ASSERT_OK(s->AppendReadings(Untrusted(p2, 5, kStamped0 + kDay), &ar));
  bool done = false;
  ASSERT_OK(s->CorrectClockPeriod(p2, 2 * kDay, kTrue0, &done));
  auto rows = Window(s.get(), INT64_MIN, INT64_MAX);
  ASSERT_EQ(rows.size(), 10u);
  int moved = 0, kept = 0;
  for (const QueryRow& r : rows) {
    if (QualityPeriod(r.reading.quality) == p2) {
      EXPECT_EQ(r.reading.ts_ms, kStamped0 + 3 * kDay + static_cast<int64_t>(r.reading.value) * 1000);
      EXPECT_NE(r.reading.quality & kQualityCorrectedTime, 0u);
      ++moved;
    } else {
      EXPECT_EQ(r.reading.ts_ms, kStamped0 + static_cast<int64_t>(r.reading.value) * 1000);
      EXPECT_NE(r.reading.quality & kQualityUntrustedClock, 0u);
      ++kept;
    }
  }
  EXPECT_EQ(moved, 5);
  EXPECT_EQ(kept, 5);
}

TEST_F(StoreTimeCorrectionTest, Version7StoreOpensWithPeriods) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 7));
    ASSERT_OK(db.Exec("INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
                      "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"));
  }
  auto s = OpenStore();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  uint32_t period = 0;
  ASSERT_OK(s->OpenClockPeriod("boot-a", 0, kStamped0, &period));
  EXPECT_EQ(period, 1u);
}

}  // namespace
}  // namespace edgesync::test

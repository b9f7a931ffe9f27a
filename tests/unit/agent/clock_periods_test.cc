// Untrusted clock periods end to end through ingest and a real store on a
// ManualClock with a fake synchronisation probe: readings stamped on
// arrival while the clock is untrusted carry their period, a step of the
// untrusted clock begins a new one, and once the clock is trusted in the
// same boot each period is corrected from the monotonic clock, so a query
// shows every reading at its true time; a run stopped before correcting
// corrects at its next start; a period whose boot ended untrusted keeps the
// flag and is counted uncorrectable.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "agent/ingest/ingest.h"
#include "store/store.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

constexpr int64_t kFloor = 1767225600000;            // 2026-01-01
constexpr int64_t kDay = 86'400'000;
constexpr int64_t kTrue0 = kFloor + 300 * kDay;      // the true time at the start
constexpr int64_t kMono0Ns = 5'000'000'000;          // 5 s after boot

class ClockPeriodsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.path = dir_.File("store.db");
    so.gateway_id = "gw1";
    so.clock = &clock_;
    ASSERT_OK(Store::Open(so, &store_));
    sink_ = std::make_unique<StoreSink>(store_.get(), store_.get(), store_.get());
  }
  std::unique_ptr<Ingest> MakeIngest() {
    IngestOptions o;
    o.epoch_floor_ms = kFloor;
    o.ack = AckMode::kAfterCommit;
    o.retry_delay_ms = 1;
    o.clock_sync = [this] { return synced_ ? ClockSync::kSynchronized : ClockSync::kUnsynchronized; };
    auto ingest = std::make_unique<Ingest>(o, sink_.get(), &clock_);
    EXPECT_OK(ingest->Init());
    EXPECT_OK(ingest->Start());
    return ingest;
  }
  // The clock is stepped to the true time and the probe says synchronised;
  // a second later (the probe is asked at most once a second).
  void Synchronise() {
    clock_.SetWall(TrueNow());
    synced_ = true;
    clock_.Advance(1000);
  }
  int64_t TrueNow() const { return kTrue0 + (clock_.MonotonicMillis() - kMono0Ns / 1000000); }
  std::vector<QueryRow> All() {
    QueryRequest q;
    q.device_id = "d1";
    q.limit = 1000;
    std::vector<QueryRow> rows;
    EXPECT_OK(store_->Query(q, &rows));
    return rows;
  }

  test::TempDir dir_;
  // Booted offline with a saved time three days behind.
  ManualClock clock_{kTrue0 - 3 * kDay, kMono0Ns};
  std::atomic<bool> synced_{false};
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreSink> sink_;
};

TEST_F(ClockPeriodsTest, ReadingsOfTwoPeriodsMoveToTheirTrueTimesOnceTrusted) {
  auto ingest = MakeIngest();
  ingest->OnMessage("sensors/d1/temp", "1");  // true time kTrue0
  ingest->OnMessage("sensors/d1/temp", R"({"v": 100, "t": 1800000000})");  // the device's own time
  clock_.Advance(1000);
  // The untrusted clock steps an hour (a wrong NTP-less set): a new period.
  clock_.SetWall(clock_.WallMillis() + 3600000);
  ingest->OnMessage("sensors/d1/temp", "2");  // true time kTrue0 + 1000
  clock_.Advance(1000);
  ingest->OnMessage("sensors/d1/temp", "3");  // true time kTrue0 + 2000
  ingest->CorrectClockPeriods();              // untrusted: nothing yet
  std::vector<ClockPeriod> periods;
  ASSERT_OK(store_->ListClockPeriods(&periods));
  ASSERT_EQ(periods.size(), 2u);
  EXPECT_EQ(periods[0].readings, 1);
  EXPECT_EQ(periods[1].readings, 2);
  EXPECT_FALSE(periods[0].corrected || periods[1].corrected);
  ClockPeriodFigures f = ingest->clock_periods();
  EXPECT_EQ(f.open, 2);
  EXPECT_EQ(f.readings_open, 3);

  Synchronise();
  ingest->CorrectClockPeriods();
  ingest->OnMessage("sensors/d1/temp", "4");  // trusted: stamped as is
  auto rows = All();
  ASSERT_EQ(rows.size(), 5u);
  for (const QueryRow& r : rows) {
    const uint32_t q = r.reading.quality;
    if (r.reading.value == 100) {
      EXPECT_EQ(r.reading.ts_ms, 1800000000000);
      EXPECT_EQ(q, 0u);
    } else if (r.reading.value == 4) {
      EXPECT_EQ(q, uint32_t{kQualityReceiveTime});
    } else {
      EXPECT_EQ(r.reading.ts_ms, kTrue0 + static_cast<int64_t>(r.reading.value - 1) * 1000) << r.reading.value;
      EXPECT_EQ(QualityFlags(q), kQualityReceiveTime | kQualityCorrectedTime) << r.reading.value;
    }
  }
  f = ingest->clock_periods();
  EXPECT_EQ(f.corrected, 2);
  EXPECT_EQ(f.readings_corrected, 3);
  EXPECT_EQ(f.open, 0);
  ingest->Stop();
}

TEST_F(ClockPeriodsTest, ARunStoppedBeforeCorrectingCorrectsAtItsNextStart) {
  auto a = MakeIngest();
  a->OnMessage("sensors/d1/temp", "1");
  a->Stop();
  a.reset();
  // A restart in the same boot, still untrusted: the same period goes on.
  clock_.Advance(1000);
  auto b = MakeIngest();
  b->OnMessage("sensors/d1/temp", "2");
  b->Stop();
  b.reset();
  std::vector<ClockPeriod> periods;
  ASSERT_OK(store_->ListClockPeriods(&periods));
  ASSERT_EQ(periods.size(), 1u);
  EXPECT_EQ(periods[0].readings, 2);
  // Trusted while no run was up (killed between trust and correction).
  Synchronise();
  auto c = MakeIngest();
  c->CorrectClockPeriods();
  auto rows = All();
  ASSERT_EQ(rows.size(), 2u);
  for (const QueryRow& r : rows) {
    EXPECT_EQ(r.reading.ts_ms, kTrue0 + static_cast<int64_t>(r.reading.value - 1) * 1000);
    EXPECT_NE(r.reading.quality & kQualityCorrectedTime, 0u);
  }
  c->Stop();
}

TEST_F(ClockPeriodsTest, APeriodWhoseBootEndedUntrustedKeepsItsFlag) {
  auto a = MakeIngest();
  a->OnMessage("sensors/d1/temp", "1");
  a->Stop();
  a.reset();
  clock_.Reboot("manual-boot-2", kMono0Ns);
  clock_.SetWall(kTrue0 - 2 * kDay);
  auto b = MakeIngest();
  b->OnMessage("sensors/d1/temp", "2");  // a period of the new boot
  Synchronise();
  b->CorrectClockPeriods();
  auto rows = All();
  ASSERT_EQ(rows.size(), 2u);
  for (const QueryRow& r : rows) {
    if (r.reading.value == 1) {
      EXPECT_EQ(r.reading.ts_ms, kTrue0 - 3 * kDay);  // as stamped
      EXPECT_EQ(QualityFlags(r.reading.quality), kQualityReceiveTime | kQualityUntrustedClock);
    } else {
      EXPECT_EQ(QualityFlags(r.reading.quality), kQualityReceiveTime | kQualityCorrectedTime);
      EXPECT_EQ(r.reading.ts_ms, kTrue0);  // the new boot's monotonic time restarted at kMono0Ns
    }
  }
  ClockPeriodFigures f = b->clock_periods();
  EXPECT_TRUE(f.kept);
  EXPECT_EQ(f.uncorrectable, 1);
  EXPECT_EQ(f.readings_uncorrectable, 1);
  EXPECT_EQ(f.corrected, 1);
  b->Stop();
}

}  // namespace
}  // namespace edgesync

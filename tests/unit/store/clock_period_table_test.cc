// clock_period_table through its own API on a real SQLite file of the
// store's schema: periods opened, counted into and corrected once, the
// span a correction carries, and other origins' corrections kept once.
#include "store/clock_period_table.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "store/schema.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class ClockPeriodTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("periods.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
  }
  static Reading Stamped(uint32_t period, int64_t ts) {
    Reading r;
    r.device_id = "d1";
    r.metric = "temp";
    r.ts_ms = ts;
    r.quality = (period << kQualityPeriodShift) | kQualityUntrustedClock | kQualityReceiveTime;
    return r;
  }
  TempDir dir_;
  Db db_;
  Stmt count_;
};

TEST_F(ClockPeriodTableTest, PeriodsAreNumberedAndCountTheirReadings) {
  uint32_t a = 0, b = 0;
  ASSERT_OK(clock_period_table::Open(&db_, "boot-1", -5000, 1000, &a));
  ASSERT_OK(clock_period_table::Open(&db_, "boot-2", 7000, 2000, &b));
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  Reading plain = Stamped(0, 50);  // no period: not counted
  ASSERT_OK(clock_period_table::CountReadings(&db_, &count_, {Stamped(1, 300), Stamped(1, 100), plain}));
  ASSERT_OK(clock_period_table::CountReadings(&db_, &count_, {Stamped(1, 200), Stamped(2, 900)}));
  std::vector<ClockPeriod> periods;
  ASSERT_OK(clock_period_table::List(&db_, &periods));
  ASSERT_EQ(periods.size(), 2u);
  EXPECT_EQ(periods[0].boot_id, "boot-1");
  EXPECT_EQ(periods[0].offset_ms, -5000);
  EXPECT_EQ(periods[0].readings, 3);
  EXPECT_EQ(periods[0].first_ts_ms, 100);
  EXPECT_EQ(periods[0].last_ts_ms, 300);
  EXPECT_FALSE(periods[0].corrected);
  EXPECT_EQ(periods[1].readings, 1);
  // A period the table never opened is refused, not invented.
  Status st = clock_period_table::CountReadings(&db_, &count_, {Stamped(9, 1)});
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
}

TEST_F(ClockPeriodTableTest, APeriodIsCorrectedOnceAndCarriesTheSpanItCanHold) {
  uint32_t id = 0;
  ASSERT_OK(clock_period_table::Open(&db_, "boot-1", 0, /*now=*/1000, &id));
  ASSERT_OK(clock_period_table::CountReadings(&db_, &count_, {Stamped(id, 1500), Stamped(id, 4000)}));
  TimeCorrection c;
  EXPECT_EQ(clock_period_table::CorrectionOf(&db_, id, &c).code(), Status::Code::kCorruption)
      << "not corrected yet";
  bool changed = false;
  // Corrected when the untrusted clock read 5000: +86,400,000 ms.
  ASSERT_OK(clock_period_table::MarkCorrected(&db_, id, 86400000, 86405000, &changed));
  EXPECT_TRUE(changed);
  ASSERT_OK(clock_period_table::MarkCorrected(&db_, id, 1, 86406000, &changed));
  EXPECT_FALSE(changed) << "a second correction changes nothing";
  ASSERT_OK(clock_period_table::CorrectionOf(&db_, id, &c));
  EXPECT_EQ(c.period, id);
  EXPECT_EQ(c.delta_ms, 86400000);
  EXPECT_EQ(c.from_ms, 1000);  // its opening, before its first reading
  EXPECT_EQ(c.to_ms, 5000);    // what the untrusted clock read at the correction
  TimeOverlay own;
  ASSERT_OK(clock_period_table::LoadOwnOverlay(&db_, &own));
  int64_t ts = 1500;
  uint32_t quality = (id << kQualityPeriodShift) | kQualityUntrustedClock | kQualityReceiveTime;
  own.Apply(&ts, &quality);
  EXPECT_EQ(ts, 1500 + 86400000);
  EXPECT_EQ(clock_period_table::MarkCorrected(&db_, 77, 1, 1, &changed).code(), Status::Code::kNotFound);
}

TEST_F(ClockPeriodTableTest, AnotherOriginsCorrectionIsKeptOnceByOriginAndPeriod) {
  ASSERT_OK(clock_period_table::KeepOriginCorrection(&db_, 4, TimeCorrection{1, 1000, 0, 500}));
  ASSERT_OK(clock_period_table::KeepOriginCorrection(&db_, 4, TimeCorrection{1, 1000, 0, 500}));
  ASSERT_OK(clock_period_table::KeepOriginCorrection(&db_, 5, TimeCorrection{1, -7, 10, 20}));
  int64_t rows = 0;
  ASSERT_OK(db_.QueryInt("SELECT count(*) FROM origin_time_corrections", &rows));
  EXPECT_EQ(rows, 2);
  std::unordered_map<int64_t, TimeOverlay> overlays;
  ASSERT_OK(clock_period_table::LoadOriginOverlays(&db_, &overlays));
  ASSERT_EQ(overlays.size(), 2u);
  int64_t ts = 100;
  uint32_t quality = (1u << kQualityPeriodShift) | kQualityUntrustedClock | kQualityReceiveTime;
  overlays[4].Apply(&ts, &quality);
  EXPECT_EQ(ts, 1100);
}

}  // namespace
}  // namespace edgesync::test

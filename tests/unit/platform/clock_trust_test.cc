#include "platform/clock_trust.h"

#include <gtest/gtest.h>
#include <sys/timex.h>

#include <fstream>
#include <string>

#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

constexpr int64_t kFloor = 1767225600000;  // 2026-01-01

ClockTrustOptions Kernel(const std::string& marker = "") {
  ClockTrustOptions o;
  o.epoch_floor_ms = kFloor;
  o.marker_path = marker;
  return o;
}

TEST(ClockTrustTest, AdjtimexStatusMapsToASyncState) {
  EXPECT_EQ(ClockSyncFromTimex(TIME_OK, 0), ClockSync::kSynchronized);
  EXPECT_EQ(ClockSyncFromTimex(TIME_OK, STA_UNSYNC), ClockSync::kUnsynchronized);
  EXPECT_EQ(ClockSyncFromTimex(TIME_ERROR, 0), ClockSync::kUnsynchronized);
  EXPECT_EQ(ClockSyncFromTimex(-1, 0), ClockSync::kUnknown);
}

// The real call, read only: whatever this machine's state, the answer is
// the kernel's.
TEST(ClockTrustTest, TheKernelIsAskedWithAdjtimex) {
  struct timex tx = {};
  const int result = adjtimex(&tx);
  ASSERT_NE(result, -1) << "adjtimex with modes 0 needs no privilege";
  EXPECT_EQ(KernelClockSync(), ClockSyncFromTimex(result, tx.status));
}

TEST(ClockTrustTest, TrustedOnceSynchronisedAndForTheRestOfTheBoot) {
  ManualClock clock(kFloor + 1000, 1000000000);
  ClockSync state = ClockSync::kUnsynchronized;
  int asked = 0;
  ClockTrust trust(Kernel(), &clock, [&] {
    ++asked;
    return state;
  });
  EXPECT_FALSE(trust.Trusted());
  state = ClockSync::kSynchronized;
  EXPECT_FALSE(trust.Trusted());  // asked at most once a second
  clock.Advance(1000);
  EXPECT_TRUE(trust.Trusted());
  state = ClockSync::kUnsynchronized;
  clock.Advance(60000);
  EXPECT_TRUE(trust.Trusted());
  EXPECT_EQ(asked, 2);
  clock.SetWall(86400000);  // stepped back before the floor: never trusted
  EXPECT_FALSE(trust.Trusted());
  EXPECT_FALSE(trust.Snapshot().trusted);
}

TEST(ClockTrustTest, TheMarkerKeepsTrustAcrossRestartsWithinOneBootOnly) {
  test::TempDir dir;
  const std::string marker = dir.File("clock-trusted");
  ManualClock clock(kFloor + 1000, 1000000000);
  {
    ClockTrust trust(Kernel(marker), &clock, [] { return ClockSync::kSynchronized; });
    EXPECT_TRUE(trust.Trusted());
  }
  ClockTrust restarted(Kernel(marker), &clock, [] { return ClockSync::kUnsynchronized; });
  EXPECT_TRUE(restarted.Trusted());
  clock.Reboot("manual-boot-2", 1000000000);
  ClockTrust rebooted(Kernel(marker), &clock, [] { return ClockSync::kUnsynchronized; });
  EXPECT_FALSE(rebooted.Trusted());
}

TEST(ClockTrustTest, AFileSourceTrustsOnceTheFileExists) {
  test::TempDir dir;
  ClockTrustOptions o;
  ASSERT_OK(ParseClockTrustSource("file:" + dir.File("synchronized"), &o));
  o.epoch_floor_ms = kFloor;
  ManualClock clock(kFloor + 1000, 1000000000);
  ClockTrust trust(o, &clock, [] { return ClockSync::kSynchronized; });  // not asked
  EXPECT_FALSE(trust.Trusted());
  std::ofstream(dir.File("synchronized")).put('\n');
  clock.Advance(1000);
  EXPECT_TRUE(trust.Trusted());
  EXPECT_STREQ(trust.Snapshot().source, "file");
}

TEST(ClockTrustTest, TheFloorSourceTrustsEveryTimePastTheFloor) {
  ClockTrustOptions o;
  ASSERT_OK(ParseClockTrustSource("floor", &o));
  o.epoch_floor_ms = kFloor;
  ManualClock clock(kFloor - 1, 1);
  ClockTrust trust(o, &clock, [] { return ClockSync::kUnsynchronized; });
  EXPECT_FALSE(trust.Trusted());
  clock.Advance(1);
  EXPECT_TRUE(trust.Trusted());
}

TEST(ClockTrustTest, UnknownSourcesAreRefused) {
  ClockTrustOptions o;
  for (const char* bad : {"", "ntp", "file:", "file:relative/path", "Kernel"}) {
    EXPECT_EQ(ParseClockTrustSource(bad, &o).code(), Status::Code::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace edgesync

// RateLimiter: buckets on the device's own clock (a backlog is not a
// flood), bounded by the gateway's wall clock (a wrong clock wins nothing
// lasting), bounded memory, one report per device per interval.
#include "agent/ingest/rate_limiter.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

constexpr int64_t kNow = 1800000000000;
constexpr int64_t kLag = int64_t{3600} * 1000;

// Offers `count` one-reading messages taken every step_ms from first_ms, all
// arriving at arrival_ms; returns how many were allowed.
int Offer(RateLimiter* l, const std::string& device, int64_t first_ms, int64_t step_ms, int count,
          int64_t arrival_ms) {
  int allowed = 0;
  for (int i = 0; i < count; ++i) allowed += l->Allow(device, first_ms + i * step_ms, arrival_ms) ? 1 : 0;
  return allowed;
}

TEST(RateLimiter, ABacklogWithinTheRateInTheDevicesOwnTimeIsAllowedAllAtOnce) {
  RateLimiter l(100, 200, 10000, kLag);
  // 30 s of an outage at 20 readings/s (600 readings), delivered in one instant.
  EXPECT_EQ(Offer(&l, "d", kNow - 30000, 50, 600, kNow), 600);
  // The same device live afterwards.
  EXPECT_EQ(Offer(&l, "d", kNow, 50, 20, kNow + 1000), 20);
  EXPECT_TRUE(l.TopRejected(10).empty());
}

TEST(RateLimiter, ADeviceOverItsRateInItsOwnTimeIsRefused) {
  RateLimiter l(100, 200, 10000, kLag);
  // 1,000 readings/s in its own time for 2 s: the burst plus 100/s.
  int allowed = Offer(&l, "hot", kNow - 2000, 1, 2000, kNow);
  EXPECT_GE(allowed, 200 + 199);
  EXPECT_LE(allowed, 200 + 201);
  ASSERT_EQ(l.TopRejected(1).size(), 1u);
  EXPECT_EQ(l.TopRejected(1)[0].second, 2000 - allowed);
}

TEST(RateLimiter, ReadingsWithoutOwnTimeCountOnArrival) {
  RateLimiter l(10, 20, 10000, kLag);
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += l.Allow("d", kNow, kNow) ? 1 : 0;
  EXPECT_EQ(allowed, 20);
  for (int i = 0; i < 100; ++i) allowed += l.Allow("d", kNow + 1000, kNow + 1000) ? 1 : 0;
  EXPECT_EQ(allowed, 30);
}

TEST(RateLimiter, AClockAheadOfOursWinsNothing) {
  RateLimiter l(10, 20, 10000, kLag);
  // Times racing a day ahead, 1 s apart: counted as arriving now.
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += l.Allow("liar", kNow + 86400000 + i * 1000, kNow) ? 1 : 0;
  EXPECT_EQ(allowed, 20);
}

TEST(RateLimiter, TimesOlderThanTheLagWindowWinNoMoreThanTheWindow) {
  RateLimiter l(10, 20, 10000, kLag);
  // A clock ten windows in the past advancing 1 s per reading up to now,
  // all arriving at once: only the part inside the window refills the
  // bucket.
  int64_t start = kNow - 10 * kLag;
  int allowed = Offer(&l, "old", start, 1000, 36001, kNow);
  // Readings from start to now - kLag count at the window's edge; the last
  // kLag of them are within rate: 20 + kLag / 1000 (one per second).
  EXPECT_GE(allowed, 20 + 3600 - 1);
  EXPECT_LE(allowed, 20 + 3600 + 1);
}

TEST(RateLimiter, OurClockSteppingBackDoesNotFreezeTheBucket) {
  RateLimiter l(10, 20, 10000, kLag);
  EXPECT_EQ(Offer(&l, "d", kNow, 0, 20, kNow), 20);
  // The wall clock steps back an hour; arrival times restart from there.
  int64_t back = kNow - kLag;
  EXPECT_FALSE(l.Allow("d", back, back));
  EXPECT_TRUE(l.Allow("d", back + 1000, back + 1000));
}

TEST(RateLimiter, ADeviceWhoseClockStandsStillGetsItsRateInRealTime) {
  RateLimiter l(10, 20, 10000, kLag);
  // The same device time on every message (a stuck RTC), 5 per second of
  // our clock for a minute: within the rate, so nothing is refused.
  int allowed = 0;
  for (int i = 0; i < 300; ++i) allowed += l.Allow("stuck", kNow - 5000, kNow + i * 200) ? 1 : 0;
  EXPECT_EQ(allowed, 300);
  // The same clock at 50 per second: the burst, then 10 per second.
  allowed = 0;
  for (int i = 0; i < 500; ++i) allowed += l.Allow("stuck2", kNow - 5000, kNow + i * 20) ? 1 : 0;
  EXPECT_GE(allowed, 20 + 99);
  EXPECT_LE(allowed, 20 + 101);
}

TEST(RateLimiter, ReportsOncePerDevicePerInterval) {
  RateLimiter l(1, 1, 10000, kLag, 10000);
  int64_t report = 0;
  EXPECT_TRUE(l.Allow("d", kNow, kNow, 1, &report));
  EXPECT_FALSE(l.Allow("d", kNow, kNow, 1, &report));
  EXPECT_EQ(report, 1) << "the first refusal is reported at once";
  for (int i = 0; i < 50; ++i) {
    EXPECT_FALSE(l.Allow("d", kNow, kNow + 10, 1, &report));
    EXPECT_EQ(report, 0);
  }
  // 10 s on: the bucket holds its one token again, so a pack of 2 is refused.
  EXPECT_FALSE(l.Allow("d", kNow, kNow + 10000, 2, &report));
  EXPECT_EQ(report, 52) << "the next report carries everything refused since the last";
  ASSERT_EQ(l.TopRejected(1).size(), 1u);
  EXPECT_EQ(l.TopRejected(1)[0].second, 53);
}

// Bare readings (no time of their own) arrive at `arrival_ms` on the wall
// clock and mono_ms on the monotonic one; returns how many were allowed.
int OfferBare(RateLimiter* l, const std::string& device, int count, int64_t arrival_ms, int64_t mono_ms) {
  int allowed = 0;
  for (int i = 0; i < count; ++i) allowed += l->Allow(device, arrival_ms, arrival_ms, 1, nullptr, mono_ms) ? 1 : 0;
  return allowed;
}

constexpr int64_t kMono = 5000000;  // the gateway's monotonic ms at the outage

TEST(RateLimiter, ABareBacklogQueuedWhileWeWereAwayIsTakenWhole) {
  RateLimiter l(100, 200, 10000, kLag);
  EXPECT_EQ(OfferBare(&l, "d", 20, kNow, kMono), 20);  // live, before
  l.Away(kMono);
  l.Back(kMono + 30000, true);
  // 30 s at 20 readings/s, delivered in one instant: 600 > the burst, well
  // within 100/s x 30 s.
  EXPECT_EQ(OfferBare(&l, "d", 600, kNow + 30000, kMono + 30000), 600);
  // A device first seen after the absence (a restarted gateway has no
  // bucket at all) gets the same.
  EXPECT_EQ(OfferBare(&l, "new", 600, kNow + 30000, kMono + 30000), 600);
  EXPECT_TRUE(l.TopRejected(10).empty());
}

TEST(RateLimiter, MessagesTakenWhileTheLinkComesBackGetTheCreditSoFar) {
  // The broker starts delivering before the gateway hears its link is up.
  RateLimiter l(100, 200, 10000, kLag);
  l.Away(kMono);
  EXPECT_EQ(OfferBare(&l, "d", 3000, kNow + 30000, kMono + 30000), 3000);
  l.Back(kMono + 30005, true);
  // 5 ms more of absence: half a token; the burst is spent.
  EXPECT_EQ(OfferBare(&l, "d", 200, kNow + 30005, kMono + 30005), 200);
  EXPECT_EQ(OfferBare(&l, "d", 10, kNow + 30005, kMono + 30005), 0);
}

TEST(RateLimiter, ARunawayStillLosesWhatExceedsItsRateOverTheAbsence) {
  RateLimiter l(100, 200, 10000, kLag);
  l.Away(kMono);
  l.Back(kMono + 30000, true);
  // 1,000/s during the 30 s: 30,000 queued, 100 x 30 + 200 allowed.
  EXPECT_EQ(OfferBare(&l, "hot", 30000, kNow + 30000, kMono + 30000), 3200);
  // And after it, at its rate: 100 in the next second of 1,000.
  EXPECT_EQ(OfferBare(&l, "hot", 1000, kNow + 31000, kMono + 31000), 100);
  ASSERT_EQ(l.TopRejected(1).size(), 1u);
  EXPECT_EQ(l.TopRejected(1)[0].second, 30000 - 3200 + 900);
}

TEST(RateLimiter, NoCreditWhenTheBrokerKeptNoSession) {
  RateLimiter l(100, 200, 10000, kLag);
  l.Away(kMono);
  l.Back(kMono + 30000, false);  // nothing was queued for us
  EXPECT_EQ(OfferBare(&l, "d", 600, kNow + 30000, kMono + 30000), 200);
}

TEST(RateLimiter, TheCreditLastsAsLongAsTheAbsenceAfterwardsThenGoes) {
  RateLimiter l(100, 200, 10000, kLag);
  l.Away(kMono);
  l.Back(kMono + 120000, true);  // 2 minutes away: 12,000 tokens
  EXPECT_EQ(OfferBare(&l, "d", 6000, kNow + 120000, kMono + 120000), 6000);
  // 2 minutes on, the window is over: the 6,000 left are gone, the device
  // has its burst.
  EXPECT_EQ(OfferBare(&l, "d", 1000, kNow + 240001, kMono + 240001), 200);
  // A device first seen then gets no credit either.
  EXPECT_EQ(OfferBare(&l, "late", 1000, kNow + 240001, kMono + 240001), 200);
}

TEST(RateLimiter, ShortAbsencesGetAMinuteToBeDelivered) {
  RateLimiter l(100, 200, 10000, kLag);
  l.Away(kMono);
  l.Back(kMono + 5000, true);
  EXPECT_EQ(OfferBare(&l, "d", 700, kNow + 50000, kMono + 50000), 700);
}

TEST(RateLimiter, AnAbsenceCountsAtMostTheSessionLifetime) {
  RateLimiter l(100, 200, 10000, kLag, 10000, /*max_away_ms=*/10000);
  l.Away(kMono);
  l.Back(kMono + 3600000, true);  // an hour away; the broker kept 10 s
  EXPECT_EQ(OfferBare(&l, "d", 5000, kNow, kMono + 3600000), 1000 + 200);
}

TEST(RateLimiter, OnlyTheMonotonicClockMeasuresAnAbsence) {
  // Our wall clock jumps a day forward during a 10 s absence: the credit is
  // 10 s of the rate, not a day.
  RateLimiter l(100, 200, 10000, kLag);
  EXPECT_EQ(OfferBare(&l, "d", 200, kNow, kMono), 200);
  l.Away(kMono);
  l.Back(kMono + 10000, true);
  EXPECT_EQ(OfferBare(&l, "d", 5000, kNow + 86400000, kMono + 10000), 1000 + 200);
}

TEST(RateLimiter, TimeAwayIsCreditedOnceNotAlsoRefilledOnArrival) {
  // A runaway with its bucket empty; the link pauses 10 s and comes back:
  // 100/s x 10 s, not that plus the burst the arrival clock would refill.
  RateLimiter l(100, 200, 10000, kLag);
  EXPECT_EQ(OfferBare(&l, "hot", 1000, kNow, kMono), 200);
  l.Away(kMono);
  l.Back(kMono + 10000, true);
  EXPECT_EQ(OfferBare(&l, "hot", 5000, kNow + 10000, kMono + 10000), 1000);
  // Time after the return refills as before.
  EXPECT_EQ(OfferBare(&l, "hot", 1000, kNow + 11000, kMono + 11000), 100);
}

TEST(RateLimiter, MemoryStaysBounded) {
  RateLimiter limiter(1, 1, 100);
  for (int i = 0; i < 10000; ++i) {
    limiter.Allow("d" + std::to_string(i), i, i);
    limiter.Allow("d" + std::to_string(i), i, i);  // rejected
  }
  EXPECT_LE(limiter.tracked(), 100u);
  EXPECT_EQ(limiter.evicted_rejections() + static_cast<int64_t>(limiter.TopRejected(1000).size()), 10000);
}

}  // namespace
}  // namespace edgesync

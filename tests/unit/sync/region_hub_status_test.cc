// The region hub's per-origin figures (sync/region_hub.h stats): every
// origin while they are at most the number asked for, else the most lagging
// ones, by name, with the count of all of them. Fake link, a SQLite hub
// store, real batches.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "platform/clock.h"
#include "store/hub_store.h"
#include "store/store.h"
#include "sync/region_hub.h"
#include "sync/wire.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/process.h"
#include "tests/support/region_hub_fixture.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

class RegionHubStatusTest : public RegionHubFixture {
 protected:
  void Published(const WireMessage& m) override {
    if (m.kind == WireKind::kAck) acks_.push_back(m.ack.code);
  }

  // Batch `lsn` of one reading from `gateway`, `age_ms` old; `more`: its
  // sender holds more (a backlog drains), so the age is its lag at the hub.
  // complete_through_ms: the batch's watermark (Batch.complete_through_ms).
  void Send(const std::string& gateway, int64_t age_ms, bool more = true, uint64_t lsn = 1,
            int64_t complete_through_ms = 0) {
    WireBatch b;
    b.origin = {gateway, "0123456789abcdef0123456789abcdef"};
    b.first_lsn = b.last_lsn = lsn;
    b.more = more;
    b.complete_through_ms = complete_through_ms;
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = Reading{"dev-1", "temp", SystemClock()->WallMillis() - age_ms, 21.5, "C", 0};
    b.entries.push_back(e);
    std::string payload;
    ASSERT_OK(EncodeBatch(ReplyTopic("edgesync", gateway, "up"), 1, b, EncodeOptions{}, &payload));
    link_->DeliverOn(HubInboxTopic("edgesync", "eu", gateway), payload);
  }
  size_t Acks() {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_.size();
  }

  std::vector<AckCode> acks_;
};

std::string Gateway(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "gw-%02d", i);
  return name;
}

// The watermark a batch carries reaches the origin's figures once the
// batch is held, through the wire and the store; a gap leaves it.
TEST_F(RegionHubStatusTest, AnOriginsWatermarkIsTheOneItsHeldBatchesCarried) {
  Send("gw-w", 0, false, 1, 1'780'000'000'000);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 1; }, 20000));
  ASSERT_EQ(hub_->stats().origins.size(), 1u);
  EXPECT_EQ(hub_->stats().origins[0].complete_through_ms, 1'780'000'000'000);
  Send("gw-w", 0, false, 3, 1'780'000'009'000);  // LSN 2 missing: refused as a gap
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 2; }, 20000));
  EXPECT_EQ(hub_->stats().origins[0].complete_through_ms, 1'780'000'000'000);
  Send("gw-w", 0, false, 2, 1'780'000'005'000);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 3; }, 20000));
  EXPECT_EQ(hub_->stats().origins[0].complete_through_ms, 1'780'000'005'000);
  EXPECT_EQ(hub_->stats().late_readings, 0u) << "readings stamped now are not late";
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(acks_, (std::vector<AckCode>{AckCode::kOk, AckCode::kGap, AckCode::kOk}));
  }
}

// A reading stamped long before its origin's watermark (a device replaying
// its buffer) is counted late; one stamped near it is not.
TEST_F(RegionHubStatusTest, ReadingsStampedWellBeforeTheWatermarkAreCountedLate) {
  const int64_t now = SystemClock()->WallMillis();
  Send("gw-l", 0, false, 1, now);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 1; }, 20000));
  Send("gw-l", 10 * 60000, false, 2, now);  // ten minutes old
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 2; }, 20000));
  Send("gw-l", 1000, false, 3, now);  // a second old: within the margin
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 3; }, 20000));
  RegionHubStats s = hub_->stats();
  ASSERT_EQ(s.origins.size(), 1u);
  EXPECT_EQ(s.origins[0].late_readings, 1u);
  EXPECT_EQ(s.late_readings, 1u);
}

TEST_F(RegionHubStatusTest, AnOriginLagsWhileItsBacklogDrainsAndReadsZeroOnceCaughtUp) {
  // Draining: the batch's newest reading is 10 minutes old, more waits.
  Send("gw-a", 600000, true, 1);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 1; }, 20000));
  RegionHubStats s = hub_->stats();
  ASSERT_EQ(s.origins.size(), 1u);
  EXPECT_GE(s.origins[0].lag_ms, 600000);
  // The last batch of the backlog, still old, leaves nothing behind it:
  // caught up, whatever its readings' age.
  Send("gw-a", 300000, false, 2);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 2; }, 20000));
  s = hub_->stats();
  ASSERT_EQ(s.origins.size(), 1u);
  EXPECT_EQ(s.origins[0].high_water, 2u);
  EXPECT_EQ(s.origins[0].lag_ms, 0);
  // Idle after: still 0 (the age shows in last_batch_wall_ms instead).
  EXPECT_EQ(hub_->stats().origins[0].lag_ms, 0);
  // A new backlog: it lags again.
  Send("gw-a", 120000, true, 3);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == 3; }, 20000));
  s = hub_->stats();
  EXPECT_GE(s.origins[0].lag_ms, 120000);
  EXPECT_LT(s.origins[0].lag_ms, 300000);
  std::lock_guard<std::mutex> lock(mu_);
  for (AckCode c : acks_) EXPECT_EQ(c, AckCode::kOk);
}

TEST_F(RegionHubStatusTest, ListsEveryOriginOrTheMostLaggingWithTheirCount) {
  // gw-i's reading is i minutes old: the larger i, the more it lags.
  constexpr int kOrigins = 30;
  for (int i = 0; i < kOrigins; ++i) Send(Gateway(i), int64_t{i} * 60000);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == kOrigins; }, 20000)) << Acks() << " answers";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (AckCode c : acks_) EXPECT_EQ(c, AckCode::kOk);
  }

  RegionHubStats all = hub_->stats();
  EXPECT_EQ(all.batches_applied, static_cast<uint64_t>(kOrigins));
  EXPECT_EQ(all.origin_count, static_cast<size_t>(kOrigins));
  ASSERT_EQ(all.origins.size(), static_cast<size_t>(kOrigins));
  for (int i = 0; i < kOrigins; ++i) {
    EXPECT_EQ(all.origins[i].origin, Gateway(i) + "/0123456789abcdef0123456789abcdef");
    EXPECT_EQ(all.origins[i].high_water, 1u);
  }

  // Bounded: the 5 most lagging, still by name; the counters and the count
  // are the whole region's.
  RegionHubStats few = hub_->stats(5);
  EXPECT_EQ(few.batches_applied, static_cast<uint64_t>(kOrigins));
  EXPECT_EQ(few.entries_applied, static_cast<uint64_t>(kOrigins));
  EXPECT_EQ(few.origin_count, static_cast<size_t>(kOrigins));
  ASSERT_EQ(few.origins.size(), 5u);
  for (int k = 0; k < 5; ++k) {
    EXPECT_EQ(few.origins[k].origin.substr(0, 5), Gateway(kOrigins - 5 + k)) << k;
    EXPECT_GE(few.origins[k].lag_ms, int64_t{kOrigins - 5 + k} * 60000);
  }

  // A bound of the region's size or more lists them all.
  EXPECT_EQ(hub_->stats(kOrigins).origins.size(), static_cast<size_t>(kOrigins));
  RegionHubStats none = hub_->stats(0);
  EXPECT_TRUE(none.origins.empty());
  EXPECT_EQ(none.origin_count, static_cast<size_t>(kOrigins));

  // A resend is already held: no second origin, the count stays.
  Send(Gateway(3), 3 * 60000);
  ASSERT_TRUE(test::WaitFor([&] { return Acks() == kOrigins + 1; }, 20000));
  RegionHubStats after = hub_->stats(5);
  EXPECT_EQ(after.batches_already_held, 1u);
  EXPECT_EQ(after.origin_count, static_cast<size_t>(kOrigins));
  hub_->Stop();
}

}  // namespace
}  // namespace edgesync

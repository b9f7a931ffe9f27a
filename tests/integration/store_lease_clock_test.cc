// A lease holder in its own process whose wall clock is stepped while it
// runs (libfaketime, Debian package faketime): a step back must not let a
// contender take its live lease; a step forward must not keep its lease once
// it is killed. The monotonic clock is left alone (FAKETIME_DONT_FAKE_
// MONOTONIC), as an NTP step or `date -s` leaves it.
#include <gtest/gtest.h>

#include <sstream>

#include "platform/clock.h"
#include "store/store.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int64_t kExpiryMs = 1000;
constexpr int64_t kDayMs = int64_t{86400} * 1000;

// The holder's last "held"/"renewed" line: (version, its wall ms), or (-1, 0).
std::pair<int64_t, int64_t> LastRenewal(const std::string& log) {
  std::istringstream in(ReadAll(log));
  std::string word;
  std::pair<int64_t, int64_t> last{-1, 0};
  while (in >> word) {
    if (word == "held" || word == "renewed") in >> last.first >> last.second;
  }
  return last;
}

// Tries to take the range for duration_ms; true if it ever succeeded.
bool TakenWithin(Store* store, int64_t duration_ms, Lease* lease) {
  int64_t end = NowMs() + duration_ms;
  do {
    if (store->AcquireLease(1, "contender", lease).ok()) return true;
    SleepMs(50);
  } while (NowMs() < end);
  return false;
}

TEST(StoreLeaseClockTest, SteppedHolderKeepsItsLiveLeaseAndLosesItWhenDead) {
  const std::string lib = FakeTimeLibrary();
  ASSERT_FALSE(lib.empty()) << "libfaketime not found: install the faketime package (firmware-config/deps.sh test)";
  TempDir dir;
  StoreOptions o;
  o.path = dir.File("store.db");
  o.gateway_id = "lease-gw";
  o.lease_expiry_ms = kExpiryMs;
  { std::unique_ptr<Store> s; ASSERT_OK(Store::Open(o, &s)); }

  const std::string spec = dir.File("faketime");
  WriteAll(spec, "+0\n");
  const std::string log = dir.File("holder.log");
  Process holder;
  ASSERT_TRUE(holder.Start({EDGESYNC_LEASE_HOLDER, o.path, "holder", "1", std::to_string(kExpiryMs)}, log,
                           {"LD_PRELOAD=" + lib, "FAKETIME_TIMESTAMP_FILE=" + spec, "FAKETIME_NO_CACHE=1",
                            "FAKETIME_DONT_FAKE_MONOTONIC=1"}));
  ASSERT_TRUE(WaitFor([&] { return LastRenewal(log).first > 0; }, 20000)) << ReadAll(log);

  std::unique_ptr<Store> contender;
  o.gateway_id.clear();
  ASSERT_OK(Store::Open(o, &contender));
  Lease lease;

  // Two days back: by the wall, the holder last renewed two days ago.
  WriteAll(spec, "-2d\n");
  ASSERT_TRUE(WaitFor([&] { return LastRenewal(log).second < SystemClock()->WallMillis() - kDayMs; }, 20000)) << ReadAll(log);
  EXPECT_FALSE(TakenWithin(contender.get(), 3 * kExpiryMs, &lease)) << "a backward step expired a live lease";
  ASSERT_TRUE(holder.running()) << ReadAll(log);

  // Two days forward: by the wall, its renewals lie in the future.
  WriteAll(spec, "+2d\n");
  ASSERT_TRUE(WaitFor([&] { return LastRenewal(log).second > SystemClock()->WallMillis() + kDayMs; }, 20000)) << ReadAll(log);
  EXPECT_FALSE(TakenWithin(contender.get(), 3 * kExpiryMs, &lease)) << "a forward step expired a live lease";
  ASSERT_TRUE(holder.running()) << ReadAll(log);

  // The holder dies with a renewal stamped two days ahead: its lease still
  // ends (generous deadline: a loaded machine, not a timing assertion).
  holder.Kill9();
  const int64_t last_version = LastRenewal(log).first;
  ASSERT_TRUE(TakenWithin(contender.get(), 60000, &lease)) << "a dead owner's lease was kept";
  EXPECT_EQ(lease.owner, "contender");
  EXPECT_GT(lease.version, last_version);
}

}  // namespace
}  // namespace edgesync::test

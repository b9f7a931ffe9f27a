// Offline, then sync: readings stored while the region link is down reach the
// region exactly once when it returns, also when the link flaps during the
// drain and when the gateway or the region hub is SIGKILLed mid-drain. Real
// Mosquitto, real `edgesync region` processes, real SQLite files.
#include <gtest/gtest.h>

#include <csignal>

#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

[[maybe_unused]] const int kChildMode = MaybeRunUplinkChild();

constexpr size_t kReadings = 100000;

TEST(SyncUplinkTest, OfflineThenSyncDeliversEveryReadingOnce) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  TcpProxy link(eu.broker().port());
  link.Cut();
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  UplinkOptions o = FastUplinkOptions();
  o.regions.push_back(RegionAt("eu", link.uri()));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  Fill(store.get(), &workload, kReadings);  // while the link is down
  SleepMs(1000);
  EXPECT_EQ(Checkpoint(store.get()), 0u);
  EXPECT_EQ(uplink.stats().write_region, "");

  link.Restore();
  uint64_t last = store->LastLsn();
  ASSERT_EQ(last, kReadings);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  EXPECT_EQ(uplink.stats().write_region, "eu");
  uplink.Stop();
  StoreStats stats;
  ASSERT_OK(store->Stats(&stats));
  EXPECT_EQ(stats.acked_lsn, last);
  ExpectExactlyOnce({&eu}, store->origin(), last);
}

TEST(SyncUplinkTest, FlappingLinkDuringTheDrain) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  TcpProxy link(eu.broker().port());
  link.Cut();
  // A metered link (~1.5 KB per 500-reading batch, so ~20 batches/s): on
  // loopback the whole backlog drains in about a second, before the flaps
  // and the first progress line (every 5 s).
  link.SetRateBytesPerSec(32 * 1024);
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, kReadings);
  UplinkOptions o = FastUplinkOptions();
  o.batch_max_readings = 500;  // a longer drain, so the flaps land inside it
  o.window = 2;
  o.regions.push_back(RegionAt("eu", link.uri()));
  Uplink uplink(store.get(), o);
  testing::internal::CaptureStderr();  // the drain's progress lines
  ASSERT_OK(uplink.Start());
  uint64_t last = store->LastLsn();
  // Up 1.5 s, down 1 s (cut and blackholed in turn), while more readings arrive.
  for (int flap = 0; flap < 6 && Checkpoint(store.get()) < last; ++flap) {
    link.Restore();
    SleepMs(1500);
    if (flap % 2) link.Blackhole(); else link.Cut();
    Fill(store.get(), &workload, 2000);
    last = store->LastLsn();
    SleepMs(1000);
  }
  link.Restore();
  // On failure the uplink's own log (captured above) says where it stands.
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last << "; the uplink's log:\n"
      << testing::internal::GetCapturedStderr();
  // The worker logs the closing line in the iteration that publishes backlog 0.
  EXPECT_TRUE(WaitFor([&] { return uplink.stats().backlog == 0; }, 10000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_GT(s.resends, 0u);
  ExpectExactlyOnce({&eu}, store->origin(), last);
  // A drain this long reports its progress every few seconds, then its end.
  EXPECT_NE(log.find("uplink drain: "), std::string::npos) << log;
  EXPECT_NE(log.find(" remaining, "), std::string::npos) << log;
  EXPECT_NE(log.find("uplink drain: caught up"), std::string::npos) << log;
  EXPECT_GT(s.ack_latency.count, 0u);
}

TEST(SyncUplinkTest, GatewayKilledDuringTheDrain) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  // The test process fills the store and watches the checkpoint; the
  // uplink runs in a child process that gets SIGKILLed.
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, kReadings);
  uint64_t last = store->LastLsn();
  auto checkpoint = [&] { return Checkpoint(store.get()); };
  int kills = 0;
  for (int round = 0; round < 20 && checkpoint() < last; ++round) {
    Process gateway;
    ASSERT_TRUE(StartUplinkChild(&gateway, tmp.File("gw.db"), "eu=" + eu.broker().uri(), tmp.File("gw.log")));
    uint64_t before = checkpoint();
    // Kill as soon as it made some progress (mid-drain), at most 3 times.
    WaitFor([&] { return checkpoint() > before; }, 10000);
    if (kills < 3 && checkpoint() < last) {
      SleepMs(100);
      gateway.Kill9();
      ++kills;
      continue;
    }
    ASSERT_TRUE(WaitFor([&] { return checkpoint() == last; }, 60000)) << checkpoint() << " of " << last;
    gateway.Stop();
  }
  EXPECT_EQ(checkpoint(), last);
  EXPECT_GE(kills, 1);
  ExpectExactlyOnce({&eu}, store->origin(), last);
}

TEST(SyncUplinkTest, RegionHubKilledDuringTheDrain) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, kReadings);
  uint64_t last = store->LastLsn();
  UplinkOptions o = FastUplinkOptions();
  o.batch_max_readings = 1000;
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  for (int kill = 0; kill < 3; ++kill) {
    uint64_t before = Checkpoint(store.get());
    if (!WaitFor([&] { return Checkpoint(store.get()) > before; }, 20000)) break;
    if (Checkpoint(store.get()) == last) break;
    eu.KillHub();
    SleepMs(300);
    ASSERT_TRUE(eu.StartHub());
  }
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  uplink.Stop();
  ExpectExactlyOnce({&eu}, store->origin(), last);
}

// The log keeps only a device record's latest version: LSNs vanish from it.
// A batch boundary right before such a hole must not look like a gap.
TEST(SyncUplinkTest, CompactedDeviceRecordsAtABatchBoundaryAreNoGap) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(10, 1780000000000);
  uint64_t lsn = 0;
  Fill(store.get(), &workload, 10);                                          // 1..10
  ASSERT_OK(store->UpsertDevice({"dev-00001", "first", "", "", false}, &lsn));  // 11
  Fill(store.get(), &workload, 9);                                           // 12..20
  ASSERT_OK(store->UpsertDevice({"dev-00001", "second", "", "", false}, &lsn));  // 21 supersedes 11
  ASSERT_EQ(lsn, 21u);
  std::vector<ChangeEntry> log;
  ASSERT_OK(store->ReadLog(10, 1, &log));
  ASSERT_EQ(log.size(), 1u);
  ASSERT_EQ(log[0].lsn, 12u) << "the store kept the superseded record; the test premise does not hold";
  UplinkOptions o = FastUplinkOptions();
  o.batch_max_readings = 10;  // batch one ends at 10, batch two starts at 12
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == 21; }, 20000)) << Checkpoint(store.get());
  UplinkStats s = uplink.stats();
  uplink.Stop();
  EXPECT_EQ(s.refusals, 0u);
  auto contents = eu.Contents();
  EXPECT_EQ(contents.size(), 20u);
  EXPECT_EQ(contents.count({store->origin().ToString(), 11}), 0u);
  EXPECT_EQ(contents.count({store->origin().ToString(), 21}), 1u);
}

}  // namespace
}  // namespace edgesync::test

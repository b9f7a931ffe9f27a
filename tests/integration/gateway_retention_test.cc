// Retention in the `edgesync gateway` program, with real parts: sensors (a
// publishing process) -> local Mosquitto -> gateway -> region hub. What the
// region acknowledged is pruned once older than store.retention_age_s; what
// it did not acknowledge stays, however old.
#include <gtest/gtest.h>

#include "tests/support/broker.h"
#include "tests/support/gateway_program.h"
#include "tests/support/process.h"
#include "tests/support/reading_tally.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

TEST(GatewayRetentionTest, PrunesWhatTheRegionAcknowledgedAndKeepsWhatItDidNot) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  GatewayProgram gw(dir.path(), "gw-ret", local.uri(), {&eu},
                    "[store]\nretention_age_s = 2\nack_grace_s = 0\nretention_interval_s = 1\n");
  ASSERT_TRUE(gw.StartWithIngest());

  // Acknowledged by the region, then older than 2 s: pruned.
  ASSERT_EQ(Publish(local.uri(), "sensors-1", 10, 100, "ret-"), 0);
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kUplinkCheckpoint) == 1000; }, 60000)) << gw.log();
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kRetentionReadingsPruned) == 1000; }, 60000))
      << gw.StatusDump();
  EXPECT_EQ(StoreStatsOf(gw.store_path()).entries, 0);
  EXPECT_EQ(eu.Contents().size(), 1000u) << "the region still holds every reading";

  // The region goes away: new readings are not acknowledged and stay, however old.
  ASSERT_EQ(eu.StopHub(), 0);
  ASSERT_EQ(Publish(local.uri(), "sensors-2", 10, 50, "late-"), 0);
  ASSERT_TRUE(WaitFor([&] { return StoreStatsOf(gw.store_path()).entries == 500; }, 60000));
  const int64_t passes = gw.Field(metrics::kRetentionPasses);
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kRetentionPasses) >= passes + 4; }, 60000));
  EXPECT_EQ(StoreStatsOf(gw.store_path()).entries, 500);
  EXPECT_EQ(gw.Field(metrics::kRetentionReadingsPruned), 1000);
  EXPECT_EQ(StoreStatsOf(gw.store_path()).dropped_oldest, 0);

  // Back: they go upstream, then retention takes them too.
  ASSERT_TRUE(eu.StartHub());
  ASSERT_TRUE(WaitFor([&] { return gw.Field(metrics::kRetentionReadingsPruned) == 1500; }, 60000))
      << gw.StatusDump();
  EXPECT_EQ(gw.Stop(), 0);
  EXPECT_EQ(eu.Contents().size(), 1500u);
}

}  // namespace
}  // namespace edgesync::test

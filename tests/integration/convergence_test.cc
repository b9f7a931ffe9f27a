// Convergence of a whole deployment: 3 regions x 6 gateways, every part a
// real process (tests/support/world.h), links cut and restored while the
// sensors publish. Once healed and drained, every store must hold the same
// data: each gateway's own readings plus its read view equal the union of the
// regions, compared per quarter of the partition hash space and by a checksum
// over the (origin, LSN) set, and every reading a sensor saw acknowledged is
// in its gateway's store, in a region and in every other read view, once.
// The seeded fault soak (`make soak`) adds kills, clocks and a full disk.
#include <gtest/gtest.h>

#include <random>

#include "tests/support/process.h"
#include "tests/support/world.h"

namespace edgesync::test {
namespace {

TEST(ConvergenceTest, SixGatewaysAndThreeRegionsAgreeAfterLinkCuts) {
  TempDir dir;
  WorldOptions o;
  o.root = dir.path();
  o.regions = 3;
  o.gateways = 6;
  o.devices_per_gateway = 3;
  o.readings_per_s = 30;
  World world(o);
  ASSERT_TRUE(world.Start()) << world.error();

  // 30 s of cuts: each round cuts two links (one gateway's write region and
  // another, random link) for a second or two, then restores them. A fixed
  // seed: the same cuts every run.
  std::mt19937 rng(12);
  const int64_t end = NowMs() + 30000;
  int cuts = 0;
  while (NowMs() < end) {
    int g = static_cast<int>(rng() % 6);
    TcpProxy& write = world.link(g, g % 3);
    TcpProxy& other = world.link(static_cast<int>(rng() % 6), static_cast<int>(rng() % 3));
    write.Cut();
    other.Cut();
    cuts += 2;
    SleepMs(1000 + static_cast<int64_t>(rng() % 1000));
    write.Restore();
    other.Restore();
    world.SampleRss();
    SleepMs(500 + static_cast<int64_t>(rng() % 1000));
  }
  ASSERT_TRUE(world.HealAll()) << world.error();
  world.StopSensors();
  // A generous deadline for a loaded machine; the checks below, not the
  // time, are what the test asserts.
  EXPECT_TRUE(WaitFor([&] { return world.Drained(3000); }, 240000)) << "not drained";
  world.StopAll();

  AuditResult a = Audit(world);
  std::string report = a.ToJson().dump(2);
  EXPECT_GT(cuts, 0);
  EXPECT_GT(a.accepted, 1000) << report;
  EXPECT_EQ(a.lost, 0) << report;
  EXPECT_EQ(a.lost_at_local_broker_kill, 0) << report;  // no broker was killed
  EXPECT_EQ(a.stored, a.accepted) << report;
  EXPECT_EQ(a.duplicated, 0) << report;
  EXPECT_EQ(a.lsn_gaps, 0) << report;
  EXPECT_EQ(a.read_view_missing, 0) << report;
  EXPECT_EQ(a.views_differ, 0) << report;
  EXPECT_EQ(a.integrity_failures, 0) << report;
  // Every gateway's summary equals the regions' union, entry for entry.
  for (int g = 0; g < 6; ++g) EXPECT_EQ(a.summaries[world.gateway_id(g)], a.summaries["regions"]) << g;
}

}  // namespace
}  // namespace edgesync::test

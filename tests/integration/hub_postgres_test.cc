// A region hub on PostgreSQL whose database server is SIGKILLed and restarted
// while two gateways drain into it: the hub answers "store error" while the
// database is gone, reconnects, and the region ends up holding every reading
// of both gateways exactly once. Real Mosquitto, a real PostgreSQL server,
// real `edgesync region` and `kill -9`.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL
constexpr size_t kReadings = 40000;

TEST(HubPostgresTest, DatabaseKilledDuringTheDrainLosesAndDuplicatesNothing) {
  // This process's region sites keep their hub stores on PostgreSQL (ctest
  // runs each test in a process of its own).
  setenv("EDGESYNC_TEST_HUB_STORE", "postgresql", 1);
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  std::vector<std::unique_ptr<Store>> stores;
  std::vector<std::unique_ptr<Uplink>> uplinks;
  for (const char* id : {"gw-1", "gw-2"}) {
    stores.push_back(OpenGatewayStore(tmp.File(std::string(id) + ".db"), id));
    SensorWorkload workload(500, 1780000000000);
    Fill(stores.back().get(), &workload, kReadings);
    UplinkOptions o = FastUplinkOptions(id);
    o.batch_max_readings = 500;
    o.regions.push_back(RegionAt("eu", eu.broker().uri()));
    uplinks.push_back(std::make_unique<Uplink>(stores.back().get(), o));
  }
  for (auto& u : uplinks) ASSERT_OK(u->Start());
  Store* first = stores[0].get();
  const uint64_t last = first->LastLsn();
  int kills = 0;
  for (; kills < 2; ++kills) {
    uint64_t before = Checkpoint(first);
    if (!WaitFor([&] { return Checkpoint(first) > before; }, 30000)) break;
    if (Checkpoint(first) == last) break;
    eu.postgres()->Kill9();
    SleepMs(500);
    ASSERT_TRUE(eu.postgres()->Start()) << eu.postgres()->log();
  }
  EXPECT_GE(kills, 1) << "the drain ended before the database could be killed";
  for (auto& s : stores) {
    Store* st = s.get();
    ASSERT_TRUE(WaitFor([&] { return Checkpoint(st) == st->LastLsn(); }, 120000))
        << "checkpoint " << Checkpoint(st) << " of " << st->LastLsn() << "\n" << eu.hub_log();
  }
  for (auto& u : uplinks) u->Stop();
  // For the reader of the test's output: how often the hub met the gone database.
  std::string log = eu.hub_log();
  size_t errors = 0;
  for (size_t at = log.find("(store error)"); at != std::string::npos; at = log.find("(store error)", at + 1)) ++errors;
  std::printf("%d database kills; the hub answered %zu batches with a store error\n", kills, errors);
  EXPECT_TRUE(eu.hub_running()) << "the hub must outlive its database's restart";
  for (auto& s : stores) ExpectExactlyOnce({&eu}, s->origin(), s->LastLsn());
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test

// A region hub that loses its store (SIGKILL, the store deleted: SQLite
// files, or the PostgreSQL database dropped and created again; a new epoch)
// is refilled by its gateways on their own: each resends, from what the new
// store holds of it, what the old one had acknowledged, exactly once, and
// the read views get it through the region feed. Also a region that is not
// the write region (found by the epoch in its pongs), and a gateway that
// pruned part of what the region had acknowledged before the loss (told to
// the region, counted on both sides). Real Mosquitto, real `edgesync
// region` processes, real SQLite files or PostgreSQL servers (ctest runs
// the Sync suites both ways).
#include <cstdio>

#include <gtest/gtest.h>

#include "sync/feed_puller.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

FeedPullerOptions ReaderOptions(const std::string& gateway, const std::vector<RegionSite*>& regions) {
  FeedPullerOptions o;
  o.gateway_id = gateway;
  o.page_max_entries = 1000;
  o.poll_interval_ms = 300;
  o.answer_timeout_ms = 2000;
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  for (RegionSite* r : regions) o.regions.push_back(RegionAt(r->name(), r->broker().uri()));
  return o;
}

// The (origin LSN)s of `origin` in the read view of `store`, each with its copies.
std::map<uint64_t, int> ViewOf(Store* store, const Origin& origin, const std::string& prefix, int devices) {
  std::map<uint64_t, int> out;
  for (int d = 0; d < devices; ++d) {
    char device[32];
    std::snprintf(device, sizeof device, "%s%05d", prefix.c_str(), d);
    QueryRequest q;
    q.device_id = device;
    q.limit = QueryRequest::kMaxRows;
    std::vector<QueryRow> rows;
    EXPECT_OK(store->Query(q, &rows));
    for (const QueryRow& r : rows) {
      if (!r.local && r.origin == origin) ++out[r.lsn];
    }
  }
  return out;
}

// Every LSN 1..last of origin once in the view.
::testing::AssertionResult ViewComplete(Store* store, const Origin& origin, const std::string& prefix, uint64_t last) {
  auto view = ViewOf(store, origin, prefix, 100);
  size_t twice = 0;
  for (const auto& [lsn, n] : view) twice += n > 1;
  if (view.size() != last || twice != 0 || (!view.empty() && view.rbegin()->first != last)) {
    return ::testing::AssertionFailure() << view.size() << " of " << last << " readings of " << origin.ToString()
                                         << ", " << twice << " twice";
  }
  return ::testing::AssertionSuccess();
}

TEST(SyncRefillTest, BothGatewaysRefillAHubThatLostItsStoreMidStream) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  auto a = OpenGatewayStore(tmp.File("a.db"), "gw-a");
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload wa(100, 1780000000000, 1000, 1, "a-"), wb(100, 1780000000000, 1000, 2, "b-");
  UplinkOptions oa = FastUplinkOptions("gw-a"), ob = FastUplinkOptions("gw-b");
  oa.batch_max_readings = ob.batch_max_readings = 500;
  oa.regions.push_back(RegionAt("eu", eu.broker().uri()));
  ob.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink ua(a.get(), oa), ub(b.get(), ob);
  ASSERT_OK(ua.Start());
  ASSERT_OK(ub.Start());
  FeedPuller ra(a.get(), ReaderOptions("gw-a", {&eu})), rb(b.get(), ReaderOptions("gw-b", {&eu}));
  ASSERT_OK(ra.Start());
  ASSERT_OK(rb.Start());

  Fill(a.get(), &wa, 4000);
  Fill(b.get(), &wb, 4000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 4000 && Checkpoint(b.get()) == 4000; }, 60000))
      << eu.hub_log();
  // Both readers stand in the old store's feed: the new one must reset them.
  ASSERT_TRUE(WaitFor(
      [&] {
        return ViewComplete(b.get(), a->origin(), "a-", 4000) && ViewComplete(a.get(), b->origin(), "b-", 4000);
      },
      60000));
  // Mid-stream: the store goes while both keep writing.
  Fill(a.get(), &wa, 1000);
  Fill(b.get(), &wb, 1000);
  eu.KillHub();
  eu.WipeHubStore();
  ASSERT_TRUE(eu.StartHub());
  Fill(a.get(), &wa, 1000);
  Fill(b.get(), &wb, 1000);

  ASSERT_TRUE(WaitFor(
      [&] {
        UplinkStats sa = ua.stats(), sb = ub.stats();
        return Checkpoint(a.get()) == 6000 && Checkpoint(b.get()) == 6000 && sa.refills_pending == 0 &&
               sb.refills_pending == 0 && sa.region_regressions >= 1 && sb.region_regressions >= 1;
      },
      120000))
      << eu.hub_log();
  // The new store holds both origins from LSN 1, each once.
  ExpectExactlyOnce({&eu}, a->origin(), 6000);
  ExpectExactlyOnce({&eu}, b->origin(), 6000);
  // Both read views complete, through the new store's feed (an explicit reset).
  EXPECT_TRUE(WaitFor([&] { return ViewComplete(b.get(), a->origin(), "a-", 6000); }, 60000))
      << ViewComplete(b.get(), a->origin(), "a-", 6000);
  EXPECT_TRUE(WaitFor([&] { return ViewComplete(a.get(), b->origin(), "b-", 6000); }, 60000))
      << ViewComplete(a.get(), b->origin(), "b-", 6000);
  EXPECT_GE(ra.stats().regions[0].resets, 1u);
  EXPECT_GE(rb.stats().regions[0].resets, 1u);
  UplinkStats sa = ua.stats();
  EXPECT_EQ(sa.refill_lost, 0u);
  EXPECT_FALSE(sa.regions[0].refilling);
  EXPECT_EQ(sa.regions[0].acked, 6000u);
  ra.Stop();
  rb.Stop();
  ua.Stop();
  ub.Stop();
  ASSERT_EQ(eu.StopHub(), 0);
  const std::string log = eu.hub_log();
  EXPECT_NE(log.find("(regressed)"), std::string::npos) << log;
  EXPECT_EQ(log.find("jumped over"), std::string::npos) << "nothing of the lost store was jumped over\n" << log;
}

TEST(SyncRefillTest, ARegionThatIsNotTheWriteRegionIsRefilledToo) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  auto a = OpenGatewayStore(tmp.File("a.db"), "gw-a");
  SensorWorkload wa(100, 1780000000000, 1000, 1, "a-");
  Fill(a.get(), &wa, 3000);
  {
    // At first eu is a's only region: it alone holds 1..3000.
    UplinkOptions o = FastUplinkOptions("gw-a");
    o.regions.push_back(RegionAt("eu", eu.broker().uri()));
    Uplink only_eu(a.get(), o);
    ASSERT_OK(only_eu.Start());
    ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 3000; }, 60000)) << eu.hub_log();
    only_eu.Stop();
  }
  // Then us is preferred: 3001.. go there (it jumps over what eu holds).
  UplinkOptions o = FastUplinkOptions("gw-a");
  o.regions.push_back(RegionAt("us", us.broker().uri(), 0));
  o.regions.push_back(RegionAt("eu", eu.broker().uri(), 1));
  Uplink up(a.get(), o);
  ASSERT_OK(up.Start());
  Fill(a.get(), &wa, 1000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 4000 && up.stats().write_region == "us"; }, 60000));

  eu.KillHub();
  eu.WipeHubStore();
  ASSERT_TRUE(eu.StartHub());
  Fill(a.get(), &wa, 1000);
  ASSERT_TRUE(WaitFor(
      [&] {
        UplinkStats s = up.stats();
        return Checkpoint(a.get()) == 5000 && s.region_regressions >= 1 && s.refills_pending == 0;
      },
      120000))
      << eu.hub_log();
  UplinkStats s = up.stats();
  EXPECT_EQ(s.write_region, "us");
  // Between them the regions hold every LSN; eu again what it had acknowledged.
  auto in_eu = eu.Contents(), in_us = us.Contents();
  std::set<uint64_t> held;
  size_t eu_twice = 0, eu_first = 0;
  for (const auto& [key, n] : in_eu) {
    if (key.first != a->origin().ToString()) continue;
    held.insert(key.second);
    eu_twice += n > 1;
    eu_first += key.second <= 3000;
  }
  for (const auto& [key, n] : in_us) {
    if (key.first == a->origin().ToString()) held.insert(key.second);
    EXPECT_EQ(n, 1);
  }
  EXPECT_EQ(eu_twice, 0u);
  EXPECT_EQ(eu_first, 3000u) << "eu holds a's 1..3000 again";
  EXPECT_EQ(held.size(), 5000u);
  up.Stop();
}

TEST(SyncRefillTest, WhatTheGatewayPrunedIsNamedAsLostAtTheHubAndTheGateway) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  StoreOptions so;
  so.path = tmp.File("a.db");
  so.gateway_id = "gw-a";
  so.retention_age_ms = 0;  // what eu acknowledged may go at once
  so.ack_grace_ms = 0;
  so.min_free_bytes = 0;
  std::unique_ptr<Store> a;
  ASSERT_OK(Store::Open(so, &a));
  SensorWorkload wa(100, 1780000000000, 1000, 1, "a-");
  Fill(a.get(), &wa, 3000);
  UplinkOptions o = FastUplinkOptions("gw-a");
  o.batch_max_readings = 500;
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink up(a.get(), o);
  ASSERT_OK(up.Start());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 3000; }, 60000)) << eu.hub_log();
  up.Stop();
  PruneResult pruned;
  ASSERT_OK(a->Prune(&pruned));
  ASSERT_GT(pruned.readings, 0);
  const uint64_t gone = static_cast<uint64_t>(pruned.readings);  // LSNs 1..gone: the oldest go first
  Fill(a.get(), &wa, 1000);

  eu.KillHub();
  eu.WipeHubStore();
  ASSERT_TRUE(eu.StartHub());
  ASSERT_OK(up.Start());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(a.get()) == 4000 && up.stats().refills_pending == 0; }, 120000))
      << eu.hub_log();
  UplinkStats s = up.stats();
  EXPECT_EQ(s.refill_lost, gone);
  EXPECT_EQ(s.regions[0].lost, gone);
  up.Stop();
  // eu holds what a still had (gone+1..4000) once, and knows the rest is lost.
  auto contents = eu.Contents();
  std::set<uint64_t> held;
  for (const auto& [key, n] : contents) {
    EXPECT_EQ(n, 1);
    if (key.first == a->origin().ToString()) held.insert(key.second);
  }
  EXPECT_EQ(held.size(), 4000 - gone);
  EXPECT_EQ(*held.begin(), gone + 1);
  ASSERT_EQ(eu.StopHub(), 0);
  const std::string log = eu.hub_log();
  EXPECT_NE(log.find("no longer holds 1.." + std::to_string(gone)), std::string::npos) << log;
}

}  // namespace
}  // namespace edgesync::test

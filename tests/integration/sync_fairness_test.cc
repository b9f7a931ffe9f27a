// Per-sender fairness at a real hub (sync/fair_queue.h for batches,
// sync/feed_queue.h for feed requests): nine gateways drain their readings
// through a real Mosquitto and `edgesync region` while a tenth identity
// floods the hub with feed requests for 5,000-entry pages (500 a second,
// far beyond the pages the hub can serve; tests/support/hub_flood.h).
// Every reading of the nine arrives exactly once; their mean
// acknowledgement latency is printed beside the same run without the flood
// (a figure, not asserted: timings depend on the machine; bench_hub_flood
// reports it).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/hub_flood.h"

namespace edgesync::test {
namespace {

TEST(SyncFairnessTest, AFloodingSenderDoesNotStopNineOthers) {
  TempDir quiet, loud;
  HubFloodRun base = NineGatewaysBesideAFlood(quiet.path(), false);
  HubFloodRun flood = NineGatewaysBesideAFlood(loud.path(), true);
  EXPECT_GT(flood.flood_sent, 0u) << "the flood never started";
  std::printf("fairness: nine gateways' mean acknowledgement latency %.1f ms without a flood, %.1f ms while one "
              "sender published %llu feed requests for 5,000-entry pages\n",
              base.ack_latency_ms, flood.ack_latency_ms, static_cast<unsigned long long>(flood.flood_sent));
}

}  // namespace
}  // namespace edgesync::test

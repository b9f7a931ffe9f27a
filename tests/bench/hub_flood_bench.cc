// bench_hub_flood: per-sender fairness at the region hub as a figure. Nine
// gateways (real Uplinks and SQLite stores) drain their readings through a
// real Mosquitto and `edgesync region` while a tenth identity floods the hub
// with feed requests for 5,000-entry pages, 500 a second
// (tests/support/hub_flood.h, the scenario the fairness test checks):
// the nine's mean acknowledgement latency, against the same run without
// the flood. Runs alternate, flood and no flood, three of each (one with
// EDGESYNC_BENCH_QUICK); each figure is the median of its runs.
#include <cstdio>
#include <vector>

#include "platform/log.h"
#include "tests/bench/report.h"
#include "tests/support/hub_flood.h"

int main() {
  using namespace edgesync;
  InitLogging(LogLevel::kWarn, "bench_hub_flood");
  bench::Report report("hub_flood");
  const int runs = bench::Quick() ? 1 : 3;
  std::vector<double> quiet, flood;
  uint64_t sent = 0;
  for (int i = 0; i < runs; ++i) {
    test::TempDir a, b;
    quiet.push_back(test::NineGatewaysBesideAFlood(a.path(), false).ack_latency_ms);
    test::HubFloodRun f = test::NineGatewaysBesideAFlood(b.path(), true);
    flood.push_back(f.ack_latency_ms);
    sent += f.flood_sent;
    std::printf("run %d: %.1f ms without a flood, %.1f ms with it (%llu feed requests)\n", i + 1, quiet.back(),
                flood.back(), static_cast<unsigned long long>(f.flood_sent));
  }
  if (sent == 0) {
    std::fprintf(stderr, "bench_hub_flood: the flood never started\n");
    return 1;
  }
  report.Add("hub ack latency under a feed-request flood", bench::Median(flood), "ms", "same, no flood",
             bench::Median(quiet));
  return report.Write() ? 0 : 1;
}

// es_fleet_sim: points a fleet of simulated gateways (tests/tools/fleet.h)
// at a region's broker and prints, every second, what the region answered:
// acknowledged batches and readings per second and the answers' p50/p99
// latency. For trying a region deployment by hand (docs/REGION.md); the
// measured figures come from bench_region.
//
//   es_fleet_sim --uri tcp://broker:1883 --region eu --gateways 10000 --connections 8
//                [--credentials FILE] [--rate BATCHES_PER_S] [--seconds N] [--batches N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "platform/log.h"
#include "tests/tools/fleet.h"

namespace {
double Quantile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}
}  // namespace

int main(int argc, char** argv) {
  using edgesync::test::Fleet;
  using edgesync::test::FleetOptions;
  FleetOptions o;
  int seconds = 60;
  CLI::App app{"es_fleet_sim: simulated gateways speaking the edgesync uplink protocol to one region"};
  app.add_option("--uri", o.uri, "the region broker")->required();
  app.add_option("--region", o.region, "region name")->capture_default_str();
  app.add_option("--prefix", o.topic_prefix, "topic prefix (uplink.topic_prefix)")->capture_default_str();
  app.add_option("--credentials", o.credentials_file, "user:password file of the simulator's identity");
  app.add_option("--gateways", o.gateways)->capture_default_str();
  app.add_option("--connections", o.connections)->capture_default_str();
  app.add_option("--devices", o.devices, "devices per gateway")->capture_default_str();
  app.add_option("--metrics", o.metrics, "metrics per device (1..8)")->capture_default_str();
  app.add_option("--window", o.window, "unanswered batches per gateway")->capture_default_str();
  app.add_option("--ack-timeout-ms", o.ack_timeout_ms)->capture_default_str();
  app.add_option("--rate", o.batches_per_s, "batches/s over the fleet; 0 = as fast as answered")
      ->capture_default_str();
  app.add_option("--batches", o.batches_per_gateway, "per gateway; 0 = until --seconds")->capture_default_str();
  app.add_option("--seconds", seconds)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  edgesync::InitLogging(edgesync::LogLevel::kWarn, "es_fleet_sim");
  Fleet fleet(o);
  edgesync::Status st = fleet.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "es_fleet_sim: %s\n", st.ToString().c_str());
    return 1;
  }
  edgesync::test::FleetStats last;
  for (int s = 0; s < seconds && !fleet.done(); ++s) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    edgesync::test::FleetStats now = fleet.stats();
    std::vector<double> lat = fleet.TakeLatencies();
    std::printf("%4d s: %8llu batches/s %10llu readings/s  answer p50 %7.1f ms p99 %7.1f ms  resends %llu sent %llu errors %llu ignored %llu\n", s + 1,
                static_cast<unsigned long long>(now.batches_acked - last.batches_acked),
                static_cast<unsigned long long>(now.readings_acked - last.readings_acked),
                Quantile(lat, 0.5), Quantile(lat, 0.99),
                static_cast<unsigned long long>(now.resends), static_cast<unsigned long long>(now.batches_sent), static_cast<unsigned long long>(now.publish_errors), static_cast<unsigned long long>(now.acks_ignored));
    std::fflush(stdout);
    last = now;
  }
  fleet.Stop();
  return 0;
}

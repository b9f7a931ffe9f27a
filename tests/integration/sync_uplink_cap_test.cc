// uplink.max_bytes_per_s with real parts: an `edgesync gateway` process
// drains a backlog of the reference workload to a real `edgesync region`
// hub over a real Mosquitto, its region link through a TCP proxy that counts
// the bytes reaching the region's broker. Every reading arrives exactly once,
// and the cap holds on the gateway's own counter (MQTT packets, framing
// included, sampled twice during the drain) and at the region's broker: an
// observer subscribed to the hub's inbox sees the uplink's batches and probes
// (the feed puller's requests share the connection and are not capped).
// A second test drains faster (200 kB/s) and holds the bytes through the
// proxy over every 10 s within 5% of the cap.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sync/mqtt_link.h"
#include "sync/wire.h"
#include "tests/support/broker.h"
#include "tests/support/http_get.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

using json = nlohmann::json;

constexpr int64_t kCap = 20000;  // bytes per second
// ~0.65 bytes per reading on the link in backlog batches (series context,
// zstd): a drain of ~22 s at the cap.
constexpr size_t kReadings = 700000;
// The faster drain: raw samples of vibration sensors, full-precision
// doubles that no encoding shrinks much (~9 bytes a reading on the link),
// so the hub applies some 20,000 readings a second, far below what it can,
// and the cap, not the hub, sets the pace for ~50 s.
constexpr int kDrainDevices = 1000;
constexpr size_t kDrainReadings = 1100000;

void FillRawSamples(Store* store, size_t n) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> sample(-1.0, 1.0);
  for (size_t done = 0; done < n;) {
    std::vector<Reading> readings;
    for (size_t k = std::min<size_t>(n - done, 5000); k > 0; --k, ++done) {
      Reading r;
      r.device_id = "vib-" + std::to_string(done % kDrainDevices);
      r.metric = "accel";
      r.unit = "g";
      r.ts_ms = 1780000000000 + static_cast<int64_t>(done / kDrainDevices) * 100;
      r.value = sample(rng);
      readings.push_back(std::move(r));
    }
    AppendResult appended;
    ASSERT_OK(store->AppendReadings(readings, &appended));
  }
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A figure of the status by its name in the metrics table, as a double (a
// rate is fractional); a failure when the snapshot lacks it.
double Figure(const json& j, const StatusKey& figure) {
  if (!j.is_object() || !j.contains(figure.section) || !j[figure.section].contains(figure.key) ||
      !j[figure.section][figure.key].is_number()) {
    ADD_FAILURE() << "no " << figure.section << "." << figure.key << " in " << j.dump();
    return -1;
  }
  return j[figure.section][figure.key].get<double>();
}

// The gateway's status, with the steady-clock bounds of the request: the
// snapshot was taken between *before_ms and *after_ms.
json StatusAt(int port, int64_t* before_ms, int64_t* after_ms) {
  *before_ms = SteadyMs();
  json j = json::parse(HttpGet(port, "/status.json"), nullptr, false);
  *after_ms = SteadyMs();
  return j;
}

TEST(SyncUplinkCapTest, AGatewayDrainsABacklogWithinItsCapAndExactlyOnce) {
  TempDir tmp;
  Broker local(tmp.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  TcpProxy link(eu.broker().port());  // counts the bytes that reach the region's broker
  // What the region's broker receives from the gateway for its hub.
  TestMqttClient observer(eu.broker().uri(), "cap-observer", true);
  ASSERT_TRUE(observer.Connect());
  ASSERT_TRUE(observer.Subscribe("edgesync/region/eu/in/+/gw-cap", 1));

  // The backlog: stored before the gateway starts.
  const std::string data = tmp.File("gw");
  RegionSite::MakeDir(data);
  ::chmod(data.c_str(), 0700);
  Origin origin;
  uint64_t last = 0;
  {
    std::unique_ptr<Store> store = OpenGatewayStore(data + "/store.db", "gw-cap");
    ASSERT_TRUE(store);
    SensorWorkload workload(1000, 1780000000000);
    Fill(store.get(), &workload, kReadings);
    origin = store->origin();
    last = store->LastLsn();
  }
  ASSERT_EQ(last, kReadings);

  const int port = FreePort();
  const std::string config = data + "/gateway.toml";
  // batch_max_readings far above what a quarter second of the cap carries:
  // the cap sizes the batches.
  std::ofstream(config) << "[gateway]\nid = \"gw-cap\"\ndata_dir = " << Q(data) << "\n\n"
                        << "[metrics]\nlisten = \"127.0.0.1:" << port << "\"\n\n"
                        << "[ingest]\nbroker_uri = " << Q(local.uri()) << "\n\n"
                        << "[uplink]\nmax_bytes_per_s = " << kCap << "\nbatch_max_readings = 100000\n"
                        << "batch_max_delay_ms = 20\nack_timeout_ms = 5000\nbackoff_base_ms = 50\n"
                        << "backoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
                        << "[[region]]\nname = \"eu\"\nuri = " << Q(link.uri()) << "\n";
  const int64_t started_ms = SteadyMs();
  Process gateway;
  ASSERT_TRUE(gateway.Start({EDGESYNC_BINARY, "gateway", "--config", config}, data + "/gateway.log"));
  ASSERT_TRUE(WaitForPort(port, 30000)) << ReadAll(data + "/gateway.log");

  // Two samples of the gateway's own counter, 12 s apart, while it drains.
  int64_t b1 = 0, a1 = 0, b2 = 0, a2 = 0;
  json s1;
  ASSERT_TRUE(WaitFor(
      [&] {
        s1 = StatusAt(port, &b1, &a1);
        return s1.is_object() && s1.contains("uplink") && StatusField(s1, metrics::kUplinkBatchesSent) > 0;
      },
      60000))
      << s1.dump() << ReadAll(data + "/gateway.log");
  SleepMs(12000);
  json s2 = StatusAt(port, &b2, &a2);
  ASSERT_GT(Figure(s2, metrics::kBacklogReadings), 0) << "the samples are to fall inside the drain: " << s2.dump();
  const double interval_s = static_cast<double>(a2 - b1) / 1000.0;  // the widest the snapshots can be apart
  const double sent = Figure(s2, metrics::kUplinkLinkBytesSent) - Figure(s1, metrics::kUplinkLinkBytesSent);
  EXPECT_LE(sent, kCap * interval_s + kCap) << "over " << interval_s << " s";
  EXPECT_GT(sent, 0);
  EXPECT_EQ(Figure(s2, metrics::kUplinkMaxBytesPerS), kCap);
  EXPECT_GT(Figure(s2, metrics::kUplinkCapWaitMs), 0) << "batches waited for the cap";
  EXPECT_GT(Figure(s2, metrics::kUplinkLinkBytesPerS), 0);
  // Measured over the last ~5 s: within the cap plus a burst spread over them.
  EXPECT_LE(Figure(s2, metrics::kUplinkLinkBytesPerS), 2.0 * kCap);
  // The counter counts whole packets: more than the batches' payloads.
  EXPECT_GT(Figure(s2, metrics::kUplinkLinkBytesSent), Figure(s2, metrics::kUplinkBytesSent));

  // The rest of the drain; every reading reaches the region exactly once.
  json end;
  ASSERT_TRUE(WaitFor(
      [&] {
        end = json::parse(HttpGet(port, "/status.json"), nullptr, false);
        return end.is_object() && end.contains("uplink") && static_cast<uint64_t>(StatusField(end, metrics::kUplinkCheckpoint)) == last;
      },
      240000))
      << end.dump();
  const int64_t ended_ms = SteadyMs();
  const double counted = Figure(end, metrics::kUplinkLinkBytesSent);
  const double run_s = static_cast<double>(ended_ms - started_ms) / 1000.0;
  // At the region's broker: the uplink's messages (batches QoS 1, probes
  // QoS 0) as whole PUBLISH packets. Probes go on after the drain: those
  // the status counted have all arrived once as many have.
  int64_t observed = 0, batches = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        observed = batches = 0;
        for (const auto& [topic, payload] : observer.received()) {
          WireKind kind;
          if (!PeekKind(payload, {}, &kind) || (kind != WireKind::kBatch && kind != WireKind::kPing)) continue;
          batches += kind == WireKind::kBatch;
          observed += static_cast<int64_t>(
              MqttPublishPacketBytes(topic.size(), payload.size(), kind == WireKind::kBatch ? 1 : 0, 4));
        }
        return static_cast<double>(observed) >= counted;
      },
      10000))
      << observed << " bytes at the region's broker, " << counted << " counted";
  EXPECT_EQ(static_cast<double>(batches), Figure(end, metrics::kUplinkBatchesSent));
  // The socket holds every counted packet, and more: the connection's own
  // packets and the feed puller's requests.
  const int64_t upstream = link.bytes_upstream();
  EXPECT_GE(static_cast<double>(upstream), counted);
  std::printf("capped drain: %zu readings in %.1f s; %.0f bytes counted, %lld of the uplink at the region's "
              "broker, %lld on the socket (feed requests and MQTT control packets too); cap %lld bytes/s, "
              "%.0f bytes/s\n",
              kReadings, run_s, counted, static_cast<long long>(observed), static_cast<long long>(upstream),
              static_cast<long long>(kCap), counted / run_s);
  // The cap over the whole run, as the region's broker saw it (the
  // status snapshot came before ended_ms; probes since are at most a few).
  EXPECT_LE(static_cast<double>(observed), kCap * (run_s + 2.0) + kCap) << "over " << run_s << " s";
  EXPECT_EQ(gateway.Stop(10000), 0);
  ExpectExactlyOnce({&eu}, origin, last);
}


// At 200 kB/s on an unshaped loopback link, with a backlog that keeps the
// uplink at the cap for ~40 s: the bytes that pass the proxy
// towards the region's broker (everything the gateway's region connection
// sends: the uplink's packets, the read view's requests and the MQTT
// control packets) over every 10 s stay within 5% of the cap, and every
// reading reaches the region exactly once.
TEST(SyncUplinkCapTest, EveryTenSecondsOfADrainPassWithinFivePercentOfTheCap) {
  constexpr int64_t kRate = 200000;  // bytes per second
  constexpr int64_t kWindowMs = 10000;
  TempDir tmp;
  Broker local(tmp.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  TcpProxy link(eu.broker().port());

  const std::string data = tmp.File("gw");
  RegionSite::MakeDir(data);
  ::chmod(data.c_str(), 0700);
  Origin origin;
  uint64_t last = 0;
  {
    std::unique_ptr<Store> store = OpenGatewayStore(data + "/store.db", "gw-rate");
    ASSERT_TRUE(store);
    ASSERT_NO_FATAL_FAILURE(FillRawSamples(store.get(), kDrainReadings));
    origin = store->origin();
    last = store->LastLsn();
  }
  ASSERT_EQ(last, kDrainReadings);

  const int port = FreePort();
  const std::string config = data + "/gateway.toml";
  std::ofstream(config) << "[gateway]\nid = \"gw-rate\"\ndata_dir = " << Q(data) << "\n\n"
                        << "[metrics]\nlisten = \"127.0.0.1:" << port << "\"\n\n"
                        << "[ingest]\nbroker_uri = " << Q(local.uri()) << "\n\n"
                        << "[uplink]\nmax_bytes_per_s = " << kRate << "\nbatch_max_readings = 100000\n"
                        << "ack_timeout_ms = 10000\n\n"
                        << "[[region]]\nname = \"eu\"\nuri = " << Q(link.uri()) << "\n";

  // The proxy's upstream byte count, sampled every 100 ms on the steady clock.
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> samples;  // (ms, bytes upstream)
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling) {
      const int64_t ms = SteadyMs();
      const int64_t bytes = link.bytes_upstream();
      {
        std::lock_guard<std::mutex> lock(mu);
        samples.emplace_back(ms, bytes);
      }
      SleepMs(100);
    }
  });
  struct StopSampler {
    std::atomic<bool>* flag;
    std::thread* thread;
    ~StopSampler() {
      *flag = false;
      if (thread->joinable()) thread->join();
    }
  } stop_sampler{&sampling, &sampler};

  Process gateway;
  ASSERT_TRUE(gateway.Start({EDGESYNC_BINARY, "gateway", "--config", config}, data + "/gateway.log"));
  ASSERT_TRUE(WaitForPort(port, 30000)) << ReadAll(data + "/gateway.log");

  // The span in which the uplink is held at the cap: from a status that
  // shows a batch sent to the last one that still shows readings not sent.
  int64_t held_from_ms = -1, held_to_ms = -1;
  json end;
  ASSERT_TRUE(WaitFor(
      [&] {
        int64_t before = 0, after = 0;
        end = StatusAt(port, &before, &after);
        if (!end.is_object() || !end.contains("uplink")) return false;
        if (held_from_ms < 0 && StatusField(end, metrics::kUplinkBatchesSent) > 0) held_from_ms = after;
        if (held_from_ms >= 0 && static_cast<size_t>(StatusField(end, metrics::kUplinkEntriesSent)) < kDrainReadings) held_to_ms = before;
        return static_cast<uint64_t>(StatusField(end, metrics::kUplinkCheckpoint)) == last;
      },
      600000))
      << end.dump() << ReadAll(data + "/gateway.log");
  sampling = false;
  sampler.join();
  EXPECT_EQ(Figure(end, metrics::kUplinkMaxBytesPerS), kRate);
  EXPECT_EQ(gateway.Stop(10000), 0);
  ExpectExactlyOnce({&eu}, origin, last);

  // Every window of 10 s (from each sample to the first one 10 s or more
  // later): at most the cap + 5% anywhere, the start included; at least the
  // cap - 5% where the whole window lies in the span held at the cap.
  ASSERT_GT(held_to_ms, held_from_ms);
  int64_t windows = 0, held_windows = 0;
  double lowest = 1e18, highest = 0;
  for (size_t a = 0, b = 0; a < samples.size(); ++a) {
    while (b < samples.size() && samples[b].first - samples[a].first < kWindowMs) ++b;
    if (b == samples.size()) break;
    const double span_s = static_cast<double>(samples[b].first - samples[a].first) / 1000.0;
    const double rate = static_cast<double>(samples[b].second - samples[a].second) / span_s;
    ++windows;
    highest = std::max(highest, rate);
    EXPECT_LE(rate, 1.05 * kRate) << "window from " << samples[a].first - samples.front().first << " ms, " << span_s
                                  << " s";
    if (samples[a].first >= held_from_ms && samples[b].first <= held_to_ms) {
      ++held_windows;
      lowest = std::min(lowest, rate);
      EXPECT_GE(rate, 0.95 * kRate) << "window from " << samples[a].first - samples.front().first << " ms, "
                                    << span_s << " s";
    }
  }
  const double held_s = static_cast<double>(held_to_ms - held_from_ms) / 1000.0;
  std::printf("drain at %lld bytes/s: %zu readings; held at the cap %.1f s, %lld windows of 10 s (%lld inside "
              "it): %.0f .. %.0f bytes/s through the proxy; %lld bytes upstream, %.0f link bytes counted\n",
              static_cast<long long>(kRate), kDrainReadings, held_s, static_cast<long long>(windows),
              static_cast<long long>(held_windows), lowest, highest, static_cast<long long>(link.bytes_upstream()),
              Figure(end, metrics::kUplinkLinkBytesSent));
  // The backlog was large enough for the figure to mean something: held at
  // the cap for 30 s or more, i.e. 200 windows inside it (one per sample).
  EXPECT_GE(held_windows, 200) << "a larger backlog is needed to hold the uplink at the cap for 30 s or more";
}

}  // namespace
}  // namespace edgesync::test

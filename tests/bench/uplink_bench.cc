// bench_uplink: the uplink's figures, each against a baseline run in the same
// process on the same machine:
//   1. bytes on the wire per reading, reference workload (tests/support/
//      workload.h: 1000 devices x 8 metrics at 1 Hz), as MQTT PUBLISH packets
//      (fixed header, topic, packet id, payload): edgesync batches vs one JSON
//      message per reading; for backlog batches (uplink.batch_max_readings)
//      and for batches of 1,600 and 200 readings (what 200 and 25 ms of the
//      workload make); each also with every batch referring to the series
//      context of those before (protocol 3, "_with_context", against the
//      self-contained figure), with where a context batch's bytes go.
//   2. drain: time to deliver a backlog of N readings (default 1,000,000;
//      EDGESYNC_BENCH_DRAIN_READINGS overrides, 0 skips) from a gateway store
//      to a region hub on loopback (end-to-end acknowledged), vs a Mosquitto
//      bridge with persistence forwarding the same N readings as JSON
//      messages that were published while its link was down (QoS 1,
//      cleansession false, persistence, max_queued_messages/bytes unlimited,
//      restart_timeout 1 1). Also: readings the bridge lost or duplicated;
//      bytes that crossed the link (a counting TCP proxy) per reading for both.
//   3. online latency at 1,000 readings/s: a sensor publishes plain numbers to
//      the gateway's local broker; an `edgesync gateway` process (default
//      config) stores and sends them; the time until the region's answer
//      covering that reading's LSN (watched on the reply topic) is its
//      latency; p50 and p99. Baseline: the same readings through a Mosquitto
//      bridge, publish to delivery at a region subscriber (no store, nothing
//      durable on either side).
//   4. online bytes: the reference workload paced at 8,000 single-reading
//      messages/s for 60 s (EDGESYNC_BENCH_ONLINE_SECONDS overrides, 0 skips)
//      through an `edgesync gateway` with uplink.series_context = false
//      (every batch self-contained: the baseline), with default settings,
//      then with uplink.batch_min_delay_ms = 600: every byte the gateway sends to the
//      region broker (a counting proxy) per reading, and readings per batch.
//   5. two lanes on a 256 kbit/s link: an `edgesync gateway` whose region
//      link passes a proxy shaped to 32,000 bytes/s each way, its
//      uplink.max_bytes_per_s 28,000, drains a backlog of vibration samples
//      (~60 s of the cap; EDGESYNC_BENCH_LANES_SECONDS overrides, 0 skips)
//      kept while the link was cut, while sensors publish live readings
//      (bare numbers) at 100/s: live readings' latency (publish to the
//      region's answer covering the reading's LSN, high_water or a held
//      span), p50 and p99, with uplink.live_lane = true against false
//      (strict LSN order) in the same run; the link's bytes/s upstream
//      during the drain against the cap; link bytes per reading over the
//      whole run with lanes against strict order. A build without the
//      option runs its one order twice and says so.
// With EDGESYNC_BENCH_PREVIOUS=<a previous build's edgesync> (make
// bench-previous) only this is run: a drain with whole programs (gateway
// and region hub, each of the build measured) of 480,000 readings queued
// while the link was cut, this build against the previous one, alternating,
// median of three.
#include <dirent.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <mqtt/async_client.h>
#include <nlohmann/json.hpp>

#include "firmware-config/config.h"
#include "platform/files.h"
#include "platform/log.h"
#include "store/checkpoint_names.h"
#include "sync/batch_generated.h"
#include "sync/columns.h"
#include "sync/wire.h"
#include "tests/bench/report.h"
#include "tests/support/lane_traffic.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"

namespace edgesync {
namespace {

// A bench that cannot go on ends saying why (a fixture that did not start
// comes with its log), never with a bare abort; by an exception, so the
// fixtures' destructors stop their brokers and hubs (an abort left them
// running, one at 20% CPU, under the next run).
struct BenchFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void Die(const std::string& why) { throw BenchFailure(why); }
void MustStart(bool started, const char* what, const std::string& log) {
  if (!started) Die(std::string(what) + " did not start\n" + log);
}


using test::Broker;
using test::BrokerOptions;
using test::Checkpoint;
using test::RegionSite;
using test::SensorWorkload;
using test::TcpProxy;
using test::TempDir;

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

size_t PacketBytes(size_t topic, size_t payload) {
  size_t remaining = 2 + topic + 2 + payload;
  size_t length_bytes = 1;
  for (size_t r = remaining; r >= 128; r >>= 7) ++length_bytes;
  return 1 + length_bytes + remaining;
}

// The compressed body's bytes inside a batch payload.
size_t BodyBytes(const std::string& payload) {
  const auto* m = wire::GetMessage(payload.data());
  const auto* b = m->body_as_Batch();
  return b && b->body() ? b->body()->size() : 0;
}

// What a context batch of `size` readings spends per reading on each
// column after the first tick, each compressed on its own (they are
// compressed together on the wire: the sum is above the body).
void ColumnBreakdown(const std::vector<Reading>& readings, size_t size) {
  SeriesContext context;
  std::string raw;
  size_t at = 0;
  for (; at + size <= readings.size() && at < 16000; at += size) {
    std::vector<ChangeEntry> entries;
    for (size_t i = at; i < at + size; ++i) {
      ChangeEntry e;
      e.lsn = i + 1;
      e.reading = readings[i];
      entries.push_back(std::move(e));
    }
    if (context.empty()) {
      context.Advance(entries);
      raw = "start";
    } else {
      raw = EncodeEntriesWithContext(entries, at, &context);
    }
    context.Seal(at + size, raw);
  }
  const auto* in = flatbuffers::GetRoot<wire::Entries>(raw.data());
  auto z = [](const flatbuffers::Vector<uint8_t>* v) -> double {
    if (!v) return 0;
    std::string out(ZSTD_compressBound(v->size()), '\0');
    return static_cast<double>(ZSTD_compress(out.data(), out.size(), v->data(), v->size(), 3));
  };
  std::printf("  one context batch of %zu readings, columns compressed alone, bytes per reading: series %.2f, "
              "new series %.2f, timestamps %.2f, values %.2f, metric scales %.2f, quality %.2f; the whole "
              "Entries table %zu bytes raw\n",
              size, z(in->series()) / size, z(in->new_series()) / size, z(in->timestamps()) / size,
              z(in->mantissas()) / size, z(in->metric_scale()) / size, z(in->quality()) / size, raw.size());
}

// Bytes per reading of edgesync batches of batch_size vs JSON per reading.
double BytesPerReading(bench::Report* report) {
  SensorWorkload workload(1000, 1780000000000);
  std::vector<Reading> readings = workload.Take(160000);  // 20 s of the workload
  const std::string topic = HubInboxTopic("edgesync", "eu", "gw-0001");
  size_t json = 0;
  for (const Reading& r : readings) {
    json += PacketBytes(("sensors/" + r.device_id + "/" + r.metric).size(), test::ReadingAsJson(r).size());
  }
  double json_per = static_cast<double>(json) / readings.size();
  // Backlog batches, and batches of 1,600 (what the former online rule,
  // a fixed 200 ms of the workload's 8,000 readings/s, made) and of 200.
  const std::pair<size_t, std::string> sizes[] = {{5000, "bytes_per_reading_backlog_batches"},
                                                  {1600, "bytes_per_reading_batches_of_1600"},
                                                  {200, "bytes_per_reading_batches_of_200"}};
  for (const auto& [batch_size, name] : sizes) {
    // Self-contained batches, then the same batches each referring to the
    // series context of those before (protocol 3), as an uplink streams
    // them to one region: the first defines the series, the rest refer.
    size_t total[2] = {0, 0};
    // Of the context batches after the first tick (every series known):
    // MQTT header and topic, the message around the body, the body.
    size_t parts[3] = {0, 0, 0}, warm_readings = 0;
    std::string warm_raw;
    for (int with = 0; with < 2; ++with) {
      SeriesContext context;
      for (size_t at = 0; at < readings.size(); at += batch_size) {
        const WireBatch b = test::ReadingsBatch("gw-0001", readings, at, batch_size);
        std::string payload;
        if (!EncodeBatch(ReplyTopic("edgesync", "gw-0001", "up"), at, b, {}, &payload, with ? &context : nullptr).ok()) {
          Die("encoding a batch failed");
        }
        total[with] += PacketBytes(topic.size(), payload.size());
        if (with && at >= 8000) {
          size_t body = BodyBytes(payload);
          parts[0] += PacketBytes(topic.size(), payload.size()) - payload.size();
          parts[1] += payload.size() - body;
          parts[2] += body;
          warm_readings += b.entries.size();
        }
      }
    }
    const double plain = static_cast<double>(total[0]) / readings.size();
    report->Add(name, plain, "B/reading", "json_message_per_reading", json_per);
    report->Add(name + "_with_context", static_cast<double>(total[1]) / readings.size(), "B/reading", name, plain);
    std::printf("  context batches of %zu after the first tick, per reading: MQTT header and topic %.2f B, message "
                "around the body %.2f B, compressed columns %.2f B\n",
                batch_size, static_cast<double>(parts[0]) / warm_readings,
                static_cast<double>(parts[1]) / warm_readings, static_cast<double>(parts[2]) / warm_readings);
  }
  ColumnBreakdown(readings, 200);
  return json_per;
}

// The pid of the process whose command line contains `needle` ("" if none).
int PidOf(const std::string& needle) {
  DIR* proc = opendir("/proc");
  if (!proc) return 0;
  int found = 0;
  while (dirent* d = readdir(proc)) {
    int pid = std::atoi(d->d_name);
    if (pid <= 0) continue;
    std::ifstream in(std::string("/proc/") + d->d_name + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos && cmd.find("mosquitto") != std::string::npos) {
      found = pid;
      break;
    }
  }
  closedir(proc);
  return found;
}

void Drain(bench::Report* report, size_t n) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  MustStart(eu.Start(), "region eu", eu.broker().log() + eu.hub_log());
  TcpProxy link(eu.broker().port());
  auto store = test::OpenGatewayStore(tmp.File("gw.db"), "gw-0001");
  SensorWorkload workload(1000, 1780000000000);
  for (size_t left = n; left > 0;) {
    size_t k = std::min<size_t>(left, 5000);
    AppendResult r;
    if (Status st = store->AppendReadings(workload.Take(k), &r); !st.ok()) Die("append: " + st.ToString());
    left -= k;
  }
  uint64_t last = store->LastLsn();
  Config defaults;
  UplinkOptions o;
  o.gateway_id = "gw-0001";
  o.batch_max_readings = static_cast<size_t>(defaults.uplink_batch_max_readings);
  o.window = static_cast<size_t>(defaults.uplink_window);
  o.probe_interval_ms = 1000;
  o.regions.push_back(test::RegionAt("eu", link.uri()));
  auto start = std::chrono::steady_clock::now();
  uint64_t rss_before = ReadProcessStats().rss_bytes, rss_max = rss_before;
  Uplink uplink(store.get(), o);
  if (Status st = uplink.Start(); !st.ok()) Die("uplink start: " + st.ToString());
  test::WaitFor(
      [&] {
        rss_max = std::max(rss_max, ReadProcessStats().rss_bytes);
        return Checkpoint(store.get()) == last;
      },
      1800000);
  auto end = std::chrono::steady_clock::now();
  UplinkStats s = uplink.stats();
  uplink.Stop();
  double edgesync_s = Seconds(start, end);
  int64_t edgesync_bytes = link.bytes_upstream();
  std::printf("edgesync: %zu readings acknowledged in %.2f s (%.0f/s), %llu batches, %llu resends\n", n, edgesync_s,
              n / edgesync_s, static_cast<unsigned long long>(s.batches_sent),
              static_cast<unsigned long long>(s.resends));
  auto contents = eu.Contents();
  size_t twice = 0;
  for (const auto& kv : contents) twice += kv.second > 1;
  int64_t lost = static_cast<int64_t>(last) - static_cast<int64_t>(contents.size());

  // Baseline: a Mosquitto bridge from a local broker to the region broker.
  TempDir btmp;
  std::string tuning = "max_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages 0\nset_tcp_nodelay true\n";
  RegionSite::MakeDir(btmp.path() + "/remote");
  RegionSite::MakeDir(btmp.path() + "/local");
  BrokerOptions ro;
  ro.extra_config = tuning;
  Broker remote(btmp.path() + "/remote", ro);
  MustStart(remote.Start(), "broker remote", remote.log());
  TcpProxy bridge_link(remote.port());
  bridge_link.Cut();
  BrokerOptions lo;
  lo.extra_config = tuning + "connection uplink\naddress 127.0.0.1:" + std::to_string(bridge_link.port()) +
                    "\ntopic sensors/# out 1\ncleansession false\nrestart_timeout 1 1\n"
                    "bridge_protocol_version mqttv311\nclientid bridge-gw-0001\n";
  Broker local(btmp.path() + "/local", lo);
  MustStart(local.Start(), "broker local", local.log());

  // The region side: counts each reading (its sequence number) once.
  std::vector<uint8_t> seen(n, 0);
  std::atomic<size_t> unique{0}, duplicates{0};
  mqtt::async_client sub(remote.uri(), "region-consumer");
  sub.set_message_callback([&](mqtt::const_message_ptr m) {
    const std::string& p = m->get_payload_str();
    size_t at = p.find("\"seq\":");
    if (at == std::string::npos) return;
    size_t i = std::strtoull(p.c_str() + at + 6, nullptr, 10);
    if (i >= n) return;
    if (seen[i]++) ++duplicates; else ++unique;
  });
  sub.connect(mqtt::connect_options_builder().clean_session(false).finalize())->wait();
  sub.subscribe("sensors/#", 1)->wait();

  // Sensors publish the same readings to the local broker while the link is down.
  {
    test::TestMqttClient pub(local.uri(), "sensors", true);
    if (!pub.Connect()) Die("the sensors' client did not connect");
    SensorWorkload again(1000, 1780000000000);
    for (size_t i = 0; i < n; ++i) {
      Reading r = again.Next();
      std::string json = test::ReadingAsJson(r);
      json.insert(json.size() - 1, ",\"seq\":" + std::to_string(i));
      if (!pub.PublishAsync("sensors/" + r.device_id + "/" + r.metric, json, 1)) Die("the local broker took no message for 120 s");
    }
    pub.Flush(600000);
    pub.Disconnect();
  }
  test::SleepMs(1500);  // one autosave interval: the queue is on disk too
  auto bstart = std::chrono::steady_clock::now();
  bridge_link.Restore();
  size_t previous = 0;
  auto last_progress = std::chrono::steady_clock::now();
  while (unique < n) {
    test::SleepMs(100);
    if (unique != previous) {
      previous = unique;
      last_progress = std::chrono::steady_clock::now();
    } else if (Seconds(last_progress, std::chrono::steady_clock::now()) > 20) {
      break;  // nothing more is coming
    }
  }
  auto bend = std::chrono::steady_clock::now();
  int local_pid = PidOf(btmp.path() + "/local");
  double bridge_peak_mb = local_pid ? ReadProcessStats(local_pid).peak_rss_bytes / 1048576.0 : -1;
  double bridge_s = Seconds(bstart, unique == n ? bend : last_progress);
  sub.disconnect()->wait();
  std::printf("bridge: %zu of %zu readings in %.2f s, %zu duplicates\n", unique.load(), n, bridge_s,
              duplicates.load());

  report->Add("drain_seconds", edgesync_s, "s", "mosquitto_bridge_seconds", bridge_s);
  report->Add("drain_readings_per_s", n / edgesync_s, "readings/s", "mosquitto_bridge_readings_per_s",
              unique / bridge_s);
  report->Add("drain_lost", static_cast<double>(lost), "readings", "mosquitto_bridge_lost",
              static_cast<double>(n - unique));
  report->Add("drain_duplicated", static_cast<double>(twice), "readings", "mosquitto_bridge_duplicated",
              static_cast<double>(duplicates));
  report->Add("drain_memory_growth", (rss_max - rss_before) / 1048576.0, "MB",
              "mosquitto_bridge_local_broker_peak_rss", bridge_peak_mb);
  report->Add("drain_link_bytes_per_reading", static_cast<double>(edgesync_bytes) / n, "B/reading",
              "mosquitto_bridge_link_bytes_per_reading", static_cast<double>(bridge_link.bytes_upstream()) / n);
}

// Publishes `n` plain-number readings at `rate`/s to uri; returns publish times (ms).
std::vector<double> PublishPaced(const std::string& uri, size_t n, double rate) {
  std::vector<double> at(n);
  test::TestMqttClient pub(uri, "latency-sensors", true);
  if (!pub.Connect()) Die("the sensors' client did not connect");
  SensorWorkload w(1000, 1780000000000);
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    auto due = start + std::chrono::microseconds(static_cast<int64_t>(i * 1e6 / rate));
    std::this_thread::sleep_until(due);
    Reading r = w.Next();
    at[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    char v[32];
    std::snprintf(v, sizeof v, "%.6g", r.value);
    if (!pub.PublishAsync("sensors/" + r.device_id + "/" + r.metric, v, 1)) Die("the local broker took no message for 120 s");
  }
  pub.Flush(30000);
  pub.Disconnect();
  return at;
}

double NowMsD() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One `edgesync gateway` process fed `n` readings at `rate`/s through its
// local broker, with `uplink` (TOML lines of its [uplink] table; "" = defaults).
struct GatewayRun {
  std::vector<double> latencies_ms;  // publish to the region's answer, after warmup
  int64_t link_bytes = 0;            // gateway -> region broker, TCP payload (only with the proxy)
  size_t answers = 0;                // the region's answers: one per batch
};

GatewayRun RunGateway(size_t n, size_t warmup, double rate, const std::string& uplink, bool count_link_bytes) {
  TempDir tmp;
  RegionSite::MakeDir(tmp.path() + "/local");
  Broker local(tmp.path() + "/local");
  MustStart(local.Start(), "broker local", local.log());
  RegionSite eu(tmp.path(), "eu");
  MustStart(eu.Start(), "region eu", eu.broker().log() + eu.hub_log());
  // The counting proxy is a hop of its own: only where bytes are counted.
  std::unique_ptr<TcpProxy> proxy;
  if (count_link_bytes) proxy = std::make_unique<TcpProxy>(eu.broker().port());
  RegionSite::MakeDir(tmp.path() + "/gw");
  std::ofstream(tmp.File("gw.toml")) << "[gateway]\nid = \"gw-lat\"\ndata_dir = " << test::Q(tmp.path() + "/gw")
                                     << "\nlog_level = \"warn\"\n[ingest]\nbroker_uri = " << test::Q(local.uri())
                                     << "\n[uplink]\n" << uplink << "\n[[region]]\nname = \"eu\"\nuri = "
                                     << test::Q(proxy ? proxy->uri() : eu.broker().uri()) << "\n";
  // The region's answers, as they are published: (high-water, time).
  std::mutex mu;
  std::vector<std::pair<uint64_t, double>> acks;
  mqtt::async_client watch(eu.broker().uri(), "latency-watch");
  watch.set_message_callback([&](mqtt::const_message_ptr m) {
    WireMessage msg;
    if (!DecodeMessage(m->get_payload_str(), {}, &msg, nullptr).ok() || msg.kind != WireKind::kAck) return;
    std::lock_guard<std::mutex> lock(mu);
    acks.emplace_back(msg.ack.high_water, NowMsD());
  });
  watch.connect()->wait();
  watch.subscribe(ReplyTopic("edgesync", "gw-lat", "up"), 0)->wait();
  test::Process gateway;
  if (!gateway.Start({EDGESYNC_BINARY, "gateway", "--config", tmp.File("gw.toml")}, tmp.File("gw.log"))) Die("the gateway did not start");
  test::SleepMs(3000);  // connected to both brokers, region chosen
  int64_t bytes_before = proxy ? proxy->bytes_upstream() : 0;
  std::vector<double> sent = PublishPaced(local.uri(), n, rate);
  test::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return !acks.empty() && acks.back().first >= n;
      },
      60000);
  GatewayRun run;
  if (proxy) run.link_bytes = proxy->bytes_upstream() - bytes_before;
  // Where the time goes, from the gateway's own status: its group commits
  // (after ingest.batch_delay_ms of gathering) and its batches' round trips.
  test::SleepMs(1500);  // the status file is rewritten every second
  std::string status_text;
  if (ReadFile(tmp.path() + "/gw/status.json", &status_text).ok()) {
    nlohmann::json st = nlohmann::json::parse(status_text, nullptr, false);
    auto mean_ms = [](const nlohmann::json& h) {
      double count = h.value("count", 0.0);
      return count > 0 ? 1000.0 * h.value("sum", 0.0) / count : -1.0;
    };
    if (st.is_object()) {
      std::printf("  gateway: mean group commit %.2f ms, mean batch round trip (send to answer) %.2f ms\n",
                  mean_ms(st.value("commit_latency", nlohmann::json::object())),
                  mean_ms(st.value("uplink", nlohmann::json::object()).value("ack_latency", nlohmann::json::object())));
    }
  }
  gateway.Stop();
  watch.disconnect()->wait();
  {
    std::lock_guard<std::mutex> lock(mu);
    run.answers = acks.size();
    size_t a = 0;
    for (size_t k = 1; k <= n; ++k) {
      while (a < acks.size() && acks[a].first < k) ++a;
      if (a == acks.size()) break;
      if (k > warmup) run.latencies_ms.push_back(acks[a].second - sent[k - 1]);
    }
  }
  std::printf("edgesync at %.0f readings/s (uplink: %s): %zu of %zu readings acknowledged by the region", rate,
              uplink.empty() ? "defaults" : uplink.c_str(), run.latencies_ms.size(), n - warmup);
  std::printf(", %zu batches (%.0f readings each)", run.answers, static_cast<double>(n) / std::max<size_t>(1, run.answers));
  if (proxy) std::printf(", %.2f link bytes per reading", static_cast<double>(run.link_bytes) / n);
  std::printf("\n");
  return run;
}

void Latency(bench::Report* report) {
  const size_t n = 15000, warmup = 2000;
  const double rate = 1000;
  std::vector<double> lat = RunGateway(n, warmup, rate, "", false).latencies_ms;
  std::mutex mu;

  // Baseline: the bridge, publish to delivery at the region.
  TempDir btmp;
  RegionSite::MakeDir(btmp.path() + "/remote");
  RegionSite::MakeDir(btmp.path() + "/local");
  Broker remote(btmp.path() + "/remote");
  MustStart(remote.Start(), "broker remote", remote.log());
  BrokerOptions lo;
  lo.extra_config = "connection uplink\naddress 127.0.0.1:" + std::to_string(remote.port()) +
                    "\ntopic sensors/# out 1\ncleansession false\nrestart_timeout 1 1\n"
                    "bridge_protocol_version mqttv311\nclientid bridge-lat\n";
  Broker blocal(btmp.path() + "/local", lo);
  MustStart(blocal.Start(), "broker blocal", blocal.log());
  std::vector<double> arrived;
  arrived.reserve(n);
  mqtt::async_client sub(remote.uri(), "latency-region");
  sub.set_message_callback([&](mqtt::const_message_ptr) {
    std::lock_guard<std::mutex> lock(mu);
    arrived.push_back(NowMsD());
  });
  sub.connect()->wait();
  sub.subscribe("sensors/#", 1)->wait();
  test::SleepMs(2000);  // the bridge is up
  std::vector<double> bsent = PublishPaced(blocal.uri(), n, rate);
  test::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return arrived.size() >= n;
      },
      30000);
  sub.disconnect()->wait();
  std::vector<double> blat;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t k = warmup; k < std::min(n, arrived.size()); ++k) blat.push_back(arrived[k] - bsent[k]);
  }
  report->Add("online_latency_p50", bench::Median(lat), "ms", "mosquitto_bridge_latency_p50", bench::Median(blat));
  report->Add("online_latency_p99", bench::Percentile(lat, 0.99), "ms", "mosquitto_bridge_latency_p99",
              bench::Percentile(blat, 0.99));
}

// Online bytes: the reference workload (8,000 single-reading messages/s,
// paced) through an `edgesync gateway` with default settings; everything the
// gateway sends to the region broker (batches, probes, PUBACKs of answers)
// counted by a proxy on its link.
void OnlineBytes(bench::Report* report, double json_per, size_t seconds) {
  const double rate = 8000;
  const size_t n = static_cast<size_t>(rate) * seconds;
  // Default settings, then the bytes-frugal setting: every partial batch
  // held 600 ms (uplink.batch_min_delay_ms), ~4,800 readings of the workload.
  // First every batch self-contained (uplink.series_context = false), the
  // same-run baseline of the defaults, which refer to the series context.
  const std::pair<std::string, std::string> runs[] = {{"series_context = false", "_self_contained"},
                                                      {"", ""},
                                                      {"batch_min_delay_ms = 600", "_min_delay_600ms"}};
  double self_contained = 0;
  for (const auto& [uplink, suffix] : runs) {
    GatewayRun run = RunGateway(n, 0, rate, uplink, true);
    if (run.latencies_ms.size() != n) std::printf("warning: %zu of %zu readings answered\n", run.latencies_ms.size(), n);
    const double per = static_cast<double>(run.link_bytes) / n;
    if (suffix == "_self_contained") self_contained = per;
    if (suffix.empty()) {
      report->Add("online_link_bytes_per_reading_8000_per_s", per, "B/reading",
                  "online_link_bytes_per_reading_8000_per_s_self_contained", self_contained);
    } else {
      report->Add("online_link_bytes_per_reading_8000_per_s" + suffix, per, "B/reading", "json_message_per_reading",
                  json_per);
    }
    report->Add("online_readings_per_batch_8000_per_s" + suffix,
                static_cast<double>(n) / std::max<size_t>(1, run.answers), "readings", "backlog_batch_readings",
                static_cast<double>(Config().uplink_batch_max_readings));
    std::printf("  latency at 8000 readings/s through the counting proxy: p50 %.1f ms, p99 %.1f ms\n",
                bench::Median(run.latencies_ms), bench::Percentile(run.latencies_ms, 0.99));
  }
}


// The drain as a user meets it, with whole programs: a region (its broker
// and an `edgesync region` hub, SQLite) and a gateway (local broker and
// `edgesync gateway`, default config) whose region link is cut while
// `readings` of the reference workload are published at full speed; then
// the link comes back. The figure is the drain's rate from the first
// acknowledged batch to the last (the reconnect's backoff left out), read
// from the gateway store's upstream checkpoint by plain SQL, so a previous
// build's store is read too. < 0 when the run failed.
struct ProcessDrain {
  double readings_per_s = -1;
  int64_t committed = 0;
};
ProcessDrain DrainWithProgram(const std::string& program, const std::string& name, int rounds) {
  ProcessDrain out;
  TempDir tmp;
  const std::string dir = tmp.path();
  RegionSite::MakeDir(dir + "/region-broker");
  RegionSite::MakeDir(dir + "/local-broker");
  RegionSite::MakeDir(dir + "/hub");
  RegionSite::MakeDir(dir + "/gw");
  Broker region(dir + "/region-broker");
  MustStart(region.Start(), "region broker", region.log());
  Broker local(dir + "/local-broker");
  MustStart(local.Start(), "local broker", local.log());
  TcpProxy link(region.port());
  link.Cut();
  std::ofstream(dir + "/hub.toml") << "[gateway]\ndata_dir = \"" << dir << "/hub\"\n\n[metrics]\nlisten = \"\"\n\n"
                                   << "[hub]\nregion = \"eu\"\nid = \"h0\"\nbroker_uri = \"" << region.uri() << "\"\n";
  test::Process hub;
  MustStart(hub.Start({program, "region", "--config", dir + "/hub.toml"}, dir + "/hub.log"), "hub", "");
  std::ofstream(dir + "/gw.toml") << "[gateway]\nid = \"gw-drain\"\ndata_dir = \"" << dir << "/gw\"\n\n"
                                  << "[metrics]\nlisten = \"\"\n\n[ingest]\nbroker_uri = \"" << local.uri()
                                  << "\"\n\n[[region]]\nname = \"eu\"\nuri = \"" << link.uri() << "\"\n";
  test::Process gw;
  MustStart(gw.Start({program, "gateway", "--config", dir + "/gw.toml"}, dir + "/gw.log"), "gateway", "");
  const std::string store = dir + "/gw/store.db";
  // The gateway's subscription exists before the sensors publish.
  if (!test::WaitFor([&] { return test::StatusField(test::ReadStatusFile(dir + "/gw/status.json"),
                                                    metrics::kIngestMqttConnected) == 1; },
                     60000)) {
    Die("the gateway's ingest link never connected:\n" + test::ReadAll(dir + "/gw.log"));
  }
  test::SleepMs(500);
  const int64_t total = int64_t{1000} * 8 * rounds;
  test::Process pub;
  MustStart(pub.Start({EDGESYNC_PUBLISHER, local.uri(), "pub-" + name, "1000", std::to_string(rounds), "dev-",
                       "1780000000000", "0", "reference"},
                      dir + "/pub.log"),
            "publisher", "");
  if (!test::WaitFor([&] { return bench::StoreLastLsn(store) >= total; }, 600000)) {
    std::fprintf(stderr, "bench_uplink: %s committed %lld of %lld readings\n", name.c_str(),
                 static_cast<long long>(bench::StoreLastLsn(store)), static_cast<long long>(total));
    return out;
  }
  out.committed = bench::StoreLastLsn(store);
  pub.Wait(10000);
  link.Restore();
  auto acked = [&] { return bench::StoreCheckpoint(store, checkpoint::kUpstream); };
  int64_t first = 0;
  if (!test::WaitFor([&] { return (first = acked()) > 0; }, 120000)) return out;
  const auto start = std::chrono::steady_clock::now();
  if (!test::WaitFor([&] { return acked() >= out.committed; }, 600000)) return out;
  const double s = Seconds(start, std::chrono::steady_clock::now());
  gw.Stop();
  hub.Stop();
  out.readings_per_s = static_cast<double>(out.committed - first) / std::max(s, 1e-3);
  std::printf("drain with %s: %lld readings, %lld after the first answer in %.2f s (%.0f/s)\n", name.c_str(),
              static_cast<long long>(out.committed), static_cast<long long>(out.committed - first), s,
              out.readings_per_s);
  std::fflush(stdout);
  return out;
}

// The same drain with this build and a previous one (EDGESYNC_BENCH_PREVIOUS),
// alternating, three rounds each: the medians.
void DrainAgainstPrevious(bench::Report* report, const std::string& previous) {
  const int rounds = bench::Quick() ? 5 : 60;  // 480,000 readings
  std::vector<double> now, before;
  for (int i = 0; i < 3; ++i) {
    now.push_back(DrainWithProgram(EDGESYNC_BINARY, "this-" + std::to_string(i), rounds).readings_per_s);
    before.push_back(DrainWithProgram(previous, "previous-" + std::to_string(i), rounds).readings_per_s);
  }
  std::sort(now.begin(), now.end());
  std::sort(before.begin(), before.end());
  if (now.front() < 0 || before.front() < 0) Die("a drain with whole programs failed");
  report->Add("drain readings/s, whole programs (gateway and SQLite hub), against the previous binary (median of 3)",
              now[1], "readings/s", "the previous binary, same run", before[1]);
}

// Part 5: one drain with live readings through the shaped link, with
// uplink.live_lane = `live_lane` ("" = not written: the build's default).
struct LaneRun {
  std::vector<double> latencies_ms;  // every live reading stored, publish to the covering answer
  double drain_s = 0;                // link back to the answer covering the backlog's end
  double drain_link_bytes_per_s = 0;
  double link_bytes_per_reading = 0;  // link back to the last answer, over every reading
  size_t live = 0;
};

constexpr int64_t kLaneLink = 32000;  // bytes/s each way: 256 kbit/s
constexpr int64_t kLaneCap = 28000;   // uplink.max_bytes_per_s

LaneRun RunLanes(size_t backlog, const std::string& live_lane) {
  const std::string id = "gw-lanes";
  TempDir tmp;
  RegionSite::MakeDir(tmp.path() + "/local");
  Broker local(tmp.path() + "/local");
  MustStart(local.Start(), "broker local", local.log());
  RegionSite eu(tmp.path(), "eu");
  MustStart(eu.Start(), "region eu", eu.broker().log() + eu.hub_log());
  TcpProxy link(eu.broker().port());
  link.SetRateBytesPerSec(kLaneLink);
  link.Cut();
  test::AckWatch watch(eu.broker().uri(), id, &link);
  std::string error;
  if (!watch.Start(&error)) Die("the answer watch: " + error);
  const std::string data = tmp.path() + "/gw";
  RegionSite::MakeDir(data);
  {
    auto store = test::OpenGatewayStore(data + "/store.db", id);
    if (!store || !test::FillVibrationSamples(store.get(), backlog, &error)) Die("filling the backlog: " + error);
  }
  std::ofstream(tmp.File("gw.toml")) << "[gateway]\nid = " << test::Q(id) << "\ndata_dir = " << test::Q(data)
                                     << "\nlog_level = \"warn\"\n[metrics]\nlisten = \"\"\n[ingest]\nbroker_uri = "
                                     << test::Q(local.uri()) << "\n[uplink]\nmax_bytes_per_s = " << kLaneCap << "\n"
                                     << (live_lane.empty() ? "" : "live_lane = " + live_lane + "\n")
                                     << "\n[[region]]\nname = \"eu\"\nuri = " << test::Q(link.uri()) << "\n";
  test::Process gateway;
  MustStart(gateway.Start({EDGESYNC_BINARY, "gateway", "--config", tmp.File("gw.toml")}, tmp.File("gw.log")),
            "the gateway", test::ReadAll(tmp.File("gw.log")));
  if (!test::WaitFor([&] { return test::StatusField(test::ReadStatusFile(data + "/status.json"),
                                                    metrics::kIngestMqttConnected) == 1; },
                     60000)) {
    Die("the gateway's ingest link never connected:\n" + test::ReadAll(tmp.File("gw.log")));
  }
  test::SleepMs(500);

  // The link comes back; the sensors start once the region answers again.
  const int64_t restored_ms = test::NowMs();
  const int64_t restored_up = link.bytes_upstream();
  link.Restore();
  if (!test::WaitFor([&] { return watch.count() > 0; }, 60000)) Die("no answer after the link came back");
  test::LiveSensors live(local.uri(), "lanes-bench-sensors", 100);
  if (!live.Start()) Die("the live sensors did not connect");
  if (!test::WaitFor([&] { return watch.high_water() >= backlog; }, 900000)) Die("the backlog did not drain");
  test::SeenAck drained;
  watch.FirstMarkAt(backlog, &drained);
  test::SleepMs(2000);  // live readings just after the drain too
  if (!live.Stop()) Die("the local broker did not take every live reading");
  const std::vector<int64_t> sent = live.sent_ms();
  const uint64_t total = backlog + sent.size();
  if (!test::WaitFor([&] { return watch.high_water() >= total; }, 120000)) {
    Die("the region acknowledged " + std::to_string(watch.high_water()) + " of " + std::to_string(total));
  }
  test::SeenAck end;
  watch.FirstMarkAt(total, &end);
  gateway.Stop();

  LaneRun run;
  run.live = sent.size();
  std::map<int64_t, std::vector<uint64_t>> found = test::LiveLsns(data + "/store.db", id, backlog);
  std::vector<uint64_t> lsn(sent.size(), 0);
  for (const auto& [k, lsns] : found) {
    if (k >= 0 && static_cast<size_t>(k) < lsn.size()) lsn[k] = lsns.front();
  }
  run.latencies_ms = watch.Latencies(sent, lsn);
  run.drain_s = static_cast<double>(drained.ms - restored_ms) / 1000.0;
  run.drain_link_bytes_per_s = static_cast<double>(drained.link_up - restored_up) / run.drain_s;
  run.link_bytes_per_reading = static_cast<double>(end.link_up - restored_up) / static_cast<double>(total);
  std::printf("lanes (uplink.live_lane %s): %zu backlog readings drained in %.1f s, %.0f link bytes/s (cap %lld); "
              "%zu live readings (%zu stored), latency p50 %.0f ms, p99 %.0f ms; %.2f link bytes per reading\n",
              live_lane.empty() ? "not set" : live_lane.c_str(), backlog, run.drain_s, run.drain_link_bytes_per_s,
              static_cast<long long>(kLaneCap), sent.size(), run.latencies_ms.size(),
              bench::Median(run.latencies_ms), bench::Percentile(run.latencies_ms, 0.99),
              run.link_bytes_per_reading);
  std::fflush(stdout);
  return run;
}

void Lanes(bench::Report* report, size_t seconds) {
  const double per = test::BacklogWireBytesPerReading(kLaneCap, "gw-lanes");
  if (per <= 0) Die("encoding the backlog's batches failed");
  const size_t backlog = static_cast<size_t>(static_cast<double>(kLaneCap) * static_cast<double>(seconds) / per);
  const LaneRun strict = RunLanes(backlog, "false");
  const LaneRun lanes = RunLanes(backlog, "true");
  report->Add("lanes_live_latency_p50_256kbit", bench::Median(lanes.latencies_ms), "ms",
              "strict_lsn_order_live_latency_p50_256kbit", bench::Median(strict.latencies_ms));
  report->Add("lanes_live_latency_p99_256kbit", bench::Percentile(lanes.latencies_ms, 0.99), "ms",
              "strict_lsn_order_live_latency_p99_256kbit", bench::Percentile(strict.latencies_ms, 0.99));
  report->Add("lanes_drain_link_bytes_per_s_256kbit", lanes.drain_link_bytes_per_s, "B/s",
              "uplink_max_bytes_per_s", static_cast<double>(kLaneCap));
  report->Add("strict_lsn_order_drain_link_bytes_per_s_256kbit", strict.drain_link_bytes_per_s, "B/s",
              "uplink_max_bytes_per_s", static_cast<double>(kLaneCap));
  report->Add("lanes_link_bytes_per_reading_256kbit", lanes.link_bytes_per_reading, "B/reading",
              "strict_lsn_order_link_bytes_per_reading_256kbit", strict.link_bytes_per_reading);
}
}  // namespace
}  // namespace edgesync

int main() {
  edgesync::InitLogging(edgesync::LogLevel::kWarn, "bench_uplink");
  edgesync::bench::Report report("uplink");
  try {
    // make bench-previous: only the rows against the previous binary (the
    // others are `make bench BENCH=uplink`'s).
    if (const char* previous = std::getenv("EDGESYNC_BENCH_PREVIOUS")) {
      edgesync::DrainAgainstPrevious(&report, previous);
      return report.Write() ? 0 : 1;
    }
    double json_per = edgesync::BytesPerReading(&report);
    size_t n = 1000000;
    if (const char* v = std::getenv("EDGESYNC_BENCH_DRAIN_READINGS")) n = std::strtoull(v, nullptr, 10);
    if (n > 0) edgesync::Drain(&report, n);
    edgesync::Latency(&report);
    size_t seconds = 60;
    if (const char* v = std::getenv("EDGESYNC_BENCH_ONLINE_SECONDS")) seconds = std::strtoull(v, nullptr, 10);
    if (seconds > 0) edgesync::OnlineBytes(&report, json_per, seconds);
    size_t lane_seconds = edgesync::bench::Quick() ? 10 : 60;
    if (const char* v = std::getenv("EDGESYNC_BENCH_LANES_SECONDS")) lane_seconds = std::strtoull(v, nullptr, 10);
    if (lane_seconds > 0) edgesync::Lanes(&report, lane_seconds);
  } catch (const edgesync::BenchFailure& e) {
    std::fprintf(stderr, "bench_uplink: %s\n", e.what());
    report.Write();  // the figures measured before the failure
    return 1;
  }
  return report.Write() ? 0 : 1;
}

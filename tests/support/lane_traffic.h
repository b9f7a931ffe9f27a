// tests/support/lane_traffic.h: the traffic of an uplink draining a backlog
// while live readings arrive (sync/PROTOCOL.md, "Two lanes"), shared by the lanes
// test (tests/integration/sync_lanes_test.cc) and the uplink benchmark:
//   - a backlog of raw vibration samples, full-precision doubles that no
//     encoding shrinks much, and its measured wire bytes per reading;
//   - AckWatch: the region's answers to one gateway, seen at the region's
//     broker on the gateway's reply topic, with when they came;
//   - LiveSensors: live readings (bare numbers) published at a steady rate
//     to the gateway's broker, each named by its value;
//   - LiveLsns: the LSNs the gateway's store gave those readings.
//
// Thread safety: AckWatch and LiveSensors may be read from any thread while
// their own threads (Paho's callback, the publishing thread) add to them.
#ifndef EDGESYNC_TESTS_SUPPORT_LANE_TRAFFIC_H_
#define EDGESYNC_TESTS_SUPPORT_LANE_TRAFFIC_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <mqtt/async_client.h>

#include "store/store.h"
#include "sync/mqtt_link.h"
#include "sync/wire.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {

// Readings from..from+n-1 of a backlog of 1000 vibration sensors sampled
// every 100 ms, values uniform in [-1, 1] at full precision.
inline std::vector<Reading> VibrationSamples(size_t from, size_t n) {
  constexpr size_t kDevices = 1000;
  std::mt19937_64 rng(17 + from);
  std::uniform_real_distribution<double> sample(-1.0, 1.0);
  std::vector<Reading> out;
  out.reserve(n);
  for (size_t i = from; i < from + n; ++i) {
    Reading r;
    r.device_id = "vib-" + std::to_string(i % kDevices);
    r.metric = "accel";
    r.unit = "g";
    r.ts_ms = 1780000000000 + static_cast<int64_t>(i / kDevices) * 100;
    r.value = sample(rng);
    out.push_back(std::move(r));
  }
  return out;
}

// Appends n vibration samples to store. False (and *error) on a failed append.
inline bool FillVibrationSamples(Store* store, size_t n, std::string* error) {
  for (size_t done = 0; done < n;) {
    const size_t k = std::min<size_t>(n - done, 5000);
    AppendResult appended;
    Status st = store->AppendReadings(VibrationSamples(done, k), &appended);
    if (!st.ok()) {
      *error = st.ToString();
      return false;
    }
    done += k;
  }
  return true;
}

// A batch of readings[at, at + n) of gateway_id (a fixed epoch) as a log
// numbered from 1 holds them: LSN i + 1, base `at`.
inline WireBatch ReadingsBatch(const std::string& gateway_id, const std::vector<Reading>& readings, size_t at,
                               size_t n) {
  WireBatch b;
  b.origin = {gateway_id, "0123456789abcdef0123456789abcdef"};
  for (size_t i = at; i < std::min(readings.size(), at + n); ++i) {
    ChangeEntry e;
    e.lsn = i + 1;
    e.reading = readings[i];
    b.entries.push_back(std::move(e));
  }
  b.first_lsn = b.entries.front().lsn;
  b.last_lsn = b.entries.back().lsn;
  b.base_lsn = at;
  return b;
}

// Wire bytes per reading of a drain of vibration samples by an uplink capped
// at cap bytes/s: whole MQTT PUBLISH packets (QoS 1, MQTT 3.1.1) of batches
// of about a quarter second of the cap (as the capped uplink sizes them),
// each referring to the series context of those before, as a drain streams
// them. -1 if a batch could not be encoded.
inline double BacklogWireBytesPerReading(int64_t cap, const std::string& gateway_id) {
  const std::vector<Reading> readings = VibrationSamples(0, 40000);
  // ~9-10 bytes a reading: this many fill a quarter second of the cap.
  const size_t batch_readings = std::max<size_t>(100, static_cast<size_t>(cap / 4 / 10));
  const std::string topic = HubInboxTopic("edgesync", "eu", gateway_id);
  SeriesContext context;
  size_t bytes = 0;
  for (size_t at = 0; at < readings.size(); at += batch_readings) {
    const WireBatch b = ReadingsBatch(gateway_id, readings, at, batch_readings);
    std::string payload;
    if (!EncodeBatch(ReplyTopic("edgesync", gateway_id, "up"), at, b, {}, &payload, &context).ok()) return -1;
    bytes += MqttPublishPacketBytes(topic.size(), payload.size(), 1, 4);
  }
  return static_cast<double>(bytes) / static_cast<double>(readings.size());
}

// One answer of the region to the gateway, as its broker delivered it.
struct SeenAck {
  uint64_t high_water = 0;
  std::vector<LsnSpan> held;
  // Protocol 8: the region's priority marks P1..P3 (empty = all 0).
  std::vector<uint64_t> priority_held;
  int64_t ms = 0;       // steady clock (NowMs)
  int64_t link_up = 0;  // the proxy's bytes towards the region by then (0 without one)

  // The region holds lsn: at or below its mark, or inside a held span.
  bool Covers(uint64_t lsn) const {
    if (lsn <= high_water) return true;
    for (const LsnSpan& s : held) {
      if (lsn >= s.first && lsn <= s.last) return true;
    }
    return false;
  }
};

// The region's answers to gateway_id, watched at the region's broker (not
// through the gateway's link: the time an answer is published there is the
// time the region acknowledged).
class AckWatch {
 public:
  AckWatch(const std::string& uri, std::string gateway_id, const TcpProxy* link = nullptr)
      : client_(uri, "ack-watch-" + gateway_id), gateway_id_(std::move(gateway_id)), link_(link) {}
  ~AckWatch() {
    try {
      if (client_.is_connected()) client_.disconnect()->wait();
    } catch (const mqtt::exception&) {
    }
  }
  AckWatch(const AckWatch&) = delete;
  AckWatch& operator=(const AckWatch&) = delete;

  // Subscribed; false (and *error) when the broker could not be reached.
  bool Start(std::string* error) {
    client_.set_message_callback([this](mqtt::const_message_ptr m) {
      WireMessage msg;
      if (!DecodeMessage(m->get_payload_str(), {}, &msg, nullptr).ok() || msg.kind != WireKind::kAck) return;
      SeenAck a;
      a.high_water = msg.ack.high_water;
      a.held = msg.ack.held;
      a.priority_held = msg.ack.priority_held;
      a.ms = NowMs();
      a.link_up = link_ ? link_->bytes_upstream() : 0;
      std::lock_guard<std::mutex> lock(mu_);
      acks_.push_back(std::move(a));
    });
    try {
      client_.connect()->wait();
      client_.subscribe(ReplyTopic("edgesync", gateway_id_, "up"), 0)->wait();
    } catch (const mqtt::exception& e) {
      *error = e.what();
      return false;
    }
    return true;
  }

  std::vector<SeenAck> acks() {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_.size();
  }
  // The highest mark answered so far.
  uint64_t high_water() {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t hw = 0;
    for (const SeenAck& a : acks_) hw = std::max(hw, a.high_water);
    return hw;
  }
  // The first answer whose mark reached lsn (false if none yet).
  bool FirstMarkAt(uint64_t lsn, SeenAck* out) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const SeenAck& a : acks_) {
      if (a.high_water >= lsn) {
        *out = a;
        return true;
      }
    }
    return false;
  }

  // Publish-to-answer latency (ms) of each reading, by index: the first
  // answer at or after sent_ms[k] that covers lsn[k]; +infinity for one
  // never covered; readings whose lsn is 0 (not stored) are left out.
  std::vector<double> Latencies(const std::vector<int64_t>& sent_ms, const std::vector<uint64_t>& lsn) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> out;
    for (size_t k = 0; k < sent_ms.size() && k < lsn.size(); ++k) {
      if (lsn[k] == 0) continue;
      auto from = std::lower_bound(acks_.begin(), acks_.end(), sent_ms[k],
                                   [](const SeenAck& a, int64_t ms) { return a.ms < ms; });
      double latency = INFINITY;
      for (auto a = from; a != acks_.end(); ++a) {
        if (a->Covers(lsn[k])) {
          latency = static_cast<double>(a->ms - sent_ms[k]);
          break;
        }
      }
      out.push_back(latency);
    }
    return out;
  }

 private:
  mqtt::async_client client_;
  std::string gateway_id_;
  const TcpProxy* link_;
  std::mutex mu_;
  std::vector<SeenAck> acks_;  // in arrival order, so by ms
};

// Sensors publishing live readings at `rate`/s (QoS 1) from a thread:
// reading k is sensors/live-<k % devices>/temp with the bare number "<k>.5",
// so its value names it in the gateway's store (LiveLsns).
class LiveSensors {
 public:
  LiveSensors(const std::string& uri, std::string client_id, int rate, int devices = 20)
      : client_(uri, std::move(client_id), true), rate_(rate), devices_(devices) {}
  ~LiveSensors() { Stop(); }
  LiveSensors(const LiveSensors&) = delete;
  LiveSensors& operator=(const LiveSensors&) = delete;

  bool Start() {
    if (!client_.Connect()) return false;
    thread_ = std::thread([this] {
      const int64_t start = NowMs();
      for (int64_t k = 0; !stop_; ++k) {
        const int64_t due = start + k * 1000 / rate_;
        while (NowMs() < due && !stop_) SleepMs(1);
        if (stop_) break;
        const int64_t at = NowMs();
        if (!client_.PublishAsync("sensors/live-" + std::to_string(k % devices_) + "/temp", std::to_string(k) + ".5",
                                  1)) {
          failed_ = true;
          break;
        }
        std::lock_guard<std::mutex> lock(mu_);
        sent_ms_.push_back(at);
      }
    });
    return true;
  }
  // Stops publishing; true when the broker acknowledged every reading sent.
  bool Stop() {
    if (!thread_.joinable()) return !failed_;
    stop_ = true;
    thread_.join();
    const bool flushed = client_.Flush(30000);
    client_.Disconnect();
    return flushed && !failed_;
  }
  // When each reading was published (steady clock, NowMs), by index.
  std::vector<int64_t> sent_ms() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_ms_;
  }

 private:
  TestMqttClient client_;
  const int rate_;
  const int devices_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  std::vector<int64_t> sent_ms_;
};

// The LSNs a gateway's store (not running) gave each LiveSensors reading
// above `after`, by the reading's index: several when it was stored twice.
inline std::map<int64_t, std::vector<uint64_t>> LiveLsns(const std::string& store_path, const std::string& gateway_id,
                                                         uint64_t after) {
  std::map<int64_t, std::vector<uint64_t>> out;
  std::unique_ptr<Store> store = OpenGatewayStore(store_path, gateway_id);
  if (!store) return out;
  for (uint64_t at = after;;) {
    std::vector<ChangeEntry> entries;
    if (!store->ReadLog(at, 10000, &entries).ok() || entries.empty()) break;
    for (const ChangeEntry& e : entries) {
      at = e.lsn;
      if (e.reading.device_id.rfind("live-", 0) == 0) {
        out[static_cast<int64_t>(std::floor(e.reading.value))].push_back(e.lsn);
      }
    }
  }
  return out;
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_LANE_TRAFFIC_H_

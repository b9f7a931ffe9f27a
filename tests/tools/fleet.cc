#include "tests/tools/fleet.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <random>
#include <thread>

#include "firmware-config/config.h"
#include "sync/backoff.h"
#include "tests/support/workload.h"

namespace edgesync::test {
namespace {

double NowMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t Mix(uint64_t x) {  // splitmix64: a cheap, well-spread hash for values and phases
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string RandomEpoch(std::mt19937_64* rng) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>((*rng)()),
                static_cast<unsigned long long>((*rng)()));
  return buf;
}

}  // namespace

struct Fleet::Gateway {
  int index = 0;
  std::string id;
  Origin origin;
  std::string inbox, reply_to;
  Connection* connection = nullptr;
  // Guarded by connection->mu:
  struct InFlight {
    uint64_t correlation_id;
    uint64_t last_lsn;
    double sent_ms;
  };
  std::deque<InFlight> inflight;
  uint64_t next_tick = 0;   // the next batch to send
  uint64_t high_water = 0;  // the acknowledged mark
  uint64_t next_correlation = 0;
  double resume_ms = 0;     // after a rewind: no resend before this
};

struct Fleet::Connection {
  int index = 0;
  std::unique_ptr<MqttLink> link;
  std::vector<Gateway*> gateways;
  std::thread sender;
  std::mutex mu;
  std::condition_variable cv;  // an answer freed window space
  size_t cursor = 0;           // round-robin over gateways
  // One per connection (its generator is 5 KB; 10,000 would not be small):
  // reset by any answer on the connection, drawn by each rewind.
  std::unique_ptr<Backoff> backoff;
};

Fleet::Fleet(FleetOptions options) : options_(std::move(options)) {
  options_.metrics = std::clamp(options_.metrics, 1, static_cast<int>(ReferenceMetrics().size()));
  options_.connections = std::max(1, std::min(options_.connections, options_.gateways));
  Config defaults;
  if (options_.backoff_base_ms < 0) options_.backoff_base_ms = defaults.uplink_backoff_base_ms;
  if (options_.backoff_max_ms < 0) options_.backoff_max_ms = defaults.uplink_backoff_max_ms;
  std::mt19937_64 rng(std::random_device{}() | (uint64_t{std::random_device{}()} << 32));
  for (int c = 0; c < options_.connections; ++c) {
    connections_.push_back(std::make_unique<Connection>());
    connections_.back()->index = c;
    connections_.back()->backoff =
        std::make_unique<Backoff>(options_.backoff_base_ms, options_.backoff_max_ms, rng());
  }
  for (int i = 0; i < options_.gateways; ++i) {
    auto g = std::make_unique<Gateway>();
    g->index = i;
    g->id = GatewayId(i);
    g->origin = {g->id, RandomEpoch(&rng)};
    g->inbox = HubInboxTopic(options_.topic_prefix, options_.region, g->id);
    g->reply_to = ReplyTopic(options_.topic_prefix, g->id, "up");
    g->next_correlation = rng() | 1;  // never 0: the uplink's rule
    g->connection = connections_[static_cast<size_t>(i % options_.connections)].get();
    g->connection->gateways.push_back(g.get());
    gateways_.push_back(std::move(g));
  }
}

Fleet::~Fleet() { Stop(); }

std::string Fleet::GatewayId(int i) const {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%05d", i);
  return options_.gateway_prefix + buf;
}

Origin Fleet::OriginOf(int i) const { return gateways_[static_cast<size_t>(i)]->origin; }

Status Fleet::Start(int64_t connect_timeout_ms) {
  for (auto& c : connections_) {
    MqttLinkOptions lo;
    lo.uri = options_.uri;
    lo.client_id = options_.client_id_prefix + "-" + std::to_string(c->index);
    lo.credentials_file = options_.credentials_file;
    lo.clean_start = true;  // nothing to keep: a lost answer is resent after the timeout
    ES_RETURN_IF_ERROR(NewPahoMqttLink(lo, &c->link));
    c->link->SetMessageHandler([this](MqttMessage&& m) { OnMessage(std::move(m)); });
    if (options_.answers == FleetOptions::Answers::kHub && c->index == 0) {
      // Every answer comes in on the first connection: one filter instead
      // of one per gateway (a SUBACK each took ~40 ms on a loaded machine,
      // minutes for 10,000 gateways).
      ES_RETURN_IF_ERROR(c->link->Subscribe(ReplyTopic(options_.topic_prefix, "+", "up"), 1));
    }
    ES_RETURN_IF_ERROR(c->link->Start());  // connects in the background: all connections at once
  }
  for (auto& c : connections_) {
    if (!c->link->WaitConnected(connect_timeout_ms)) {
      return Status::Timeout("fleet connection " + std::to_string(c->index) + " to " + options_.uri);
    }
  }
  stop_ = false;
  for (auto& c : connections_) {
    Connection* conn = c.get();
    c->sender = std::thread([this, conn] { SendLoop(conn); });
  }
  return Status::Ok();
}

void Fleet::Stop() {
  stop_ = true;
  for (auto& c : connections_) {
    {
      std::lock_guard<std::mutex> lock(c->mu);
      c->cv.notify_all();
    }
    if (c->sender.joinable()) c->sender.join();
  }
  for (auto& c : connections_) {
    if (c->link) c->link->Disconnect(2000);
  }
}

FleetStats Fleet::stats() const {
  // Marks first, counters second: Answer() counts a mark's readings before
  // it lets go of the mark's lock, so every mark seen here is already in the
  // counters copied below (the other order could report a gateway done while
  // its last batch's readings were still uncounted).
  const uint64_t target = options_.batches_per_gateway * static_cast<uint64_t>(readings_per_batch());
  uint64_t done = 0, answered = 0;
  for (const auto& c : connections_) {
    std::lock_guard<std::mutex> lock(c->mu);
    for (const Gateway* g : c->gateways) {
      done += target != 0 && g->high_water >= target;
      answered += g->high_water > 0;
    }
  }
  FleetStats s;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    s = stats_;
  }
  s.gateways_done = static_cast<int>(done);
  s.gateways_answered = static_cast<int>(answered);
  return s;
}

bool Fleet::Quiesce(int64_t timeout_ms) {
  quiesce_ = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    bool idle = true;
    for (const auto& c : connections_) {
      std::lock_guard<std::mutex> lock(c->mu);
      for (const Gateway* g : c->gateways) idle = idle && g->inflight.empty();
    }
    if (idle) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool Fleet::done() const { return options_.batches_per_gateway > 0 && stats().gateways_done == options_.gateways; }

std::vector<double> Fleet::TakeLatencies() {
  std::lock_guard<std::mutex> lock(stats_mu_);
  std::vector<double> out;
  out.swap(latencies_);
  return out;
}

Status Fleet::BuildBatch(const Gateway& g, uint64_t tick, uint64_t base_lsn, WireBatch* out) const {
  const auto& models = ReferenceMetrics();
  const uint64_t per_batch = static_cast<uint64_t>(readings_per_batch());
  out->origin = g.origin;
  out->first_lsn = tick * per_batch + 1;
  out->last_lsn = (tick + 1) * per_batch;
  out->base_lsn = base_lsn;
  out->entries.clear();
  out->entries.reserve(per_batch);
  uint64_t lsn = out->first_lsn;
  for (int d = 0; d < options_.devices; ++d) {
    std::string device = g.id + "-dev" + std::to_string(d);
    for (int m = 0; m < options_.metrics; ++m) {
      const MetricModel& model = models[static_cast<size_t>(m)];
      // A slow daily-like swing around the model's typical value plus
      // sensor noise, quantised to its resolution: a function of (gateway,
      // device, metric, tick) only, so a resend carries the same readings.
      uint64_t key = Mix((static_cast<uint64_t>(g.index) << 20) ^ (static_cast<uint64_t>(d) << 8) ^
                         static_cast<uint64_t>(m));
      double phase = static_cast<double>(key % 6283) / 1000.0;
      double noise = static_cast<double>(Mix(key ^ tick) % 2001) / 1000.0 - 1.0;
      double v = model.start + model.step * 40 * std::sin(static_cast<double>(tick) / 600.0 + phase) +
                 model.step * noise;
      v = std::clamp(std::round(v / model.resolution) * model.resolution, model.min, model.max);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", v);  // as a sensor prints it: 21.4, not 21.400000000000002
      ChangeEntry e;
      e.lsn = lsn++;
      e.reading.device_id = device;
      e.reading.metric = model.name;
      e.reading.unit = model.unit;
      e.reading.value = std::strtod(buf, nullptr);
      // Devices sample within the tick, not all at the same millisecond.
      e.reading.ts_ms = options_.start_ms + static_cast<int64_t>(tick) * options_.period_ms +
                        (d * 7) % std::max<int64_t>(1, options_.period_ms / 10);
      out->entries.push_back(std::move(e));
    }
  }
  return Status::Ok();
}

void Fleet::SendLoop(Connection* c) {
  const bool paced = options_.batches_per_s > 0;
  const double rate = options_.batches_per_s / static_cast<double>(connections_.size());  // this connection's share
  const uint64_t per_batch = static_cast<uint64_t>(readings_per_batch());
  double tokens = 0;
  double last_refill = NowMs();
  double next_timeout_check = 0;
  struct Pending {
    Gateway* g;
    uint64_t tick, base, correlation;
  };
  std::vector<Pending> pending;
  WireBatch batch;
  std::string payload;
  while (!stop_) {
    double now = NowMs();
    pending.clear();
    {
      std::unique_lock<std::mutex> lock(c->mu);
      if (now >= next_timeout_check) {
        next_timeout_check = now + 100;
        for (Gateway* g : c->gateways) {
          if (!g->inflight.empty() && now - g->inflight.front().sent_ms > options_.ack_timeout_ms) {
            Rewind(g, now);
            std::lock_guard<std::mutex> s(stats_mu_);
            ++stats_.resends;
          }
        }
      }
      if (paced) {
        tokens = std::min(tokens + (now - last_refill) * rate / 1000.0, std::max(1.0, rate / 10));
        last_refill = now;
      }
      // Up to one batch per gateway per turn, round-robin, so no gateway
      // waits behind another's window.
      const size_t n = c->gateways.size();
      for (size_t k = 0; k < n && !quiesce_ && pending.size() < 256 && (!paced || tokens >= 1); ++k) {
        Gateway* g = c->gateways[c->cursor];
        c->cursor = (c->cursor + 1) % n;
        if (g->inflight.size() >= options_.window || now < g->resume_ms) continue;
        if (options_.batches_per_gateway > 0 && g->next_tick >= options_.batches_per_gateway) continue;
        uint64_t tick = g->next_tick++;
        uint64_t correlation = g->next_correlation++;
        if (correlation == 0) correlation = g->next_correlation++;
        g->inflight.push_back({correlation, (tick + 1) * per_batch, now});
        pending.push_back({g, tick, g->high_water, correlation});
        if (paced) tokens -= 1;
      }
      if (pending.empty()) {
        c->cv.wait_for(lock, std::chrono::milliseconds(paced ? 5 : 20));
        continue;
      }
    }
    for (const Pending& p : pending) {
      BuildBatch(*p.g, p.tick, p.base, &batch);
      EncodeOptions eo;
      eo.zstd_level = options_.zstd_level;
      Status st = EncodeBatch(p.g->reply_to, p.correlation, batch, eo, &payload);
      if (st.ok()) st = c->link->Publish(p.g->inbox, payload, 1, false, 5000);
      if (!st.ok()) {
        // The answer timeout resends it, as the uplink would.
        std::lock_guard<std::mutex> s(stats_mu_);
        ++stats_.publish_errors;
        continue;
      }
      std::lock_guard<std::mutex> s(stats_mu_);
      ++stats_.batches_sent;
    }
  }
}

void Fleet::Rewind(Gateway* g, double now_ms) {
  g->inflight.clear();
  g->resume_ms = now_ms + static_cast<double>(g->connection->backoff->Next());
  g->next_tick = g->high_water / static_cast<uint64_t>(readings_per_batch());
}

Fleet::Gateway* Fleet::Find(const std::string& gateway_id) {
  const std::string& prefix = options_.gateway_prefix;
  if (gateway_id.size() <= prefix.size() || gateway_id.compare(0, prefix.size(), prefix) != 0) return nullptr;
  char* end = nullptr;
  long i = std::strtol(gateway_id.c_str() + prefix.size(), &end, 10);
  if (*end != '\0' || i < 0 || i >= options_.gateways) return nullptr;
  Gateway* g = gateways_[static_cast<size_t>(i)].get();
  return g->id == gateway_id ? g : nullptr;
}

void Fleet::OnMessage(MqttMessage&& m) {
  WireMessage msg;
  Gateway* g = nullptr;
  bool valid = DecodeMessage(m.payload, {}, &msg, nullptr).ok() && msg.kind == WireKind::kAck &&
               msg.ack.region == options_.region && (g = Find(msg.ack.origin.gateway_id)) != nullptr &&
               msg.ack.origin == g->origin && m.topic == g->reply_to;
  if (!valid) {
    std::lock_guard<std::mutex> s(stats_mu_);
    ++stats_.acks_ignored;
    return;
  }
  Answer(g, msg.correlation_id, msg.ack.high_water, msg.ack.code == AckCode::kOk, NowMs());
}

void Fleet::Delivered(const std::string& gateway_id) {
  Gateway* g = Find(gateway_id);
  if (g == nullptr) return;
  uint64_t correlation = 0, last = 0;
  {
    std::lock_guard<std::mutex> lock(g->connection->mu);
    if (g->inflight.empty()) return;
    // One publisher connection per gateway, QoS 1: deliveries keep send order.
    correlation = g->inflight.front().correlation_id;
    last = g->inflight.front().last_lsn;
  }
  Answer(g, correlation, last, true, NowMs());
}

void Fleet::Answer(Gateway* g, uint64_t correlation_id, uint64_t high_water, bool ok, double now_ms) {
  Connection* c = g->connection;
  std::vector<double> lat;
  uint64_t batches = 0, readings = 0;
  bool ignored = false, refused = false;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    auto it = std::find_if(g->inflight.begin(), g->inflight.end(),
                           [&](const Gateway::InFlight& f) { return f.correlation_id == correlation_id; });
    if (correlation_id == 0 || it == g->inflight.end()) {
      ignored = true;  // stale (given up after a rewind), replayed or forged
    } else if (!ok) {
      // As the uplink: a refusal moves nothing; the resend from the mark
      // learns what the region holds.
      refused = true;
      Rewind(g, now_ms);
    } else {
      c->backoff->Reset();
      uint64_t mark = std::min(high_water, it->last_lsn);  // never past what was sent
      if (mark > g->high_water) {
        readings = mark - g->high_water;
        g->high_water = mark;
      }
      while (!g->inflight.empty() && g->inflight.front().last_lsn <= g->high_water) {
        lat.push_back(now_ms - g->inflight.front().sent_ms);
        g->inflight.pop_front();
        ++batches;
      }
      c->cv.notify_one();
    }
    // Counted while the mark is still held (lock order: connection, then
    // stats), so stats() never sees a mark whose readings are uncounted.
    std::lock_guard<std::mutex> s(stats_mu_);
    if (ignored) ++stats_.acks_ignored;
    if (refused) {
      ++stats_.refusals;
      ++stats_.resends;
    }
    stats_.batches_acked += batches;
    stats_.readings_acked += readings;
    latencies_.insert(latencies_.end(), lat.begin(), lat.end());
  }
}

FleetSink::FleetSink(std::string uri, const std::string& region, const std::string& topic_prefix, Fleet* fleet,
                     std::string credentials_file)
    : uri_(std::move(uri)),
      prefix_(topic_prefix),
      region_(region),
      credentials_file_(std::move(credentials_file)),
      fleet_(fleet) {}

FleetSink::~FleetSink() { Stop(); }

Status FleetSink::Start(int64_t timeout_ms) {
  MqttLinkOptions lo;
  lo.uri = uri_;
  lo.client_id = "es-fleet-sink";
  lo.credentials_file = credentials_file_;
  lo.clean_start = true;
  ES_RETURN_IF_ERROR(NewPahoMqttLink(lo, &link_));
  link_->SetMessageHandler([this](MqttMessage&& m) {
    ++received_;
    std::string sender;
    if (fleet_ != nullptr && InboxSender(prefix_, region_, m.topic, &sender)) fleet_->Delivered(sender);
  });
  ES_RETURN_IF_ERROR(link_->Subscribe(HubInboxAllFilter(prefix_, region_), 1));
  return link_->Connect(timeout_ms);
}

void FleetSink::Stop() {
  if (link_) link_->Disconnect(2000);
}

}  // namespace edgesync::test

// tests/tools/fleet.h: a fleet of simulated gateways for region tests and
// benchmarks: N gateways, each its own origin (gateway id + random store
// epoch), speaking the uplink's protocol (sync/PROTOCOL.md) to one region
// over a few shared MQTT connections.
//
// What is real: the batches (sync/wire.h's EncodeBatch, ColumnsV1 + zstd),
// the topics (HubInboxTopic / ReplyTopic), the MQTT client (MqttLink), the
// end-to-end acknowledgement rules (an answer counts only for a batch in
// flight with its correlation id, from our region, naming our origin, and
// moves the mark at most to that batch's last LSN), the per-gateway window,
// and the resend from the acknowledged mark after an answer timeout or a
// refusal, after a decorrelated-jitter delay. What is simulated: the store. A gateway's change log is a pure
// function of (gateway, LSN): each batch is one sampling tick of its devices
// x metrics (plausible values from tests/support/workload.h's sensor models,
// timestamps one period apart), so a resend regenerates the same entries and
// no per-gateway memory beyond the window is needed (10,000 gateways fit).
//
// Identity: every gateway publishes on its own inbox level, as a real one
// does, but several gateways share one MQTT connection, so a broker ACL that
// confines identity X to level X (firmware-config/region/edgesync.acl) would
// refuse them. Run the region broker without an ACL (benchmarks on
// loopback), or give the simulator one identity allowed to write
// <prefix>/region/<region>/in/# and read <prefix>/reply/+/up
// (tests/integration/fleet_test.cc does; docs/REGION.md).
//
// Sinks: with `answers = kDeliveries` no hub is involved: a FleetSink (a
// do-nothing subscriber of the region's inbox) reports each delivery and
// that stands in for the answer, so the same window, pacing and latency
// measurement run against the broker alone (the benchmarks' baseline).
//
// Thread safety: Start/Stop from one thread; stats(), TakeLatencies() and
// Delivered() from any thread. One sender thread per connection; answers
// (one wildcard subscription, <prefix>/reply/+/up, on the first connection)
// are handled on its MQTT receive thread.
#ifndef EDGESYNC_TESTS_TOOLS_FLEET_H_
#define EDGESYNC_TESTS_TOOLS_FLEET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "platform/status.h"
#include "sync/mqtt_link.h"
#include "sync/wire.h"

namespace edgesync::test {

struct FleetOptions {
  std::string uri;                      // the region broker
  std::string region = "eu";
  std::string topic_prefix = "edgesync";
  std::string credentials_file;         // "" = anonymous; else the simulator's identity
  std::string client_id_prefix = "es-fleet";
  int gateways = 200;
  int connections = 4;                  // gateways are spread round-robin over them
  std::string gateway_prefix = "sim-";  // gateway i is <prefix><i, 5 digits>
  int devices = 5;                      // per gateway
  int metrics = 4;                      // per device, of the reference sensor models (at most 8)
  int64_t period_ms = 1000;             // sampling period: one batch per tick
  int64_t start_ms = 1780000000000;     // the first tick's time
  size_t window = 4;                    // unanswered batches per gateway
  int64_t ack_timeout_ms = 10000;       // then resend from the acknowledged mark
  // A resend waits a decorrelated-jitter delay first (sync/backoff.h), as
  // the uplink does; defaults: the config's uplink.backoff_*_ms.
  int64_t backoff_base_ms = -1;
  int64_t backoff_max_ms = -1;
  // Batches each gateway sends before it is done (0 = until Stop).
  uint64_t batches_per_gateway = 0;
  // Offered load over the whole fleet (batches/s); 0 = as fast as answers
  // come (every gateway keeps its window full: a backlog drain).
  double batches_per_s = 0;
  enum class Answers { kHub, kDeliveries };
  Answers answers = Answers::kHub;
  int zstd_level = 3;                   // as the uplink's default
};

struct FleetStats {
  uint64_t batches_sent = 0;       // including resends
  uint64_t batches_acked = 0;      // answered Ok and advancing the mark
  uint64_t readings_acked = 0;     // readings under the marks
  uint64_t resends = 0;            // rewinds to the mark (timeout or refusal)
  uint64_t refusals = 0;           // answers other than Ok
  uint64_t acks_ignored = 0;       // answers matching no batch in flight
  uint64_t publish_errors = 0;
  int gateways_done = 0;           // reached batches_per_gateway, all answered
  int gateways_answered = 0;       // have had at least one batch acknowledged
};

class Fleet {
 public:
  explicit Fleet(FleetOptions options);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  // Connects every connection (subscribing each gateway's reply topic) and
  // starts sending.
  Status Start(int64_t connect_timeout_ms = 60000);
  void Stop();
  // Sends no new batches and waits until every batch in flight is answered
  // (false if some are not within timeout_ms), so what comes next starts
  // with the region idle.
  bool Quiesce(int64_t timeout_ms);
  FleetStats stats() const;
  // Answer latencies (ms, send to answer) since the last call.
  std::vector<double> TakeLatencies();
  bool done() const;

  // Gateway i's id and origin.
  std::string GatewayId(int i) const;
  Origin OriginOf(int i) const;
  int readings_per_batch() const { return options_.devices * options_.metrics; }
  // kDeliveries: one message from `gateway_id` reached the sink.
  void Delivered(const std::string& gateway_id);

 private:
  struct Gateway;
  struct Connection;
  void SendLoop(Connection* c);
  bool SendOne(Connection* c, Gateway* g, int64_t now_ms);
  void OnMessage(MqttMessage&& m);
  void Answer(Gateway* g, uint64_t correlation_id, uint64_t high_water, bool ok, double now_ms);
  void Rewind(Gateway* g, double now_ms);
  Status BuildBatch(const Gateway& g, uint64_t tick, uint64_t base_lsn, WireBatch* out) const;
  Gateway* Find(const std::string& gateway_id);

  FleetOptions options_;
  std::vector<std::unique_ptr<Gateway>> gateways_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> quiesce_{false};
  mutable std::mutex stats_mu_;
  FleetStats stats_;
  std::vector<double> latencies_;  // guarded by stats_mu_
};

// A do-nothing subscriber of the region's inbox (every gateway's messages):
// counts what arrives and tells the fleet (kDeliveries), nothing more. The
// broker's delivery rate to it is the baseline a hub is measured against.
class FleetSink {
 public:
  FleetSink(std::string uri, const std::string& region, const std::string& topic_prefix, Fleet* fleet,
            std::string credentials_file = "");
  ~FleetSink();
  Status Start(int64_t timeout_ms = 10000);
  void Stop();
  uint64_t received() const { return received_; }

 private:
  std::string uri_, prefix_, region_, credentials_file_;
  Fleet* fleet_;
  std::unique_ptr<MqttLink> link_;
  std::atomic<uint64_t> received_{0};
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_TOOLS_FLEET_H_

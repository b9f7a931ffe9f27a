// sync/mqtt_link.h: the one MQTT client wrapper of edgesync (ingest from the
// local broker, uplink to regions, region hub).
//
// MqttLink is the interface the rest of the code depends on, so tests can put
// a fake behind it; NewPahoMqttLink() is the real one (Paho MQTT C++). What it
// adds over Paho: a supervisor thread that connects and keeps reconnecting
// with decorrelated-jitter backoff (also when the very first connect fails,
// which Paho's automatic reconnect does not cover), the subscription list
// re-established after every reconnect, an in-flight window of our own for
// publishes (Paho's buffered-message cap, create_options(version, N), is set
// above it so Paho never fails a publish with -12), credentials read from a
// file and never logged, TCP_NODELAY on its connection (tcp_nodelay), and
// Status values instead of Paho exceptions.
//
// Thread safety: every method may be called from any thread. The message
// handler runs on Paho's receive thread, one message at a time; while it
// blocks no further message is read from the socket (back-pressure onto the
// broker). The PUBACK of a QoS 1 message goes out only after the handler
// returns (Paho C 1.3.12, measured; docs/INGEST.md), so a handler that
// returns once the message is durable loses nothing on kill -9. Handlers
// must not call Connect/Disconnect/Pause/Resume. Paho C 1.3.12 has one
// receive thread for every client of the process, so a handler that blocks
// also stops every other link's answers and reconnects: a consumer that
// cannot take more should Pause its link (from another thread) instead.
#ifndef EDGESYNC_SYNC_MQTT_LINK_H_
#define EDGESYNC_SYNC_MQTT_LINK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "platform/status.h"
#include "sync/sync_defaults.h"

namespace edgesync {

struct MqttLinkOptions {
  std::string uri;                 // tcp://host:port or ssl://host:port
  std::string client_id;
  std::string credentials_file;    // "user:password" on one line; "" = anonymous
  std::string ca_file;             // TLS: verify the server with this CA ("" = system CAs)
  std::string cert_file;           // TLS: client certificate (mutual TLS)
  std::string key_file;
  int mqtt_version = 4;            // 4 = MQTT 3.1.1, 5 = MQTT 5
  // Persistent session: the broker keeps our subscriptions and queues QoS 1
  // messages while we are away (clean start off).
  bool clean_start = false;
  int64_t session_expiry_s = mqtt_link_options::kSessionExpiryS;  // MQTT 5 only; 3.1.1 sessions never expire
  int keep_alive_s = 20;
  int64_t connect_timeout_ms = 5000;
  bool auto_reconnect = true;
  int64_t reconnect_min_ms = 100;
  int64_t reconnect_max_ms = 10000;
  // Our window of publishes not yet acknowledged by the broker.
  int max_inflight = 1000;
  // Sets TCP_NODELAY on the connection (Paho never does, and exposes no
  // socket; see SetTcpNoDelay in mqtt_link.cc). Without it Nagle's
  // algorithm, against the peer's delayed ACK, holds a small publish (a
  // partial batch, a hub's answer, a PUBACK) up to 40 ms per hop, several
  // times the online latency edgesync has with it (tests/bench/uplink_bench.cc,
  // docs/BENCHMARKS.md). Each edgesync publish is one write (a whole batch),
  // so Nagle saves no bytes here.
  bool tcp_nodelay = true;
};

struct MqttMessage {
  std::string topic;
  std::string payload;
  int qos = 0;
  bool retained = false;
  bool duplicate = false;
  // The MQTT packet identifier (0 for QoS 0): a redelivery keeps it.
  int packet_id = 0;
};

class MqttLink {
 public:
  using MessageHandler = std::function<void(MqttMessage&& message)>;
  // connected: true after every successful (re)connect; session_present tells
  // whether the broker still had our session. false on every loss, with why.
  using StateHandler = std::function<void(bool connected, bool session_present, const std::string& why)>;
  // Called once per publish: Ok when acknowledged (QoS 1/2) or written
  // (QoS 0), an error when Paho gave up on it.
  using PublishDone = std::function<void(const Status& status)>;

  virtual ~MqttLink() = default;

  // Set before Start/Connect.
  virtual void SetMessageHandler(MessageHandler handler) = 0;
  virtual void SetStateHandler(StateHandler handler) = 0;

  // Adds a filter to the subscription list; subscribes now when connected,
  // and again after every reconnect. Returns the SUBACK outcome when
  // connected (Rejected if the broker refused it), Ok when only recorded.
  virtual Status Subscribe(const std::string& filter, int qos) = 0;
  // Removes a filter from the list and unsubscribes now when connected (a
  // region hub giving up a shard). Ok for a filter never subscribed.
  virtual Status Unsubscribe(const std::string& filter) = 0;

  // Starts the supervisor: connects in the background and, with
  // auto_reconnect, keeps reconnecting until Disconnect.
  virtual Status Start() = 0;
  // Start, then waits up to timeout_ms for the first connection.
  virtual Status Connect(int64_t timeout_ms) = 0;
  virtual bool WaitConnected(int64_t timeout_ms) = 0;
  virtual bool connected() const = 0;
  // Stops reconnecting and disconnects cleanly (the session stays with the
  // broker unless clean_start).
  virtual Status Disconnect(int64_t timeout_ms) = 0;
  // Pause: disconnects cleanly (once connected) and stays away until
  // Resume, which reconnects and subscribes again. With a persistent
  // session (clean_start off) the broker keeps the subscriptions and queues
  // QoS 1 messages meanwhile: flow control that never blocks the receive
  // thread. Either may be called before Start; neither waits (the
  // supervisor thread disconnects and reconnects). A message whose handler
  // was running when the connection closed may lose its PUBACK and come
  // again with the DUP flag.
  virtual void Pause() = 0;
  virtual void Resume() = 0;
  virtual bool paused() const = 0;

  // Publishes; waits up to wait_ms while the in-flight window is full
  // (Timeout then). Unavailable while disconnected. `done` may be empty.
  virtual Status Publish(const std::string& topic, const std::string& payload, int qos, bool retained,
                         int64_t wait_ms, PublishDone done = nullptr) = 0;
  // Waits until no publish is in flight.
  virtual Status Flush(int64_t timeout_ms) = 0;
  virtual int inflight() const = 0;

  struct Counters {
    int64_t connects = 0;
    int64_t connection_losses = 0;
    int64_t pauses = 0;  // clean disconnects asked by Pause
    int64_t received = 0;
    int64_t published = 0;
    int64_t publish_failures = 0;
  };
  virtual Counters counters() const = 0;
};

// The bytes of the MQTT PUBLISH packet that carries payload_bytes to a
// topic of topic_bytes, as it goes on the wire: fixed header, remaining
// length (1 to 4 bytes), topic (with its 2-byte length), packet id (QoS 1
// and 2), property length (MQTT 5; MqttLink sends no properties), payload.
// What the uplink counts against uplink.max_bytes_per_s; TLS records and
// TCP/IP headers are not included.
size_t MqttPublishPacketBytes(size_t topic_bytes, size_t payload_bytes, int qos, int mqtt_version);

// Checks the options (URI scheme, version, client id, credentials file
// readable and well-formed) and creates the Paho client.
Status NewPahoMqttLink(const MqttLinkOptions& options, std::unique_ptr<MqttLink>* link);

// Reads "user:password" (one line; the password may contain ':'). The error
// names the file and the problem, never the content.
Status ReadCredentialsFile(const std::string& path, std::string* user, std::string* password);

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_MQTT_LINK_H_

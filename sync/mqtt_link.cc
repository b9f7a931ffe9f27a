#include "sync/mqtt_link.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <mqtt/async_client.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "platform/files.h"
#include "platform/log.h"
#include "platform/mutex.h"
#include "sync/backoff.h"
#include "sync/paho_packet_id.h"

namespace edgesync {

Status ReadCredentialsFile(const std::string& path, std::string* user, std::string* password) {
  std::string text;
  Status s = ReadFile(path, &text);
  if (!s.ok()) return Status::InvalidArgument("credentials file " + path + ": cannot read it");
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.find('\n') != std::string::npos) {
    return Status::InvalidArgument("credentials file " + path + ": expected one line user:password");
  }
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("credentials file " + path + ": expected user:password");
  }
  *user = text.substr(0, colon);
  *password = text.substr(colon + 1);
  return Status::Ok();
}

namespace {

using std::chrono::milliseconds;

// How often a subscribe waiting for its answer looks whether the link is
// being disconnected.
constexpr int64_t kSubscribeSliceMs = 100;

Status FromPaho(const std::string& what, const mqtt::exception& e) {
  int rc = e.get_reason_code();
  std::string text = what + ": " + e.what();
  // Negative return codes are the client's own (not connected, buffer full,
  // bad argument); positive ones come from the broker's reply.
  if (rc == MQTTASYNC_DISCONNECTED || rc == MQTTASYNC_FAILURE) return Status::Unavailable(text);
  if (rc == MQTTASYNC_MAX_BUFFERED_MESSAGES) return Status::Rejected(text);
  if (rc == MQTTASYNC_BAD_UTF8_STRING || rc == MQTTASYNC_NULL_PARAMETER || rc == MQTTASYNC_BAD_STRUCTURE ||
      rc == MQTTASYNC_BAD_QOS || rc == MQTTASYNC_BAD_MQTT_OPTION) {
    return Status::InvalidArgument(text);
  }
  return Status::Unavailable(text);
}

// The port of a tcp://host:port (or ssl://, mqtt://, mqtts://) URI; without
// one, MQTT's (1883, 8883 with TLS) as Paho uses; 0 if malformed.
int UriPort(const std::string& uri) {
  size_t scheme = uri.find("://");
  size_t colon = uri.rfind(':');
  if (scheme == std::string::npos || colon == scheme || uri.back() == ']') {
    return uri.rfind("ssl", 0) == 0 || uri.rfind("mqtts", 0) == 0 ? 8883 : 1883;
  }
  if (colon + 1 >= uri.size()) return 0;
  int port = 0;
  for (size_t i = colon + 1; i < uri.size() && uri[i] != '/'; ++i) {
    if (uri[i] < '0' || uri[i] > '9') return 0;
    port = port * 10 + (uri[i] - '0');
    if (port > 65535) return 0;
  }
  return port;
}

// Sets TCP_NODELAY on this process's TCP connections to `port`. Paho C
// 1.3.12 creates its socket inside MQTTAsync and exposes neither the socket
// nor a hook before connect, so the socket is found by its peer among our
// open descriptors once the connection is up. Other edgesync links to the
// same port get the same option they set themselves; a descriptor closed
// and reused meanwhile gets at most a harmless option (or ENOTSOCK).
//
// Other threads own most of these descriptors and may close them while we
// look (ThreadSanitizer: fstat here raced with Paho's receive thread closing
// another client's socket). So a descriptor is first told apart by its
// /proc/self/fd link ("socket:[inode]"), which reads the process's table
// without using the descriptor; only sockets get the calls below, each of
// which copes with the descriptor having gone (EBADF, ENOTSOCK) or been
// reused (the type and peer port are checked just before the option).
// Returns how many sockets it set.
int SetTcpNoDelay(int port) {
  if (port <= 0) return 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int set = 0;
  while (dirent* d = readdir(dir)) {
    if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
    int fd = std::atoi(d->d_name);
    if (fd == dirfd(dir)) continue;
    char target[64];
    std::string link = std::string("/proc/self/fd/") + d->d_name;
    ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strncmp(target, "socket:", 7) != 0) continue;
    int type = 0;
    socklen_t type_len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    int peer_port = 0;
    if (peer.ss_family == AF_INET) {
      peer_port = ntohs(reinterpret_cast<sockaddr_in*>(&peer)->sin_port);
    } else if (peer.ss_family == AF_INET6) {
      peer_port = ntohs(reinterpret_cast<sockaddr_in6*>(&peer)->sin6_port);
    } else {
      continue;
    }
    if (peer_port != port) continue;
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) == 0) ++set;
  }
  closedir(dir);
  return set;
}

struct PendingPublish {
  MqttLink::PublishDone done;
};

class PahoMqttLink : public MqttLink, public virtual mqtt::iaction_listener {
 public:
  PahoMqttLink(MqttLinkOptions options, std::string user, std::string password)
      : options_(std::move(options)),
        user_(std::move(user)),
        password_(std::move(password)),
        backoff_(options_.reconnect_min_ms, options_.reconnect_max_ms) {}

  ~PahoMqttLink() override {
    Disconnect(2000);
    // The options go first, while our client still keeps Paho C initialized
    // (see Init).
    connect_options_.reset();
    // Destroying the client joins Paho's threads: after that no listener
    // runs, and whatever never completed is reported as failed.
    client_.reset();
    FailPending("mqtt link closed before the publish completed");
  }

  // The client first, then the options. Paho C keeps a table of its own
  // allocations and empties it (without freeing) whenever the process's
  // first client is created; it frees only blocks it finds in the table.
  // The MQTT 5 CONNECT properties are Paho C memory: made before our client
  // existed, they were dropped from the table by its creation and never
  // freed (LeakSanitizer: 471 bytes, the property array and its table
  // record, per link; paho.mqtt.c issues 914 and 1378, where upstream's
  // answer is to create a client before adding properties). So the options
  // live strictly inside the client's lifetime; ResetClient makes the new
  // client before it drops the old one, so that holds across it too.
  Status Init() {
    std::unique_ptr<mqtt::async_client> client;
    ES_RETURN_IF_ERROR(NewClient(&client));
    {
      MutexLock lock(&client_mu_);
      client_ = std::move(client);
    }
    connect_options_ = std::make_unique<mqtt::connect_options>();
    BuildConnectOptions(connect_options_.get());
    return Status::Ok();
  }

  Status NewClient(std::unique_ptr<mqtt::async_client>* client) {
    try {
      int buffered = options_.max_inflight + 1000;
      int version = options_.mqtt_version == 5 ? MQTTVERSION_5 : MQTTVERSION_3_1_1;
      *client = std::make_unique<mqtt::async_client>(options_.uri, options_.client_id,
                                                     mqtt::create_options(version, buffered));
    } catch (const mqtt::exception& e) {
      return FromPaho("mqtt client for " + options_.uri, e).Annotate("creating");
    }
    (*client)->set_message_callback([this](mqtt::const_message_ptr m) { OnMessage(m); });
    (*client)->set_connection_lost_handler([this](const std::string& cause) { OnLost(cause); });
    return Status::Ok();
  }

  // Replaces the Paho client with a fresh one. A connect whose token never
  // completes (seen after a hung broker came back: the broker logged the
  // connection, Paho never reported it, and later connects never left the
  // client) leaves no way out but a new client object. Publishes still
  // pending on the old one are reported failed; their senders resend (the
  // uplink from its checkpoint).
  void ResetClient(const std::string& why) {
    std::unique_ptr<mqtt::async_client> fresh;
    if (!NewClient(&fresh).ok()) return;
    std::unique_ptr<mqtt::async_client> old;
    {
      MutexLock lock(&client_mu_);
      old = std::move(client_);
      client_ = std::move(fresh);
      // Calls that took the old client finish with it first. New ones get
      // the fresh client; few come meanwhile, as the link is down.
      lock.Wait(&client_cv_, [this]() REQUIRES(client_mu_) { return client_users_ == 0; });
    }
    old.reset();  // joins the old client's threads: no completion of it runs after this
    FailPending("mqtt client of " + options_.uri + " replaced before the publish completed");
    ES_LOG(kWarn, "mqtt {}: {}; replaced the client", options_.uri, why);
  }

  void SetMessageHandler(MessageHandler handler) override { message_handler_ = std::move(handler); }
  void SetStateHandler(StateHandler handler) override { state_handler_ = std::move(handler); }

  Status Subscribe(const std::string& filter, int qos) override {
    {
      MutexLock lock(&mu_);
      bool known = false;
      for (auto& s : subscriptions_) {
        if (s.first == filter) {
          s.second = qos;
          known = true;
        }
      }
      if (!known) subscriptions_.emplace_back(filter, qos);
    }
    if (!connected()) return Status::Ok();
    return SubscribeNow(filter, qos);
  }

  Status Unsubscribe(const std::string& filter) override {
    {
      MutexLock lock(&mu_);
      subscriptions_.erase(std::remove_if(subscriptions_.begin(), subscriptions_.end(),
                                          [&](const auto& s) { return s.first == filter; }),
                           subscriptions_.end());
    }
    if (!connected()) return Status::Ok();
    try {
      ClientUse client(this);
      auto tok = client->unsubscribe(filter);
      if (!tok->wait_for(milliseconds(options_.connect_timeout_ms + 5000))) {
        return Status::Timeout("unsubscribing from " + filter);
      }
      return Status::Ok();
    } catch (const mqtt::exception& e) {
      return FromPaho("unsubscribing from " + filter, e);
    }
  }

  Status Start() override {
    MutexLock run(&run_mu_);
    if (supervisor_.joinable()) return Status::Ok();
    {
      MutexLock lock(&mu_);
      stopping_ = false;
    }
    supervisor_ = std::thread([this] { Supervise(); });
    return Status::Ok();
  }

  Status Connect(int64_t timeout_ms) override {
    ES_RETURN_IF_ERROR(Start());
    if (WaitConnected(timeout_ms)) return Status::Ok();
    MutexLock lock(&mu_);
    return Status::Unavailable("cannot connect to " + options_.uri + ": " +
                               (last_error_.empty() ? std::string("timed out") : last_error_));
  }

  bool WaitConnected(int64_t timeout_ms) override {
    MutexLock lock(&mu_);
    return lock.WaitFor(&cv_, milliseconds(timeout_ms),
                        [this]() REQUIRES(mu_) { return connected_.load() || stopping_; }) &&
           connected_.load();
  }

  bool connected() const override { return connected_.load(); }

  Status Disconnect(int64_t timeout_ms) override {
    MutexLock run(&run_mu_);
    {
      MutexLock lock(&mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (supervisor_.joinable()) supervisor_.join();
    Status result;
    if (connected_.load()) {
      try {
        ClientUse client(this);
        if (client) client->disconnect(timeout_ms / 2)->wait_for(milliseconds(timeout_ms));
      } catch (const mqtt::exception& e) {
        result = FromPaho("disconnecting from " + options_.uri, e);
      }
      connected_ = false;
    }
    return result;
  }

  void Pause() override {
    {
      MutexLock lock(&mu_);
      paused_ = true;
    }
    cv_.notify_all();
  }

  void Resume() override {
    {
      MutexLock lock(&mu_);
      paused_ = false;
    }
    cv_.notify_all();
  }

  bool paused() const override {
    MutexLock lock(&mu_);
    return paused_;
  }

  Status Publish(const std::string& topic, const std::string& payload, int qos, bool retained, int64_t wait_ms,
                 PublishDone done) override {
    if (!connected_.load()) return Status::Unavailable("not connected to " + options_.uri);
    auto* pending = new PendingPublish{std::move(done)};
    {
      MutexLock lock(&window_mu_);
      if (!lock.WaitFor(&window_cv_, milliseconds(wait_ms),
                        [this]() REQUIRES(window_mu_) { return inflight_ < options_.max_inflight; })) {
        delete pending;
        return Status::Timeout("publish window full (" + std::to_string(options_.max_inflight) + " in flight)");
      }
      ++inflight_;
      pending_.insert(pending);
    }
    try {
      ClientUse client(this);
      client->publish(topic, payload.data(), payload.size(), qos, retained, pending, *this);
      return Status::Ok();
    } catch (const mqtt::exception& e) {
      if (Claim(pending)) {  // the listener never saw it
        delete pending;
        FreeSlot();
      }
      counters_publish_failures_++;
      return FromPaho("publishing to " + topic, e);
    }
  }

  Status Flush(int64_t timeout_ms) override {
    MutexLock lock(&window_mu_);
    if (lock.WaitFor(&window_cv_, milliseconds(timeout_ms), [this]() REQUIRES(window_mu_) { return inflight_ == 0; })) {
      return Status::Ok();
    }
    return Status::Timeout(std::to_string(inflight_) + " publishes still in flight");
  }

  int inflight() const override {
    MutexLock lock(&window_mu_);
    return inflight_;
  }

  Counters counters() const override {
    Counters c;
    c.connects = counters_connects_.load();
    c.connection_losses = counters_losses_.load();
    c.pauses = counters_pauses_.load();
    c.received = counters_received_.load();
    c.published = counters_published_.load();
    c.publish_failures = counters_publish_failures_.load();
    return c;
  }

  // mqtt::iaction_listener: completion of publishes (context = PendingPublish).
  void on_success(const mqtt::token& tok) override { Complete(tok, Status::Ok()); }
  void on_failure(const mqtt::token& tok) override {
    Complete(tok, Status::Unavailable("publish failed (Paho code " + std::to_string(tok.get_return_code()) + ")"));
  }

 private:
  // One call's use of the current client (see client_users_).
  class ClientUse {
   public:
    explicit ClientUse(PahoMqttLink* link) : link_(link) {
      MutexLock lock(&link_->client_mu_);
      ++link_->client_users_;
      client_ = link_->client_.get();
    }
    ~ClientUse() {
      {
        MutexLock lock(&link_->client_mu_);
        --link_->client_users_;
      }
      link_->client_cv_.notify_all();
    }
    ClientUse(const ClientUse&) = delete;
    ClientUse& operator=(const ClientUse&) = delete;
    mqtt::async_client* operator->() const { return client_; }
    explicit operator bool() const { return client_ != nullptr; }

   private:
    PahoMqttLink* link_;
    mqtt::async_client* client_;
  };

  // Claims pending for completion; false if someone else already did.
  bool Claim(PendingPublish* pending) {
    MutexLock lock(&window_mu_);
    return pending_.erase(pending) == 1;
  }

  // Reports every publish still pending as failed once the client that
  // carried them is gone, so their senders know to resend.
  void FailPending(const std::string& why) {
    std::vector<PendingPublish*> left;
    {
      MutexLock lock(&window_mu_);
      left.assign(pending_.begin(), pending_.end());
      pending_.clear();
    }
    for (PendingPublish* p : left) {
      counters_publish_failures_++;
      if (p->done) p->done(Status::Unavailable(why));
      delete p;
      FreeSlot();
    }
  }

  // Frees the window slot only after `done` ran, so Flush() returning means
  // every completion has been seen.
  void FreeSlot() {
    {
      MutexLock lock(&window_mu_);
      --inflight_;
    }
    window_cv_.notify_all();
  }

  void Complete(const mqtt::token& tok, const Status& status) {
    auto* pending = static_cast<PendingPublish*>(tok.get_user_context());
    if (pending == nullptr || !Claim(pending)) return;
    if (status.ok()) {
      counters_published_++;
    } else {
      counters_publish_failures_++;
    }
    if (pending->done) pending->done(status);
    delete pending;
    FreeSlot();
  }

  void OnMessage(const mqtt::const_message_ptr& m) {
    counters_received_++;
    if (!message_handler_) return;
    MqttMessage msg;
    msg.topic = m->get_topic();
    msg.payload = m->get_payload_str();
    msg.qos = m->get_qos();
    msg.retained = m->is_retained();
    msg.duplicate = m->is_duplicate();
    msg.packet_id = PahoPacketId(*m);
    message_handler_(std::move(msg));
  }

  void OnLost(const std::string& cause) {
    {
      MutexLock lock(&mu_);
      connected_ = false;
      last_error_ = cause.empty() ? "connection lost" : cause;
    }
    counters_losses_++;
    ES_LOG(kWarn, "mqtt {}: connection lost: {}", options_.uri, cause.empty() ? "no reason given" : cause);
    if (state_handler_) state_handler_(false, false, cause);
    cv_.notify_all();
  }

  void BuildConnectOptions(mqtt::connect_options* out) const {
    auto b = mqtt::connect_options_builder()
                 .keep_alive_interval(std::chrono::seconds(options_.keep_alive_s))
                 .connect_timeout(milliseconds(options_.connect_timeout_ms))
                 .max_inflight(options_.max_inflight)
                 .automatic_reconnect(false);
    if (options_.mqtt_version == 5) {
      b.mqtt_version(MQTTVERSION_5).clean_start(options_.clean_start);
    } else {
      b.mqtt_version(MQTTVERSION_3_1_1).clean_session(options_.clean_start);
    }
    if (!user_.empty()) b.user_name(user_).password(password_);
    if (tls_) {
      auto ssl = mqtt::ssl_options_builder().enable_server_cert_auth(true).verify(true);
      if (!options_.ca_file.empty()) ssl.trust_store(options_.ca_file);
      if (!options_.cert_file.empty()) ssl.key_store(options_.cert_file);
      if (!options_.key_file.empty()) ssl.private_key(options_.key_file);
      // No ssl error_handler: Paho C++ 1.2.0's async_client::connect takes
      // the options by value and hands Paho C a pointer to that copy's
      // ssl_options as the callback context; the handshake fails later on
      // Paho's thread, after the copy is gone, and the callback read freed
      // stack (AddressSanitizer: stack-use-after-scope; paho.mqtt.cpp issue
      // 325, fixed in 1.3.0 by caching the options in the client). Nothing
      // we keep can fix that pointer, so a TLS failure is reported from the
      // connect failure instead (TryConnect).
      b.ssl(ssl.finalize());
    }
    mqtt::connect_options& opts = *out;
    opts = b.finalize();
    // Paho C++ 1.2.0 loses CONNECT properties set through the builder (its
    // copy leaves a dangling pointer: paho.mqtt.cpp issues 362/444), which
    // silently turned the persistent session into one that expires at once.
    // Setting them on the final object, then copying it, works.
    if (options_.mqtt_version == 5 && !options_.clean_start && options_.session_expiry_s > 0) {
      opts.set_properties(
          mqtt::properties{{mqtt::property::SESSION_EXPIRY_INTERVAL, static_cast<int>(options_.session_expiry_s)}});
    }
  }

  // One connect attempt; on success re-establishes every subscription.
  bool TryConnect() {
    bool session_present = false;
    try {
      ClientUse client(this);
      auto tok = client->connect(*connect_options_);
      if (!tok->wait_for(milliseconds(options_.connect_timeout_ms + 2000))) {
        MutexLock lock(&mu_);
        last_error_ = "connect timed out";
        client_stale_ = "a connect never completed";
        return false;
      }
      session_present = tok->get_connect_response().is_session_present();
    } catch (const mqtt::exception& e) {
      MutexLock lock(&mu_);
      last_error_ = e.what();
      // Paho says only "TCP/TLS connect failure" (refused, unreachable or a
      // failed handshake alike); name what to check on a TLS link.
      if (tls_ && e.get_return_code() == MQTTASYNC_FAILURE) last_error_ += kTlsHint;
      return false;
    }
    std::vector<std::pair<std::string, int>> subs;
    {
      MutexLock lock(&mu_);
      subs = subscriptions_;
      connected_ = true;
    }
    counters_connects_++;
    if (options_.tcp_nodelay && SetTcpNoDelay(UriPort(options_.uri)) == 0) {
      ES_LOG(kWarn, "mqtt {}: could not set TCP_NODELAY (small publishes may wait up to 40 ms)", options_.uri);
    }
    // Subscribing again even when the broker kept the session covers a
    // broker that lost its state (restart without persistence).
    bool answered = true;
    for (const auto& s : subs) {
      Status st = SubscribeNow(s.first, s.second);
      if (!st.ok()) ES_LOG(kError, "mqtt {}: {}", options_.uri, st.ToString());
      if (st.code() == Status::Code::kTimeout) answered = false;
    }
    if (!answered) {
      // A connection whose broker never answers a subscribe is of no use.
      // Seen on a resumed session after a link had swallowed bytes: the
      // broker dropped every connection at once as malformed, and each
      // reconnect of the same client resent what it still had in flight, so
      // the link never came back. The next connect uses a fresh client,
      // which has nothing in flight (senders learn their publishes failed
      // and resend: the uplink from its checkpoint).
      MutexLock lock(&mu_);
      client_stale_ = "the broker did not answer a subscribe";
    }
    ES_LOG(kInfo, "mqtt {}: connected as {} (session {})", options_.uri, options_.client_id,
           session_present ? "resumed" : "new");
    if (state_handler_) state_handler_(true, session_present, "");
    cv_.notify_all();
    return true;
  }

  // Waits for the broker's answer in slices: a subscribe the broker will
  // never answer because Disconnect closed the connection under it gives up
  // at once, so a stop (a hub taking shards as it is told to stop) never
  // waits out the whole timeout.
  Status SubscribeNow(const std::string& filter, int qos) EXCLUDES(mu_) {
    try {
      ClientUse client(this);
      auto tok = client->subscribe(filter, qos);
      const auto deadline = std::chrono::steady_clock::now() + milliseconds(options_.connect_timeout_ms + 5000);
      while (!tok->wait_for(milliseconds(kSubscribeSliceMs))) {
        {
          MutexLock lock(&mu_);
          if (stopping_) {
            return Status::Unavailable("disconnecting from " + options_.uri + " while subscribing to " + filter);
          }
        }
        if (std::chrono::steady_clock::now() >= deadline) return Status::Timeout("subscribing to " + filter);
      }
      mqtt::subscribe_response response = tok->get_subscribe_response();
      for (auto rc : response.get_reason_codes()) {
        if (static_cast<int>(rc) >= 0x80) {
          return Status::Rejected("broker refused subscription " + filter + " (code " +
                                  std::to_string(static_cast<int>(rc)) + ")");
        }
      }
      return Status::Ok();
    } catch (const mqtt::exception& e) {
      return FromPaho("subscribing to " + filter, e);
    }
  }

  // Supervisor thread, paused_ set: a clean DISCONNECT (the broker keeps a
  // persistent session and queues for it). Called with mu_ released.
  void DisconnectForPause() {
    try {
      ClientUse client(this);
      client->disconnect(options_.connect_timeout_ms / 2)->wait_for(milliseconds(options_.connect_timeout_ms + 2000));
    } catch (const mqtt::exception& e) {
      ES_LOG(kWarn, "mqtt {}: disconnecting to pause: {}", options_.uri, e.what());
    }
    connected_ = false;
    counters_pauses_++;
    ES_LOG(kInfo, "mqtt {}: paused (disconnected; the broker keeps the session)", options_.uri);
    if (state_handler_) state_handler_(false, false, "paused");
    cv_.notify_all();
  }

  void Supervise() {
    bool ever_connected = false;
    int64_t failures = 0;
    MutexLock lock(&mu_);
    while (!stopping_) {
      if (paused_) {
        if (connected_.load()) {
          lock.Unlock();
          DisconnectForPause();
          lock.Lock();
          continue;
        }
        lock.Wait(&cv_, [this]() REQUIRES(mu_) { return stopping_ || !paused_; });
        continue;
      }
      if (connected_.load()) {
        lock.Wait(&cv_, [this]() REQUIRES(mu_) { return stopping_ || paused_ || !connected_.load(); });
        continue;
      }
      if (ever_connected && !options_.auto_reconnect) break;
      bool stale = !client_stale_.empty();
      std::string why = std::move(client_stale_);
      client_stale_.clear();
      lock.Unlock();
      if (stale) ResetClient(why);
      bool ok = TryConnect();
      lock.Lock();
      if (ok) {
        ever_connected = true;
        failures = 0;
        backoff_.Reset();
        continue;
      }
      // Logging every failure would flood the journal during a long outage.
      if (++failures == 1 || failures % 30 == 0) {
        ES_LOG(kWarn, "mqtt {}: cannot connect ({} attempts): {}", options_.uri, failures, last_error_);
      } else {
        ES_LOG(kDebug, "mqtt {}: cannot connect ({} attempts): {}", options_.uri, failures, last_error_);
      }
      lock.WaitFor(&cv_, milliseconds(backoff_.Next()), [this]() REQUIRES(mu_) { return stopping_ || paused_; });
    }
  }

  static constexpr char kTlsHint[] =
      " (if the broker is up: is its certificate signed by ca_file and within its validity dates, and does it "
      "require a client certificate?)";

  const MqttLinkOptions options_;
  const bool tls_ = options_.uri.rfind("ssl://", 0) == 0 || options_.uri.rfind("mqtts://", 0) == 0;
  const std::string user_;
  const std::string password_;
  // client_ is used (Publish, Subscribe, connects) through a ClientUse,
  // which counts the call in client_users_ so ResetClient destroys a client
  // only once no call uses it. No lock of ours is held while Paho runs: a
  // shared lock held across the Paho call was, for ThreadSanitizer, a
  // lock-order inversion with Paho C's own mutex, which Paho holds while it
  // runs our message handler, and the region hub's handler publishes (it
  // answers probes on the receive thread).
  Mutex client_mu_;
  std::condition_variable client_cv_;
  std::unique_ptr<mqtt::async_client> client_ GUARDED_BY(client_mu_);
  int client_users_ GUARDED_BY(client_mu_) = 0;
  // Built once in Init, never moved (see BuildConnectOptions), released
  // before client_ (see Init); read-only in between.
  std::unique_ptr<mqtt::connect_options> connect_options_;
  // Set before Start (mqtt_link.h), read-only once Paho runs.
  MessageHandler message_handler_;
  StateHandler state_handler_;

  // Start and Disconnect, one at a time: the supervisor is started and
  // joined under it (never held by the supervisor or a handler).
  Mutex run_mu_ ACQUIRED_BEFORE(mu_, client_mu_);
  std::thread supervisor_ GUARDED_BY(run_mu_);

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, int>> subscriptions_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  bool paused_ GUARDED_BY(mu_) = false;
  std::string last_error_ GUARDED_BY(mu_);
  // Why the next connect needs a fresh client ("" = it does not): a
  // connect never completed, or a subscribe was never answered.
  std::string client_stale_ GUARDED_BY(mu_);
  Backoff backoff_ GUARDED_BY(mu_);
  std::atomic<bool> connected_{false};

  mutable Mutex window_mu_;
  std::condition_variable window_cv_;
  int inflight_ GUARDED_BY(window_mu_) = 0;
  std::unordered_set<PendingPublish*> pending_ GUARDED_BY(window_mu_);

  std::atomic<int64_t> counters_connects_{0}, counters_losses_{0}, counters_received_{0}, counters_published_{0},
      counters_publish_failures_{0}, counters_pauses_{0};
};

}  // namespace

size_t MqttPublishPacketBytes(size_t topic_bytes, size_t payload_bytes, int qos, int mqtt_version) {
  // MQTT 3.1.1 section 2.2.3, MQTT 5 sections 2.1.4 and 3.3.2.
  size_t remaining = 2 + topic_bytes + (qos > 0 ? 2 : 0) + payload_bytes;
  if (mqtt_version == 5) remaining += 1;  // property length 0
  size_t length_bytes = 1;
  for (size_t n = remaining; n >= 128; n /= 128) ++length_bytes;
  return 1 + length_bytes + remaining;
}

Status NewPahoMqttLink(const MqttLinkOptions& options, std::unique_ptr<MqttLink>* link) {
  const std::string& uri = options.uri;
  if (uri.rfind("tcp://", 0) != 0 && uri.rfind("ssl://", 0) != 0 && uri.rfind("mqtt://", 0) != 0 &&
      uri.rfind("mqtts://", 0) != 0) {
    return Status::InvalidArgument("mqtt uri " + uri + ": expected tcp://host:port or ssl://host:port");
  }
  if (options.mqtt_version != 4 && options.mqtt_version != 5) {
    return Status::InvalidArgument("mqtt version " + std::to_string(options.mqtt_version) + ": expected 4 or 5");
  }
  if (options.client_id.empty()) return Status::InvalidArgument("mqtt client id is empty");
  if (options.max_inflight < 1) return Status::InvalidArgument("mqtt max_inflight must be at least 1");
  std::string user, password;
  if (!options.credentials_file.empty()) {
    ES_RETURN_IF_ERROR(ReadCredentialsFile(options.credentials_file, &user, &password));
  }
  for (const std::string* f : {&options.ca_file, &options.cert_file, &options.key_file}) {
    if (!f->empty() && !FileExists(*f)) return Status::InvalidArgument("TLS file " + *f + " does not exist");
  }
  auto paho = std::make_unique<PahoMqttLink>(options, std::move(user), std::move(password));
  ES_RETURN_IF_ERROR(paho->Init());
  *link = std::move(paho);
  return Status::Ok();
}

}  // namespace edgesync

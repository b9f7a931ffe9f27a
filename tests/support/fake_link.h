// tests/support/fake_link.h: an MqttLink without a broker for unit tests
// of the sync classes: every publish goes to a responder function, which can
// answer at once through the message handler (as a hub would) or not at all
// (a hub that never answers, while the broker still acknowledged).
#ifndef EDGESYNC_TESTS_SUPPORT_FAKE_LINK_H_
#define EDGESYNC_TESTS_SUPPORT_FAKE_LINK_H_

#include <atomic>
#include <functional>
#include <string>

#include "sync/mqtt_link.h"

namespace edgesync {

// A link whose publishes go to `responder`, which may answer through the
// message handler at once.
class FakeLink : public MqttLink {
 public:
  using Responder = std::function<void(const std::string& topic, const std::string& payload, FakeLink* link)>;
  explicit FakeLink(Responder responder) : responder_(std::move(responder)) {}
  void SetMessageHandler(MessageHandler h) override { on_message_ = std::move(h); }
  void SetStateHandler(StateHandler h) override { on_state_ = std::move(h); }
  Status Subscribe(const std::string&, int) override { return Status::Ok(); }
  Status Unsubscribe(const std::string&) override { return Status::Ok(); }
  Status Start() override {
    connected_ = true;
    if (on_state_) on_state_(true, false, "");
    return Status::Ok();
  }
  Status Connect(int64_t) override { return Start(); }
  bool WaitConnected(int64_t) override { return connected_; }
  bool connected() const override { return connected_; }
  Status Disconnect(int64_t) override {
    connected_ = false;
    return Status::Ok();
  }
  void Pause() override { paused_ = true; }
  void Resume() override { paused_ = false; }
  bool paused() const override { return paused_; }
  Status Publish(const std::string& topic, const std::string& payload, int qos, bool, int64_t,
                 PublishDone done) override {
    if (stalled_ && qos > 0) {
      // A link whose bytes no longer reach the broker (a blackholed TCP
      // connection): the publish stays in the session, unacknowledged.
      ++pending_;
      return Status::Ok();
    }
    responder_(topic, payload, this);
    if (done) done(Status::Ok());
    return Status::Ok();
  }
  Status Flush(int64_t) override { return Status::Ok(); }
  int inflight() const override { return pending_; }
  // Stalled: QoS 1 publishes stay pending (inflight() counts them) and reach
  // nobody; unstalled again, the ones pending are dropped uncounted.
  void SetStalled(bool stalled) {
    stalled_ = stalled;
    if (!stalled) pending_ = 0;
  }
  Counters counters() const override { return {}; }
  void Deliver(const std::string& payload) { DeliverOn("", payload); }
  // A message on `topic`, as the broker hands over what the link subscribed to.
  void DeliverOn(const std::string& topic, const std::string& payload) {
    MqttMessage m;
    m.topic = topic;
    m.payload = payload;
    on_message_(std::move(m));
  }

 private:
  Responder responder_;
  MessageHandler on_message_;
  StateHandler on_state_;
  std::atomic<bool> connected_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> stalled_{false};
  std::atomic<int> pending_{0};
};

}  // namespace edgesync

#endif  // EDGESYNC_TESTS_SUPPORT_FAKE_LINK_H_

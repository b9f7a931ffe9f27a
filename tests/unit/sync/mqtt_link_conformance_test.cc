// The MqttLink contract (sync/mqtt_link.h) run against both implementations,
// each on a real Mosquitto (tests/support/broker.h): the Paho link
// (NewPahoMqttLink) and a view of a pooled connection (MqttLinkPool over the
// Paho link, sync/mqtt_link_pool.h). Connecting, subscribing and receiving,
// QoS 1 publishes completing with the window emptied, Pause and Resume,
// Disconnect, the state handler on connect and on a killed broker, and the
// counters. What only one of them does (the window's bound, persistent
// sessions, TLS, credentials, views sharing a connection) is
// tests/unit/sync/mqtt_link_test.cc's and mqtt_link_pool_test.cc's.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sync/mqtt_link.h"
#include "sync/mqtt_link_pool.h"
#include "tests/support/broker.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

using test::Broker;
using test::BrokerOptions;
using test::TempDir;
using test::TestMqttClient;
using test::WaitFor;

// What a link's handlers saw, from Paho's receive thread.
struct Seen {
  std::mutex mu;
  std::vector<MqttMessage> messages;
  struct State {
    bool up;
    bool session_present;
    std::string why;
  };
  std::vector<State> states;

  void Attach(MqttLink* link) {
    link->SetMessageHandler([this](MqttMessage&& m) {
      std::lock_guard<std::mutex> lock(mu);
      messages.push_back(std::move(m));
    });
    link->SetStateHandler([this](bool up, bool session_present, const std::string& why) {
      std::lock_guard<std::mutex> lock(mu);
      states.push_back({up, session_present, why});
    });
  }
  size_t message_count() {
    std::lock_guard<std::mutex> lock(mu);
    return messages.size();
  }
  std::vector<std::string> payloads() {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<std::string> out;
    for (const auto& m : messages) out.push_back(m.payload);
    return out;
  }
  int count_states(bool up) {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const auto& s : states) n += s.up == up ? 1 : 0;
    return n;
  }
  std::vector<State> state_list() {
    std::lock_guard<std::mutex> lock(mu);
    return states;
  }
};

class MqttLinkContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  MqttLinkOptions Options(const Broker& broker, const std::string& client_id) {
    MqttLinkOptions o;
    o.uri = broker.uri();
    o.client_id = client_id;
    o.reconnect_min_ms = 50;
    o.reconnect_max_ms = 300;
    return o;
  }
  // A link of this test's implementation.
  std::unique_ptr<MqttLink> Make(const MqttLinkOptions& o) {
    std::unique_ptr<MqttLink> link;
    Status st = GetParam() == "paho" ? NewPahoMqttLink(o, &link) : pool_.Open(o, &link);
    EXPECT_OK(st);
    return link;
  }

  TempDir dir_;
  MqttLinkPool pool_;  // the pooled links' connections (NewPahoMqttLink)
};

TEST_P(MqttLinkContractTest, ConnectsSubscribesAndHandsOverWhatTheBrokerDelivers) {
  Broker broker(dir_.File("broker"));
  ASSERT_TRUE(broker.Start());
  auto link = Make(Options(broker, "contract-receive"));
  ASSERT_NE(link, nullptr);
  Seen seen;
  seen.Attach(link.get());
  EXPECT_FALSE(link->connected());
  EXPECT_FALSE(link->paused());
  ASSERT_OK(link->Subscribe("c/#", 1));  // recorded: subscribed on connect
  ASSERT_OK(link->Connect(5000));
  EXPECT_TRUE(link->connected());
  EXPECT_TRUE(link->WaitConnected(0));
  ASSERT_TRUE(WaitFor([&] { return seen.count_states(true) == 1; }, 5000));
  EXPECT_EQ(link->counters().connects, 1);

  TestMqttClient sensor(broker.uri(), "sensor", true);
  ASSERT_TRUE(sensor.Connect());
  ASSERT_TRUE(sensor.Publish("c/a", "one", 1));
  ASSERT_TRUE(sensor.Publish("c/b/deeper", "two", 0));
  ASSERT_TRUE(sensor.Publish("other/c", "not-subscribed", 1));
  ASSERT_TRUE(sensor.Publish("c/a", "three", 1));
  ASSERT_TRUE(WaitFor([&] { return seen.message_count() == 3; }, 10000)) << seen.message_count();
  {
    std::lock_guard<std::mutex> lock(seen.mu);
    ASSERT_EQ(seen.messages.size(), 3u);
    EXPECT_EQ(seen.messages[0].topic, "c/a");
    EXPECT_EQ(seen.messages[0].payload, "one");
    EXPECT_EQ(seen.messages[0].qos, 1);
    EXPECT_NE(seen.messages[0].packet_id, 0) << "a QoS 1 message has a packet id";
    EXPECT_FALSE(seen.messages[0].retained);
    EXPECT_EQ(seen.messages[1].topic, "c/b/deeper");
    EXPECT_EQ(seen.messages[1].payload, "two");
    EXPECT_EQ(seen.messages[1].qos, 0);
    EXPECT_EQ(seen.messages[1].packet_id, 0);
    EXPECT_EQ(seen.messages[2].payload, "three");
  }
  EXPECT_EQ(link->counters().received, 3);
  EXPECT_OK(link->Disconnect(2000));
}

TEST_P(MqttLinkContractTest, SubscribesWhileConnectedAndUnsubscribes) {
  Broker broker(dir_.File("broker"));
  ASSERT_TRUE(broker.Start());
  auto link = Make(Options(broker, "contract-subscribe"));
  ASSERT_NE(link, nullptr);
  Seen seen;
  seen.Attach(link.get());
  ASSERT_OK(link->Connect(5000));
  // Connected: the SUBACK's outcome.
  ASSERT_OK(link->Subscribe("keep/+", 1));
  ASSERT_OK(link->Subscribe("drop/+", 1));
  ASSERT_OK(link->Publish("drop/x", "before", 1, false, 5000));
  ASSERT_OK(link->Publish("keep/x", "marker-1", 1, false, 5000));
  ASSERT_TRUE(WaitFor([&] { return seen.message_count() == 2; }, 10000)) << seen.message_count();
  ASSERT_OK(link->Unsubscribe("drop/+"));
  EXPECT_OK(link->Unsubscribe("never/subscribed"));
  ASSERT_OK(link->Publish("drop/x", "after", 1, false, 5000));
  ASSERT_OK(link->Publish("keep/x", "marker-2", 1, false, 5000));
  // One publisher's messages reach a subscriber in order: once the second
  // marker is in, the unsubscribed one would have been too.
  ASSERT_TRUE(WaitFor([&] { return seen.message_count() >= 3; }, 10000));
  EXPECT_EQ(seen.payloads(), (std::vector<std::string>{"before", "marker-1", "marker-2"}));
  EXPECT_OK(link->Disconnect(2000));
}

TEST_P(MqttLinkContractTest, Qos1PublishesCompleteAndTheWindowEmpties) {
  Broker broker(dir_.File("broker"));
  ASSERT_TRUE(broker.Start());
  TestMqttClient observer(broker.uri(), "observer", true);
  ASSERT_TRUE(observer.Connect());
  ASSERT_TRUE(observer.Subscribe("p/#", 1));
  auto link = Make(Options(broker, "contract-publish"));
  ASSERT_NE(link, nullptr);
  ASSERT_OK(link->Connect(5000));
  constexpr int kCount = 200;
  std::atomic<int> ok{0}, failed{0};
  for (int i = 0; i < kCount; ++i) {
    ASSERT_OK(link->Publish("p/" + std::to_string(i % 3), std::to_string(i), 1, false, 5000,
                            [&](const Status& st) { (st.ok() ? ok : failed)++; }));
  }
  ASSERT_OK(link->Flush(10000));
  EXPECT_EQ(link->inflight(), 0);
  EXPECT_EQ(ok.load(), kCount);
  EXPECT_EQ(failed.load(), 0);
  // A QoS 0 publish is done once written; no callback is fine too.
  std::atomic<int> qos0_done{0};
  ASSERT_OK(link->Publish("p/zero", "z", 0, false, 5000, [&](const Status& st) {
    if (st.ok()) qos0_done++;
  }));
  ASSERT_OK(link->Publish("p/zero", "z2", 1, false, 5000));
  ASSERT_OK(link->Flush(10000));
  EXPECT_EQ(link->inflight(), 0);
  EXPECT_EQ(qos0_done.load(), 1);
  MqttLink::Counters c = link->counters();
  EXPECT_EQ(c.published, kCount + 2);
  EXPECT_EQ(c.publish_failures, 0);
  ASSERT_TRUE(WaitFor([&] { return observer.received().size() == kCount + 2u; }, 10000))
      << observer.received().size();
  auto got = observer.received();
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(got[static_cast<size_t>(i)].second, std::to_string(i));
  EXPECT_OK(link->Disconnect(2000));
}

TEST_P(MqttLinkContractTest, PauseStaysAwayAndResumeDeliversWhatTheBrokerQueued) {
  Broker broker(dir_.File("broker"));
  ASSERT_TRUE(broker.Start());
  auto link = Make(Options(broker, "contract-pause"));  // a persistent session (clean_start off)
  ASSERT_NE(link, nullptr);
  Seen seen;
  seen.Attach(link.get());
  ASSERT_OK(link->Subscribe("q/+", 1));
  ASSERT_OK(link->Connect(5000));
  ASSERT_TRUE(WaitFor([&] { return seen.count_states(true) == 1; }, 5000));  // subscribed by then
  link->Pause();
  EXPECT_TRUE(link->paused());
  ASSERT_TRUE(WaitFor([&] { return !link->connected(); }, 10000));
  ASSERT_TRUE(WaitFor([&] { return seen.count_states(false) == 1; }, 5000));
  EXPECT_EQ(seen.state_list().back().why, "paused");
  EXPECT_EQ(seen.state_list().size(), 2u);
  EXPECT_EQ(link->Publish("q/x", "from-a-paused-link", 1, false, 100).code(), Status::Code::kUnavailable);

  TestMqttClient sensor(broker.uri(), "sensor", true);
  ASSERT_TRUE(sensor.Connect());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(sensor.Publish("q/x", std::to_string(i), 1));
  EXPECT_FALSE(link->connected());
  EXPECT_EQ(seen.message_count(), 0u) << "a paused link received";
  MqttLink::Counters c = link->counters();
  EXPECT_EQ(c.pauses, 1);
  EXPECT_EQ(c.connection_losses, 0) << "a pause is no loss";

  link->Resume();
  EXPECT_FALSE(link->paused());
  ASSERT_TRUE(link->WaitConnected(10000));
  ASSERT_TRUE(WaitFor([&] { return seen.message_count() == 20; }, 10000)) << seen.message_count();
  std::vector<std::string> want;
  for (int i = 0; i < 20; ++i) want.push_back(std::to_string(i));
  EXPECT_EQ(seen.payloads(), want);
  EXPECT_EQ(seen.count_states(true), 2);
  EXPECT_EQ(link->counters().connects, 2);
  EXPECT_OK(link->Disconnect(2000));
}

TEST_P(MqttLinkContractTest, DisconnectEndsTheConnectionWithoutALoss) {
  Broker broker(dir_.File("broker"));
  ASSERT_TRUE(broker.Start());
  auto link = Make(Options(broker, "contract-disconnect"));
  ASSERT_NE(link, nullptr);
  // Never started: nothing to publish on.
  EXPECT_EQ(link->Publish("d/x", "early", 1, false, 100).code(), Status::Code::kUnavailable);
  ASSERT_OK(link->Connect(5000));
  ASSERT_OK(link->Disconnect(2000));
  EXPECT_FALSE(link->connected());
  EXPECT_EQ(link->Publish("d/x", "late", 1, false, 100).code(), Status::Code::kUnavailable);
  EXPECT_EQ(link->inflight(), 0);
  MqttLink::Counters c = link->counters();
  EXPECT_EQ(c.connects, 1);
  EXPECT_EQ(c.connection_losses, 0);
  // And it stays away: no reconnect after a Disconnect.
  test::SleepMs(500);
  EXPECT_FALSE(link->connected());
  EXPECT_EQ(link->counters().connects, 1);
}

TEST_P(MqttLinkContractTest, TheStateHandlerSeesTheLossOfAKilledBrokerAndTheReconnect) {
  // Without persistence the restarted broker has forgotten the session: the
  // messages after it come through the link's own subscribing again.
  BrokerOptions bo;
  bo.persistence = false;
  Broker broker(dir_.File("broker"), bo);
  ASSERT_TRUE(broker.Start());
  auto link = Make(Options(broker, "contract-loss"));
  ASSERT_NE(link, nullptr);
  Seen seen;
  seen.Attach(link.get());
  ASSERT_OK(link->Subscribe("l/#", 1));
  ASSERT_OK(link->Connect(5000));
  ASSERT_TRUE(WaitFor([&] { return seen.count_states(true) == 1; }, 5000));

  broker.Kill9();
  ASSERT_TRUE(WaitFor([&] { return seen.count_states(false) == 1; }, 30000)) << "no loss reported";
  EXPECT_FALSE(link->connected());
  EXPECT_EQ(link->counters().connection_losses, 1);
  EXPECT_EQ(link->Publish("l/x", "while-down", 1, false, 100).code(), Status::Code::kUnavailable);

  ASSERT_TRUE(broker.Start());
  ASSERT_TRUE(link->WaitConnected(30000));
  ASSERT_TRUE(WaitFor([&] { return seen.count_states(true) == 2; }, 5000));
  {
    auto states = seen.state_list();
    ASSERT_GE(states.size(), 3u);
    EXPECT_TRUE(states[0].up);
    EXPECT_FALSE(states[1].up);
    EXPECT_TRUE(states.back().up);
    EXPECT_FALSE(states.back().session_present) << "the restarted broker kept no session";
  }
  EXPECT_GE(link->counters().connects, 2);
  TestMqttClient sensor(broker.uri(), "sensor", true);
  ASSERT_TRUE(sensor.Connect());
  // The link subscribes again before it reports the connection.
  ASSERT_TRUE(sensor.Publish("l/x", "after", 1));
  ASSERT_TRUE(WaitFor([&] { return seen.message_count() == 1; }, 10000)) << broker.log();
  EXPECT_EQ(seen.payloads().front(), "after");
  EXPECT_OK(link->Disconnect(2000));
}

INSTANTIATE_TEST_SUITE_P(Implementations, MqttLinkContractTest, ::testing::Values("paho", "pooled"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace edgesync

// A broker that hangs (SIGSTOP: the socket stays open, nothing answers), as
// a dead link or a frozen region looks, then comes back (SIGCONT): every
// MqttLink must notice the loss by keep-alive and reconnect by itself, and
// publishing must work again. Several links on one broker, as the gateway
// has (uplink and feed puller per region).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sync/mqtt_link.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

TEST(MqttLinkFreezeTest, LinksReconnectAfterTheBrokerHungAndCameBack) {
  TempDir dir;
  Broker broker(dir.path());
  ASSERT_TRUE(broker.Start()) << broker.log();
  std::vector<std::unique_ptr<MqttLink>> links;
  for (int i = 0; i < 3; ++i) {
    MqttLinkOptions o;
    o.uri = broker.uri();
    o.client_id = "freeze-" + std::to_string(i);
    o.keep_alive_s = 3;
    o.connect_timeout_ms = 2000;
    o.reconnect_min_ms = 50;
    o.reconnect_max_ms = 500;
    std::unique_ptr<MqttLink> link;
    ASSERT_OK(NewPahoMqttLink(o, &link));
    ASSERT_OK(link->Connect(5000));
    links.push_back(std::move(link));
  }
  for (int round = 0; round < 2; ++round) {
    broker.Freeze();
    // Publishes in flight when the broker hangs, as the uplink has them.
    for (auto& l : links) {
      for (int k = 0; k < 5; ++k) l->Publish("freeze/t", "in flight", 1, false, 0, [](const Status&) {});
    }
    EXPECT_TRUE(WaitFor([&] {
      for (auto& l : links) {
        if (l->connected()) return false;
      }
      return true;
    }, 15000)) << "keep-alive did not notice the hung broker";
    // Long enough for several reconnect attempts to pile up in the hung
    // broker's listen backlog (each times out unanswered).
    SleepMs(2000 + 700 * round);
    broker.Thaw();
    for (size_t i = 0; i < links.size(); ++i) {
      EXPECT_TRUE(links[i]->WaitConnected(20000)) << "link " << i << " never came back (round " << round << ")";
    }
    for (auto& l : links) {
      EXPECT_OK(l->Publish("freeze/t", "x", 1, false, 5000, nullptr));
    }
  }
}

// Connect attempts into a hung broker time out unanswered (the kernel still
// accepts the TCP connection); the link replaces its client and connects as
// soon as the broker answers again.
TEST(MqttLinkFreezeTest, ConnectsOnceAHungBrokerAnswersAfterConnectTimeouts) {
  TempDir dir;
  Broker broker(dir.path());
  ASSERT_TRUE(broker.Start()) << broker.log();
  broker.Freeze();
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "freeze-late";
  o.keep_alive_s = 3;
  o.connect_timeout_ms = 1000;
  o.reconnect_min_ms = 50;
  o.reconnect_max_ms = 300;
  std::unique_ptr<MqttLink> link;
  ASSERT_OK(NewPahoMqttLink(o, &link));
  ASSERT_OK(link->Start());
  SleepMs(7000);  // at least two connect attempts time out
  EXPECT_FALSE(link->connected());
  broker.Thaw();
  ASSERT_TRUE(link->WaitConnected(20000));
  EXPECT_OK(link->Publish("freeze/t", "x", 1, false, 5000, nullptr));
  link->Disconnect(2000);
}

}  // namespace
}  // namespace edgesync::test

// What ingest's redelivery filter (agent/ingest/redelivery_filter.h) rests
// on, checked against a real Mosquitto through a real Paho link: a QoS 1
// message whose PUBACK the connection lost comes again with DUP set and its
// first packet id, and the broker hands out the next id in sequence.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sync/mqtt_link.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

class MqttLinkRedeliveryTest : public ::testing::TestWithParam<int> {
 protected:
  // A link as ingest opens it: persistent session, quick reconnects.
  std::unique_ptr<MqttLink> NewLink(const std::string& uri, const std::string& client_id) {
    MqttLinkOptions o;
    o.uri = uri;
    o.client_id = client_id;
    o.mqtt_version = GetParam();
    o.reconnect_min_ms = 50;
    o.reconnect_max_ms = 200;
    std::unique_ptr<MqttLink> link;
    EXPECT_OK(NewPahoMqttLink(o, &link));
    return link;
  }
  // Every message the link hands over, in order.
  void Record(MqttMessage&& m) {
    std::lock_guard<std::mutex> lock(mu_);
    got_.push_back(std::move(m));
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return got_.size();
  }
  std::vector<MqttMessage> got() {
    std::lock_guard<std::mutex> lock(mu_);
    return got_;
  }

 private:
  std::mutex mu_;
  std::vector<MqttMessage> got_;
};

TEST_P(MqttLinkRedeliveryTest, AMessageWhosePubackWasLostComesAgainWithItsPacketId) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start()) << broker.log();
  TcpProxy proxy(broker.port());
  std::unique_ptr<MqttLink> link = NewLink(proxy.uri(), "redelivery");
  ASSERT_TRUE(link);
  std::atomic<bool> cut_done{false};
  link->SetMessageHandler([&](MqttMessage&& m) {
    // The first message: the connection goes while its handler runs, so
    // the PUBACK Paho sends on return never reaches the broker.
    if (m.payload == "first" && !m.duplicate && !cut_done) {
      proxy.Cut();
      SleepMs(300);
      cut_done = true;
    }
    Record(std::move(m));
  });
  ASSERT_OK(link->Subscribe("redelivery/t", 1));
  ASSERT_OK(link->Connect(10000));

  std::unique_ptr<MqttLink> publisher =
      NewLink("tcp://127.0.0.1:" + std::to_string(broker.port()), "redelivery-publisher");
  ASSERT_TRUE(publisher);
  ASSERT_OK(publisher->Connect(10000));
  ASSERT_OK(publisher->Publish("redelivery/t", "first", 1, false, 10000));
  ASSERT_TRUE(WaitFor([&] { return cut_done.load(); }, 10000));
  proxy.Restore();
  ASSERT_TRUE(WaitFor([&] { return count() >= 2; }, 30000)) << broker.log();
  ASSERT_OK(publisher->Publish("redelivery/t", "second", 1, false, 10000));
  ASSERT_TRUE(WaitFor([&] { return count() >= 3; }, 30000)) << broker.log();

  const std::vector<MqttMessage> got = this->got();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].payload, "first");
  EXPECT_FALSE(got[0].duplicate);
  EXPECT_GT(got[0].packet_id, 0);
  EXPECT_EQ(got[1].payload, "first");
  EXPECT_TRUE(got[1].duplicate) << "the redelivery carries DUP";
  EXPECT_EQ(got[1].packet_id, got[0].packet_id) << "the redelivery keeps its packet id";
  EXPECT_EQ(got[2].payload, "second");
  EXPECT_FALSE(got[2].duplicate);
  EXPECT_EQ(got[2].packet_id, got[0].packet_id + 1) << "Mosquitto hands out ids in sequence";
  EXPECT_OK(publisher->Disconnect(5000));
  EXPECT_OK(link->Disconnect(5000));
}

// What the filter trusts: fresh messages come in packet-id order, one step
// at a time, also when the broker held thousands for us while the link was
// paused (the default gateway broker settings of tests/support/broker.cc:
// unlimited queue and in-flight window).
TEST_P(MqttLinkRedeliveryTest, PacketIdsFollowInSequenceAcrossAPause) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start()) << broker.log();
  const std::string uri = "tcp://127.0.0.1:" + std::to_string(broker.port());
  std::unique_ptr<MqttLink> link = NewLink(uri, "sequence");
  ASSERT_TRUE(link);
  link->SetMessageHandler([&](MqttMessage&& m) { Record(std::move(m)); });
  ASSERT_OK(link->Subscribe("sequence/+", 1));
  ASSERT_OK(link->Connect(10000));
  std::unique_ptr<MqttLink> publisher = NewLink(uri, "sequence-publisher");
  ASSERT_TRUE(publisher);
  ASSERT_OK(publisher->Connect(10000));
  constexpr int kBefore = 500, kAway = 6000, kAfter = 500;
  auto publish = [&](int from, int n) {
    for (int i = from; i < from + n; ++i) {
      ASSERT_OK(publisher->Publish("sequence/d" + std::to_string(i % 10), std::to_string(i), 1, false, 10000));
    }
  };
  publish(0, kBefore);
  ASSERT_TRUE(WaitFor([&] { return count() >= kBefore; }, 30000));
  link->Pause();
  ASSERT_TRUE(WaitFor([&] { return !link->connected(); }, 10000));
  publish(kBefore, kAway);
  ASSERT_OK(publisher->Flush(30000));
  link->Resume();
  publish(kBefore + kAway, kAfter);
  ASSERT_TRUE(WaitFor([&] { return count() >= kBefore + kAway + kAfter; }, 60000)) << count();
  int breaks = 0, last = 0;
  for (const MqttMessage& m : got()) {
    ASSERT_GT(m.packet_id, 0);
    const int step = last == 0 ? 1 : ((m.packet_id - last) % 65535 + 65535) % 65535;
    if (m.duplicate) {
      // Sent before the pause and never read: it carries the sequence on.
      if (step >= 1 && step <= 4096) last = m.packet_id;
      continue;
    }
    if (step != 1) {
      ++breaks;
      ADD_FAILURE() << "after id " << last << " came " << m.packet_id << " (payload " << m.payload << ")";
      if (breaks > 5) break;
    }
    last = m.packet_id;
  }
  EXPECT_EQ(breaks, 0);
  EXPECT_OK(publisher->Disconnect(5000));
  EXPECT_OK(link->Disconnect(5000));
}

INSTANTIATE_TEST_SUITE_P(Versions, MqttLinkRedeliveryTest, ::testing::Values(4, 5),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 5 ? std::string("Mqtt5") : std::string("Mqtt311");
                         });

}  // namespace
}  // namespace edgesync::test

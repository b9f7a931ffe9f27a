// MqttPublishPacketBytes: known PUBLISH encodings (the remaining length's
// 1- to 4-byte boundaries, QoS 0 and 1, MQTT 3.1.1 and 5), then the bytes
// a real Paho link actually writes to its socket for one publish, counted
// by a TCP proxy in front of a real Mosquitto.
#include <gtest/gtest.h>

#include <string>

#include "sync/mqtt_link.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync {
namespace {

TEST(MqttPacketSizeTest, KnownEncodings) {
  // 0x30 | 0x0a | 0x00 0x03 'a' '/' 'b' | "hello": 12 bytes (MQTT 3.1.1, QoS 0).
  EXPECT_EQ(MqttPublishPacketBytes(3, 5, 0, 4), 12u);
  // QoS 1 adds the packet id; MQTT 5 adds the property length (0).
  EXPECT_EQ(MqttPublishPacketBytes(3, 5, 1, 4), 14u);
  EXPECT_EQ(MqttPublishPacketBytes(3, 5, 1, 5), 15u);
  // Remaining length 127 takes one byte, 128 two (0x80 0x01).
  // Topic "t" (2 + 1), packet id (2): remaining = 5 + payload.
  EXPECT_EQ(MqttPublishPacketBytes(1, 122, 1, 4), 1u + 1u + 127u);
  EXPECT_EQ(MqttPublishPacketBytes(1, 123, 1, 4), 1u + 2u + 128u);
  // 16383 two bytes (0xff 0x7f), 16384 three (0x80 0x80 0x01).
  EXPECT_EQ(MqttPublishPacketBytes(1, 16383 - 5, 1, 4), 1u + 2u + 16383u);
  EXPECT_EQ(MqttPublishPacketBytes(1, 16384 - 5, 1, 4), 1u + 3u + 16384u);
  // 2097151 three bytes, 2097152 four.
  EXPECT_EQ(MqttPublishPacketBytes(1, 2097151 - 5, 1, 4), 1u + 3u + 2097151u);
  EXPECT_EQ(MqttPublishPacketBytes(1, 2097152 - 5, 1, 4), 1u + 4u + 2097152u);
  // MQTT 5 crosses the boundary one payload byte earlier.
  EXPECT_EQ(MqttPublishPacketBytes(1, 121, 1, 5), 1u + 1u + 127u);
  EXPECT_EQ(MqttPublishPacketBytes(1, 122, 1, 5), 1u + 2u + 128u);
}

class MqttPacketSizeOnTheWireTest : public ::testing::TestWithParam<int> {};

TEST_P(MqttPacketSizeOnTheWireTest, EqualsTheBytesPahoWrites) {
  const int version = GetParam();
  test::TempDir dir;
  test::Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start()) << broker.log();
  test::TcpProxy proxy(broker.port());
  MqttLinkOptions o;
  o.uri = proxy.uri();
  o.client_id = "packet-size";
  o.mqtt_version = version;
  o.clean_start = true;
  o.keep_alive_s = 300;  // no PINGREQ between the counts
  std::unique_ptr<MqttLink> link;
  ASSERT_OK(NewPahoMqttLink(o, &link));
  ASSERT_OK(link->Connect(10000));
  const std::string topic = "edgesync/hub/eu/in/gw-1";
  // Around each boundary of the remaining length, QoS 0 and 1.
  for (size_t payload : {size_t{0}, size_t{90}, size_t{91}, size_t{92}, size_t{16000}, size_t{16350}, size_t{16351},
                         size_t{16352}, size_t{300000}}) {
    for (int qos : {0, 1}) {
      ASSERT_OK(link->Flush(10000));
      int64_t before = proxy.bytes_upstream();
      test::SleepMs(50);
      ASSERT_EQ(proxy.bytes_upstream(), before) << "the link is quiet between publishes";
      ASSERT_OK(link->Publish(topic, std::string(payload, 'x'), qos, false, 1000));
      ASSERT_OK(link->Flush(10000));
      const int64_t expected = static_cast<int64_t>(MqttPublishPacketBytes(topic.size(), payload, qos, version));
      // Written by Paho; the proxy may still be passing the last bytes on.
      EXPECT_TRUE(test::WaitFor([&] { return proxy.bytes_upstream() - before >= expected; }, 10000));
      test::SleepMs(50);
      EXPECT_EQ(proxy.bytes_upstream() - before, expected)
          << "payload " << payload << " QoS " << qos << " MQTT version " << version;
    }
  }
  ASSERT_OK(link->Disconnect(2000));
}

INSTANTIATE_TEST_SUITE_P(Versions, MqttPacketSizeOnTheWireTest, ::testing::Values(4, 5));

}  // namespace
}  // namespace edgesync

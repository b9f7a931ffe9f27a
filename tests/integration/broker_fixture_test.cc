// The broker fixture itself, against a real Mosquitto: start, accept, kill -9,
// restart on the same port with the same persistence.
#include <gtest/gtest.h>

#include "tests/support/broker.h"
#include "tests/support/mqtt_client.h"

namespace edgesync::test {
namespace {

TEST(BrokerFixtureTest, StartsStopsAndRestartsOnSamePort) {
  TempDir dir;
  Broker broker(dir.path());
  ASSERT_TRUE(broker.Start()) << broker.log();
  int port = broker.port();
  EXPECT_TRUE(WaitForPort(port, 1000));
  broker.Stop();
  EXPECT_FALSE(broker.running());
  ASSERT_TRUE(broker.Start()) << broker.log();
  EXPECT_EQ(broker.port(), port);
  broker.Kill9();
  EXPECT_FALSE(broker.running());
  ASSERT_TRUE(broker.Start()) << broker.log();
  EXPECT_EQ(broker.port(), port);
}

TEST(BrokerFixtureTest, PersistentSessionSurvivesGracefulRestart) {
  TempDir dir;
  Broker broker(dir.path());
  ASSERT_TRUE(broker.Start()) << broker.log();
  {
    TestMqttClient sub(broker.uri(), "fixture-sub", /*clean=*/false);
    ASSERT_TRUE(sub.Connect());
    ASSERT_TRUE(sub.Subscribe("t/#", 1));
    sub.Disconnect();
  }
  {
    TestMqttClient pub(broker.uri(), "fixture-pub", true);
    ASSERT_TRUE(pub.Connect());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(pub.Publish("t/x", std::to_string(i), 1));
    pub.Disconnect();
  }
  broker.Stop();  // SIGTERM: mosquitto writes its persistence file
  ASSERT_TRUE(broker.Start()) << broker.log();
  TestMqttClient sub(broker.uri(), "fixture-sub", false);
  ASSERT_TRUE(sub.Connect());
  EXPECT_TRUE(WaitFor([&] { return sub.received().size() >= 10; }, 5000));
  EXPECT_EQ(sub.received().size(), 10u);
}

TEST(BrokerFixtureTest, TlsListenerWithGeneratedCertificates) {
  TempDir dir;
  ASSERT_TRUE(MakeTestPki(dir.path()));
  BrokerOptions opts;
  opts.tls_ca_file = dir.File("ca.crt");
  opts.tls_cert_file = dir.File("server.crt");
  opts.tls_key_file = dir.File("server.key");
  Broker broker(dir.path(), opts);
  ASSERT_TRUE(broker.Start()) << broker.log();
  TestMqttClient client(broker.tls_uri(), "tls-client", true, dir.File("ca.crt"));
  EXPECT_TRUE(client.Connect());
}

}  // namespace
}  // namespace edgesync::test

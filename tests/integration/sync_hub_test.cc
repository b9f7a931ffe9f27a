// The region hub treats its inbox as hostile: garbage, truncated and
// oversized payloads, and requests whose reply address is not a reply topic,
// are refused (never answered on arbitrary topics) and the hub keeps serving.
#include <gtest/gtest.h>

#include "sync/wire.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

TEST(SyncHubTest, HostileInboxIsRefusedAndTheHubKeepsServing) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  TestMqttClient evil(eu.broker().uri(), "evil", true);
  ASSERT_TRUE(evil.Connect());
  ASSERT_TRUE(evil.Subscribe("sensors/#", 1));
  ASSERT_TRUE(evil.Subscribe("edgesync/reply/gw-evil/probe", 1));
  const std::string inbox = HubInboxTopic("edgesync", "eu", "gw-evil");
  // Pings until one is answered: only then has the hub subscribed (a fixed
  // second was not always enough at load average ~20, and what the test
  // sent before went nowhere).
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& [topic, payload] : evil.received()) {
          WireMessage m;
          if (topic == "edgesync/reply/gw-evil/probe" && DecodeMessage(payload, {}, &m, nullptr).ok() &&
              m.kind == WireKind::kPong && m.correlation_id == 1) {
            return true;
          }
        }
        evil.Publish(inbox, EncodePing("edgesync/reply/gw-evil/probe", 1, 1), 1);
        SleepMs(250);
        return false;
      },
      120000))
      << eu.hub_log();
  ASSERT_TRUE(evil.Publish(inbox, "not a flatbuffer at all", 1));
  ASSERT_TRUE(evil.Publish(inbox, std::string(200, '\0'), 1));
  std::string ping = EncodePing("edgesync/reply/gw-evil/probe", 7, 1);
  ASSERT_TRUE(evil.Publish(inbox, ping.substr(0, ping.size() / 2), 1));
  // A hub must not be made to publish on other topics, nor on another
  // gateway's reply topics.
  ASSERT_TRUE(evil.Publish(inbox, EncodePing("sensors/dev-1/temperature", 8, 1), 1));
  ASSERT_TRUE(evil.Subscribe("edgesync/reply/gw-other/probe", 1));
  ASSERT_TRUE(evil.Publish(inbox, EncodePing("edgesync/reply/gw-other/probe", 12, 1), 1));
  // A batch with a corrupted body gets a BadBatch answer.
  WireBatch b;
  b.origin = {"gw-evil", "0123456789abcdef0123456789abcdef"};
  ChangeEntry e;
  e.lsn = 1;
  e.reading = {"dev-1", "t", 1780000000000, 1.5, "", 0};
  b.entries.push_back(e);
  b.first_lsn = b.last_lsn = 1;
  std::string batch;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-evil/probe", 9, b, {}, &batch));
  std::string damaged = batch;
  size_t frame = damaged.find("\x28\xb5\x2f\xfd");  // the zstd frame's magic number
  ASSERT_NE(frame, std::string::npos);
  damaged[frame + 12] ^= 0x55;
  ASSERT_TRUE(evil.Publish(inbox, damaged, 1));
  // Then an honest ping and an honest batch.
  ASSERT_TRUE(evil.Publish(inbox, EncodePing("edgesync/reply/gw-evil/probe", 10, 1), 1));
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-evil/probe", 11, b, {}, &batch));
  ASSERT_TRUE(evil.Publish(inbox, batch, 1));

  std::map<uint64_t, WireMessage> answers;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& [topic, payload] : evil.received()) {
          WireMessage m;
          if (topic == "edgesync/reply/gw-evil/probe" && DecodeMessage(payload, {}, &m, nullptr).ok()) {
            answers[m.correlation_id] = m;
          }
        }
        return answers.count(10) && answers.count(9) && answers.count(11);
      },
      120000));
  EXPECT_EQ(answers[10].kind, WireKind::kPong);
  EXPECT_EQ(answers[9].ack.code, AckCode::kBadBatch);
  EXPECT_EQ(answers[11].ack.code, AckCode::kOk);
  EXPECT_EQ(answers[11].ack.high_water, 1u);
  EXPECT_EQ(answers.count(7), 0u);
  for (const auto& [topic, payload] : evil.received()) {
    EXPECT_NE(topic.rfind("sensors/", 0), 0u) << "the hub published on " << topic;
    EXPECT_NE(topic, "edgesync/reply/gw-other/probe") << "the hub answered gw-evil on gw-other's reply topic";
  }
  EXPECT_TRUE(eu.hub_running());
  EXPECT_EQ(eu.StopHub(), 0);
  std::string log = eu.hub_log();
  EXPECT_NE(log.find("refused a message"), std::string::npos) << log;
}

}  // namespace
}  // namespace edgesync::test

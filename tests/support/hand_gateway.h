// tests/support/hand_gateway.h: a gateway that speaks the wire by hand to
// a region's broker (tests that need batches no uplink would send): the
// answers it got, a start that waits until the hub listens, and a region
// with such a gateway already speaking to it.
#ifndef EDGESYNC_TESTS_SUPPORT_HAND_GATEWAY_H_
#define EDGESYNC_TESTS_SUPPORT_HAND_GATEWAY_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "sync/wire.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {

// Every decodable message on `topic` so far, by correlation id.
inline std::map<uint64_t, WireMessage> WireAnswers(TestMqttClient* client, const std::string& topic) {
  std::map<uint64_t, WireMessage> out;
  for (const auto& [t, payload] : client->received()) {
    WireMessage m;
    if (t == topic && DecodeMessage(payload, {}, &m, nullptr).ok()) out[m.correlation_id] = m;
  }
  return out;
}

// Pings the hub at `inbox` (correlation 1, answered on `up`) until it
// answers: only then does it listen. False after timeout_ms.
inline bool PingUntilAnswered(TestMqttClient* client, const std::string& inbox, const std::string& up,
                              int64_t timeout_ms = 120000) {
  return WaitFor(
      [&] {
        auto answers = WireAnswers(client, up);
        if (answers.count(1) && answers[1].kind == WireKind::kPong) return true;
        client->Publish(inbox, EncodePing(up, 1, 1), 1);
        SleepMs(250);
        return false;
      },
      timeout_ms);
}

// Region eu (broker and hub) in a temporary directory, and gateway gw-1
// speaking to it by hand: connected, subscribed to its reply topic `up`,
// its batches going to `inbox`, and answered once (the ping, correlation 1).
struct HandGatewayRig {
  // Fatal failures on the way (call under ASSERT_NO_FATAL_FAILURE).
  void Start() {
    eu = std::make_unique<RegionSite>(tmp.path(), "eu");
    ASSERT_TRUE(eu->Start());
    gw = std::make_unique<TestMqttClient>(eu->broker().uri(), "gw-1-test", true);
    ASSERT_TRUE(gw->Connect());
    ASSERT_TRUE(gw->Subscribe(up, 1));
    ASSERT_TRUE(PingUntilAnswered(gw.get(), inbox, up)) << eu->hub_log();
  }

  // Every answer on `up` so far, by correlation id.
  std::map<uint64_t, WireMessage> Answers() { return WireAnswers(gw.get(), up); }

  TempDir tmp;
  std::unique_ptr<RegionSite> eu;
  std::unique_ptr<TestMqttClient> gw;
  const std::string up = ReplyTopic("edgesync", "gw-1", "up");
  const std::string inbox = HubInboxTopic("edgesync", "eu", "gw-1");
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_HAND_GATEWAY_H_

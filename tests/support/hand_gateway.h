// tests/support/hand_gateway.h: a gateway that speaks the wire by hand to
// a region's broker (tests that need batches no uplink would send): the
// answers it got, and a start that waits until the hub listens.
#ifndef EDGESYNC_TESTS_SUPPORT_HAND_GATEWAY_H_
#define EDGESYNC_TESTS_SUPPORT_HAND_GATEWAY_H_

#include <cstdint>
#include <map>
#include <string>

#include "sync/wire.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"

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

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_HAND_GATEWAY_H_

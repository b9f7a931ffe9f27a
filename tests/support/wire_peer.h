// tests/support/wire_peer.h: a message as a peer of another protocol
// would send it. Every encoder writes kWireVersion into Message.version;
// a peer of an older protocol writes its own, and that number is all a
// peer of this one goes by (which entries it may send, what a feed page may
// hold). The layouts of protocol 5 are a subset of this one's, so the
// message is otherwise the same.
#ifndef EDGESYNC_TESTS_SUPPORT_WIRE_PEER_H_
#define EDGESYNC_TESTS_SUPPORT_WIRE_PEER_H_

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <string>

#include "sync/batch_generated.h"

namespace edgesync {

// `payload` (an encoded Message) with Message.version = version.
inline std::string AsProtocol(std::string payload, uint16_t version) {
  auto* table = flatbuffers::GetMutableRoot<flatbuffers::Table>(payload.data());
  // Encoders always write the field (their version is never the default 1).
  if (!table->SetField<uint16_t>(wire::Message::VT_VERSION, version, 1)) return std::string();
  return payload;
}

// A batch `payload` as a peer before protocol 8 reads it: that decoder does
// not know Batch.priority, so to it the field is 0. Empty when the payload
// is no batch or carries no priority.
inline std::string WithoutPriority(std::string payload) {
  auto* message = flatbuffers::GetMutableRoot<flatbuffers::Table>(payload.data());
  if (message->GetField<uint8_t>(wire::Message::VT_BODY_TYPE, 0) != static_cast<uint8_t>(wire::Body::Batch)) {
    return std::string();
  }
  auto* batch = message->GetPointer<flatbuffers::Table*>(wire::Message::VT_BODY);
  if (batch == nullptr || !batch->SetField<uint8_t>(wire::Batch::VT_PRIORITY, 0, 0)) return std::string();
  return payload;
}

}  // namespace edgesync

#endif  // EDGESYNC_TESTS_SUPPORT_WIRE_PEER_H_

// Fuzz target: every payload a hub or gateway may receive goes through
// DecodeMessage; whatever the bytes, it must return a Status, never crash,
// hang or allocate beyond the limits.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sync/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  edgesync::DecodeLimits limits;
  limits.max_payload_bytes = 1 << 20;
  limits.max_raw_bytes = 4 << 20;
  limits.max_entries = 100000;
  edgesync::WireCounters counters;
  edgesync::WireMessage message;
  edgesync::DecodeMessage(std::string_view(reinterpret_cast<const char*>(data), size), limits, &message, &counters);
  return 0;
}

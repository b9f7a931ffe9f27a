// Fuzz target: every payload a hub or gateway may receive goes through
// DecodeMessage; whatever the bytes, it must return a Status, never crash,
// hang or allocate beyond the limits. The limits are the ones the uplink,
// hub and feed puller decode with (DecodeLimits{}), so the corpus replay
// under a 256 MiB address-space cap (replay_main.cc) checks what a gateway
// would really allocate.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sync/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  edgesync::WireCounters counters;
  edgesync::WireMessage message;
  edgesync::DecodeMessage(std::string_view(reinterpret_cast<const char*>(data), size), edgesync::DecodeLimits{},
                          &message, &counters);
  return 0;
}

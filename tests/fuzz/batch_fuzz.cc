// Fuzz target: every payload a hub or gateway may receive goes through
// DecodeMessage; whatever the bytes, it must return a Status, never crash,
// hang or allocate beyond the limits. The limits are the ones the uplink,
// hub and feed puller decode with (DecodeLimits{}), so the corpus replay
// under a 256 MiB address-space cap (replay_main.cc) checks what a gateway
// would really allocate.
//
// Each input is decoded three ways: as a gateway (no series contexts), and
// as a hub holding origin gw-1's context after a self-contained batch of
// LSNs 1..64 (the context batch_context in the corpus refers to), once
// with the input's sender as gw-1 (the context is read and moved) and once
// as another sender (it must not be touched). A context batch that does not
// match (the corpus has one after LSN 63) must come back NotFound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sync/wire.h"

namespace {

const edgesync::Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};

// The self-contained batch that starts gw-1's context (8 series, 64 readings).
const std::string& StartingBatch() {
  static const std::string payload = [] {
    edgesync::WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = 1;
    for (uint64_t i = 0; i < 64; ++i) {
      edgesync::ChangeEntry e;
      e.lsn = i + 1;
      e.reading.device_id = "dev-" + std::to_string(i % 4);
      e.reading.metric = i % 8 < 4 ? "temperature" : "humidity";
      e.reading.unit = i % 8 < 4 ? "Cel" : "%RH";
      e.reading.ts_ms = 1780000000000 + static_cast<int64_t>(i / 8) * 1000;
      e.reading.value = 21.5 + static_cast<double>(i % 5) / 10;
      b.entries.push_back(e);
    }
    b.last_lsn = 64;
    edgesync::SeriesContext context;
    std::string out;
    edgesync::EncodeBatch("edgesync/reply/gw-1/up", 1, b, {}, &out, &context);
    return out;
  }();
  return payload;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  edgesync::WireCounters counters;
  edgesync::WireMessage message;
  edgesync::DecodeMessage(input, edgesync::DecodeLimits{}, &message, &counters);
  for (const std::string sender : {"gw-1", "gw-2"}) {
    edgesync::SeriesContextCache contexts(size_t{1} << 20);
    const std::string owner = "gw-1";
    edgesync::WireMessage start;
    if (!edgesync::DecodeMessage(StartingBatch(), {}, &start, nullptr, &contexts, &owner).ok()) __builtin_trap();
    edgesync::DecodeMessage(input, edgesync::DecodeLimits{}, &message, &counters, &contexts, &sender);
    if (contexts.bytes() > contexts.max_bytes()) __builtin_trap();
  }
  return 0;
}

// Fuzz target: a compacted span read back from a damaged store file goes
// through DecodeSpanMarker (its row in `chunks`) and DecodeSeriesBlock (its
// blocks in `series_chunks`); whatever the bytes, each must return a Status,
// never crash, hang or allocate beyond what the point bound allows.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "store/chunk_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::SeriesPoint> points;
  edgesync::DecodeSeriesBlock(bytes, 4096, &points);
  edgesync::SpanMarker marker;
  edgesync::DecodeSpanMarker(bytes, &marker);
  return 0;
}

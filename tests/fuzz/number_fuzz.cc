// Fuzzes the metric-topic decoder (bare number or {"v","t","u"} JSON).
#include <string>
#include "agent/ingest/decoders.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<edgesync::DecodedReading> out;
  edgesync::DecodeError error;
  edgesync::DecodeMetricPayload(std::string_view(reinterpret_cast<const char*>(data), size), "d", "m", &out, &error);
  return 0;
}

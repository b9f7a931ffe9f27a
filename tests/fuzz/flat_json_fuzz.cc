// Fuzzes the flat JSON object decoder and the device-topic format dispatch.
#include <string>
#include "agent/ingest/decoders.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view p(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::DecodedReading> out;
  edgesync::DecodeError error;
  edgesync::DecodeFlatJson(p, "d", &out, &error);
  edgesync::DecodeDevicePayload(p, "d", &out, &error);
  return 0;
}

// Fuzzes the SenML pack decoder, with and without a deviceId from the topic.
#include <string>
#include "agent/ingest/decoders.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view p(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::DecodedReading> out;
  edgesync::DecodeError error;
  edgesync::DecodeSenml(p, "d", &out, &error);
  edgesync::DecodeSenml(p, "", &out, &error);
  return 0;
}

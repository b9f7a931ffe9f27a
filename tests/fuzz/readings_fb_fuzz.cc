// Fuzzes the FlatBuffers Readings decoder: verification must catch every
// malformed buffer before a field is read.
#include <string>
#include "agent/ingest/decoders.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view p(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::DecodedReading> out;
  edgesync::DecodeError error;
  edgesync::DecodeFlatbuffers(p, "", &out, &error);
  edgesync::DecodeFlatbuffers(p, "d", &out, &error);
  return 0;
}

// Fuzzes the device description decoder (ingest.device_topic).
#include <string>
#include "agent/ingest/decoders.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view p(reinterpret_cast<const char*>(data), size);
  edgesync::DeviceRecord record;
  edgesync::DecodeError error;
  if (edgesync::DecodeDeviceRecord(p, "d", &record, &error)) {
    // What the decoder takes, the store must take.
    edgesync::ChangeEntry e;
    e.lsn = 1;
    e.kind = record.deleted ? edgesync::ChangeEntry::Kind::kDeviceDelete : edgesync::ChangeEntry::Kind::kDeviceUpsert;
    e.device = record;
    if (!edgesync::ValidateChangeEntry(e).ok()) __builtin_trap();
  }
  return 0;
}

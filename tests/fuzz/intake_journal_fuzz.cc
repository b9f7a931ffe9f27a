// Fuzzes the intake journal's decoders (a first-format record body, and a
// whole segment of either format): a journal damaged on the SD card must be
// refused record by record, never crash the gateway at start.
#include <cstdint>
#include <string>
#include <vector>

#include "agent/ingest/intake_journal.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  edgesync::IntakeRecord record;
  edgesync::IntakeJournal::DecodeBody(reinterpret_cast<const char*>(data), size, &record);
  std::vector<edgesync::IntakeRecord> records;
  edgesync::IntakeJournal::ParseSegment(std::string(reinterpret_cast<const char*>(data), size), &records);
  return 0;
}

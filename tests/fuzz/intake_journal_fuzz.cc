// Fuzzes the intake journal's record decoder: a journal damaged on the SD
// card must be refused record by record, never crash the gateway at start.
#include <cstdint>

#include "agent/ingest/intake_journal.h"
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  edgesync::IntakeRecord record;
  edgesync::IntakeJournal::DecodeBody(reinterpret_cast<const char*>(data), size, &record);
  return 0;
}

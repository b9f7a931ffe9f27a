// tests/support/reading_tally.h: what a store holds of the readings a test
// publisher (tests/tools/publisher.cc) sent: device <prefix><d> publishes
// values 0..readings-1, value v taken at base_ms + v x step_ms.
//
// Thread safety: as the store's Query.
#ifndef EDGESYNC_TESTS_SUPPORT_READING_TALLY_H_
#define EDGESYNC_TESTS_SUPPORT_READING_TALLY_H_

#include <cstdint>
#include <string>

#include "store/store.h"

namespace edgesync::test {

struct ReadingTally {
  int64_t missing = 0;     // values never stored
  int64_t duplicates = 0;  // extra copies of stored values
  int64_t wrong_time = 0;  // rows whose time is not base_ms + value x step_ms
  int64_t total = 0;       // rows
};

// Counts the store's local rows of devices prefix0..prefix<devices-1>.
ReadingTally TallyReadings(Store* store, const std::string& prefix, int devices, int readings, int64_t base_ms,
                           int64_t step_ms);

// The store's own figures, read from the file at path while a gateway may
// be writing it (no open check, no create); a failed open is a test failure.
StoreStats StoreStatsOf(const std::string& path);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_READING_TALLY_H_

// store/clock_period_table.h: the time corrections a SQLite store keeps
// (store/time_correction.h says what they mean): its own origin's untrusted
// clock periods (table clock_periods: opened once per untrusted boot,
// counted into by appends, corrected once) and the corrections of other
// origins that a hub or read view applied (origin_time_corrections, one row
// per (origin, period), replaced by itself).
//
// Thread safety: no state of its own. Each call runs on the connection it
// is given, inside the caller's transaction where it writes; the caller
// holds that connection's mutex.
#ifndef EDGESYNC_STORE_CLOCK_PERIOD_TABLE_H_
#define EDGESYNC_STORE_CLOCK_PERIOD_TABLE_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "store/time_correction.h"

namespace edgesync {
namespace clock_period_table {

// A new period (the next number); Rejected once kMaxClockPeriod are used.
Status Open(Db* db, const std::string& boot_id, int64_t offset_ms, int64_t now_ms, uint32_t* id);
// Inside an append's transaction: the readings stamped in periods counted
// into their rows (count, first and last stamped time). *count is the
// caller's cached statement on db, prepared on first use. InvalidArgument
// for a period the table does not hold.
Status CountReadings(Db* db, Stmt* count, const std::vector<Reading>& readings);
// Every period, by number.
Status List(Db* db, std::vector<ClockPeriod>* periods);
// Records the period's correction unless it has one: *changed tells
// whether this call did (false: corrected before). NotFound for no such
// period.
Status MarkCorrected(Db* db, uint32_t id, int64_t delta_ms, int64_t now_ms, bool* changed);
// A corrected period as the change log carries it: the delta and the span
// of stamped times the period can hold, from its opening (or its first
// reading, if stamped before) to what the untrusted clock read when the
// correction was made (or its last reading, if later). Corruption when the
// period is not corrected.
Status CorrectionOf(Db* db, uint32_t period, TimeCorrection* correction);
// The corrections of this origin's periods that hold readings.
Status LoadOwnOverlay(Db* db, TimeOverlay* overlay);
// Another origin's correction, kept (again: replaced by itself).
Status KeepOriginCorrection(Db* db, int64_t origin_id, const TimeCorrection& correction);
// Other origins' corrections, by origin id.
Status LoadOriginOverlays(Db* db, std::unordered_map<int64_t, TimeOverlay>* overlays);

}  // namespace clock_period_table
}  // namespace edgesync

#endif  // EDGESYNC_STORE_CLOCK_PERIOD_TABLE_H_

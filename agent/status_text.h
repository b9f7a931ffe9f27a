// agent/status_text.h: the metrics snapshot (agent/status_board.h) as
// `edgesync status` prints it for people. One line per figure in two
// columns under a group name:
//
//   store          size                                       1.2 MiB
//                  entries                                    6000
//   uplink         write region                               eu
//                  batches sent                               267
//
// The figure lines are the metrics table's rows (agent/metrics_table.h)
// that carry a `status_text` label ("store: size" is the line `size` of
// group `store`), with the row's value read at its section and key and
// written by its kind: sizes (Prometheus name in _bytes) in B/KiB/MiB/GiB,
// booleans yes/no, milliseconds as seconds, wall times in UTC, lists as
// their length, a figure not known yet (a closed gate, -1) as `unknown`.
// A row whose key the snapshot lacks (a stopped process, a hub store on
// PostgreSQL) has no line. Written by hand beside them: what is not one
// number of the table (the role line, the write region, the momentary
// rates, the regions, feeds, origins, reasons and recent error lines,
// notes saying why a figure reads as it does).
//
// Contract: a pure function of the snapshot; names are separated from
// values and groups from names by at least two spaces, and no name or
// group holds two spaces in a row, so the columns split on them.
// Checked against every row in tests/unit/agent/metrics_table_test.cc and
// against running programs in tests/integration/status_views_test.cc.
//
// Thread safety: pure functions.
#ifndef EDGESYNC_AGENT_STATUS_TEXT_H_
#define EDGESYNC_AGENT_STATUS_TEXT_H_

#include <nlohmann/json.hpp>
#include <string>

namespace edgesync {

struct StatusKey;

std::string StatusText(const nlohmann::json& snapshot);

// The number at `section`.`key` of the snapshot (at `key` for an empty
// section), 0 where it is missing or not a number (a stopped process, a
// figure not published yet): shared by the text and the one-line views.
double StatusNumber(const nlohmann::json& snapshot, const char* section, const char* key);
double StatusNumber(const nlohmann::json& snapshot, const StatusKey& key);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_STATUS_TEXT_H_

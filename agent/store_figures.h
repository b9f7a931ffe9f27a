// agent/store_figures.h: the store's part of the metrics snapshot (size,
// free space, entries, ranges, LSN head, upstream checkpoints, backlog and
// its age, feed positions), built the same way by a running role and by
// `edgesync status` on a stopped one, so both show the same fields.
//
// Contract: StoreFigures reads the store only (it may be opened read-only
// by another process). `stats` is a Store::Stats result the caller may have
// taken earlier: counting the log's rows is the one costly step (see
// StoreCounts).
//
// Thread safety: StoreFigures is a pure function of its arguments and the
// store; StoreCounts is used from one thread.
#ifndef EDGESYNC_AGENT_STORE_FIGURES_H_
#define EDGESYNC_AGENT_STORE_FIGURES_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/store.h"

namespace edgesync {

// The "store", "upstream" and "backlog" sections of a snapshot. regions:
// the configured region names (their checkpoints are listed).
nlohmann::json StoreFigures(StoreGauges* store, const StoreStats& stats, const std::string& data_dir,
                            const std::vector<std::string>& regions, int64_t now_wall_ms);

// Keeps Store::Stats current for a status refreshed every second without
// counting the log every second: a full count (a scan of the table) at most
// every kCountEveryMs, and in between the entries appended since (the LSN
// head's advance) and the remote entries applied since. What retention prunes in
// between shows at the next count. Before this, the count was refreshed
// only every 30 s, so a gateway that had just started read "0 entries"
// while it ingested 50,000 readings.
class StoreCounts {
 public:
  static constexpr int64_t kCountEveryMs = 30000;
  // Returns the current figures; now_ms is monotonic. remote_applied: an
  // ever-growing count of read-view (or, on a hub, region) entries this
  // process applied, which moves remote_entries between counts the way the
  // LSN head moves entries.
  StoreStats Get(StoreGauges* store, int64_t now_ms, uint64_t remote_applied = 0);

 private:
  StoreStats counted_;
  int64_t counted_at_ms_ = -1;
  uint64_t remote_applied_at_count_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_STORE_FIGURES_H_

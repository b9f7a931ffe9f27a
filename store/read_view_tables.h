// store/read_view_tables.h: a gateway store's read view of other origins
// (tables `view_chunks`, `view_series`, `view_watermarks`): what the feed
// puller applies from the regions' feeds, one chunk of one origin's entries
// per origin per page (store/remote_chunk_codec.h).
//
// Applying is idempotent by (origin, LSN): an entry the view already holds
// (a page read again after a restart, a resend) is skipped, so the view
// holds each entry once whatever the feed repeats. `view_series` records
// which origins wrote which series, so a query reads only their chunks; the
// pairs already written are remembered (at most kMaxKnownSeries) so a page
// inserts each pair once, not per entry.
//
// Thread safety: ReadViewTables belongs to the store's writer (SqliteStore
// holds it under its write mutex); every call runs on the writer's
// connection inside the caller's transaction, and the caller reports the
// transaction's end (Committed, RolledBack).
#ifndef EDGESYNC_STORE_READ_VIEW_TABLES_H_
#define EDGESYNC_STORE_READ_VIEW_TABLES_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "platform/status.h"
#include "store/origin_catalog.h"
#include "store/remote_rows.h"
#include "store/series_catalog.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {

class ReadViewTables {
 public:
  // ~50 bytes each on a board.
  static constexpr size_t kMaxKnownSeries = 20000;

  Status Open(Db* write_db, SeriesWriter* series, OriginCatalog* origins, OriginCatalog::Statements* origin_stmts,
              RemoteRows* rows);
  // Applies valid entries (checked by the caller) at wall time now; *added
  // counts those new to the view.
  Status Apply(const std::vector<RemoteEntry>& entries, int64_t now, int64_t* added);
  // Keeps each origin's completeness watermark (only raised); self's is skipped.
  Status KeepWatermarks(const std::vector<OriginWatermark>& watermarks, const Origin& self);
  void Committed();
  void RolledBack() { pending_series_.clear(); }

 private:
  Status ApplyOrigin(int64_t origin_id, std::vector<const ChangeEntry*>* group, int64_t now, int64_t* added);

  Db* db_ = nullptr;
  SeriesWriter* series_ = nullptr;
  OriginCatalog* origins_ = nullptr;
  OriginCatalog::Statements* origin_stmts_ = nullptr;
  RemoteRows* rows_ = nullptr;
  Stmt insert_chunk_;
  Stmt insert_series_;
  Stmt overlap_;
  Stmt put_watermark_;
  std::set<std::pair<int64_t, int64_t>> known_series_;    // (series, origin) committed
  std::set<std::pair<int64_t, int64_t>> pending_series_;  // added by the open transaction
  std::vector<RemoteChunkEntry> chunk_;
  std::string block_;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_READ_VIEW_TABLES_H_

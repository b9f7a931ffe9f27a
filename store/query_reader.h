// store/query_reader.h: what a SQLite store answers people and queries
// with, over everything it holds: its own log (compacted spans' series
// blocks and commit chunks), the read view of other origins and, on a hub,
// the region feed.
//
// Query (Store::Query): one device's readings over a window from all three,
// deduplicated by (origin, LSN), shown at their corrected times, in time
// order under a limit. Why it collects small hits and builds QueryRows
// last: a day of one series at 1 Hz is 86,400 rows. Built as QueryRows
// while scanning (five strings each, the epoch a heap copy; ~200 bytes) and
// then sorted, the rows' construction, the vector's growth and the sort's
// moves were most of the query's time (perf on bench_storage's
// 50.5M-reading store). A hit is 40 bytes without strings: trimming and
// ordering move only those, blocks of one series mostly arrive in order
// already (then nothing is sorted), and only the rows kept become
// QueryRows, each built once in place.
//
// ListDevices and Backlog: the devices the store knows (readings and
// records, per origin) and how old its backlog is, for `edgesync devices`
// and `status`.
//
// Thread safety: a QueryReader belongs to one read connection and is used
// under its mutex (SqliteStore declares it GUARDED_BY its read mutex), with
// that connection's series reader and origin statements. Each call is one
// read transaction of its own.
#ifndef EDGESYNC_STORE_QUERY_READER_H_
#define EDGESYNC_STORE_QUERY_READER_H_

#include <cstdint>
#include <vector>

#include "platform/status.h"
#include "store/origin_catalog.h"
#include "store/remote_rows.h"
#include "store/series_catalog.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {

class QueryReader {
 public:
  // self: the store's own origin (its local rows are that origin's).
  void Open(Db* read_db, SeriesReader* series, OriginCatalog* origins, OriginCatalog::Statements* origin_stmts,
            RemoteRows* rows, Origin self) {
    db_ = read_db;
    series_ = series;
    origins_ = origins;
    origin_stmts_ = origin_stmts;
    rows_ = rows;
    self_ = std::move(self);
  }

  Status Query(const QueryRequest& request, std::vector<QueryRow>* rows);
  Status ListDevices(std::vector<DeviceSummary>* devices);
  Status Backlog(uint64_t after_lsn, BacklogInfo* info);

 private:
  Db* db_ = nullptr;
  SeriesReader* series_ = nullptr;
  OriginCatalog* origins_ = nullptr;
  OriginCatalog::Statements* origin_stmts_ = nullptr;
  RemoteRows* rows_ = nullptr;
  Origin self_;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_QUERY_READER_H_

// store/log_reader.h: the read side of a gateway store's own change log:
// the whole log in LSN order for the uplink (ReadLog), one range's feed
// with its continuations for feed consumers (ReadFeed), how far the log is
// complete in time (CompleteThrough), the ranges and device records.
//
// The log is two tables merged by LSN: readings in chunks (commit chunks,
// or compacted spans: store/chunk_compactor.h) and the `log` rows of device
// records and time corrections. A time correction is the whole origin's,
// so it is in the whole log only, never in a range's feed.
//
// The chunk decoded last is kept: pages resume inside it. The readings of
// an LSN never change (LSNs are never reused), so its LSN bounds name it.
//
// Thread safety: a LogReader belongs to one read connection and is used
// under its mutex (SqliteStore declares it GUARDED_BY its read mutex), with
// the series reader of the same connection. Every call runs inside the
// caller's read transaction, so one page sees one state of the file.
#ifndef EDGESYNC_STORE_LOG_READER_H_
#define EDGESYNC_STORE_LOG_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "platform/status.h"
#include "store/chunk_codec.h"
#include "store/range_table.h"
#include "store/series_catalog.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {

class LogReader {
 public:
  // epoch: the store's, which continuation tokens carry.
  Status Open(Db* read_db, SeriesReader* series, std::string epoch);

  // NotFound when the device has no record.
  Status GetDevice(const std::string& device_id, DeviceRecord* device);
  // Every range, by id.
  Status ListRanges(std::vector<RangeInfo>* ranges);
  // Up to max_entries entries after after_lsn, in LSN order.
  Status ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries);
  // UplinkSource::ReadLogLevel: chunks are decoded as for ReadLog, but only
  // the readings of the level are looked up and built.
  Status ReadLogLevel(uint64_t after_lsn, uint32_t level, size_t max_entries, size_t max_scan,
                      std::vector<ChangeEntry>* entries, uint64_t* scanned_to);
  // One page of a range's feed (Store::ReadFeed's contract).
  Status ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page);
  // Store::CompleteThrough: now is the wall time read before `writing`
  // (whether a commit group was being written then).
  Status CompleteThrough(uint64_t lsn, int64_t now, bool writing, int64_t* through_ms);

 private:
  Status FillDeviceEntry(const std::string& device_id, ChangeEntry* e);
  // The chunk holding the first reading after `after` (or the next one):
  // *found false if none; *readings points at its decoded readings.
  Status NextChunk(uint64_t after, bool* found, int64_t* first_lsn, int64_t* last_lsn,
                   const std::vector<ChunkReading>** readings);
  // Entries after after_lsn (of `range` only, when given; readings of
  // priority `level` only, when not 0), scanning at most scan_budget;
  // *last_scanned is where the next page continues.
  Status ReadRows(uint64_t after_lsn, size_t max_entries, const RangeInfo* range, uint32_t level, size_t scan_budget,
                  std::vector<ChangeEntry>* entries, uint64_t* last_scanned);
  Status ResolveStart(uint32_t range_id, const std::vector<RangeRow>& ranges, const FeedStart& from,
                      uint64_t* after_lsn);

  Db* db_ = nullptr;
  SeriesReader* series_ = nullptr;
  std::string epoch_;
  Stmt log_after_;
  Stmt chunk_after_;
  Stmt chunk_data_;
  Stmt device_;
  int64_t decoded_first_ = 0;  // 0 = none
  int64_t decoded_last_ = 0;
  std::vector<ChunkReading> decoded_;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_LOG_READER_H_

// store/series_catalog.h: the series a store holds. A series is one
// (deviceId, metric, unit), interned once as a row of table `series` whose
// id the log, chunks and read view carry instead of the strings, with the
// partition hash of its device (store/types.h PartitionHash).
//
// Series rows are never deleted, so an id, once read, names the same
// series for the file's life and a cached entry never goes stale.
//
// Three parts, one per side of the store:
//   - SeriesIndex: id -> series, shared by the writer and the readers, under
//     its own reader-writer mutex.
//   - SeriesWriter: interning on the write connection, inside the writer's
//     transaction. A series created in a transaction that rolls back is
//     forgotten again (Rollback), so no id of a row that never committed
//     stays cached.
//   - SeriesReader: id -> series on a read connection; a series another
//     process (or connection) wrote since the load is read once and cached.
//
// Thread safety: SeriesIndex may be used from any thread. A SeriesWriter or
// SeriesReader is used under the mutex of its connection (SqliteStore
// declares them GUARDED_BY it); neither keeps a lock of its own.
#ifndef EDGESYNC_STORE_SERIES_CATALOG_H_
#define EDGESYNC_STORE_SERIES_CATALOG_H_

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "platform/mutex.h"
#include "platform/status.h"
#include "store/sqlite_util.h"

namespace edgesync {

struct SeriesInfo {
  std::string device_id;
  std::string metric;  // "" = the series of a device record
  std::string unit;
  uint64_t hash = 0;
  bool known = false;
};

class SeriesIndex {
 public:
  // *info when the id is cached; false otherwise.
  bool Find(int64_t id, SeriesInfo* info) const EXCLUDES(mu_);
  // Caches the series under id (replacing what was there).
  void Put(int64_t id, SeriesInfo info) EXCLUDES(mu_);
  // Caches it unless the id is already known.
  void PutIfUnknown(int64_t id, SeriesInfo info) EXCLUDES(mu_);
  void Forget(int64_t id) EXCLUDES(mu_);

 private:
  void PutLocked(int64_t id, SeriesInfo info) REQUIRES(mu_);

  mutable SharedMutex mu_;
  // index: id. A deque: a vector doubling past 4,096 series held the old
  // and the new array at once (~1.4 MB at 8,000 series), which set the
  // gateway's peak RSS.
  std::deque<SeriesInfo> by_id_ GUARDED_BY(mu_);
};

class SeriesWriter {
 public:
  // Prepares the statements on the write connection and loads every series
  // row of the file into itself and into index.
  Status Open(Db* write_db, SeriesIndex* index);
  // The series' id and its device's hash, created (inside the caller's open
  // transaction) when the file does not hold it yet.
  Status Intern(const std::string& device_id, const std::string& metric, const std::string& unit, int64_t* id,
                uint64_t* hash);
  // The open transaction committed: the series it created stay.
  void Commit() { pending_.clear(); }
  // It rolled back: the series it created are forgotten.
  void Rollback();
  // Series created in the open transaction (for tests and checks).
  size_t pending() const { return pending_.size(); }

 private:
  // Interning goes device first, then a short scan of its metrics: a
  // message's readings mostly share one device, so the last device is
  // remembered and most lookups hash nothing.
  struct Slot {
    std::string metric;
    std::string unit;
    int64_t id;
  };
  struct DeviceSeries {
    uint64_t hash = 0;
    std::vector<Slot> slots;
  };
  SeriesIndex* index_ = nullptr;
  std::unordered_map<std::string, DeviceSeries> by_device_;
  DeviceSeries* last_device_ = nullptr;  // node pointers survive rehashing
  std::string last_device_id_;
  std::vector<std::pair<std::string, int64_t>> pending_;  // (device, id) created in the open transaction
  Stmt find_;
  Stmt insert_;
};

class SeriesReader {
 public:
  Status Open(Db* read_db, SeriesIndex* index);
  // Corruption when the file holds no series of that id (a log row that
  // names one is damaged).
  Status Find(int64_t id, SeriesInfo* info);

 private:
  SeriesIndex* index_ = nullptr;
  Stmt by_id_;
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SERIES_CATALOG_H_

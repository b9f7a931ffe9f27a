// store/sqlite_store.h: the SQLite implementation of Store (internal to
// store/; callers use store.h, and a region hub store/sqlite_hub_store.h).
//
// A thin owner: two connections, their mutexes, the LSN allocator, and the
// components that do the work (docs/ARCHITECTURE.md lists them), each
// belonging to one connection. Writes go through write_db_ (SQLite allows
// one writer anyway); feed, log and query reads go through read_db_, each
// connection under its own mutex, so the uplink's reads never wait for an
// ingest commit (WAL readers see the last committed snapshot). The series
// and origin catalogs' caches are shared by both (their rows are never
// deleted, so a cached id stays valid forever). sqlite_store.cc opens the
// store and hands each call to its component; sqlite_store_log.cc is the
// writer's own work (appends and the other change-log entries).
//
// A region hub's tables are SqliteHubStore's (store/sqlite_hub_store.h),
// which owns the store it was opened on and works on its two connections
// under their mutexes: one writer connection per file, whoever writes.
//
// Thread safety: all public methods may be called from any thread. Which
// mutex guards what is declared with the members (GUARDED_BY, REQUIRES:
// platform/thread_annotations.h) and checked by `make thread-safety`.
#ifndef EDGESYNC_STORE_SQLITE_STORE_H_
#define EDGESYNC_STORE_SQLITE_STORE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/mutex.h"
#include "store/chunk_codec.h"
#include "store/log_reader.h"
#include "store/log_retention.h"
#include "store/lsn_fence.h"
#include "store/origin_catalog.h"
#include "store/query_reader.h"
#include "store/range_table.h"
#include "store/read_view_tables.h"
#include "store/remote_chunk_codec.h"
#include "store/remote_rows.h"
#include "store/series_catalog.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "store/store_lock.h"

namespace edgesync {

class SqliteStore : public Store {
 public:
  explicit SqliteStore(const StoreOptions& options);
  ~SqliteStore() override;

  Status Init();  // opens both connections; the file is known to exist

  Origin origin() const override { return origin_; }
  int schema_version() const override { return schema_version_; }

  Status AppendReadings(const std::vector<Reading>& readings, AppendResult* result) override;
  Status AppendReadingsMarked(const std::vector<Reading>& readings, const CheckpointMark& mark,
                              AppendResult* result) override;
  uint64_t LastLsn() const override { return last_lsn_.load(); }

  Status UpsertDevice(const DeviceRecord& device, uint64_t* lsn) override;
  Status DeleteDevice(const std::string& device_id, uint64_t* lsn) override;
  Status GetDevice(const std::string& device_id, DeviceRecord* device) override;

  Status ListRanges(std::vector<RangeInfo>* ranges) override;
  Status ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) override;
  Status ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) override;
  Status ReadLogLevel(uint64_t after_lsn, uint32_t level, size_t max_entries, size_t max_scan,
                      std::vector<ChangeEntry>* entries, uint64_t* scanned_to) override;
  Status CompleteThrough(uint64_t lsn, int64_t* through_ms) override;

  Status AcquireLease(uint32_t range_id, const std::string& owner, Lease* lease) override;
  Status RenewLease(const Lease& held, Lease* lease) override;
  Status CheckpointLease(const Lease& held, const std::string& continuation, Lease* lease) override;
  Status ReleaseLease(const Lease& held) override;
  Status ListLeases(std::vector<Lease>* leases) override;
  Status TakeLease(const Lease& seen, const std::string& owner, Lease* lease) override;

  Status GetCheckpoint(const std::string& name, uint64_t* value) override;
  Status SetCheckpoint(const std::string& name, uint64_t value) override;
  Status GetFeedPosition(const std::string& region, FeedPosition* position) override;
  Status SetFeedPosition(const std::string& region, const FeedPosition& position, bool reset) override;
  Status AckUpstream(const std::string& target, uint64_t lsn) override;

  Status ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) override;

  Status Query(const QueryRequest& request, std::vector<QueryRow>* rows) override;
  Status ListDevices(std::vector<DeviceSummary>* devices) override;
  Status ListWatermarks(std::vector<OriginWatermark>* watermarks) override;
  Status KeepWatermarks(const std::vector<OriginWatermark>& watermarks) override;
  Status Backlog(uint64_t after_lsn, BacklogInfo* info) override;

  Status AddDeadLetters(const std::vector<DeadLetter>& letters) override;
  Status ListDeadLetters(size_t max, std::vector<DeadLetter>* letters) override;

  Status Prune(PruneResult* result) override;
  Status PruneStep(int64_t max_rows, PruneResult* result) override;
  Status CompactStep(CompactResult* result) override;
  Status Stats(StoreStats* stats) override;

  Status OpenClockPeriod(const std::string& boot_id, int64_t offset_ms, int64_t now_ms, uint32_t* id) override;
  Status ListClockPeriods(std::vector<ClockPeriod>* periods) override;
  Status CorrectClockPeriod(uint32_t id, int64_t delta_ms, int64_t now_ms, bool* done) override;

 private:
  // The hub store works on this store's connections, under their mutexes:
  // write_mu_ / write_db_ (PrepareApply, EndRemoteWrite, the series and
  // origin writers), read_mu_ / read_db_ (the series and origin readers,
  // remote_rows_), and reads origin_, options_ and clock_.
  friend class SqliteHubStore;

  // Write side. mark may be null (no checkpoint to move).
  Status AppendWithMark(const std::vector<Reading>& readings, const CheckpointMark* mark, AppendResult* result)
      EXCLUDES(write_mu_);
  Status AppendOnce(const std::vector<Reading>& readings, const CheckpointMark* mark, AppendResult* result)
      REQUIRES(write_mu_);
  Status MoveCheckpoint(const CheckpointMark& mark) REQUIRES(write_mu_);  // inside or outside a transaction
  // Inside the caller's transaction: retention's DropOldest
  // (store/log_retention.h) with the store's high LSN.
  Status DropOldest(int64_t n, bool acked_only, int64_t* dropped_unacked, int64_t* removed) REQUIRES(write_mu_);
  // from_cache: inside a write transaction after RefreshWriteRanges, the
  // LSN this connection committed last is still the high one unless another
  // connection wrote since (data_version), so no query is needed.
  Status NextLsn(uint64_t* next, bool from_cache = false) REQUIRES(write_mu_);
  // The LSN fence (store/lsn_fence.h): with sync = normal a power
  // cut may take back commits whose LSNs a reader (the uplink, a feed
  // consumer) has already seen, so no LSN past a durably recorded fence is
  // given out. LoadLsnFence at open; ReserveLsns(last) before a write that
  // gives out LSNs up to `last` (outside a transaction); ReleaseLsnFence at
  // a clean close.
  Status LoadLsnFence() REQUIRES(write_mu_);
  Status ReserveLsns(uint64_t last) REQUIRES(write_mu_);
  void ReleaseLsnFence() REQUIRES(write_mu_);
  void RollBackLocalWrite(Txn* txn) REQUIRES(write_mu_);  // rollback, and forget what it cached
  // Reads data_version: when another connection wrote, forgets what this
  // one cached of the file and lets the range table reload.
  Status RefreshWriteRanges() REQUIRES(write_mu_);
  // The end of a read-view or hub write: its caches kept or forgotten.
  Status EndRemoteWrite(Txn* txn, const Status& status) REQUIRES(write_mu_);
  Status WriteDeviceEntry(const DeviceRecord& device, bool deleted, uint64_t* lsn) EXCLUDES(write_mu_);
  // A device record or time correction in a transaction of its own
  // (sqlite_store_log.cc).
  Status CommitLogEntry(const std::function<Status(uint64_t* lsn)>& write, uint64_t* lsn) REQUIRES(write_mu_);
  // The read view's writer and the origin statements a hub's writer
  // shares, opened on first use and kept for the connection's life (a
  // store that never applies remote entries pays nothing).
  Status PrepareApply() REQUIRES(write_mu_);
  // Inside a write transaction: a `log` row (a device record or a time
  // correction) at the next LSN, with its `batches` row; NoteLogRow once
  // it committed.
  Status InsertLogRow(ChangeEntry::Kind kind, int64_t series, int64_t quality, int64_t now, uint64_t* lsn)
      REQUIRES(write_mu_);
  void NoteLogRow(uint64_t lsn) REQUIRES(write_mu_);

  // Picks how a read-only store opens the file (immutable or mode=ro) and
  // holds lock_ as a reader; *name is the SQLite URI.
  Status ReadOnlyName(std::string* name);
  Status InitWriter() REQUIRES(write_mu_);
  // Binds the store (meta gateway_id, epoch) to options_.gateway_id as the
  // options allow (StoreOptions::take_id_while_empty, reidentify), or
  // refuses; *epoch is then the store's epoch.
  Status TakeGatewayId(const std::string& bound_to, std::string* epoch) REQUIRES(write_mu_);
  Status LoadFormerOrigins() REQUIRES(write_mu_);

  StoreOptions options_;
  Clock* clock_;
  // Declared before the connections: destroyed after they are closed.
  StoreLock lock_;
  Origin origin_;
  // Origins this store had before `edgesync reidentify` (meta
  // former_origins): their entries are its own local rows.
  std::vector<Origin> former_origins_;
  int schema_version_ = 0;

  // Each connection's mutex is taken before the catalogs' own (leaf) mutexes.
  Mutex write_mu_;
  Db write_db_ GUARDED_BY(write_mu_);
  RangeTable ranges_ GUARDED_BY(write_mu_);  // store/range_table.h
  int64_t seen_data_version_ GUARDED_BY(write_mu_) = -1;   // as of the last RefreshWriteRanges
  // What this connection knows of the file while no other connection has
  // written (data_version unchanged); -1 / INT64_MIN = unknown.
  int64_t cached_high_lsn_ GUARDED_BY(write_mu_) = -1;
  // No LSN at or below it is given out (the fence found at open after a reboot).
  uint64_t lsn_floor_ GUARDED_BY(write_mu_) = 0;
  LsnFence lsn_fence_ GUARDED_BY(write_mu_);  // the durable fence: LSNs up to it may be given out
  int64_t last_batch_at_ GUARDED_BY(write_mu_) = INT64_MIN;  // written_at of the newest batches row
  LogRetention retention_ GUARDED_BY(write_mu_);  // store/log_retention.h
  std::vector<ChunkReading> chunk_buffer_ GUARDED_BY(write_mu_);  // AppendOnce's group, reused
  std::string block_buffer_ GUARDED_BY(write_mu_);                // its encoded chunk, reused
  ReadViewTables read_view_ GUARDED_BY(write_mu_);  // store/read_view_tables.h

  Mutex read_mu_;
  Db read_db_ GUARDED_BY(read_mu_);
  LogReader log_reader_ GUARDED_BY(read_mu_);      // store/log_reader.h
  QueryReader query_reader_ GUARDED_BY(read_mu_);  // store/query_reader.h

  // The series catalog (store/series_catalog.h): the index is shared, the
  // writer and reader parts belong to their connections.
  SeriesIndex series_index_;
  SeriesWriter series_writer_ GUARDED_BY(write_mu_);
  SeriesReader series_reader_ GUARDED_BY(read_mu_);

  // The origins (store/origin_catalog.h): one cache, each connection's statements.
  OriginCatalog origin_catalog_;
  OriginCatalog::Statements w_origin_ GUARDED_BY(write_mu_);  // prepared by PrepareApply
  OriginCatalog::Statements r_origin_ GUARDED_BY(read_mu_);

  // Lock-free: read by LastLsn and Stats from any thread without a lock.
  std::atomic<uint64_t> last_lsn_{0};
  // Commit groups of readings being written now (AppendOnce): their
  // written_at may be older than a reader's wall time (CompleteThrough).
  std::atomic<int> appending_{0};
  std::atomic<int64_t> rejected_full_{0};
  RemoteRows remote_rows_;  // store/remote_rows.h: damaged blocks counted

  // Cached statements, each on its connection and under its mutex.
  Stmt w_insert_log_ GUARDED_BY(write_mu_);
  Stmt w_insert_chunk_ GUARDED_BY(write_mu_);
  Stmt w_insert_batch_ GUARDED_BY(write_mu_);
  Stmt w_set_checkpoint_ GUARDED_BY(write_mu_);
  Stmt w_high_ GUARDED_BY(write_mu_);
  Stmt w_data_version_ GUARDED_BY(write_mu_);
  Stmt w_count_period_ GUARDED_BY(write_mu_);  // clock_period_table::CountReadings', prepared on first use
  bool apply_prepared_ GUARDED_BY(write_mu_) = false;  // see PrepareApply
};

// Opens (or creates) the store file as Store::Open does, with the same
// checks and the same error context.
Status OpenSqliteStore(const StoreOptions& options, std::unique_ptr<SqliteStore>* store);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SQLITE_STORE_H_

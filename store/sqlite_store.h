// store/sqlite_store.h: the SQLite implementation of Store and of HubStore
// (internal to store/; callers use store.h and hub_store.h).
//
// Two connections: writes go through write_db_ (SQLite allows one writer
// anyway); feed, log and query reads go through read_db_, each connection
// under its own mutex, so the uplink's reads never wait for an ingest commit
// (WAL readers see the last committed snapshot). The series cache (interned
// deviceId/metric/unit) is shared by both; series rows are never deleted, so
// a cached id stays valid forever.
//
// Thread safety: all public methods may be called from any thread. Which
// mutex guards what is declared with the members (GUARDED_BY, REQUIRES:
// platform/thread_annotations.h) and checked by `make thread-safety`.
#ifndef EDGESYNC_STORE_SQLITE_STORE_H_
#define EDGESYNC_STORE_SQLITE_STORE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/mutex.h"
#include "store/chunk_codec.h"
#include "store/hub_store.h"
#include "store/lsn_fence.h"
#include "store/region_feed_compactor.h"
#include "store/remote_chunk_codec.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "store/store_lock.h"

namespace edgesync {

struct SeriesInfo {
  std::string device_id;
  std::string metric;  // "" = the series of a device record
  std::string unit;
  uint64_t hash = 0;
  bool known = false;
};

class SqliteStore : public Store, public HubStore {
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
  Status FeedWatermarks(std::vector<OriginWatermark>* watermarks) override;
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

  // HubStore (sqlite_store_hub.cc): a region hub's tables in this file. One
  // hub is the file's only writer (agent/region_hub.cc locks it), and every
  // write goes through write_mu_: a batch is decided against the mark read
  // inside the transaction that applies it, once. PruneStep is the store's
  // own (the region feed is its remote entries).
  std::string epoch() const override { return origin_.epoch; }
  std::string backend() const override { return "sqlite"; }
  Status ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) override;
  Status HighWater(const Origin& origin, uint64_t* high_water) override;
  // One writer commits the feed in its sequence order, so every shard uses
  // the region's one sequence as its own.
  Status ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) override;
  Status FeedBounds(FeedBoundsInfo* bounds) override;
  // Merges a run of small region feed rows applied longer ago than
  // compact_after_ms (store/region_feed_compactor.h), in one transaction.
  Status CompactFeedStep(CompactResult* result) override;
  Status Stats(HubStoreStats* stats) override;
  // The region feed in its one sequence, under ReadFeed and FeedBounds (and
  // the store's tests): entries with seq > after_seq (*reset when after_seq
  // was pruned: never a silent rewind or skip), and the oldest sequence
  // still served and the head ((0, head) when empty).
  Status ReadRegionFeed(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries,
                        uint64_t* head_seq, bool* reset);
  Status RegionFeedBounds(uint64_t* oldest_seq, uint64_t* head_seq);

 private:
  struct RangeRow {
    RangeInfo info;
    int64_t entries = 0;
    int64_t bytes = 0;
  };

  // Write side. mark may be null (no checkpoint to move).
  Status AppendWithMark(const std::vector<Reading>& readings, const CheckpointMark* mark, AppendResult* result)
      EXCLUDES(write_mu_);
  Status AppendOnce(const std::vector<Reading>& readings, const CheckpointMark* mark, AppendResult* result)
      REQUIRES(write_mu_);
  Status MoveCheckpoint(const CheckpointMark& mark) REQUIRES(write_mu_);  // inside or outside a transaction
  // Space (sqlite_store_retention.cc). CheckSpace: how many of the oldest
  // readings must go before n more fit (0 = they fit).
  Status CheckSpace(size_t n, int64_t* to_drop) REQUIRES(write_mu_);
  // Drops up to n of the oldest readings, only acknowledged ones when
  // acked_only; *removed counts all, *dropped_unacked those not yet
  // acknowledged (data lost by policy, counted).
  Status DropOldest(int64_t n, bool acked_only, int64_t* dropped_unacked, int64_t* removed) REQUIRES(write_mu_);
  // Whether retention should prune before the age (near max_bytes or a full
  // filesystem), with hysteresis in space_low_.
  Status SpaceLow(bool* low) REQUIRES(write_mu_);
  // PruneStep's parts, inside its transaction.
  Status PruneReadings(int64_t max_rows, int64_t now, bool space_low, PruneResult* result) REQUIRES(write_mu_);
  // The highest LSN acknowledged at least ack_grace_ms before now (wall),
  // from a few (time, acknowledged LSN) samples kept in meta.
  Status AckGraceBound(int64_t now, int64_t acked, int64_t* bound) REQUIRES(write_mu_);
  Status PruneTombstones(int64_t max_rows, int64_t now, PruneResult* result) REQUIRES(write_mu_);
  Status PruneRemote(int64_t max_rows, int64_t now, bool space_low, PruneResult* result) REQUIRES(write_mu_);
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
  Status InternSeries(const std::string& device_id, const std::string& metric, const std::string& unit,
                      int64_t* id, uint64_t* hash) REQUIRES(write_mu_);
  void ForgetPendingSeries() REQUIRES(write_mu_);
  void RollBackLocalWrite(Txn* txn) REQUIRES(write_mu_);  // rollback, and forget what it cached
  Status LoadRanges(Db* db, std::vector<RangeRow>* ranges);
  static const RangeRow* FindRange(const std::vector<RangeRow>& ranges, uint32_t id);  // nullptr = none
  Status RefreshWriteRanges() REQUIRES(write_mu_);
  // Adds counts to write_ranges_ and splits; writes the counts to the
  // ranges table only when `persist` (with those still pending).
  Status CountIntoRanges(const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& add, bool persist)
      REQUIRES(write_mu_);
  // After a commit: counts not persisted wait in pending_counts_.
  void KeepPendingCounts(const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& add, bool persisted)
      REQUIRES(write_mu_);
  // Remote chunks (sqlite_store_remote.cc): an entry as a chunk holds it
  // (interning its series), and back; DecodeRemote counts a damaged block
  // in corrupt_chunks_ and names it (what, key) in its Corruption.
  Status ToChunkEntry(const ChangeEntry& e, RemoteChunkEntry* c) REQUIRES(write_mu_);
  Status FromChunkEntry(const RemoteChunkEntry& c, ChangeEntry* e) REQUIRES(read_mu_);
  Status DecodeRemote(std::string_view block, const char* what, int64_t key, std::vector<RemoteChunkEntry>* entries);
  // The same for a `region_chunks` row of either layout (one origin's, or
  // merged by feed compaction: origin 0), with each entry's origin id.
  Status DecodeRegionChunk(std::string_view block, int64_t seq, int64_t row_origin,
                           std::vector<RemoteChunkEntry>* entries, std::vector<int64_t>* origins);
  Status EndRemoteWrite(Txn* txn, const Status& status) REQUIRES(write_mu_);
  Status WriteRangeCounts(const std::unordered_map<uint32_t, std::pair<int64_t, int64_t>>& counts) REQUIRES(write_mu_);
  Status FlushRangeCounts() REQUIRES(write_mu_);
  Status WriteDeviceEntry(const DeviceRecord& device, bool deleted, uint64_t* lsn) EXCLUDES(write_mu_);
  Status SetMetaInt(const std::string& key, int64_t value) REQUIRES(write_mu_);
  Status GetMetaInt(Db* db, const std::string& key, int64_t* value);
  // The origin's id, looked up with `find` on its connection: with `insert`
  // (the write connection's, after PrepareApply) an origin not seen yet is
  // inserted; without (the read connection), *id = 0 for it. The caller
  // holds the statements' mutex (taking their address is checked as a use).
  Status OriginId(const Origin& origin, Stmt* find, Stmt* insert, int64_t* id);
  // Inside ApplyBatches' transaction: decides one valid batch against its
  // origin's mark (marks: origin -> mark and watermark after the batches
  // decided so far in this transaction) and writes what is new; *head is
  // the feed's head, advanced by what it appends.
  struct HubMark {
    uint64_t high_water = 0;
    int64_t complete_ms = 0;
    int64_t complete_seq = 0;  // the feed sequence the watermark is valid from
  };
  Status ApplyHubBatch(const OriginBatch& batch, int64_t now, int64_t* head,
                       std::unordered_map<std::string, HubMark>* marks, ApplyResult* result) REQUIRES(write_mu_);
  // The origin's id on the write connection without creating it (0 = none).
  Status FindOriginForWrite(const Origin& origin, int64_t* id) REQUIRES(write_mu_);
  void ForgetOrigins();
  // The read view's statements, prepared on first use and kept for the
  // connection's life (a store that never applies remote entries pays nothing).
  Status PrepareApply() REQUIRES(write_mu_);
  // One origin's entries of a read view page (sorted here), those the read
  // view does not hold yet written as chunks; *added counts them.
  Status ApplyViewOrigin(int64_t origin_id, std::vector<const ChangeEntry*>* group, int64_t now, int64_t* added)
      REQUIRES(write_mu_);
  // *since_renewal_ms (may be null): see SinceRenewal in sqlite_store_coord.cc.
  Status LoadLease(uint32_t range_id, bool* found, Lease* lease, int64_t* since_renewal_ms) REQUIRES(write_mu_);
  // Gives the lease on range_id to owner if its version is still `version`,
  // stamped with now_ms and this boot's monotonic time; *moved tells whether
  // it was (else another holder got there first).
  Status SetLeaseOwner(uint32_t range_id, const std::string& owner, int64_t version, int64_t now_ms, bool* moved)
      REQUIRES(write_mu_);

  // Compaction (sqlite_store_compact.cc). The last LSN compacted: chunks at
  // or below it are spans (any connection).
  Status CompactedUpTo(Db* db, int64_t* upto);
  // A span's readings by LSN into *readings (index lsn - first): its series
  // blocks decoded and checked to fill [first, last] exactly once.
  Status DecodeSpan(Db* db, std::string_view marker, int64_t first, int64_t last, std::vector<ChunkReading>* readings);
  // Every reading of the chunk row (commit chunk or span) in LSN order.
  Status DecodeChunkRow(Db* db, std::string_view data, int64_t first, int64_t last, std::vector<ChunkReading>* readings);

  // Read side.
  // Inside a write transaction: a `log` row (a device record or a time
  // correction) at the next LSN, with its `batches` row; NoteLogRow once
  // it committed.
  Status InsertLogRow(ChangeEntry::Kind kind, int64_t series, int64_t quality, int64_t now, uint64_t* lsn)
      REQUIRES(write_mu_);
  void NoteLogRow(uint64_t lsn) REQUIRES(write_mu_);
  Status SeriesById(int64_t id, SeriesInfo* info) REQUIRES(read_mu_);
  Status FillDeviceEntry(const std::string& device_id, ChangeEntry* e) REQUIRES(read_mu_);
  // The chunk holding the first reading after `after` (or the next one):
  // *found false if none; *readings points at its decoded readings.
  Status NextChunk(uint64_t after, bool* found, int64_t* first_lsn, int64_t* last_lsn,
                   const std::vector<ChunkReading>** readings) REQUIRES(read_mu_);
  Status ReadRows(uint64_t after_lsn, size_t max_entries, const RangeInfo* range, size_t scan_budget,
                  std::vector<ChangeEntry>* entries, uint64_t* last_scanned) REQUIRES(read_mu_);
  Status ResolveStart(uint32_t range_id, const std::vector<RangeRow>& ranges, const FeedStart& from,
                      uint64_t* after_lsn) REQUIRES(read_mu_);
  Status OriginById(int64_t id, Origin* origin) REQUIRES(read_mu_);

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
  int64_t wal_max_bytes_ = 0;  // the WAL's size once it has grown to its limit

  // Each connection's mutex is taken before the caches' (series_mu_, origins_mu_).
  // Region feed compaction (CompactFeedStep): one step at a time; it reads
  // under read_mu_, builds the merged row under neither, and swaps it in
  // under write_mu_.
  Mutex feed_compact_mu_ ACQUIRED_BEFORE(read_mu_, write_mu_);
  RegionFeedCompactor feed_compactor_ GUARDED_BY(feed_compact_mu_);
  Mutex write_mu_ ACQUIRED_BEFORE(series_mu_, origins_mu_);
  Db write_db_ GUARDED_BY(write_mu_);
  std::vector<RangeRow> write_ranges_ GUARDED_BY(write_mu_);  // sorted by min; all ranges
  int64_t write_data_version_ GUARDED_BY(write_mu_) = -1;  // -1: reload write_ranges_
  int64_t seen_data_version_ GUARDED_BY(write_mu_) = -1;   // as of the last RefreshWriteRanges
  // What this connection knows of the file while no other connection has
  // written (data_version unchanged); -1 / INT64_MIN = unknown.
  int64_t cached_high_lsn_ GUARDED_BY(write_mu_) = -1;
  // No LSN at or below it is given out (the fence found at open after a reboot).
  uint64_t lsn_floor_ GUARDED_BY(write_mu_) = 0;
  LsnFence lsn_fence_ GUARDED_BY(write_mu_);  // the durable fence: LSNs up to it may be given out
  int64_t last_batch_at_ GUARDED_BY(write_mu_) = INT64_MIN;  // written_at of the newest batches row
  // Entry/byte counts of ranges (they only drive splits) are written to the
  // ranges table at most every kRangeFlushMs, not in every commit: a small
  // commit then touches the log and its index only. A kill -9 loses at most
  // that long a stretch of counts, which only delays a split.
  std::unordered_map<uint32_t, std::pair<int64_t, int64_t>> pending_counts_ GUARDED_BY(write_mu_);
  int64_t last_range_flush_ms_ GUARDED_BY(write_mu_) = 0;
  bool space_low_ GUARDED_BY(write_mu_) = false;  // retention is pruning early for space (hysteresis)
  int64_t last_space_log_ms_ GUARDED_BY(write_mu_) = INT64_MIN;
  int64_t last_drop_log_ms_ GUARDED_BY(write_mu_) = 0;  // warnings about dropped readings, rate-limited
  int64_t drop_log_pending_ GUARDED_BY(write_mu_) = 0;
  int64_t last_acked_drop_log_ms_ GUARDED_BY(write_mu_) = 0;  // the same for acknowledged ones
  int64_t acked_drop_log_pending_ GUARDED_BY(write_mu_) = 0;
  // (device, id) created in the open transaction.
  std::vector<std::pair<std::string, int64_t>> pending_series_ GUARDED_BY(write_mu_);
  std::vector<ChunkReading> chunk_buffer_ GUARDED_BY(write_mu_);  // AppendOnce's group, reused
  std::string block_buffer_ GUARDED_BY(write_mu_);                // its encoded chunk, reused
  // An applied batch's or page's chunk, reused.
  std::vector<RemoteChunkEntry> remote_buffer_ GUARDED_BY(write_mu_);
  // (series, origin) pairs view_series holds (committed), and those the open
  // transaction added: the read view inserts each pair once, not per entry.
  // At most kMaxKnownViewSeries remembered (~50 bytes each on a board).
  static constexpr size_t kMaxKnownViewSeries = 20000;
  std::set<std::pair<int64_t, int64_t>> view_series_known_ GUARDED_BY(write_mu_);
  std::set<std::pair<int64_t, int64_t>> pending_view_series_ GUARDED_BY(write_mu_);

  Mutex read_mu_ ACQUIRED_BEFORE(series_mu_, origins_mu_);
  Db read_db_ GUARDED_BY(read_mu_);
  // The chunk decoded last (read side): feed and log pages resume inside
  // it. The readings of an LSN never change (LSNs are never reused), so its
  // LSN bounds name it (a span keeps the first LSN of its first chunk).
  // 0 = none.
  int64_t decoded_first_ GUARDED_BY(read_mu_) = 0;
  int64_t decoded_last_ GUARDED_BY(read_mu_) = 0;
  std::vector<ChunkReading> decoded_ GUARDED_BY(read_mu_);
  std::vector<RemoteChunkEntry> region_decoded_ GUARDED_BY(read_mu_);  // ReadRegionFeed's, reused
  std::vector<int64_t> region_origins_ GUARDED_BY(read_mu_);           // their origin ids

  // by_device_ belongs to the write side, so ingest's hot path takes no
  // other lock; series_ (id -> info) is shared with readers under
  // series_mu_. Interning goes device first, then a short scan of its
  // metrics: a message's readings mostly share one device, so the last
  // device is remembered and most lookups hash nothing.
  struct SeriesSlot {
    std::string metric;
    std::string unit;
    int64_t id;
  };
  struct DeviceSeries {
    uint64_t hash = 0;
    std::vector<SeriesSlot> slots;
  };
  std::unordered_map<std::string, DeviceSeries> by_device_ GUARDED_BY(write_mu_);
  // Node pointers survive rehashing.
  DeviceSeries* last_device_ GUARDED_BY(write_mu_) PT_GUARDED_BY(write_mu_) = nullptr;
  std::string last_device_id_ GUARDED_BY(write_mu_);
  SharedMutex series_mu_;
  // index: id. A deque: a vector doubling past 4,096 series held the old
  // and the new array at once (~1.4 MB at the reference workload's 8,000
  // series, ~112 bytes each), which set the gateway's peak RSS.
  std::deque<SeriesInfo> series_ GUARDED_BY(series_mu_);

  Mutex origins_mu_;
  std::unordered_map<std::string, int64_t> origin_ids_ GUARDED_BY(origins_mu_);
  std::unordered_map<int64_t, Origin> origins_ GUARDED_BY(origins_mu_);

  // Lock-free: read by LastLsn and Stats from any thread without a lock.
  std::atomic<uint64_t> last_lsn_{0};
  // Commit groups of readings being written now (AppendOnce): their
  // written_at may be older than a reader's wall time (CompleteThrough).
  std::atomic<int> appending_{0};
  std::atomic<int64_t> rejected_full_{0};
  std::atomic<int64_t> corrupt_chunks_{0};  // remote chunks refused as damaged, since open

  // Cached statements, each on its connection and under its mutex.
  Stmt w_insert_log_ GUARDED_BY(write_mu_);
  Stmt w_insert_chunk_ GUARDED_BY(write_mu_);
  Stmt w_insert_series_ GUARDED_BY(write_mu_);
  Stmt w_find_series_ GUARDED_BY(write_mu_);
  Stmt w_insert_batch_ GUARDED_BY(write_mu_);
  Stmt w_set_checkpoint_ GUARDED_BY(write_mu_);
  Stmt w_high_ GUARDED_BY(write_mu_);
  Stmt w_update_range_ GUARDED_BY(write_mu_);
  Stmt w_data_version_ GUARDED_BY(write_mu_);
  Stmt w_count_period_ GUARDED_BY(write_mu_);  // clock_period_table::CountReadings', prepared on first use
  Stmt r_log_after_ GUARDED_BY(read_mu_);
  Stmt r_chunk_after_ GUARDED_BY(read_mu_);
  Stmt r_chunk_data_ GUARDED_BY(read_mu_);
  Stmt r_series_by_id_ GUARDED_BY(read_mu_);
  Stmt r_device_ GUARDED_BY(read_mu_);
  // Apply path (write side): see PrepareApply.
  bool apply_prepared_ GUARDED_BY(write_mu_) = false;
  Stmt w_insert_region_chunk_ GUARDED_BY(write_mu_);
  Stmt w_insert_view_chunk_ GUARDED_BY(write_mu_);
  Stmt w_insert_view_series_ GUARDED_BY(write_mu_);
  Stmt w_view_overlap_ GUARDED_BY(write_mu_);
  Stmt w_region_head_ GUARDED_BY(write_mu_);
  Stmt w_get_high_water_ GUARDED_BY(write_mu_);
  Stmt w_put_high_water_ GUARDED_BY(write_mu_);
  Stmt w_find_origin_ GUARDED_BY(write_mu_);
  Stmt w_insert_origin_ GUARDED_BY(write_mu_);
  // HighWater's (read side), prepared on its first call.
  Stmt r_find_origin_ GUARDED_BY(read_mu_);
  Stmt r_get_high_water_ GUARDED_BY(read_mu_);
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SQLITE_STORE_H_

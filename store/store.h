// store/store.h: the gateway's durable memory (SQLite, WAL).
//
// Holds every accepted reading until the region has it, ordered by LSN in a
// change log that is readable per partition key range; device records with
// soft delete; leases and checkpoints of feed consumers; the read view of
// other gateways' data (remote entries keyed by origin and origin LSN); and,
// on a region hub, the per-origin high-water marks and the region feed
// (reached through HubStore, store/hub_store.h).
//
// Errors are Status values; SQLite never throws through here and <sqlite3.h>
// stays out of this header.
//
// Thread safety: a Store may be used from several threads at once (ingest,
// uplink, feed pull); writes are serialised inside. Several processes may
// open the same file (lease consumers); SQLite's locking arbitrates.
#ifndef EDGESYNC_STORE_STORE_H_
#define EDGESYNC_STORE_STORE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/clock.h"
#include "platform/status.h"
#include "store/feed_cursor.h"
#include "store/store_defaults.h"
#include "store/time_correction.h"
#include "store/types.h"

namespace edgesync {

struct StoreOptions {
  std::string path;             // the SQLite file; its directory must exist
  std::string gateway_id;       // becomes the origin's gateway id
  enum class Sync { kFull, kNormal };
  // kFull: a committed batch survives power loss (fsync on every commit).
  // kNormal: survives a crash of the process (kill -9); a power cut may lose
  // the commits since the last sync (WAL checkpoint) but never corrupts the
  // file, and their LSNs are never given again (store/lsn_fence.cc).
  Sync sync = Sync::kNormal;
  int initial_ranges = store_options::kInitialRanges;
  int64_t split_max_entries = store_options::kSplitMaxEntries;
  int64_t split_max_bytes = store_options::kSplitMaxBytes;
  int64_t retention_age_ms = store_options::kRetentionAgeS * 1000;
  // Under normal space, an acknowledged reading is kept at least this long
  // after its acknowledgement as well (a region that loses its store is
  // refilled from here; see store_options::kAckGraceS). Space pressure
  // prunes acknowledged readings oldest first regardless. 0 = none.
  int64_t ack_grace_ms = store_options::kAckGraceS * 1000;
  enum class DiskPolicy { kRejectNew, kDropOldest };
  DiskPolicy disk_policy = DiskPolicy::kRejectNew;
  int64_t max_bytes = store_options::kMaxBytes;  // 0 = only the filesystem limits the store
  int64_t tombstone_retention_ms = store_options::kTombstoneRetentionS * 1000;
  // Entries of other origins (the read view on a gateway, the region feed on
  // a hub) applied longer ago than this are pruned.
  int64_t remote_retention_ms = store_options::kReadViewRetentionS * 1000;
  // The filesystem "nears full" when its free bytes plus the store's own
  // free pages fall below this: retention then prunes acknowledged readings
  // (and remote entries) oldest first, before their age. So does a store past
  // 90% of max_bytes, down to 80%. 0 = no filesystem check.
  int64_t min_free_bytes = store_options::kMinFreeBytes;
  int64_t dead_letter_cap = store_options::kDeadLetterCap;
  int64_t lease_expiry_ms = store_options::kLeaseExpiryMs;
  // Compaction (CompactStep): acknowledged chunks written longer ago than
  // compact_after_ms become per-series blocks, in spans of up to
  // compact_span_readings readings (the store's own size, store_defaults.h;
  // no config option sets it: tests set it to compact small spans).
  int64_t compact_after_ms = store_options::kCompactAfterS * 1000;
  int64_t compact_span_readings = store_options::kCompactSpanReadings;
  // A span whose series blocks would take more room than its commit chunks
  // stays as they are (store/chunk_compactor.h); only tests turn this off,
  // to compact small spans whatever their size (no config option).
  bool compact_only_smaller = store_options::kCompactOnlySmaller;
  bool create_if_missing = true;
  // Read only (`edgesync query`, `feed`): nothing is written, migrated or
  // checkpointed, and no -wal or -shm file is created beside the store
  // (store_lock.h says how). A store of another schema version is refused.
  bool read_only = false;
  Clock* clock = nullptr;       // nullptr = SystemClock()
  // Check run at open. kQuick (PRAGMA quick_check) reads every page and
  // finds damaged pages and b-trees in time linear in the file size; kFull
  // (integrity_check) also cross-checks indexes (slower); kNone skips it.
  enum class OpenCheck { kQuick, kFull, kNone };
  OpenCheck open_check = OpenCheck::kQuick;
  // How long a write waits for another process holding the file's write
  // lock (lease consumers in other processes) before Unavailable.
  int busy_timeout_ms = 5000;
  // Page cache of each of the store's two connections (writer, reader), in
  // KiB. SQLite's default (2,000 KiB) filled over a paced run: the writer
  // touches a new 1 KiB page for every ~300 readings appended, so its cache
  // held ~2 MB of pages it never read again (smaps of the gateway in
  // tests/bench/storage_bench.cc). What a commit needs again is the
  // b-trees' interior pages, the last leaves and the small tables, far less
  // than this; the rest is one pread from the OS page cache away.
  int64_t cache_kib = 256;
  // A store bound to another gateway id than gateway_id (a writable open):
  // - with take_id_while_empty, a store holding no entry of its own (none
  //   ingested, ever: no region knows its origin) takes gateway_id and keeps
  //   its epoch. The gateway role sets it, so an id corrected after a first
  //   start (before any reading) just takes effect.
  // - with reidentify, any store takes gateway_id as a new origin (gateway_id,
  //   a fresh epoch): its entries keep their LSNs and stay local rows, the
  //   uplink's checkpoint stays (a region joins the new origin at it), and
  //   the old origin is a former one: its entries served back by a region
  //   feed are this store's own (not applied to the read view, as the
  //   current origin's). What regions acknowledged stays there under the old
  //   origin (`edgesync reidentify`).
  // - otherwise the open is refused.
  bool take_id_while_empty = false;
  bool reidentify = false;
};

// A partition key range: hashes h with min <= h < max. The last range has
// max == UINT64_MAX and also holds UINT64_MAX itself.
struct RangeInfo {
  uint32_t id = 0;
  uint64_t min = 0;
  uint64_t max = 0;
  uint32_t parent = 0;          // 0 = none (an initial range)
  bool active = true;           // false once split into children
  bool Contains(uint64_t hash) const { return hash >= min && (hash < max || (max == UINT64_MAX)); }
};

// Where a feed read starts.
struct FeedStart {
  enum class Kind { kBeginning, kNow, kLsn, kTime, kToken };
  Kind kind = Kind::kBeginning;
  uint64_t lsn = 0;             // kLsn: entries after this LSN
  int64_t wall_ms = 0;          // kTime: entries written at or after this time
  std::string token;            // kToken: a continuation from an earlier page
};

struct FeedPage {
  std::vector<ChangeEntry> entries;   // LSN order
  std::string continuation;           // opaque: range, epoch, LSN
};

struct Lease {
  uint32_t range_id = 0;
  std::string owner;                  // "" = free
  std::string continuation;
  int64_t renewed_at_ms = 0;          // wall time of the last acquire/renew, for people: expiry
                                      // runs on the renewing boot's monotonic clock instead
  int64_t version = 0;                // compare-and-set token
};

// A named checkpoint moved forward in the same transaction as an append:
// ingest's intake journal records how far the store holds it, so a record
// is either replayed or already stored, never both.
struct CheckpointMark {
  std::string name;
  uint64_t value = 0;
};

struct AppendResult {
  uint64_t first_lsn = 0;
  uint64_t last_lsn = 0;
  int64_t dropped_oldest = 0;         // unacknowledged readings dropped by drop-oldest
};

// An entry written by another gateway (or this one, before a wipe).
struct RemoteEntry {
  Origin origin;
  uint64_t origin_lsn = 0;
  ChangeEntry entry;                  // entry.lsn == origin_lsn
};

struct RegionFeedEntry {
  // The entry's place in the region feed: its shard (RegionShardOf of the
  // origin's gateway id) and that shard's sequence number.
  int shard = 0;
  uint64_t seq = 0;
  RemoteEntry remote;
};

struct QueryRequest {
  // The largest answer a query gives (memory stays bounded by it); a larger
  // limit is InvalidArgument. A caller that wants to know whether its limit
  // cut the answer asks for one row more than it shows.
  static constexpr int64_t kMaxRows = 1000001;
  std::string device_id;
  std::string metric;                 // "" = every metric
  int64_t from_ms = INT64_MIN;        // inclusive
  int64_t to_ms = INT64_MAX;          // exclusive
  int64_t limit = 1000;
  // false: the oldest `limit` rows, oldest first; true: the newest `limit`
  // rows, newest first (what a person looking at a device wants).
  bool newest_first = false;
};

struct QueryRow {
  Origin origin;                      // this store's origin for local rows
  uint64_t lsn = 0;                   // LSN at the origin
  bool local = false;
  Reading reading;
};

// A device the store holds readings or a record of: one row per (device,
// origin), local rows for this store's own origin and read-view rows for
// the others.
struct DeviceSummary {
  std::string device_id;
  Origin origin;
  bool local = false;
  int64_t readings = 0;               // 0: a record only (first/last 0)
  int64_t first_ts_ms = 0;
  int64_t last_ts_ms = 0;
  bool has_record = false;            // the origin's latest record of the device, not deleted
  DeviceRecord record{};
};

// What is not yet acknowledged upstream beyond what LSNs tell.
struct BacklogInfo {
  int64_t oldest_written_ms = 0;      // wall time the oldest unacknowledged entry was written; 0 = none
  double avg_entry_bytes = 0;         // the log's mean entry size (the store's own accounting)
};

struct DeadLetter {
  int64_t at_ms = 0;
  std::string topic;
  std::string head;                   // the payload's first bytes (bounded)
  std::string reason;
};

struct PruneResult {
  int64_t readings = 0;               // acknowledged local readings pruned
  int64_t early = 0;                  // of those, pruned before their age because space ran low
  int64_t tombstones = 0;
  int64_t remote = 0;                 // read view / region feed entries
  bool more = false;                  // PruneStep: stopped at its row bound; call again
  bool space_low = false;             // the step found the store near its size or filesystem limit
  void Add(const PruneResult& o) {
    readings += o.readings;
    early += o.early;
    tombstones += o.tombstones;
    remote += o.remote;
  }
};

struct CompactResult {
  int64_t spans = 0;                  // spans written (0 or 1 per step)
  int64_t readings = 0;               // readings they hold
  int64_t bytes_before = 0;           // the commit chunks' blobs they replaced
  int64_t bytes_after = 0;            // their series blocks' blobs and marker
  int64_t kept = 0;                   // spans left as commit chunks: blocks would not be smaller
  int64_t kept_readings = 0;          // readings they hold
  bool more = false;                  // another span is due now
  void Add(const CompactResult& o) {
    spans += o.spans;
    kept += o.kept;
    kept_readings += o.kept_readings;
    readings += o.readings;
    bytes_before += o.bytes_before;
    bytes_after += o.bytes_after;
  }
};

struct StoreStats {
  uint64_t last_lsn = 0;
  uint64_t acked_lsn = 0;             // highest LSN acknowledged upstream by any target
  int64_t entries = 0;                // local change-log entries held
  int64_t remote_entries = 0;
  int64_t file_bytes = 0;
  int64_t dropped_oldest = 0;         // total, since creation
  // Acknowledged readings dropped to make room for new ones when the store
  // or its filesystem was full (retention's own pruning not included), since
  // creation.
  int64_t dropped_acked = 0;
  int64_t rejected_full = 0;          // appends refused because the store was full
  int64_t dead_letters = 0;          // total added since creation (the held ones are capped)
  int64_t corrupt_chunks = 0;        // read view / region chunks refused as damaged, since open
};

// A reader's position in a region hub's feed: the hub store's epoch and the
// last sequence number read in each shard (store/feed_cursor.h). Sequences
// of different epochs are unrelated (a re-created hub store starts again).
// An origin's completeness watermark (sync/PROTOCOL.md, "Completeness
// watermarks"): every reading its gateway committed before
// complete_through_ms (Unix ms, the gateway's commit time) is held.
struct OriginWatermark {
  Origin origin;
  int64_t complete_through_ms = 0;
  // A hub's: the sequence, in the origin's shard of the region feed, at
  // which everything of the origin the watermark covers is in the feed.
  uint64_t seq = 0;
};

struct FeedPosition {
  std::string epoch;  // "" = no epoch heard yet
  ShardPositions shards{};
  // Set by GetFeedPosition when the store held only a position of the
  // single-sequence feed (before shards): that number means nothing in a
  // composite feed, so the position starts over (epoch "", every shard 0)
  // and the reader says so; the read view stays (applies are idempotent).
  uint64_t single_seq = 0;
};

// The gateway store's clients each reach it through the interface of their
// role, holding only what they call (a unit test's fake implements that and
// nothing else). Store is the union that Store::Open returns; a method that
// two roles share is declared again in Store, so a call through Store is
// never ambiguous. The region hub's methods are not here: a hub reaches its
// tables through HubStore (store/hub_store.h), which the SQLite store also
// implements.

// Ingest (agent/ingest StoreSink): appends readings with the intake
// checkpoint, the dead letters of refused payloads, and the check whether a
// redelivered reading is held.
class ReadingLog {
 public:
  virtual ~ReadingLog() = default;
  // Readings, committed in one transaction (group commit); each gets the
  // next LSN. All are validated first (ValidateReading): one invalid reading
  // fails the whole call with InvalidArgument. NoSpace when full and the
  // policy is reject-new.
  virtual Status AppendReadings(const std::vector<Reading>& readings, AppendResult* result) = 0;
  // The same, and checkpoint mark.name moves forward to mark.value (never
  // back; see SetCheckpoint) in the same transaction.
  virtual Status AppendReadingsMarked(const std::vector<Reading>& readings, const CheckpointMark& mark,
                                      AppendResult* result) = 0;
  // Named checkpoints that only move forward (store/checkpoint_names.h).
  // Missing = 0.
  virtual Status GetCheckpoint(const std::string& name, uint64_t* value) = 0;
  // Rejected payloads, capped (oldest dropped).
  virtual Status AddDeadLetters(const std::vector<DeadLetter>& letters) = 0;
  // Union of local readings and the read view, deduplicated by (origin, LSN).
  virtual Status Query(const QueryRequest& request, std::vector<QueryRow>* rows) = 0;
};

// Device records (the base of per-device documents). Only a record's latest
// version stays in the log.
class DeviceRecords {
 public:
  virtual ~DeviceRecords() = default;
  virtual Status UpsertDevice(const DeviceRecord& device, uint64_t* lsn) = 0;
  virtual Status DeleteDevice(const std::string& device_id, uint64_t* lsn) = 0;
  virtual Status GetDevice(const std::string& device_id, DeviceRecord* device) = 0;
};

// The uplink (sync/uplink.h): the log in LSN order and its position upstream.
class UplinkSource {
 public:
  virtual ~UplinkSource() = default;
  virtual Origin origin() const = 0;  // what the batches are of
  virtual uint64_t LastLsn() const = 0;
  // The whole log in LSN order: entries with lsn > after_lsn. LSNs may skip
  // (compacted device records, pruned or dropped readings).
  virtual Status ReadLog(uint64_t after_lsn, size_t max_entries, std::vector<ChangeEntry>* entries) = 0;
  // The readings of priority level `level` (QualityPriority of their
  // quality, 1..kMaxPriorityLevel) after after_lsn, in LSN order: at most
  // max_entries, looking at no more than max_scan entries of the log.
  // *scanned_to: the last LSN looked at (after_lsn when none), so every
  // reading of that level in (after_lsn, *scanned_to] is in *entries. For
  // the uplink's priority batches (sync/uplink.h). This one reads the whole
  // log through ReadLog; a store reads it without building the entries it
  // leaves out.
  virtual Status ReadLogLevel(uint64_t after_lsn, uint32_t level, size_t max_entries, size_t max_scan,
                              std::vector<ChangeEntry>* entries, uint64_t* scanned_to) {
    entries->clear();
    *scanned_to = after_lsn;
    std::vector<ChangeEntry> page;
    size_t scanned = 0;
    while (entries->size() < max_entries && scanned < max_scan) {
      ES_RETURN_IF_ERROR(ReadLog(*scanned_to, std::min<size_t>(max_scan - scanned, 4096), &page));
      if (page.empty()) break;
      for (ChangeEntry& e : page) {
        if (entries->size() >= max_entries) break;
        ++scanned;
        *scanned_to = e.lsn;
        if (e.kind == ChangeEntry::Kind::kReading && QualityPriority(e.reading.quality) == level) {
          entries->push_back(std::move(e));
        }
      }
    }
    return Status::Ok();
  }
  // The completeness watermark of a batch ending at lsn: a wall time T such
  // that every reading committed before T (its commit group's written_at)
  // has an LSN at or below lsn. The written_at of the first commit group
  // past lsn, or, when none is committed, now (or the newest group's
  // written_at while a commit is under way). 0 = none (an empty log).
  // Assumes the wall clock does not step back (the uplink uses it only
  // while the clock is trusted).
  virtual Status CompleteThrough(uint64_t lsn, int64_t* through_ms) = 0;
  virtual Status GetCheckpoint(const std::string& name, uint64_t* value) = 0;
  virtual Status SetCheckpoint(const std::string& name, uint64_t value) = 0;
  // Marks entries up to lsn as acknowledged upstream by target (a region):
  // they become prunable after the retention age.
  virtual Status AckUpstream(const std::string& target, uint64_t lsn) = 0;
};

// The feed puller (sync/feed_puller.h): the read view of other gateways.
class ReadViewWriter {
 public:
  virtual ~ReadViewWriter() = default;
  // This store's origin: its own entries served back by a feed are not
  // applied to the read view.
  virtual Origin origin() const = 0;
  // Applies entries idempotently by (origin, origin LSN). *applied counts
  // the entries that were new.
  virtual Status ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) = 0;
  // The read view's position in a region's feed (checkpoint "feed:<region>"
  // holds its seq). Within one epoch the position only moves forward
  // (InvalidArgument otherwise); a position of another epoch replaces the
  // old one whole. reset = the hub's explicit reset: the position is
  // replaced whatever it was (a restored hub store may be behind us).
  virtual Status GetFeedPosition(const std::string& region, FeedPosition* position) = 0;
  virtual Status SetFeedPosition(const std::string& region, const FeedPosition& position, bool reset) = 0;
  // Keeps the origins' watermarks a feed page carried (each only raised),
  // once the page's entries and position are in: the read view then holds
  // every reading of the origin committed before it.
  virtual Status KeepWatermarks(const std::vector<OriginWatermark>& watermarks) = 0;
};

// Readers: `edgesync query`, `devices`, `feed`, dead letters.
class StoreReader {
 public:
  virtual ~StoreReader() = default;
  virtual Status Query(const QueryRequest& request, std::vector<QueryRow>* rows) = 0;
  // Every device with readings, local and in the read view, by device id
  // then origin. Scans the tables: for the CLI, not for a hot path.
  virtual Status ListDevices(std::vector<DeviceSummary>* devices) = 0;
  // The watermark of every origin this store knows one of: a gateway's
  // read view (kept from the feeds), a hub's marks. Not this store's own
  // origin (its readings are all here).
  virtual Status ListWatermarks(std::vector<OriginWatermark>* watermarks) = 0;
  virtual Status ListRanges(std::vector<RangeInfo>* ranges) = 0;
  // At most max_entries of the range, in LSN order, after `from`. A token of
  // a split parent is accepted by its children; a token of another epoch or
  // of an unrelated range is InvalidArgument; reading a range that has split
  // is NotFound naming its children.
  virtual Status ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) = 0;
  // The newest dead letters first, at most max.
  virtual Status ListDeadLetters(size_t max, std::vector<DeadLetter>* letters) = 0;
};

// Consumers of the per-range change feed that share it by leases
// (`edgesync feed --lease`). Every change is a compare-and-set on version.
class RangeLeases {
 public:
  virtual ~RangeLeases() = default;
  virtual Status ListRanges(std::vector<RangeInfo>* ranges) = 0;
  virtual Status ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) = 0;
  // Acquire succeeds on a free or expired lease (or one the owner holds).
  // Expired: not renewed for lease_expiry_ms of the monotonic clock of this
  // boot (shared by every process on the machine), or renewed in another
  // boot. A wall-clock step, forward or back, neither expires a live lease
  // nor keeps a dead owner's.
  virtual Status AcquireLease(uint32_t range_id, const std::string& owner, Lease* lease) = 0;
  virtual Status RenewLease(const Lease& held, Lease* lease) = 0;
  virtual Status CheckpointLease(const Lease& held, const std::string& continuation, Lease* lease) = 0;
  virtual Status ReleaseLease(const Lease& held) = 0;
  virtual Status ListLeases(std::vector<Lease>* leases) = 0;
  // Takes a lease another owner holds, expired or not, if it is still at
  // seen.version (compare-and-set): how consumers rebalance when one joins
  // (the change-feed-processor model's steal). The continuation stays: the
  // new owner resumes from the last checkpoint. The former owner learns on
  // its next renew or checkpoint (Conflict). Conflict if the version moved.
  virtual Status TakeLease(const Lease& seen, const std::string& owner, Lease* lease) = 0;
};

// Retention and compaction (store/retention.h).
class StoreMaintenance {
 public:
  virtual ~StoreMaintenance() = default;
  // Retention: acknowledged readings older than the retention age; tombstones
  // past their retention; remote entries (read view, region feed) past
  // remote_retention_ms; when space runs low (see min_free_bytes), acknowledged
  // readings and remote entries oldest first regardless of age. Never an
  // unacknowledged reading (those go only by drop-oldest, at append).
  // Prune runs PruneStep until nothing is left (tests, the CLI).
  virtual Status Prune(PruneResult* result) = 0;
  // One bounded step of the same: one short write transaction deleting at
  // most max_rows rows of each kind (readings, tombstones, remote entries),
  // oldest first; result->more says whether more is due. A region feed
  // reader behind what a step pruned gets an explicit reset.
  virtual Status PruneStep(int64_t max_rows, PruneResult* result) = 0;
  // Compaction: one bounded step rewriting the oldest span of acknowledged
  // commit chunks older than compact_after_ms as one block per series (the
  // decoding and encoding run outside the write lock; the rewrite is one
  // short transaction, so a crash leaves either the chunks or the span).
  // Readers by LSN, retention and queries see the same readings before and
  // after. Nothing due: result->spans == 0.
  virtual Status CompactStep(CompactResult* result) = 0;
};

// The figures of `status`, /metrics and the status page (agent/store_figures.h).
class StoreGauges {
 public:
  virtual ~StoreGauges() = default;
  virtual Origin origin() const = 0;
  virtual uint64_t LastLsn() const = 0;
  virtual Status GetCheckpoint(const std::string& name, uint64_t* value) = 0;
  virtual Status ListRanges(std::vector<RangeInfo>* ranges) = 0;
  // The entries after after_lsn (the upstream checkpoint): when the oldest
  // was written, and the mean size used to estimate the backlog's bytes.
  virtual Status Backlog(uint64_t after_lsn, BacklogInfo* info) = 0;
  virtual Status Stats(StoreStats* stats) = 0;
};

// This origin's untrusted clock periods (store/time_correction.h): ingest
// opens one before stamping its first reading, and corrects it once the
// clock is trusted in the same boot.
class ClockPeriodLog {
 public:
  virtual ~ClockPeriodLog() = default;
  // Commits a new period of boot_id with this offset (wall - monotonic),
  // opened at wall time now_ms; *id is its number (1, 2, ...).
  // Rejected past kMaxClockPeriod periods.
  virtual Status OpenClockPeriod(const std::string& boot_id, int64_t offset_ms, int64_t now_ms, uint32_t* id) = 0;
  // Every period, by number.
  virtual Status ListClockPeriods(std::vector<ClockPeriod>* periods) = 0;
  // Marks period id corrected by delta_ms at (trusted) wall time now_ms.
  // Once only: a period already corrected keeps its delta (*done false).
  // NotFound for an unknown period.
  virtual Status CorrectClockPeriod(uint32_t id, int64_t delta_ms, int64_t now_ms, bool* done) = 0;
};

class Store : public ReadingLog,
              public DeviceRecords,
              public UplinkSource,
              public ReadViewWriter,
              public StoreReader,
              public RangeLeases,
              public StoreMaintenance,
              public StoreGauges,
              public ClockPeriodLog {
 public:
  // Opens or creates the store. Refuses, without touching the file: a file
  // that is not a SQLite database (truncated, garbage), one that fails the
  // integrity check, and one written by a newer schema version.
  static Status Open(const StoreOptions& options, std::unique_ptr<Store>* store);
  ~Store() override = default;

  Origin origin() const override = 0;
  virtual int schema_version() const = 0;

  // Shared by two or more roles (see each role for the contract).
  uint64_t LastLsn() const override = 0;
  Status GetCheckpoint(const std::string& name, uint64_t* value) override = 0;
  Status Query(const QueryRequest& request, std::vector<QueryRow>* rows) override = 0;
  Status ListRanges(std::vector<RangeInfo>* ranges) override = 0;
  Status ReadFeed(uint32_t range_id, const FeedStart& from, size_t max_entries, FeedPage* page) override = 0;
};


}  // namespace edgesync

#endif  // EDGESYNC_STORE_STORE_H_

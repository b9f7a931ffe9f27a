// store/hub_store.h: what a region hub needs of its store, and nothing more.
//
// The hub (sync/region_hub.h) applies gateways' batches and serves the region
// feed. It depends on this interface, not on the gateway's 29-method Store,
// so a second backend pays only for what the hub uses:
//   - SQLite (the embedded default): SqliteHubStore (store/sqlite_hub_store.h,
//     OpenSqliteHubStore), which owns the SQLite store whose file holds the
//     hub's tables; the hub's figures are those of that store.
//   - PostgreSQL through libpq (store/pg/): a region that outgrows one
//     machine. Built where libpq is found (EDGESYNC_HAVE_POSTGRESQL), as a
//     module the edgesync program loads only for such a hub
//     (store/pg_module.h); test programs link it (es_store_pg).
// The region role (agent/region_hub.cc) picks one by the configured
// location. Every backend passes the same conformance suite
// (tests/unit/store/hub_store_conformance_test.cc).
//
// Contract of an apply (one origin's batch):
//   - invalid: the batch is malformed (origin, an entry, LSN order); nothing
//     is written. Told apart from a gap: the sender must not retry it.
//   - gap: its first new entry does not follow the durable high-water mark
//     (or base_lsn, the sender's declaration that everything up to it is held
//     elsewhere after a failover), nor does it join a span held above the
//     mark, nor may it open one (PlanApply); nothing is written.
//   - already held: every entry is at or below the mark or inside a held
//     span and base_lsn adds nothing; nothing is written.
//   - regressed: the origin's mark is below held_claim, what the store
//     acknowledged to the sender before (it lost it); nothing is written.
//   - applied: the new entries joined the region feed and the mark (and the
//     held spans) moved, in one transaction, with their update a
//     compare-and-set on the values read: two writers can never both apply
//     the same span.
//
// Held spans (sync/PROTOCOL.md, "Two lanes"): beside the contiguous mark M
// a store keeps, per origin, at most kMaxHeldRanges disjoint LSN spans
// above M + 1 that a sender's live lane delivered ahead of its backlog.
// Their entries are in the feed like any other; the mark, and so the
// acknowledgement, the watermark (BatchCompletes) and everything a sender
// prunes by, stays contiguous: a span joins M only once the backlog
// reaches it.
// Priority marks (sync/PROTOCOL.md, "Priority by topic"): beside M and the
// spans a store keeps, per origin, P[k] for each level k = 1..3: every
// entry of level k (quality bits 4-5) with an LSN at or below P[k] is held.
// A priority batch of level k applies its entries above P[k] that M and
// the spans do not hold and raises P[k] to its span's end; a lane batch
// skips (as held) each entry of level k at or below P[k]. Both decisions
// are PlanApply's, inside the same transaction and compare-and-set as the
// mark, so an entry is appended once whichever path brings it first.
// Priority batches move neither M, nor the spans, nor the watermark.
// A store failure (I/O, lost connection) is a non-ok Status, never an
// outcome: the caller answers "store error" and the sender retries.
//
// The feed is numbered per shard (store/feed_cursor.h): an applied entry
// gets its origin's shard and that shard's next number, visible in order
// within the shard whoever appends; a reader's position is one number per
// shard, and retention keeps a pruned mark per shard.
//
// Thread safety: every method may be called from any thread; backends
// serialise inside.
#ifndef EDGESYNC_STORE_HUB_STORE_H_
#define EDGESYNC_STORE_HUB_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/clock.h"
#include "platform/status.h"
#include "store/feed_cursor.h"
#include "store/store.h"
#include "store/store_defaults.h"
#include "store/types.h"

namespace edgesync {

// An origin's priority marks, index k-1 for level k (0 = nothing known).
using PriorityMarks = std::array<uint64_t, kMaxPriorityLevel>;

// One origin's batch as the hub received it.
struct OriginBatch {
  Origin origin;
  // Everything up to base_lsn is held elsewhere (the sender's declaration
  // after a failover); 0 = nothing declared.
  uint64_t base_lsn = 0;
  // The span the batch covers starts here. The entries may start later: the
  // gateway's log compacted the first LSNs away (older device record
  // versions). When the span joins what is held, those LSNs are no gap.
  // 0 = the first entry's LSN.
  uint64_t first_lsn = 0;
  const std::vector<ChangeEntry>* entries = nullptr;  // LSN order; not owned
  // The mark the sender was told this store holds of the origin (0 = no
  // claim). A mark below it means the store lost what it acknowledged
  // (re-created, restored from a backup): nothing is applied, and a jump
  // to base_lsn could not hide the loss.
  uint64_t held_claim = 0;
  // The sender's completeness watermark (Batch.complete_through_ms): every
  // reading it committed before this wall time has an LSN at or below the
  // batch's last entry. Once the origin's mark reaches that entry, the
  // store keeps max(its watermark, this) beside the mark (BatchCompletes).
  // 0 = unknown: the watermark stays.
  int64_t complete_through_ms = 0;
  // The batch belongs to the sender's live lane (Batch.live): lying above
  // the mark and next to no held span, it opens a span of its own instead of
  // being a gap (PlanApply).
  bool live = false;
  // Protocol 8 (Batch.priority): 0 = a lane batch; k in 1..kMaxPriorityLevel
  // = a priority batch of level k, which declares it carries every level-k
  // entry of the origin in first_lsn..last_lsn (and nothing else). It may
  // carry no entry and is never live; its first_lsn is required.
  uint8_t priority = 0;
  // A priority batch's span ends here (Batch.last_lsn), which may lie past
  // its last entry; 0 = its last entry's LSN. A lane batch leaves it 0 (or
  // at its last entry's LSN).
  uint64_t last_lsn = 0;
};

enum class ApplyOutcome { kApplied, kAlreadyHeld, kGap, kInvalid, kRegressed };
const char* ApplyOutcomeName(ApplyOutcome outcome);

struct ApplyResult {
  ApplyOutcome outcome = ApplyOutcome::kInvalid;
  uint64_t high_water = 0;   // the origin's mark after the call (before it for gap/invalid)
  uint64_t before = 0;       // the mark the apply started from
  uint64_t base_lsn = 0;     // the base the apply used (after the compaction rule)
  uint64_t applied = 0;      // entries new to the region
  std::string detail;        // gap / invalid: why, for the log and the sender
  // applied / already held: the origin's watermark after the call (0 =
  // none known); other outcomes leave it 0.
  int64_t complete_through_ms = 0;
  // The origin's held spans above high_water after the call, ascending and
  // disjoint (what BatchAck.held carries): for every outcome where the
  // store read them (all but invalid).
  std::vector<LsnSpan> held;
  // The origin's priority marks after the call (BatchAck.priority_held),
  // for every outcome where the store read them (all but invalid).
  PriorityMarks priority_held = {};
};

struct HubStoreStats {
  std::string backend;        // "sqlite" or "postgresql"
  uint64_t feed_oldest = 0;   // FeedBounds' oldest
  uint64_t feed_head = 0;     // FeedBounds' numbered
};

// One page of the region feed for a reader at `after` (ReadFeed).
struct FeedRead {
  // Each shard's next entries in its sequence order, the shards merged in
  // the order the entries were applied, at most max_entries in all.
  std::vector<RegionFeedEntry> entries;
  // The continuation: after, each shard moved to its last entry here (a
  // backend may move a shard further when nothing of it lies in between,
  // as the one-writer SQLite store does). Never past head.
  ShardPositions next{};
  ShardPositions head{};  // each shard's newest sequence number
  // Some shard's position was pruned: no entries, and next is where the
  // reader restarts explicitly (every pruned shard moved to its pruned mark).
  bool reset = false;
};

struct FeedBoundsInfo {
  ShardPositions pruned{};  // per shard: the numbers at or below are gone
  ShardPositions head{};
  uint64_t oldest = 0;      // oldest entry still served, in the backend's apply order (0 = empty)
  uint64_t numbered = 0;    // entries the feed has numbered so far, pruned ones included
};

class HubStore {
 public:
  virtual ~HubStore() = default;

  // The store's epoch: a region feed position of another epoch is void.
  virtual std::string epoch() const = 0;
  virtual std::string backend() const = 0;

  // Applies batches of one or several origins; results[i] answers batches[i].
  // Batches of one origin apply in order. A backend may group them into one
  // transaction (PostgreSQL does, when the hub is busy); a non-ok Status
  // means none of the results is to be trusted and nothing was applied by
  // the failing transaction (the sender retries).
  virtual Status ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) = 0;
  Status Apply(const OriginBatch& batch, ApplyResult* result);

  // The origin's durable high-water mark; 0 for an origin never seen.
  virtual Status HighWater(const Origin& origin, uint64_t* high_water) = 0;

  // Region feed: every shard's entries after its position in `after`, at
  // most max_entries in all (store/feed_cursor.h). The numbers of one shard
  // become visible in their order, whichever hubs append to it: a reader
  // that resumes from page->next never steps over a late commit. A reader
  // whose position in some shard was pruned gets page->reset.
  virtual Status ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) = 0;
  virtual Status FeedBounds(FeedBoundsInfo* bounds) = 0;

  // One bounded retention step over the region feed (entries applied longer
  // ago than the retention age), oldest first; result->remote counts them,
  // result->more says whether more is due. A reader behind what a step
  // pruned gets an explicit reset.
  virtual Status PruneStep(int64_t max_rows, PruneResult* result) = 0;

  // One bounded compaction step over the region feed: a run of old rows of
  // small batches rewritten as one (positions and entries unchanged);
  // result->spans counts rows written, result->more says whether more is
  // due. A backend that keeps its feed as it is answers with nothing done.
  virtual Status CompactFeedStep(CompactResult* result) = 0;

  virtual Status Stats(HubStoreStats* stats) = 0;

  // Every origin's completeness watermark (those known: complete_through_ms
  // > 0), each with the sequence of the origin's shard from which a feed
  // reader holds all it covers (OriginWatermark::seq). PageWatermarks picks
  // a page's.
  virtual Status FeedWatermarks(std::vector<OriginWatermark>* watermarks) = 0;
};

// The watermarks a feed page from `after` to `next` carries: those valid at
// next (seq at or below next in the origin's shard: the reader then holds
// all they cover) that changed since after (seq past it), or every valid
// one while at most kAllPageWatermarks are known; never more than
// kMaxPageWatermarks (sync/PROTOCOL.md).
constexpr size_t kAllPageWatermarks = 64;
constexpr size_t kMaxPageWatermarks = 4096;
std::vector<OriginWatermark> PageWatermarks(const std::vector<OriginWatermark>& all, const ShardPositions& after,
                                            const ShardPositions& next);

// Checks a batch (origin, every entry, LSN order, base): the "invalid"
// outcome. Shared by every backend so they refuse the same inputs.
Status ValidateOriginBatch(const OriginBatch& batch);
// Its cheap part, without the entries' contents: origin, LSN order and
// range, base, span start. What PlanApply relies on.
Status ValidateBatchShape(const OriginBatch& batch);

// Decides a batch against the mark `held` and the origin's held spans
// (ascending, disjoint, each above held + 1), without writing: the outcome,
// the base the apply uses, which entries are new, the mark and the spans
// after it. Every backend uses it, inside its transaction, so they agree
// on what a gap is. With M = max(held, base) (base after the compaction
// rule) and the batch's span [f, L] (f = first_lsn, or its first entry's
// LSN when 0; L = its last entry's):
//   - the first entry above held is M + 1 (or there is none): it joins the
//     mark. M moves to max(M, L), then every span starting at or below the
//     mark + 1 merges into it, repeatedly.
//   - else, with f > M + 1: a span s with s.first <= f <= s.last + 1 grows
//     to max(s.last, L); a live batch next to no span opens [f, L], unless
//     that would hold more than kMaxHeldRanges spans (then a gap that says
//     so). Spans that touch merge; M still takes the base.
//   - anything else is a gap, as for a sender that knows no spans.
// An entry at or below held or inside a held span is not new (a resend),
// whatever case applies; nor is, in a lane batch, an entry of level k >= 1
// at or below priority[k-1] (a priority batch brought it).
// A priority batch of level k (after the regressed check, which applies to
// it as to any batch), with P = priority[k-1] and its span [f, l]:
//   - f > max(P, M) + 1 is a gap (the sender resumes at P + 1; below M + 1
//     the backlog covers). base_lsn opens no way: P speaks of this store.
//   - else its entries above P and above held and in no span are new, and
//     P becomes max(P, l). The mark, the spans and the base stay (base 0 in
//     the plan: nothing was jumped).
struct ApplyPlan {
  ApplyOutcome outcome = ApplyOutcome::kApplied;
  uint64_t base = 0;
  // The new entries: indexes into the batch, ascending.
  std::vector<size_t> fresh;
  uint64_t new_high_water = 0;
  std::vector<LsnSpan> new_spans;  // the held spans after the batch
  PriorityMarks new_priority = {};  // the priority marks after the batch
  std::string detail;
};
ApplyPlan PlanApply(const OriginBatch& batch, uint64_t held, const std::vector<LsnSpan>& spans,
                    const PriorityMarks& priority = {});

// Whether the batch's watermark may be kept once the origin's mark is
// `high_water`: it names one (complete_through_ms > 0) and every entry of
// the batch is at or below the mark (only gap-free LSNs count). Never for a
// priority batch: it says nothing of the entries between its own.
bool BatchCompletes(const OriginBatch& batch, uint64_t high_water);

struct HubStoreOptions {
  // "postgresql://..." or "postgres://..." for PostgreSQL; anything else is
  // the SQLite store the caller opens (OpenSqliteHubStore).
  std::string location;
  std::string password_file;        // PostgreSQL: the password, first line; "" = none
  int64_t feed_retention_ms = hub_store_options::kFeedRetentionS * 1000;
  int connect_timeout_s = 10;
  std::string application_name = "edgesync-hub";
  Clock* clock = nullptr;           // nullptr = SystemClock(); retention ages
};

bool IsPostgresLocation(const std::string& location);
// True when this build has the PostgreSQL backend.
bool HavePostgres();

// Opens the PostgreSQL hub store at options.location (migrating its schema).
// Refused as not supported when the build has no libpq; InvalidArgument for a location
// that carries a password (it belongs in password_file, never in the config).
// Defined in store/pg/: in a program that links es_store_pg (the tests), or
// reached through the module's table (PgModuleApi, store/pg_module.h).
Status OpenPostgresHubStore(const HubStoreOptions& options, std::unique_ptr<HubStore>* store);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_HUB_STORE_H_

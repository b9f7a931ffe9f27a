// sync/uplink.h: the gateway's uplink: replays the store's change log to the
// nearest healthy region with end-to-end acknowledgements.
//
// One worker thread reads Store::ReadLog after the upstream checkpoint,
// sends batches (at most batch_max_readings entries; a partial batch, once
// batch_min_delay_ms old, at once when nothing is in flight, else when the
// answers in flight are in, waiting at most batch_max_delay_ms) to the write
// region's hub,
// keeps up to `window` batches
// unanswered (per lane, see below), and moves the checkpoint only when a hub answers with its
// durable high-water mark. An answer counts only when it matches a batch in
// flight (correlation id) and comes from the region that batch went to; the
// checkpoint then moves at most to that batch's last LSN (never past what
// was sent). Anything else (forged, replayed, stale) is counted in
// acks_ignored and changes nothing (Store::AckUpstream + SetCheckpoint "upstream" and
// "upstream:<region>"). On an answer timeout, a refusal or a reconnect it
// resends from the checkpoint after a decorrelated-jitter delay driven by its
// own timer. Only the unanswered batches' last LSNs are held in memory: the
// backlog stays in the store. Every batch declares base_lsn = the checkpoint
// (all of it is held by some region), so after a failover the new region
// starts where the old one stopped and no reading is sent to two regions
// unless its answer was lost. Batches refer to the series context the
// write region holds of the ones before (sync/series_context.h) unless
// series_context is off; after any rewind the next batch is self-contained,
// a NoContext answer rewinds at once (no backoff), and a region that refuses
// a context batch as undecodable (an older hub) gets self-contained batches
// until it reconnects. Each batch names what the region's store
// acknowledged to us before and of which epoch; a store that lost it
// (re-created, restored) answers Regressed with its actual mark, and the
// uplink refills it from there (also a region that is not the write region,
// found by the epoch in its pongs), jumping with base_lost only over what
// it no longer holds itself. Time corrections (entries of kind 3, protocol
// 6) go only to a region whose answers carry protocol 6 or later on the
// current connection: a batch holding one waits until the region's
// protocol is known, and to an older region it goes without them (LSN holes
// its hub accepts; counted in corrections_withheld). A correction at the
// log's tail then waits for the next entry, whose batch covers its LSN.
// Region choice: sync/region_selector.h.
// Protocol: sync/PROTOCOL.md.
//
// With max_bytes_per_s set, every PUBLISH the uplink hands to its links
// (batches, resends and probes), counted as whole MQTT packets
// (MqttPublishPacketBytes), first takes its bytes from a token bucket
// (sync/byte_bucket.h): over any span T the uplink sends at most
// max_bytes_per_s x T + a quarter second of the cap (plus what a batch
// larger than that, or a probe overdue behind it, leaves as a debt the next
// batches pay). A batch is encoded, then waits for the bucket; batches are
// sized (from the bytes per entry of the last ones) to about a quarter
// second of the cap, at least 4 KB, so answers and new readings never queue
// behind a batch that takes minutes to send, and a drain sends an even
// stream (any 10 s within a few percent of the cap).
//
// Two lanes (live_lane, protocol 7; sync/PROTOCOL.md "Two lanes"): when
// the uplink finds more than a few batches between where it stands and the
// log's tail, towards a write region of protocol 7 or later, it opens a live
// lane at the tail. Entries committed from then on go in live batches
// (self-contained, Batch.live) ahead of the backlog, which sends the rest
// oldest first in what the live lane leaves of the window and the cap. The
// region holds the live lane's span above its mark and names it in every
// answer (BatchAck.held); the checkpoint stays the contiguous mark, so
// pruning, failover and refills keep their meaning. Once the backlog reaches
// the live lane's start the two are one stream again. Every rewind sends
// both lanes again from what the region holds of each (a live span it still
// holds is answered "already held").
//
// Priority by topic (priority_levels, protocol 8; sync/PROTOCOL.md
// "Priority by topic"): ingest stamps each reading of a message whose topic
// matches uplink.priority_topics[k - 1] with level k (store/types.h). While
// more than a few batches of backlog lie ahead, towards a write region whose
// answers on the current connection carry protocol 8 or later, the uplink
// runs one cursor per configured level: it reads the log forward from
// max(checkpoint, the region's priority mark P[k] from its answers, what
// the level already declared) with ReadLogLevel (a bounded scan per batch)
// and sends priority batches: batch k carries every level-k reading of its
// span [first, last] and nothing else. They go ahead of the live lane and
// the backlog, level 1 first, also under the cap, each level with a window
// of one batch. They never move the checkpoint: lane batches still carry
// every entry (the region skips those it holds by P), so failover, refill
// and pruning keep their meaning. Every rewind (a target change, a
// timeout, a reconnect, Regressed, a refill) forgets P and the cursors;
// they resume from the next answer of the new stream. A region that
// answers a priority batch BadBatch (a hub of protocol 7 behind its broker
// refuses their encoding) gets none until it reconnects; its lanes go on.
//
// Thread safety: Start/Stop from one thread; NotifyAppended and stats() from
// any thread.
#ifndef EDGESYNC_SYNC_UPLINK_H_
#define EDGESYNC_SYNC_UPLINK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "platform/clock.h"
#include "platform/histogram.h"
#include "platform/mutex.h"
#include "platform/progress.h"
#include "platform/status.h"
#include "store/store.h"
#include "sync/backoff.h"
#include "sync/byte_bucket.h"
#include "sync/mqtt_link.h"
#include "sync/region_selector.h"
#include "sync/sync_defaults.h"
#include "sync/wire.h"

namespace edgesync {

struct UplinkRegion {
  std::string name;
  int64_t preference = 0;
  MqttLinkOptions link;  // uri, credentials, TLS; client id is set by the uplink
};

struct UplinkOptions {
  std::string gateway_id;               // [A-Za-z0-9_-]: names our topics and MQTT client
  std::string topic_prefix = uplink_options::kTopicPrefix;
  std::vector<UplinkRegion> regions;
  size_t batch_max_readings = uplink_options::kBatchMaxReadings;
  int64_t batch_min_delay_ms = uplink_options::kBatchMinDelayMs;  // sync_defaults.h says why
  int64_t batch_max_delay_ms = uplink_options::kBatchMaxDelayMs;
  size_t window = uplink_options::kWindow;
  bool series_context = uplink_options::kSeriesContext;
  int64_t ack_timeout_ms = uplink_options::kAckTimeoutMs;
  int64_t backoff_base_ms = uplink_options::kBackoffBaseMs;
  int64_t backoff_max_ms = uplink_options::kBackoffMaxMs;
  int64_t probe_interval_ms = uplink_options::kProbeIntervalMs;
  int64_t failback_after_ms = uplink_options::kFailbackAfterS * 1000;
  int zstd_level = 3;
  // Bytes per second of MQTT packets sent to the regions, at most; 0 = no
  // cap. See Config::uplink_max_bytes_per_s and docs/DEPLOY.md.
  int64_t max_bytes_per_s = uplink_options::kMaxBytesPerS;
  // Since when the wall clock stamps trusted times (ClockTrust's
  // trusted_since_ms; 0 = not trusted now): batches carry a completeness
  // watermark (Batch.complete_through_ms) only at or after it, so an
  // untrusted clock never advances it. Unset: every time is trusted.
  std::function<int64_t()> clock_trusted_since;
  // Sends what is committed during a backlog's drain ahead of it (two
  // lanes); false: strict LSN order.
  bool live_lane = uplink_options::kLiveLane;
  // Priority levels 1..priority_levels have a topic filter
  // (uplink.priority_topics): their readings go ahead while a backlog
  // drains. 0 = none; at most kMaxPriorityLevel.
  size_t priority_levels = 0;
};

// Creates a link; tests may substitute a fake. Default: NewPahoMqttLink.
using MqttLinkFactory = std::function<Status(const MqttLinkOptions&, std::unique_ptr<MqttLink>*)>;

struct UplinkRegionStats {
  std::string name;
  bool connected = false;
  bool healthy = false;
  double rtt_ms = -1;
  uint64_t high_water = 0;  // last answer from this region
  uint64_t acked = 0;       // the highest mark its store acknowledged to us (upstream:<region>)
  // Its store lost what it acknowledged (re-created or restored): batches
  // go to it from its actual mark until it holds refill_to again.
  bool refilling = false;
  uint64_t refill_to = 0;
  uint64_t lost = 0;        // LSNs it had acknowledged that we no longer held to refill it with
};

// One lane's figures. Waiting: committed and not yet acknowledged by the
// region. Rates are acknowledged readings per second over the last seconds.
struct UplinkLaneStats {
  uint64_t waiting = 0;            // readings (log entries) waiting
  uint64_t waiting_bytes = 0;      // their link bytes, at the lane's recent bytes per entry
  int64_t oldest_age_ms = 0;       // age of the oldest waiting reading, by its own time; 0 = none
  double readings_per_s = 0;       // acknowledged
  double bytes_per_s = 0;          // link bytes sent
  int64_t eta_s = -1;              // waiting / readings_per_s; -1 = unknown (nothing moving)
  uint64_t batches_sent = 0;
  uint64_t entries_sent = 0;
};

struct UplinkStats {
  std::string write_region;       // "" = none healthy
  uint64_t checkpoint = 0;        // highest LSN acknowledged by a region
  // This gateway's acknowledged completeness watermark: every reading it
  // committed before this wall time (Unix ms) is held by a region. The
  // highest of the batches acknowledged since the uplink started; 0 = none yet.
  int64_t complete_through_ms = 0;
  uint64_t last_lsn = 0;
  uint64_t backlog = 0;           // last_lsn - checkpoint
  uint64_t batches_sent = 0;
  uint64_t entries_sent = 0;      // including resends
  uint64_t bytes_sent = 0;        // MQTT payload bytes of batches
  // Whole MQTT PUBLISH packets handed to the links (batches, resends and
  // probes; framing included: what uplink.max_bytes_per_s counts), and
  // their rate over the last second or so.
  uint64_t link_bytes_sent = 0;
  double link_bytes_per_s = 0;
  int64_t max_bytes_per_s = 0;    // the cap; 0 = none
  int64_t cap_wait_ms = 0;        // time a batch was ready and waited for the cap, in all
  uint64_t acks = 0;
  uint64_t resends = 0;           // times the uplink went back to the checkpoint
  uint64_t ack_timeouts = 0;
  int64_t answer_wait_ms = 0;  // how long a batch waits for its answer now (see Uplink::answer_wait_ms_)
  uint64_t refusals = 0;          // Gap / BadBatch / StoreError / NoContext answers
  uint64_t context_batches = 0;   // batches sent referring to the region's series context
  uint64_t context_misses = 0;    // NoContext answers: the region did not hold it (restart, eviction, handover)
  uint64_t acks_ignored = 0;      // answers to no batch in flight, from another region or for another origin
  // Of acks_ignored: answers to batches given up on (a rewind after a
  // timeout or a lost connection) that arrive late, as every outage brings.
  uint64_t acks_late = 0;
  uint64_t region_switches = 0;
  // Regions found to have lost what they acknowledged (answered Regressed),
  // refills still to finish, and LSNs we no longer held when refilling
  // (pruned after the region acknowledged them; the region was told).
  uint64_t region_regressions = 0;
  size_t refills_pending = 0;
  uint64_t refill_lost = 0;
  uint64_t bad_messages = 0;      // undecodable answers
  // Time corrections (change entries of kind 3) left out of the batches to a
  // region of protocol 5 or older, which cannot decode them: that region's
  // readings keep their stamped times. Each counted once.
  uint64_t corrections_withheld = 0;
  size_t inflight = 0;
  // Two lanes: whether a live lane is open now (from live_from), and each
  // lane's figures. Without an open lane everything waiting is in one lane:
  // the live one while it is less than a few batches, else the backlog.
  bool live_lane_open = false;
  uint64_t live_from = 0;
  uint64_t live_lanes_opened = 0;
  UplinkLaneStats live_lane;
  UplinkLaneStats backlog_lane;
  // Priority batches sent (resends included) and the readings they carried.
  uint64_t priority_batches_sent = 0;
  uint64_t priority_readings_sent = 0;
  std::vector<UplinkRegionStats> regions;
  // Send to acknowledgement of each batch (the end-to-end round trip,
  // including the hub's commit).
  HistogramSnapshot ack_latency;
};

class Uplink {
 public:
  Uplink(UplinkSource* store, UplinkOptions options, Clock* clock = nullptr, MqttLinkFactory factory = nullptr);
  ~Uplink();
  Uplink(const Uplink&) = delete;
  Uplink& operator=(const Uplink&) = delete;

  // Validates options, creates the region links and starts the worker.
  Status Start();
  // Stops the worker and disconnects; unanswered batches are resent next time.
  void Stop();
  // Wakes the worker after new local writes (it also polls the store).
  void NotifyAppended();
  UplinkStats stats() const;

 private:
  struct Event {
    enum class Type { kMessage, kState } type;
    size_t region = 0;
    bool connected = false;
    std::string payload;
    int64_t received_ns = 0;  // taken on arrival, so a busy worker does not inflate round trips
  };
  // A batch encoded and not yet sent: it waits for the cap's bucket.
  struct Ready {
    bool live = false;  // a live lane's batch
    uint8_t priority = 0;  // a priority batch of this level (0 = a lane's)
    uint64_t correlation_id = 0;
    uint64_t last = 0;
    size_t entries = 0;
    bool with_context = false;
    uint64_t lost = 0;
    int64_t complete_ms = 0;  // the batch's watermark (0 = none)
    std::string topic;
    std::string payload;
    int64_t packet_bytes = 0;
  };
  struct InFlight {
    bool live = false;
    uint8_t priority = 0;  // a priority batch of this level: never moves the checkpoint
    uint64_t correlation_id = 0;
    size_t region = 0;  // where it was sent
    uint64_t last = 0;
    // Everything up to here had been sent when it went: its answer moves
    // the checkpoint at most this far (the last LSN, unless lanes
    // interleave).
    uint64_t covers = 0;
    size_t entries = 0;
    int64_t sent_ms = 0;
    bool with_context = false;  // coded against the series context
    uint64_t lost = 0;          // a refill's first batch: LSNs it declares we no longer hold
    int64_t complete_ms = 0;    // its watermark (0 = none)
  };
  // What a region's store acknowledged to us, and of which epoch (kept in
  // the store: checkpoints upstream:<region> and upstream-epoch:<region>).
  struct RegionRecord {
    uint64_t acked = 0;
    uint64_t epoch_tag = 0;  // EpochTag of its store's epoch; 0 = not known yet
    // Its pong names another epoch than epoch_tag: the next batch to it,
    // naming our record, lets the hub say whether it lost anything.
    bool suspect = false;
    // A refill: its store (epoch refill_tag) holds our log up to
    // refill_mark, below the refill_to it had acknowledged.
    bool refilling = false;
    uint64_t refill_tag = 0;
    uint64_t refill_mark = 0;
    uint64_t refill_to = 0;
    uint64_t lost = 0;
  };

  void Run();
  void HandleEvent(Event& event);
  void HandleAck(size_t region, uint64_t correlation_id, const WireAck& ack);
  void IgnoreAck(size_t region, uint64_t correlation_id, const char* why);
  void Probe(int64_t now_ms);
  void Choose(int64_t now_ms);
  // Where batches go: a region to refill (or to check) while it is healthy,
  // the write region otherwise. Rewinds when that changes.
  void ChooseTarget(int64_t now_ms);
  // Where a stream to target_ starts: its refill mark, else the checkpoint.
  uint64_t StreamStart() const;
  void HandleRegressed(size_t region, const WireAck& ack);
  // Records an Ok answer's mark hw from region; false if the store failed.
  bool RecordAck(size_t region, const WireAck& ack, uint64_t hw, uint64_t lost);
  void SendBatches(int64_t now_ms);
  // The watermark a batch ending at last_lsn carries (0 = none: a refill,
  // an untrusted clock, a store error).
  int64_t BatchWatermark(uint64_t last_lsn, bool refilling);
  // Encodes the next batch into ready_; false when there is none to send
  // now (nothing new, a partial batch held, a store error, corrections
  // waiting for the region's protocol or withheld from it).
  bool PrepareBatch(int64_t now_ms);
  // The live lane's: the next live batch into ready_live_; false when none
  // is due now.
  bool PrepareLiveBatch(int64_t now_ms);
  // Sends the batch in *slot once the cap allows (else sets the wake-up);
  // false when it waits or the send failed (then rewound).
  bool SendReady(std::optional<Ready>* slot, MqttLink* link, int64_t now_ms);
  // Encodes batch for target_ (with context, or self-contained when null)
  // under a new correlation id.
  Status EncodeReady(const WireBatch& batch, SeriesContext* context, Ready* ready);
  // Opens the live lane when a backlog lies ahead towards a region that
  // holds spans (protocol 7); closes it once the backlog has reached it.
  void UpdateLanes(int64_t now_ms);
  void CloseLane(const char* why);
  // Takes the region's answer about the live lane (the span it holds from
  // live_from_) and drops the batches it covers from inflight_.
  void TakeHeldSpans(const WireAck& ack);
  void RemoveAnswered(int64_t now_ms);
  // Lane batches (not priority ones) of the live lane or of the backlog in flight.
  size_t LaneInFlight(bool live) const;
  // Whether more than a few batches lie between where the uplink stands
  // and `last`: a live lane then opens, and priority batches run; less
  // drains within a few round trips.
  bool BacklogAhead(uint64_t last) const;
  // Priority batches: whether the cursors run now (see the header), the
  // next batch of a level into its slot (false when none is due), the
  // answer to one, and the region's marks from any answer of the stream.
  bool PriorityRuns() const;
  bool PreparePriorityBatch(size_t level);
  void HandlePriorityAck(std::deque<InFlight>::iterator batch, const WireAck& ack);
  void TakePriorityMarks(size_t region, const WireAck& ack);
  void ForgetPriority();
  void UpdateLaneStats(int64_t now_ms) REQUIRES(stats_mu_);
  // For a target of protocol 5 or older: leaves the time corrections out
  // of entries (read after next_after_, up to *read_last), reading on while
  // only corrections remain and the log holds more; counts and says it.
  // False on a store error.
  bool WithholdCorrections(std::vector<ChangeEntry>* entries, uint64_t* read_last, uint64_t log_last);
  // The most entries the next batch may hold (the cap sizes it).
  size_t BatchEntries() const;
  // Under the cap: whether a packet of `bytes` may go now (then its bytes
  // are taken; now_anyway: taken even into debt). Without a cap: always.
  // Counts it in link_bytes_sent.
  bool TakeLinkBytes(int64_t bytes, bool now_anyway = false);
  // Under the cap: the bytes a batch is sized to.
  double CappedBatchBytes() const;
  void Rewind(const char* why, bool with_backoff);
  // The context the next batch is coded with (nullptr: self-contained, none kept).
  SeriesContext* NextContext();
  int64_t NowMs() const { return clock_->MonotonicMillis(); }

  UplinkSource* store_;
  UplinkOptions options_;
  Clock* clock_;
  MqttLinkFactory factory_;
  Origin origin_;
  std::string reply_topic_;

  std::vector<std::unique_ptr<MqttLink>> links_;
  std::thread worker_;
  std::atomic<bool> stop_{false};

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_ GUARDED_BY(mu_);
  bool wake_ GUARDED_BY(mu_) = false;

  // Worker state: touched only by the worker thread (and by Start before
  // it runs, Stop after it has ended), so no mutex guards it; the analysis
  // has no way to state "one thread only".
  std::unique_ptr<RegionSelector> selector_;
  std::vector<int64_t> next_probe_ms_;
  std::vector<uint64_t> region_high_water_;
  Backoff backoff_;
  // How long a batch waits for its answer before the uplink resends from the
  // checkpoint: ack_timeout_ms, doubled after each timeout (up to
  // kMaxAnswerWaitFactor times it) and brought back towards it by answers
  // that come quickly. A fixed wait shorter than a slow region's answers
  // (a busy hub, a loaded database) resent forever: each resend got new
  // correlation ids, the old answers arrived late and were ignored, and the
  // checkpoint never moved (seen with four hubs on one PostgreSQL under
  // ThreadSanitizer), as TCP would without backing off its retransmit timer.
  int64_t answer_wait_ms_ = 0;
  int write_region_ = -1;
  int target_ = -1;                // the region batches go to (ChooseTarget)
  std::vector<RegionRecord> records_;
  uint64_t checkpoint_ = 0;
  int64_t complete_through_ms_ = 0;  // UplinkStats::complete_through_ms
  // The highest mark target_ acknowledged of this stream (since the last
  // rewind): batches at or below it are answered.
  uint64_t stream_mark_ = 0;
  uint64_t next_after_ = 0;        // the next batch starts after this LSN
  int64_t resume_at_ms_ = 0;       // sending paused until then (backoff)
  // Late answers not yet said in the log's one summarising line, and when
  // the last came (the line waits for them to stop).
  uint64_t late_acks_unsaid_ = 0;
  int64_t last_late_ack_ms_ = 0;
  int64_t pending_since_ms_ = -1;  // first time unsent entries were seen
  int64_t wake_at_ms_ = -1;        // the coalescing batch's deadline (-1 = none)
  uint64_t correlation_ = 0;
  std::deque<InFlight> inflight_;
  std::optional<Ready> ready_;  // dropped by every rewind
  // The live lane (0 = none open): it starts at live_from_; its next batch
  // starts after live_next_after_; the region holds it through live_held_
  // (its answers' held span from live_from_; live_from_ - 1 = nothing).
  uint64_t live_from_ = 0;
  uint64_t live_next_after_ = 0;
  uint64_t live_held_ = 0;
  int live_target_ = -1;             // the region the live lane goes to
  uint64_t live_sent_through_ = 0;   // the live lane's last LSN sent
  uint64_t backlog_sent_through_ = 0;  // the backlog's (or the one stream's) last LSN sent
  // Regions that refused a live span (all their spans in use): one lane to
  // them until they reconnect.
  std::vector<bool> live_refused_;
  // Regions that refused a priority batch (BadBatch: a hub that does not
  // decode them): no priority batches to them until they reconnect.
  std::vector<bool> priority_refused_;
  int64_t live_pending_since_ms_ = -1;
  std::optional<Ready> ready_live_;
  // Priority cursors, index level - 1. declared: the span the region was
  // told of (batches answered or in flight) ends here; scanned: the log was
  // read this far without finding a reading of the level (the next batch
  // declares it too); held: P[level] from the stream's answers.
  struct PriorityCursor {
    uint64_t declared = 0;
    uint64_t scanned = 0;
    uint64_t held = 0;
    bool in_flight = false;
    std::optional<Ready> ready;
  };
  PriorityCursor priority_[kMaxPriorityLevel];
  // An answer of this stream came from target_ at protocol 8 or later: its
  // marks are known, and priority batches may go.
  bool priority_known_ = false;
  // Per lane (0 live, 1 backlog): link bytes per entry of the last batches,
  // link bytes sent, and (time, acknowledged readings, link bytes) about once
  // a second for the rates; oldest waiting reading's time, read once a second.
  double lane_bytes_per_entry_[2] = {0, 0};
  uint64_t lane_acked_[2] = {0, 0};
  uint64_t lane_link_bytes_[2] = {0, 0};
  std::deque<std::tuple<int64_t, uint64_t, uint64_t>> lane_samples_[2];
  int64_t lane_oldest_ts_ms_[2] = {0, 0};
  int64_t lane_progress_ms_ = 0;  // the last catch-up line of two lanes
  // The cap (null: none), the batch size it allows (entries; 0 = not yet
  // measured) and how long a ready batch has been waiting for it.
  std::unique_ptr<ByteBucket> bucket_;
  size_t capped_entries_ = 0;
  int64_t cap_wait_since_ms_ = -1;
  int64_t cap_wait_ms_ = 0;
  uint64_t link_bytes_ = 0;  // link_bytes_sent
  // (time, link_bytes_) about once a second, the last kRateSeconds: the
  // send rate is measured over them.
  std::deque<std::pair<int64_t, uint64_t>> rate_samples_;
  EncodeOptions encode_;
  WireCounters wire_counters_;
  // The series context the write region holds of our batches since the
  // last self-contained one (sync/series_context.h). Every rewind empties
  // it: whatever went unanswered may not have reached the region.
  SeriesContext context_;
  // The live lane's, kept by the region beside the backlog's (ContextKey).
  SeriesContext live_context_;
  // Regions that refused a context batch as undecodable (a hub of protocol
  // 2): self-contained batches only, until they reconnect.
  std::vector<bool> context_refused_;
  // Regions that answered a context batch Ok since their last reconnect or
  // answer timeout: they get lean context batches (no origin, reply address
  // nor first_lsn); the others full ones, which a hub of protocol 2 can
  // refuse by name instead of leaving unanswered.
  std::vector<bool> context_proven_;
  // Each region's protocol (the version of its answers and pongs) on its
  // current connection; 0 = not known yet. Batches holding time
  // corrections wait for it: they go whole to a region of protocol 6 or
  // later, without the corrections to an older one.
  std::vector<uint16_t> region_version_;
  // Regions told (in the log) this connection that corrections are
  // withheld from them.
  std::vector<bool> withheld_said_;
  // The highest LSN of a correction counted in corrections_withheld.
  uint64_t withheld_through_ = 0;
  // The log up to here holds only corrections withheld from the target
  // after next_after_: nothing to send until it grows (the next batch's
  // span then covers them). 0 = none; every rewind clears it.
  uint64_t withheld_tail_ = 0;
  // After NoContext answers in a row, that many self-contained batches
  // (1, 3, 7 .. 63) before referring to a context again: a hub that keeps
  // losing contexts (a bound too small for its gateways) is not asked in
  // vain for every other batch.
  int context_misses_in_row_ = 0;
  size_t plain_batches_left_ = 0;

  mutable Mutex stats_mu_;
  UplinkStats stats_ GUARDED_BY(stats_mu_);
  Histogram ack_latency_;  // locks itself
  ProgressLog drain_progress_{"uplink drain", "readings"};  // the worker's
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_UPLINK_H_

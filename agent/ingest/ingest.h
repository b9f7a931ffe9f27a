// agent/ingest/ingest.h: MQTT messages from the local broker to committed
// readings.
//
// OnMessage runs on the MQTT receive thread: topic match, size/UTF-8 checks,
// decode, per-device token bucket, timestamps (payload time, else receive
// time with kQualityReceiveTime; kQualityUntrustedClock while the wall clock
// is before the epoch floor), then a queue. Batches hold whole messages and
// at most batch_max readings (a single larger message is one batch).
//
// Acknowledgement: Paho C 1.3.12 sends the PUBACK of a QoS 1 message only
// after the message callback returns (measured; docs/INGEST.md), so when
// OnMessage returns decides what a kill -9 can lose:
// - kAfterJournal: the readings are written to the intake journal (one
//   write(2); intake_journal.h) before OnMessage returns; the committer
//   thread commits the queue in groups, each with the intake checkpoint, and
//   Start commits what the journal holds beyond the checkpoint. Nothing
//   acknowledged is lost. If a journal write fails, that message is
//   committed before OnMessage returns, as in kAfterCommit.
// - kAfterCommit: OnMessage returns once its readings are committed: one
//   commit per message, on the calling thread (one commit slot shared with
//   the committer thread, so concurrent callers share a commit).
// - kOnReceipt: OnMessage returns at once; a kill -9 may lose what is
//   queued: at most the queue (4 x batch_max) plus one batch.
// Every message accepted gets the next intake sequence number; every commit
// moves the store's intake checkpoint to the last one it holds.
//
// Intake (flow control): OnMessage runs on Paho's receive thread, which
// every MQTT client of the process shares (the uplink's answers and
// reconnects too), so it never waits for a store that refuses commits.
// When a commit fails (a store full under reject-new, a failing disk), or
// the commit queue stays full for kRoomWaitMs, intake closes
// (intake_open() false, counted in `pauses`, with a reason); IntakeGate
// (intake_gate.h) then pauses the link to the local broker, whose
// persistent session queues the sensors' messages meanwhile. What arrives
// before the link is down is accepted as usual (journal, then queue). The
// committer keeps retrying; once a commit succeeds and everything accepted
// is committed, intake opens again and the link reconnects. At start,
// intake stays closed until the journal's records are committed (a
// redelivery is checked against the store). Two waits remain on the
// receive thread: ack = after-commit commits there (and retries while the
// store refuses), and a queue past kOverrunFactor x batch_max readings
// (the link never went down) waits for room as a last resort, counted in
// `overruns`.
//
// Device descriptions (ingest.device_topic, docs/INGEST.md) are not
// readings: OnMessage decodes one (DecodeDeviceRecord) and writes the
// device's record, or its deletion, through the sink before it returns, in
// every ack mode (a description is rare; its commit on the receive thread
// costs what one after-commit message does), so one acknowledged is not
// lost by kill -9. They take no intake sequence number and no journal
// record. A description equal to the last one this process wrote for the
// device is not written again (a retained one comes with every
// subscription). A write the store refuses is logged and counted in
// commit_failures and not retried: the broker still holds a retained
// description and delivers it again on the next subscription. Each
// description costs its device one token of its rate.
//
// Rejected messages are counted by reason and dead-lettered (topic, first
// bytes, reason, time) through the sink. Rate limiting (rate_limiter.h) is
// measured on the device's own clock where it is trusted, and credits each
// device with its rate over the time the gateway was away from the broker
// (LinkDown/LinkUp, and across a restart the presence mark,
// presence_mark.h), so a backlog the broker replays after an outage is not
// refused, whether its readings carry a time or not; what a device over its
// rate loses is dropped by policy (docs/INGEST.md): counted per device,
// logged once per device per 10 s, not dead-lettered (they are
// well-formed, and a flood would only push real bad input out of the capped
// dead-letter table).
//
// Thread safety: OnMessage may be called from any thread (normally one);
// Start/Stop from the owner.
#ifndef EDGESYNC_AGENT_INGEST_INGEST_H_
#define EDGESYNC_AGENT_INGEST_INGEST_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "agent/ingest/decoders.h"
#include "agent/ingest/intake_journal.h"
#include "agent/ingest/presence_mark.h"
#include "agent/ingest/rate_limiter.h"
#include "agent/ingest/redelivery_filter.h"
#include "agent/ingest/topic_pattern.h"
#include "firmware-config/ingest_defaults.h"
#include "platform/clock.h"
#include "platform/clock_trust.h"
#include "platform/liveness.h"
#include "platform/mutex.h"
#include "platform/status.h"
#include "store/checkpoint_names.h"
#include "store/store.h"

namespace edgesync {

// Where ingest writes; the Store in production, a fake in unit tests.
class IngestSink {
 public:
  virtual ~IngestSink() = default;
  // Commits the readings and, in the same transaction, moves the intake
  // checkpoint forward to intake_seq.
  virtual Status AppendReadings(const std::vector<Reading>& readings, uint64_t intake_seq) = 0;
  virtual Status IntakeCheckpoint(uint64_t* intake_seq) = 0;
  virtual Status AddDeadLetters(const std::vector<DeadLetter>& letters) = 0;
  // True if this exact reading (device, metric, time, value) is stored:
  // used only for messages the broker marked as redelivered.
  virtual bool Contains(const Reading& reading) = 0;
  // Commits a device's record, or with device.deleted its deletion (its
  // tombstone), as the latest version. NotFound: deleting a device that has
  // no record.
  virtual Status PutDevice(const DeviceRecord& device) = 0;
  // Untrusted clock periods (store/time_correction.h, store.h's
  // ClockPeriodLog). A sink that keeps none answers Unsupported: readings
  // are then stamped with no period and keep their untrusted flag.
  virtual Status OpenClockPeriod(const std::string& /*boot_id*/, int64_t /*offset_ms*/, int64_t /*now_ms*/,
                                 uint32_t* /*id*/) {
    return Status::Unsupported("this sink keeps no clock periods");
  }
  virtual Status ListClockPeriods(std::vector<ClockPeriod>* /*periods*/) {
    return Status::Unsupported("this sink keeps no clock periods");
  }
  virtual Status CorrectClockPeriod(uint32_t /*id*/, int64_t /*delta_ms*/, int64_t /*now_ms*/, bool* /*done*/) {
    return Status::Unsupported("this sink keeps no clock periods");
  }
};

class StoreSink : public IngestSink {
 public:
  static constexpr const char* kIntakeCheckpoint = checkpoint::kIntake;
  // devices: where device descriptions go; nullptr = none (PutDevice is
  // then Unsupported); periods: where untrusted clock periods are kept
  // (nullptr = none).
  explicit StoreSink(ReadingLog* store, DeviceRecords* devices = nullptr, ClockPeriodLog* periods = nullptr)
      : store_(store), devices_(devices), periods_(periods) {}
  Status AppendReadings(const std::vector<Reading>& readings, uint64_t intake_seq) override {
    AppendResult r;
    return store_->AppendReadingsMarked(readings, CheckpointMark{kIntakeCheckpoint, intake_seq}, &r);
  }
  Status IntakeCheckpoint(uint64_t* intake_seq) override { return store_->GetCheckpoint(kIntakeCheckpoint, intake_seq); }
  Status AddDeadLetters(const std::vector<DeadLetter>& letters) override { return store_->AddDeadLetters(letters); }
  bool Contains(const Reading& reading) override {
    QueryRequest q;
    q.device_id = reading.device_id;
    q.metric = reading.metric;
    q.from_ms = reading.ts_ms;
    q.to_ms = reading.ts_ms + 1;
    q.limit = 100;
    std::vector<QueryRow> rows;
    if (!store_->Query(q, &rows).ok()) return false;
    for (const auto& r : rows) {
      if (r.local && r.reading.value == reading.value) return true;
    }
    return false;
  }
  Status PutDevice(const DeviceRecord& device) override {
    if (devices_ == nullptr) return Status::Unsupported("this sink takes no device records");
    return device.deleted ? devices_->DeleteDevice(device.device_id, nullptr) : devices_->UpsertDevice(device, nullptr);
  }
  Status OpenClockPeriod(const std::string& boot_id, int64_t offset_ms, int64_t now_ms, uint32_t* id) override {
    if (periods_ == nullptr) return IngestSink::OpenClockPeriod(boot_id, offset_ms, now_ms, id);
    return periods_->OpenClockPeriod(boot_id, offset_ms, now_ms, id);
  }
  Status ListClockPeriods(std::vector<ClockPeriod>* periods) override {
    if (periods_ == nullptr) return IngestSink::ListClockPeriods(periods);
    return periods_->ListClockPeriods(periods);
  }
  Status CorrectClockPeriod(uint32_t id, int64_t delta_ms, int64_t now_ms, bool* done) override {
    if (periods_ == nullptr) return IngestSink::CorrectClockPeriod(id, delta_ms, now_ms, done);
    return periods_->CorrectClockPeriod(id, delta_ms, now_ms, done);
  }

 private:
  ReadingLog* store_;
  DeviceRecords* devices_;
  ClockPeriodLog* periods_;
};

enum class AckMode { kAfterJournal, kAfterCommit, kOnReceipt };

struct IngestOptions {
  std::vector<std::string> patterns =
      std::vector<std::string>(std::begin(ingest_options::kSubscriptions), std::end(ingest_options::kSubscriptions));
  // Where devices publish their descriptions: a pattern naming {deviceId}
  // and not {metric}; matched before `patterns`. "" = none.
  std::string device_topic = ingest_options::kDeviceTopic;
  // uplink.priority_topics: MQTT topic filters, most urgent first (at most
  // kMaxPriorityLevel). Each reading of a message whose topic matches
  // filter i (the first that matches) is committed with priority level
  // i + 1 in its quality (store/types.h, WithPriority), for good.
  std::vector<std::string> priority_topics;
  int64_t max_payload_bytes = ingest_options::kMaxPayloadBytes;
  double device_rate = ingest_options::kDeviceRate;
  double device_burst = ingest_options::kDeviceBurst;
  size_t max_tracked_devices = 10000;
  // How far in the past a device's own reading times still count for its
  // rate (a backlog kept by the broker or the device); older ones count at
  // the edge of this window.
  int64_t device_backlog_ms = ingest_options::kDeviceBacklogS * 1000;
  // The longest absence the local broker queues for (its session's
  // lifetime): a device is credited its rate over at most this much of the
  // time the gateway was away.
  int64_t max_away_ms = ingest_options::kMaxAwayS * 1000;
  int64_t epoch_floor_ms = ingest_options::kEpochFloorMs;
  // What makes the wall clock trusted for the times ingest stamps
  // (platform/clock_trust.h): "kernel", "floor" or "file:<path>".
  std::string clock_trust = ingest_options::kClockTrust;
  // Where this boot's trust is kept across restarts of the process ("" =
  // not kept).
  std::string clock_trust_marker;
  // The kernel's synchronisation state; nullptr = adjtimex (tests give theirs).
  std::function<ClockSync()> clock_sync;
  int64_t batch_max = ingest_options::kBatchMax;
  // The cap of the commit groups' wait; within it the wait follows the
  // arrival rate (commit_pacer.h).
  int64_t batch_delay_ms = ingest_options::kBatchDelayMs;
  // The store syncs each commit (store.sync "commit" or "full"): a commit
  // costs more, so groups gather longer within the cap.
  bool synced_commits = false;
  AckMode ack = AckMode::kAfterJournal;
  // Where intake-a/b.journal and the presence mark live (the data
  // directory; "" = none, only for the other modes), how large a segment grows before the other is
  // reused, and whether every record is fdatasync'ed (as the store does
  // with sync = full).
  std::string journal_dir;
  int64_t journal_segment_bytes = ingest_options::kJournalSegmentBytes;
  bool journal_sync = false;
  // How long Start waits for the journal's records to be committed (a
  // store that refuses them ends the wait at once; intake stays closed).
  int64_t replay_wait_ms = 60000;
  size_t dead_letter_head_bytes = 64;
  size_t max_pending_dead_letters = 1000;
  int64_t retry_delay_ms = 200;  // after a failed commit
};

struct IngestCounters {
  int64_t messages = 0;
  int64_t readings_accepted = 0;
  int64_t readings_committed = 0;
  int64_t device_records = 0;         // device descriptions committed (records and deletions)
  int64_t batches = 0;
  int64_t commit_failures = 0;
  int64_t dead_letters = 0;
  int64_t dead_letters_dropped = 0;
  int64_t receive_time_stamped = 0;
  int64_t untrusted_clock = 0;       // readings stamped while the clock was not trusted
  int64_t duplicates_skipped = 0;
  int64_t replayed = 0;               // readings committed again from the journal at start
  int64_t journal_failures = 0;       // journal writes that failed (the message was committed instead)
  int64_t journal_bytes = 0;          // both segments, now
  bool paused = false;                // intake closed now (the local broker keeps the messages)
  std::string pause_reason;           // why, while paused
  int64_t pauses = 0;                 // times intake closed
  int64_t paused_ms = 0;              // time spent closed, the current pause included
  int64_t overruns = 0;               // messages that waited on the receive thread for queue room
  std::array<int64_t, static_cast<size_t>(RejectReason::kCount)> rejected{};
  int64_t readings_rate_limited = 0;  // readings of rate-limited messages (dropped)
  std::vector<std::pair<std::string, int64_t>> top_rate_limited;
  int64_t rate_limited_evicted = 0;
};

// The untrusted clock periods as status shows them (store/time_correction.h).
struct ClockPeriodFigures {
  bool kept = false;                 // the sink keeps periods (else every figure is 0)
  int64_t open = 0;                  // periods of this boot not corrected yet (corrected once trusted)
  int64_t corrected = 0;             // periods corrected
  int64_t uncorrectable = 0;         // periods of an earlier boot that ended untrusted
  int64_t readings_open = 0;         // readings of the open periods
  int64_t readings_corrected = 0;    // readings shown at their corrected time
  int64_t readings_uncorrectable = 0;  // readings that keep untrusted_clock for good
};

class Ingest {
 public:
  // How long OnMessage waits on the receive thread for room in a full
  // commit queue while the store takes commits. A group commit takes
  // 0.8-2 ms here (a Pi's SD card tens of ms), so a queue of 4 x batch_max
  // readings that stays full this long means the store is not keeping up,
  // and a wait this short still lets the uplink's answers through
  // (uplink.ack_timeout_ms is seconds).
  static constexpr int64_t kRoomWaitMs = 500;
  // Past this many x batch_max readings queued (the link did not go down)
  // OnMessage waits for room: memory stays bounded (~4 MB at the default
  // batch_max) whatever the broker does.
  static constexpr size_t kOverrunFactor = 32;

  Ingest(IngestOptions options, IngestSink* sink, Clock* clock = nullptr);
  ~Ingest();
  Status Init();  // parses the patterns and the device topic
  // The MQTT filters to subscribe to (one per pattern, and the device topic's).
  std::vector<std::string> Filters() const;
  // The priority level of a message on `topic`: 1 + the index of the first
  // priority topic filter it matches, 0 when none does.
  uint32_t PriorityLevel(const std::string& topic) const;

  // Opens the journal (in every mode), queues what it holds beyond the
  // store's intake checkpoint, starts the committer, and waits (at most
  // replay_wait_ms, and not past a refused commit) until those records are
  // committed: a redelivered message is checked against the store, so
  // intake stays closed until the store has them.
  Status Start();
  // Commits everything queued, then stops the committer. Call after the
  // MQTT link has stopped delivering.
  void Stop();

  // duplicate: the broker's DUP flag (a redelivery after we were cut off
  // between commit and PUBACK). A redelivery of a message taken in this run
  // is recognised by its packet id (redelivery_filter.h) and skipped whole;
  // otherwise readings carrying their own time that are already stored are
  // skipped, so a redelivery is not stored twice. packet_id: the MQTT
  // packet identifier, 0 if unknown.
  void OnMessage(const std::string& topic, const std::string& payload, bool duplicate = false, int packet_id = 0);
  // Takes only counters_mu_ (held for copies, never across I/O), not mu_:
  // mu_ is held across a journal write, and by a committer that wedges, and
  // the main loop that reports a stall and takes a stop request must not
  // wait for either.
  IngestCounters counters() const;
  // Whether the clock is trusted now, and why (after Init).
  ClockTrust::State clock_state() const;
  // The untrusted clock periods, read from the sink (after Init).
  ClockPeriodFigures clock_periods() const;
  // Once the clock is trusted, corrects every uncorrected period of this
  // boot (store/time_correction.h): delta = (wall - monotonic now) - the
  // period's offset. Called periodically (IntakeGate's thread) and at
  // Start (a run killed between trust and correction corrects at its
  // next start in the same boot). Does nothing while untrusted or once
  // done in this run.
  void CorrectClockPeriods();

  // The link to the local broker went down (lost, paused) / came up;
  // session_present: the broker kept our session, so it queued for us.
  // From the link's state handler. Until the first LinkUp after Start, the
  // gateway counts as away since the presence mark (the previous run's last
  // moment connected, this boot; else since boot).
  void LinkDown();
  void LinkUp(bool session_present);
  // Rewrites the presence mark while the link is up, at most once per
  // kPresenceMarkMs; called periodically (IntakeGate's thread).
  void KeepPresenceMark();
  static constexpr int64_t kPresenceMarkMs = 1000;

  // False while ingest wants no more messages (see "Intake" above).
  bool intake_open() const;
  // Waits until intake_open() differs from `open`, or timeout_ms; returns
  // intake_open(). For IntakeGate's thread.
  bool WaitIntakeChange(bool open, int64_t timeout_ms);

 private:
  void Reject(const std::string& topic, const std::string& payload, RejectReason reason, const std::string& why);
  // A message on the device topic: decoded, then written through the sink.
  void OnDeviceRecord(const std::string& topic, const std::string& payload, const std::string& device_id);
  // Away from the broker since the presence mark (see LinkDown).
  void StartAbsence();
  void WriteMark(int64_t mono_ms) REQUIRES(presence_mu_);
  void CommitLoop();
  // Takes the commit slot (free: checked by the caller), commits the next
  // batch with mu_ released (its caller's MutexLock holds it again when
  // this returns) and hands the slot back.
  // beat: the committer's heartbeat, beaten after each refused attempt (a
  // store that answers "full" is not a wedged thread); nullptr on the
  // receive thread (ack after commit), whose stall the watchdog must see.
  void CommitHeldSlot(Heartbeat* beat) REQUIRES(mu_);
  // committing_ set by the caller: whole messages, at most batch_max
  // readings (at least one message), into batch_; returns the intake
  // sequence number of the last message taken.
  uint64_t TakeBatch(std::vector<DeadLetter>* letters) REQUIRES(mu_);
  // Queues one accepted message under its sequence number.
  void Enqueue(std::vector<Reading>* readings, uint64_t seq) REQUIRES(mu_);
  // Closes intake (why goes to the status) / opens it again once the store
  // takes commits and everything accepted is committed.
  void CloseIntake(const std::string& why) REQUIRES(mu_);
  void MaybeOpenIntake() REQUIRES(mu_);
  // Copies the journal's size and the intake state into counters_, for
  // counters().
  void ShowIntakeState() REQUIRES(mu_);
  // Wakes the committer if its wait can end now that queue_ grew from
  // `before` readings.
  void WakeCommitter(size_t before) REQUIRES(mu_);
  // Writes letters and batch_ (retrying failures). False if the batch was
  // given up (invalid, or failing while stopping).
  bool CommitBatch(const std::vector<DeadLetter>& letters, uint64_t last_seq, Heartbeat* beat) EXCLUDES(mu_);
  // The device's token bucket; false (counted, logged, rejected) when the
  // message is over its rate.
  bool WithinRate(const std::string& topic, const std::string& payload, const std::vector<Reading>& readings);
  bool Convert(std::vector<DecodedReading>& decoded, std::vector<Reading>* out, RejectReason* reason,
               std::string* why);
  // The period a reading stamped now at untrusted wall time `wall` belongs
  // to, opened in the sink first if the boot or the offset changed (a
  // step); 0 when the sink keeps none or refused.
  uint32_t StampPeriod(int64_t wall) EXCLUDES(periods_mu_);

  const IngestOptions options_;
  const size_t batch_max_;             // options_.batch_max, at least 1
  size_t group_target_ GUARDED_BY(mu_) = 1;  // the committer's group target (commit_pacer.h)
  IngestSink* sink_;
  Clock* clock_;
  std::unique_ptr<ClockTrust> clock_trust_;  // made by Init
  // The untrusted clock period stamped last (store/time_correction.h).
  // Taken on the receive thread only while the clock is untrusted, and
  // around the sink's period calls.
  Mutex periods_mu_;
  uint32_t period_id_ GUARDED_BY(periods_mu_) = 0;  // 0 = none yet in this run
  std::string period_boot_ GUARDED_BY(periods_mu_);
  int64_t period_offset_ms_ GUARDED_BY(periods_mu_) = 0;
  bool periods_loaded_ GUARDED_BY(periods_mu_) = false;  // the sink's latest period looked up
  bool periods_unsupported_ GUARDED_BY(periods_mu_) = false;
  bool period_failure_logged_ GUARDED_BY(periods_mu_) = false;
  std::atomic<bool> corrections_done_{false};  // this run corrected what it could once trusted
  std::vector<TopicPattern> patterns_;
  bool has_device_topic_ = false;
  TopicPattern device_topic_;
  // The last description written per device (at most max_tracked_devices,
  // then forgotten): a retained description delivered again on every
  // subscription is not written again.
  Mutex devices_mu_;
  std::unordered_map<std::string, DeviceRecord> written_devices_ GUARDED_BY(devices_mu_);

  mutable Mutex limiter_mu_;
  RateLimiter limiter_ GUARDED_BY(limiter_mu_);
  RedeliveryFilter redeliveries_;  // its own lock

  // Taken before limiter_mu_ where both are: the mark's write is file I/O
  // and must not hold up the receive thread's limiter.
  Mutex presence_mu_ ACQUIRED_BEFORE(limiter_mu_);
  bool link_up_ GUARDED_BY(presence_mu_) = false;
  bool mark_failed_ GUARDED_BY(presence_mu_) = false;       // said once in the log
  int64_t marked_ms_ GUARDED_BY(presence_mu_) = INT64_MIN;  // monotonic, the presence mark's last write
  std::unique_ptr<PresenceMark> presence_ GUARDED_BY(presence_mu_);

  mutable Mutex mu_ ACQUIRED_BEFORE(presence_mu_);
  std::condition_variable cv_;         // committer: work arrived / stop / commit slot free
  std::condition_variable done_cv_;    // producers: committed / space
  std::vector<Reading> queue_ GUARDED_BY(mu_);
  struct QueuedMessage {
    size_t readings;
    uint64_t seq;
  };
  std::deque<QueuedMessage> queued_msgs_ GUARDED_BY(mu_);  // oldest first
  // Between Start and Stop; written only in kAfterJournal.
  std::unique_ptr<IntakeJournal> journal_ GUARDED_BY(mu_);
  std::vector<DeadLetter> dead_letters_ GUARDED_BY(mu_);
  // Intake sequence numbers: they go on from the store's checkpoint (and
  // the journal's last record) across restarts.
  uint64_t enqueued_seq_ GUARDED_BY(mu_) = 0;   // the last message queued
  uint64_t committed_seq_ GUARDED_BY(mu_) = 0;  // the last message committed
  uint64_t replay_until_ GUARDED_BY(mu_) = 0;   // the journal's messages, committed at start without delay
  // One commit at a time, by the committer thread or (ack after commit) by
  // the receiving thread itself; batch_ is the holder's buffer, kept so its
  // capacity is reused. batch_ belongs to whoever holds the slot
  // (committing_), with or without mu_: no mutex guards it, which the
  // analysis cannot state.
  bool committing_ GUARDED_BY(mu_) = false;
  bool committer_wants_slot_ GUARDED_BY(mu_) = false;  // the committer waits on cv_ for !committing_
  std::vector<Reading> batch_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  bool gave_up_ GUARDED_BY(mu_) = false;    // a batch was not committed: keep the journal
  bool refusing_ GUARDED_BY(mu_) = false;   // the last commit attempt failed
  bool intake_open_ GUARDED_BY(mu_) = true;
  std::string pause_reason_ GUARDED_BY(mu_);
  int64_t paused_since_ms_ GUARDED_BY(mu_) = 0;  // monotonic, while closed
  std::condition_variable intake_cv_;  // IntakeGate: intake_open_ changed
  std::thread committer_;
  // The receiving thread: busy while in OnMessage, idle between messages.
  Heartbeat receive_beat_{"ingest"};

  mutable Mutex counters_mu_;
  IngestCounters counters_ GUARDED_BY(counters_mu_);
  // paused_since_ms_ as of the last ShowIntakeState.
  int64_t shown_paused_since_ms_ GUARDED_BY(counters_mu_) = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_INGEST_H_

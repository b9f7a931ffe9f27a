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
// after the message callback returns (measured; docs/INGEST.md). With
// ack_after_commit, OnMessage returns only once its readings are committed,
// so a kill -9 never loses a reading the broker was told we have; it
// commits on the calling thread (one commit slot shared with the committer
// thread, so concurrent callers share a commit). Without it, OnMessage
// returns at once and the committer thread writes the queue in batches
// (group commit: batch_max readings or batch_delay_ms); a kill -9 may lose
// what is queued: at most the queue (4 x batch_max) plus one batch.
//
// Rejected messages are counted by reason and dead-lettered (topic, first
// bytes, reason, time) through the sink; rate-limited ones are counted per
// device but not dead-lettered (they are well-formed, and a flood would
// only push real bad input out of the capped dead-letter table).
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
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/ingest/decoders.h"
#include "agent/ingest/rate_limiter.h"
#include "agent/ingest/topic_pattern.h"
#include "platform/clock.h"
#include "platform/status.h"
#include "store/store.h"

namespace edgesync {

// Where ingest writes; the Store in production, a fake in unit tests.
class IngestSink {
 public:
  virtual ~IngestSink() = default;
  virtual Status AppendReadings(const std::vector<Reading>& readings) = 0;
  virtual Status AddDeadLetters(const std::vector<DeadLetter>& letters) = 0;
  // True if this exact reading (device, metric, time, value) is stored:
  // used only for messages the broker marked as redelivered.
  virtual bool Contains(const Reading& reading) = 0;
};

class StoreSink : public IngestSink {
 public:
  explicit StoreSink(Store* store) : store_(store) {}
  Status AppendReadings(const std::vector<Reading>& readings) override {
    AppendResult r;
    return store_->AppendReadings(readings, &r);
  }
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

 private:
  Store* store_;
};

struct IngestOptions {
  std::vector<std::string> patterns = {"sensors/{deviceId}/{metric}", "sensors/{deviceId}"};
  int64_t max_payload_bytes = 65536;
  double device_rate = 100;
  double device_burst = 200;
  size_t max_tracked_devices = 10000;
  int64_t epoch_floor_ms = 0;
  int64_t batch_max = 1000;
  int64_t batch_delay_ms = 10;
  bool ack_after_commit = true;
  size_t dead_letter_head_bytes = 64;
  size_t max_pending_dead_letters = 1000;
  int64_t retry_delay_ms = 200;  // after a failed commit
};

struct IngestCounters {
  int64_t messages = 0;
  int64_t readings_accepted = 0;
  int64_t readings_committed = 0;
  int64_t batches = 0;
  int64_t commit_failures = 0;
  int64_t dead_letters = 0;
  int64_t dead_letters_dropped = 0;
  int64_t receive_time_stamped = 0;
  int64_t untrusted_clock = 0;
  int64_t duplicates_skipped = 0;
  std::array<int64_t, static_cast<size_t>(RejectReason::kCount)> rejected{};
  std::vector<std::pair<std::string, int64_t>> top_rate_limited;
  int64_t rate_limited_evicted = 0;
};

class Ingest {
 public:
  Ingest(IngestOptions options, IngestSink* sink, Clock* clock = nullptr);
  ~Ingest();
  Status Init();  // parses the patterns
  // The MQTT filters to subscribe to (one per pattern).
  std::vector<std::string> Filters() const;

  void Start();
  // Commits everything queued, then stops the committer. Call after the
  // MQTT link has stopped delivering.
  void Stop();

  // duplicate: the broker's DUP flag (a redelivery after we were cut off
  // between commit and PUBACK); readings carrying their own time that are
  // already stored are then skipped, so a redelivery is not stored twice.
  void OnMessage(const std::string& topic, const std::string& payload, bool duplicate = false);
  IngestCounters counters() const;

 private:
  void Reject(const std::string& topic, const std::string& payload, RejectReason reason, const std::string& why);
  void CommitLoop();
  // mu_ held, committing_ set by the caller: whole messages, at most
  // batch_max readings (at least one message), into batch_; returns the
  // sequence number of the last message taken.
  void CommitHeldSlot(std::unique_lock<std::mutex>* lock);
  uint64_t TakeBatch(std::vector<DeadLetter>* letters);
  // mu_ not held: writes letters and batch_ (retrying failures).
  void CommitBatch(const std::vector<DeadLetter>& letters);
  bool Convert(std::vector<DecodedReading>& decoded, std::vector<Reading>* out, RejectReason* reason,
               std::string* why);

  const IngestOptions options_;
  IngestSink* sink_;
  Clock* clock_;
  std::vector<TopicPattern> patterns_;

  mutable std::mutex limiter_mu_;
  RateLimiter limiter_;

  mutable std::mutex mu_;
  std::condition_variable cv_;         // committer: work arrived / stop / commit slot free
  std::condition_variable done_cv_;    // producers: committed / space
  std::vector<Reading> queue_;
  std::deque<size_t> queued_msgs_;     // readings per queued message, oldest first
  std::vector<DeadLetter> dead_letters_;
  uint64_t enqueued_seq_ = 0;          // messages queued so far
  uint64_t taken_seq_ = 0;             // messages taken out of the queue for a commit
  uint64_t committed_seq_ = 0;         // messages committed so far
  // One commit at a time, by the committer thread or (ack after commit) by
  // the receiving thread itself; batch_ is the holder's buffer, kept so its
  // capacity is reused.
  bool committing_ = false;
  bool committer_wants_slot_ = false;  // the committer waits on cv_ for !committing_
  std::vector<Reading> batch_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread committer_;

  mutable std::mutex counters_mu_;
  IngestCounters counters_;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_INGEST_H_

#include "agent/ingest/ingest.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "agent/ingest/commit_pacer.h"
#include "platform/log.h"
#include "store/types.h"
#include "sync/mqtt_link_pool.h"

namespace edgesync {
namespace {

// Printable ASCII as is, anything else as \xNN: a dead letter must be safe
// to print and store whatever the sensor sent.
std::string Head(const std::string& bytes, size_t max) {
  std::string out;
  static const char* kHex = "0123456789abcdef";
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// One log line per rate-limited device at most this often: a runaway
// sensor at thousands of messages a second must not flood the log, and a
// line every 10 s still shows when it started and stopped.
constexpr int64_t kRateReportIntervalMs = 10000;

}  // namespace

Ingest::Ingest(IngestOptions options, IngestSink* sink, Clock* clock)
    : options_(std::move(options)),
      batch_max_(static_cast<size_t>(std::max<int64_t>(options_.batch_max, 1))),
      sink_(sink),
      clock_(clock ? clock : SystemClock()),
      limiter_(options_.device_rate, options_.device_burst, options_.max_tracked_devices, options_.device_backlog_ms,
               kRateReportIntervalMs, options_.max_away_ms) {}

Ingest::~Ingest() { Stop(); }

Status Ingest::Init() {
  ClockTrustOptions trust;
  ES_RETURN_IF_ERROR(ParseClockTrustSource(options_.clock_trust, &trust).Annotate("ingest.clock_trust"));
  trust.epoch_floor_ms = options_.epoch_floor_ms;
  trust.marker_path = options_.clock_trust_marker;
  clock_trust_ = std::make_unique<ClockTrust>(trust, clock_,
                                              options_.clock_sync ? options_.clock_sync : KernelClockSync);
  patterns_.clear();
  for (const std::string& p : options_.patterns) {
    TopicPattern tp;
    ES_RETURN_IF_ERROR(TopicPattern::Parse(p, &tp));
    patterns_.push_back(std::move(tp));
  }
  if (patterns_.empty()) return Status::InvalidArgument("no topic patterns to subscribe to");
  if (options_.priority_topics.size() > kMaxPriorityLevel) {
    return Status::InvalidArgument("uplink.priority_topics: " + std::to_string(options_.priority_topics.size()) +
                                   " topic filters, at most " + std::to_string(kMaxPriorityLevel));
  }
  for (const std::string& f : options_.priority_topics) {
    std::string error = TopicFilterError(f);
    if (!error.empty()) return Status::InvalidArgument("uplink.priority_topics: \"" + f + "\" " + error);
  }
  has_device_topic_ = !options_.device_topic.empty();
  if (has_device_topic_) {
    ES_RETURN_IF_ERROR(TopicPattern::Parse(options_.device_topic, &device_topic_).Annotate("ingest.device_topic"));
    if (!device_topic_.has_device() || device_topic_.has_metric()) {
      return Status::InvalidArgument("ingest.device_topic: \"" + options_.device_topic +
                                     "\" must name {deviceId} and not {metric}");
    }
  }
  return Status::Ok();
}

std::vector<std::string> Ingest::Filters() const {
  std::vector<std::string> f;
  for (const auto& p : patterns_) f.push_back(p.Filter());
  if (has_device_topic_) f.push_back(device_topic_.Filter());
  return f;
}

uint32_t Ingest::PriorityLevel(const std::string& topic) const {
  for (size_t i = 0; i < options_.priority_topics.size(); ++i) {
    if (TopicMatchesFilter(options_.priority_topics[i], topic)) return static_cast<uint32_t>(i + 1);
  }
  return 0;
}

Status Ingest::Start() {
  MutexLock lock(&mu_);
  if (started_) return Status::Ok();
  StartAbsence();
  uint64_t checkpoint = 0;
  ES_RETURN_IF_ERROR(sink_->IntakeCheckpoint(&checkpoint).Annotate("reading the intake checkpoint"));
  uint64_t last = checkpoint;
  size_t replay = 0;
  if (options_.journal_dir.empty() && options_.ack == AckMode::kAfterJournal) {
    return Status::InvalidArgument("ack after journal needs a journal directory");
  }
  // Opened in every mode: records a kAfterJournal run left behind are
  // committed even if the gateway now runs with another ack mode.
  if (!options_.journal_dir.empty()) {
    IntakeJournalOptions jo;
    jo.dir = options_.journal_dir;
    jo.segment_bytes = options_.journal_segment_bytes;
    jo.sync = options_.journal_sync;
    IntakeRecovery rec;
    ES_RETURN_IF_ERROR(IntakeJournal::Open(jo, checkpoint, &journal_, &rec).Annotate("intake journal"));
    if (rec.cut_bytes > 0) {
      ES_LOG(kWarn, "ingest: cut {} torn bytes off the intake journal (never acknowledged)", rec.cut_bytes);
    }
    last = std::max(last, rec.last_seq);
    for (const IntakeMessageId& id : rec.taken) redeliveries_.Restored(id.packet_id, id.duplicate, id.fingerprint);
    for (IntakeRecord& r : rec.pending) {
      replay += r.readings.size();
      Enqueue(&r.readings, r.seq);
    }
    if (replay > 0) {
      ES_LOG(kInfo, "ingest: committing {} readings of {} messages from the intake journal", replay,
             rec.pending.size());
    }
  }
  enqueued_seq_ = last;
  committed_seq_ = queued_msgs_.empty() ? last : checkpoint;
  started_ = true;
  stopping_ = false;
  gave_up_ = false;
  refusing_ = false;
  intake_open_ = true;
  // A redelivered message is checked against the store: the broker's
  // messages wait until the journal's are in it.
  if (!queued_msgs_.empty()) CloseIntake("committing the intake journal");
  ShowIntakeState();
  committer_ = std::thread([this] { CommitLoop(); });
  if (replay > 0) {
    replay_until_ = enqueued_seq_;  // no group-commit delay for these
    cv_.notify_one();
    const uint64_t target = enqueued_seq_;
    // Not past a refused commit: a store that refuses (full under
    // reject-new) must not keep the gateway from starting; intake stays
    // closed until the records are in.
    if (!lock.WaitFor(&done_cv_, std::chrono::milliseconds(options_.replay_wait_ms),
                      [&]() REQUIRES(mu_) { return committed_seq_ >= target || refusing_; }) ||
        committed_seq_ < target) {
      ES_LOG(kWarn, "ingest: the intake journal's readings are not committed yet; the local broker keeps new "
             "messages until they are");
    }
    MutexLock c(&counters_mu_);
    counters_.replayed += static_cast<int64_t>(replay);
  }
  return Status::Ok();
}

void Ingest::Stop() {
  {
    MutexLock lock(&mu_);
    if (!started_) return;
    stopping_ = true;
  }
  {
    // The link went down just before (the owner's contract): the broker
    // queues for us from now on.
    MutexLock p(&presence_mu_);
    if (link_up_) WriteMark(clock_->MonotonicMillis());
    link_up_ = false;
  }
  cv_.notify_all();
  if (committer_.joinable()) committer_.join();
  MutexLock lock(&mu_);
  started_ = false;
  // The journal stays as it is, although everything in it is committed
  // (the next start replays nothing): its records name the messages taken,
  // and the broker redelivers the one whose PUBACK the stop cut off.
  journal_.reset();
  ShowIntakeState();
  done_cv_.notify_all();
}

void Ingest::StartAbsence() {
  MutexLock p(&presence_mu_);
  presence_ = std::make_unique<PresenceMark>(options_.journal_dir, clock_);
  const int64_t now = clock_->MonotonicMillis();
  int64_t since = 0;
  // Another boot (or no mark: a first start, or a version that kept none):
  // the monotonic clock cannot reach back past this boot, so the absence
  // counted is the time since boot, and the broker's answer (session
  // present or not) decides whether it counts at all.
  if (presence_->Read(&since) != PresenceMark::Found::kThisBoot || since > now) since = 0;
  link_up_ = false;
  MutexLock l(&limiter_mu_);
  limiter_.Away(since);
}

void Ingest::WriteMark(int64_t mono_ms) {
  Status s = presence_ ? presence_->Write(mono_ms) : Status::Ok();
  marked_ms_ = mono_ms;
  if (!s.ok() && !mark_failed_) {
    ES_LOG(kWarn, "ingest: presence mark: {}; after a restart, readings queued by the broker without their own "
           "time count as arriving now", s.ToString());
  }
  mark_failed_ = !s.ok();
}

void Ingest::LinkDown() {
  MutexLock p(&presence_mu_);
  const int64_t now = clock_->MonotonicMillis();
  if (link_up_) WriteMark(now);
  link_up_ = false;
  MutexLock l(&limiter_mu_);
  limiter_.Away(now);
}

void Ingest::LinkUp(bool session_present) {
  MutexLock p(&presence_mu_);
  const int64_t now = clock_->MonotonicMillis();
  {
    MutexLock l(&limiter_mu_);
    const int64_t away = limiter_.away_ms(now);
    limiter_.Back(now, session_present);
    if (away > 0 && session_present) {
      ES_LOG(kInfo, "ingest: the local broker kept our session; {} ms away: each device may send up to {} "
             "readings more than its burst while the broker delivers what it queued", away,
             static_cast<int64_t>(options_.device_rate * static_cast<double>(std::min(away, options_.max_away_ms)) /
                                  1e3));
    }
  }
  if (!session_present) redeliveries_.SessionLost();
  link_up_ = true;
  WriteMark(now);
}

void Ingest::KeepPresenceMark() {
  MutexLock p(&presence_mu_);
  const int64_t now = clock_->MonotonicMillis();
  if (link_up_ && now - marked_ms_ >= kPresenceMarkMs) WriteMark(now);
}

void Ingest::Reject(const std::string& topic, const std::string& payload, RejectReason reason,
                    const std::string& why) {
  {
    MutexLock lock(&counters_mu_);
    counters_.rejected[static_cast<size_t>(reason)]++;
  }
  if (reason == RejectReason::kRateLimited) return;
  ES_LOG(kDebug, "ingest: rejected {} ({}): {}", topic.substr(0, 256), RejectReasonName(reason), why);
  DeadLetter dl;
  dl.at_ms = clock_->WallMillis();
  dl.topic = Head(topic, 256);
  dl.head = Head(payload, options_.dead_letter_head_bytes);
  dl.reason = std::string(RejectReasonName(reason)) + ": " + why;
  bool dropped = false;
  {
    MutexLock lock(&mu_);
    if (dead_letters_.size() < options_.max_pending_dead_letters) {
      dead_letters_.push_back(std::move(dl));
      cv_.notify_one();
    } else {
      dropped = true;
    }
  }
  if (dropped) {
    MutexLock lock(&counters_mu_);
    counters_.dead_letters_dropped++;
  }
}

bool Ingest::Convert(std::vector<DecodedReading>& decoded, std::vector<Reading>* out, RejectReason* reason,
                     std::string* why) {
  int64_t now = clock_->WallMillis();
  const bool untrusted = !clock_trust_->Trusted();
  int64_t stamped_untrusted = 0;
  // Receive times stamped untrusted carry their period (0: none kept), so
  // they can be corrected once the clock is trusted in this boot.
  uint32_t period = 0;
  if (untrusted) {
    for (const DecodedReading& d : decoded) {
      if (!d.has_time) {
        period = StampPeriod(now);
        break;
      }
    }
  }
  for (DecodedReading& d : decoded) {
    Status s = ValidateKey("deviceId", d.device_id);
    if (s.ok()) s = ValidateKey("metric", d.metric);
    if (!s.ok()) {
      *reason = RejectReason::kInvalidKey;
      *why = s.message();
      return false;
    }
    Reading r;
    r.device_id = std::move(d.device_id);
    r.metric = std::move(d.metric);
    r.value = d.value;
    r.unit = std::move(d.unit);
    if (!d.has_time) {
      r.ts_ms = now;
      r.quality |= kQualityReceiveTime;
      if (untrusted) r.quality |= kQualityUntrustedClock | (period << kQualityPeriodShift);
    } else if (d.relative_time) {
      r.ts_ms = now + d.ts_ms;
      if (untrusted) r.quality |= kQualityUntrustedClock;
    } else {
      r.ts_ms = d.ts_ms;  // the device's own time: left as it stamped it
    }
    if (r.quality & kQualityUntrustedClock) ++stamped_untrusted;
    if (d.sensor_flagged) r.quality |= kQualitySensorFlagged;
    s = ValidateReading(r);
    if (!s.ok()) {
      *reason = RejectReason::kInvalidReading;
      *why = s.message();
      return false;
    }
    out->push_back(std::move(r));
  }
  if (stamped_untrusted > 0) {
    MutexLock lock(&counters_mu_);
    counters_.untrusted_clock += stamped_untrusted;
  }
  return true;
}

uint32_t Ingest::StampPeriod(int64_t wall) {
  const int64_t offset = wall - clock_->MonotonicMillis();
  const std::string boot = clock_->BootId();
  MutexLock lock(&periods_mu_);
  if (periods_unsupported_) return 0;
  if (!periods_loaded_) {
    // A run restarted in the same boot goes on in the period it left open.
    std::vector<ClockPeriod> periods;
    Status s = sink_->ListClockPeriods(&periods);
    if (s.code() == Status::Code::kUnsupported) {
      periods_unsupported_ = true;
      return 0;
    }
    if (s.ok()) {
      periods_loaded_ = true;
      if (!periods.empty() && !periods.back().corrected) {
        period_id_ = periods.back().id;
        period_boot_ = periods.back().boot_id;
        period_offset_ms_ = periods.back().offset_ms;
      }
    }
  }
  if (period_id_ != 0 && period_boot_ == boot && std::llabs(offset - period_offset_ms_) <= kPeriodStepMs) {
    return period_id_;
  }
  uint32_t id = 0;
  Status s = sink_->OpenClockPeriod(boot, offset, wall, &id);
  if (s.code() == Status::Code::kUnsupported) {
    periods_unsupported_ = true;
    return 0;
  }
  if (!s.ok()) {
    // The readings keep their untrusted flag, uncorrectable; the next
    // message tries again.
    if (!period_failure_logged_) ES_LOG(kWarn, "ingest: cannot open an untrusted clock period: {}", s.ToString());
    period_failure_logged_ = true;
    return 0;
  }
  if (period_id_ != 0) {
    ES_LOG(kInfo, "ingest: the untrusted clock stepped by {} ms; clock period {} begins", offset - period_offset_ms_,
           id);
  } else {
    ES_LOG(kInfo, "ingest: clock not trusted; readings stamped on arrival belong to clock period {}", id);
  }
  period_id_ = id;
  corrections_done_.store(false, std::memory_order_release);  // to be corrected once trusted again
  period_boot_ = boot;
  period_offset_ms_ = offset;
  return id;
}

void Ingest::CorrectClockPeriods() {
  if (!clock_trust_ || corrections_done_.load(std::memory_order_acquire)) return;
  if (!clock_trust_->Trusted()) return;
  MutexLock lock(&periods_mu_);
  if (corrections_done_.load(std::memory_order_relaxed)) return;
  if (periods_unsupported_) {
    corrections_done_ = true;
    return;
  }
  std::vector<ClockPeriod> periods;
  Status s = sink_->ListClockPeriods(&periods);
  if (s.code() == Status::Code::kUnsupported) {
    periods_unsupported_ = true;
    corrections_done_ = true;
    return;
  }
  if (!s.ok()) {
    ES_LOG(kWarn, "ingest: cannot read the untrusted clock periods (tried again): {}", s.ToString());
    return;
  }
  const std::string boot = clock_->BootId();
  for (const ClockPeriod& p : periods) {
    if (p.corrected || boot.empty() || p.boot_id != boot) continue;
    // Wall and monotonic read together: the trusted offset now.
    const int64_t wall = clock_->WallMillis();
    const int64_t delta = (wall - clock_->MonotonicMillis()) - p.offset_ms;
    bool done = false;
    s = sink_->CorrectClockPeriod(p.id, delta, wall, &done);
    if (!s.ok()) {
      ES_LOG(kWarn, "ingest: cannot correct clock period {} (tried again): {}", p.id, s.ToString());
      return;
    }
    if (done) {
      ES_LOG(kInfo, "ingest: clock trusted; the {} readings of clock period {} move by {} ms", p.readings, p.id,
             delta);
    }
  }
  period_id_ = 0;  // a later untrusted stretch (not in this boot) opens its own
  corrections_done_.store(true, std::memory_order_release);
}

ClockPeriodFigures Ingest::clock_periods() const {
  ClockPeriodFigures f;
  std::vector<ClockPeriod> periods;
  if (!sink_->ListClockPeriods(&periods).ok()) return f;
  f.kept = true;
  const std::string boot = clock_->BootId();
  for (const ClockPeriod& p : periods) {
    if (p.corrected) {
      ++f.corrected;
      f.readings_corrected += p.readings;
    } else if (!boot.empty() && p.boot_id == boot) {
      ++f.open;
      f.readings_open += p.readings;
    } else {
      ++f.uncorrectable;
      f.readings_uncorrectable += p.readings;
    }
  }
  return f;
}

ClockTrust::State Ingest::clock_state() const {
  if (!clock_trust_) return ClockTrust::State{};
  clock_trust_->Trusted();  // asks the source while idle too, so the figures do not wait for a message
  return clock_trust_->Snapshot();
}

void Ingest::OnMessage(const std::string& topic, const std::string& payload, bool duplicate, int packet_id) {
  BusyScope busy(&receive_beat_);
  {
    MutexLock lock(&counters_mu_);
    counters_.messages++;
  }
  const bool may_be_replayed = redeliveries_.Arrived(packet_id, duplicate);
  const uint64_t fingerprint = packet_id > 0 ? RedeliveryFilter::Fingerprint(topic, payload) : 0;
  if (static_cast<int64_t>(payload.size()) > options_.max_payload_bytes) {
    Reject(topic, payload, RejectReason::kTooLarge,
           std::to_string(payload.size()) + " bytes > " + std::to_string(options_.max_payload_bytes));
    return;
  }
  std::string device, metric;
  if (has_device_topic_ && device_topic_.Match(topic, &device, &metric)) {
    OnDeviceRecord(topic, payload, device);
    return;
  }
  const TopicPattern* matched = nullptr;
  for (const auto& p : patterns_) {
    if (p.Match(topic, &device, &metric)) {
      matched = &p;
      break;
    }
  }
  if (matched == nullptr) {
    Reject(topic, payload, RejectReason::kNoTopicMatch, "topic fits no pattern");
    return;
  }
  std::vector<DecodedReading> decoded;
  DecodeError error;
  bool ok = matched->has_metric() ? DecodeMetricPayload(payload, device, metric, &decoded, &error)
                                  : DecodeDevicePayload(payload, device, &decoded, &error);
  if (!ok) {
    Reject(topic, payload, error.reason, error.message);
    return;
  }
  std::vector<Reading> readings;
  readings.reserve(decoded.size());
  RejectReason reason;
  std::string why;
  if (!Convert(decoded, &readings, &reason, &why)) {
    Reject(topic, payload, reason, why);
    return;
  }
  // Stamped before the journal and the store see the readings: the level
  // is part of each entry from its commit on (the uplink and the hub read
  // it from there), whatever the option says later.
  if (const uint32_t level = PriorityLevel(topic); level > 0) {
    for (Reading& r : readings) r.quality = WithPriority(r.quality, level);
  }
  if (duplicate && redeliveries_.AlreadyTaken(packet_id, fingerprint)) {
    MutexLock lock(&counters_mu_);
    counters_.duplicates_skipped += static_cast<int64_t>(readings.size());
    return;
  }
  // A redelivery, or a message a restored broker may be sending again:
  // readings with their own time are looked up in the store.
  if (duplicate || may_be_replayed) {
    size_t before = readings.size();
    readings.erase(std::remove_if(readings.begin(), readings.end(),
                                  [&](const Reading& r) {
                                    return (r.quality & kQualityReceiveTime) == 0 && sink_->Contains(r);
                                  }),
                   readings.end());
    if (readings.size() != before) {
      MutexLock lock(&counters_mu_);
      counters_.duplicates_skipped += static_cast<int64_t>(before - readings.size());
    }
    if (readings.empty()) return;
  }
  if (!WithinRate(topic, payload, readings)) return;
  size_t n = readings.size();
  {
    MutexLock c(&counters_mu_);
    counters_.readings_accepted += static_cast<int64_t>(n);
  }
  MutexLock lock(&mu_);
  // Back-pressure without holding the receive thread (see "Intake" in the
  // header): a short wait while the store takes commits, else intake
  // closes and the gate takes the link down; this message is taken.
  auto room = [&](size_t limit) REQUIRES(mu_) { return queue_.size() < limit || stopping_ || !started_; };
  if (!room(4 * batch_max_)) {
    if (!refusing_) {
      lock.WaitFor(&done_cv_, std::chrono::milliseconds(kRoomWaitMs),
                   [&]() REQUIRES(mu_) { return room(4 * batch_max_) || refusing_; });
    }
    if (!room(4 * batch_max_)) CloseIntake(refusing_ ? pause_reason_ : "the store is not keeping up");
    if (!room(kOverrunFactor * batch_max_)) {
      {
        MutexLock c(&counters_mu_);
        if (counters_.overruns++ % 1000 == 0) {
          ES_LOG(kError, "ingest: {} readings queued and the local broker still delivers; waiting for room",
                 queue_.size());
        }
      }
      lock.Wait(&done_cv_, [&]() REQUIRES(mu_) { return room(kOverrunFactor * batch_max_); });
    }
  }
  const size_t before = queue_.size();
  const uint64_t seq = ++enqueued_seq_;
  bool journaled = false;
  if (journal_ && options_.ack == AckMode::kAfterJournal) {
    Status s = journal_->Append(seq, readings, committed_seq_,
                                IntakeMessageId{packet_id, duplicate, static_cast<uint8_t>(fingerprint & 0xff)});
    journaled = s.ok();
    ShowIntakeState();
    if (!s.ok()) {
      MutexLock c(&counters_mu_);
      if (counters_.journal_failures++ % 1000 == 0) {
        ES_LOG(kError, "ingest: intake journal: {}; committing each message before its PUBACK", s.ToString());
      }
    }
  }
  Enqueue(&readings, seq);
  if (options_.ack != AckMode::kAfterCommit && (journaled || options_.ack == AckMode::kOnReceipt)) {
    WakeCommitter(before);
    redeliveries_.Taken(packet_id, fingerprint);
    return;
  }
  // Returning lets Paho send the PUBACK: only once the readings are
  // durable. Paho hands over one message at a time, so normally nothing
  // else is pending and this thread commits its own message: no hop to the
  // committer and back. Whoever holds the commit slot takes every queued
  // message (up to batch_max readings), so concurrent callers share commits.
  while (committed_seq_ < seq) {
    if (committing_) {
      lock.Wait(&done_cv_);
      continue;
    }
    CommitHeldSlot(nullptr);
    // Only if the committer waits for the slot: a notify while it waits
    // for work would wake it for nothing, once per message.
    if (committer_wants_slot_) cv_.notify_one();
  }
  redeliveries_.Taken(packet_id, fingerprint);
}

void Ingest::OnDeviceRecord(const std::string& topic, const std::string& payload, const std::string& device_id) {
  DeviceRecord record;
  DecodeError error;
  if (!DecodeDeviceRecord(payload, device_id, &record, &error)) {
    Reject(topic, payload, error.reason, error.message);
    return;
  }
  Status s = ValidateKey("deviceId", device_id);
  if (!s.ok()) {
    Reject(topic, payload, RejectReason::kInvalidKey, s.message());
    return;
  }
  {
    MutexLock lock(&devices_mu_);
    auto it = written_devices_.find(device_id);
    if (it != written_devices_.end() && it->second.deleted == record.deleted && it->second.name == record.name &&
        it->second.location == record.location && it->second.default_unit == record.default_unit) {
      return;
    }
  }
  Reading token;  // the rate is counted in readings: a description costs one
  token.device_id = device_id;
  token.quality = kQualityReceiveTime;
  if (!WithinRate(topic, payload, {token})) return;
  s = sink_->PutDevice(record);
  // A deletion of a device without a record has nothing to delete.
  if (!s.ok() && !(record.deleted && s.code() == Status::Code::kNotFound)) {
    ES_LOG(kWarn, "ingest: device {}: the store refused its description: {}", device_id, s.ToString());
    MutexLock lock(&counters_mu_);
    counters_.commit_failures++;
    return;
  }
  {
    MutexLock lock(&devices_mu_);
    if (written_devices_.size() >= options_.max_tracked_devices) written_devices_.clear();
    written_devices_[device_id] = record;
  }
  if (s.ok()) {
    MutexLock lock(&counters_mu_);
    counters_.device_records++;
  }
}

bool Ingest::WithinRate(const std::string& topic, const std::string& payload, const std::vector<Reading>& readings) {
  // The device's own clock where it can be trusted: the reading carries its
  // time, ours is past the epoch floor (so "now" bounds it), and its time is
  // too (a sensor without RTC counting from 1970 is not a clock). The
  // latest such time of the message; else the arrival time.
  const int64_t now = clock_->WallMillis();
  int64_t device_ms = now;
  if (now >= options_.epoch_floor_ms) {
    int64_t own = INT64_MIN;
    for (const Reading& r : readings) {
      if ((r.quality & (kQualityReceiveTime | kQualityUntrustedClock)) == 0 && r.ts_ms >= options_.epoch_floor_ms) {
        own = std::max(own, r.ts_ms);
      }
    }
    if (own != INT64_MIN) device_ms = own;
  }
  // A pack costs one token per reading, capped at the burst so a pack
  // larger than the burst is not refused forever.
  const double cost = std::min<double>(static_cast<double>(readings.size()), options_.device_burst);
  int64_t report = 0;
  {
    MutexLock lock(&limiter_mu_);
    if (limiter_.Allow(readings.front().device_id, device_ms, now, cost, &report, clock_->MonotonicMillis())) {
      return true;
    }
  }
  {
    MutexLock lock(&counters_mu_);
    counters_.readings_rate_limited += static_cast<int64_t>(readings.size());
  }
  if (report > 0) {
    ES_LOG(kWarn, "ingest: device {} over its rate ({}/s, burst {}): {} readings refused since its last report "
           "(dropped, not stored)", readings.front().device_id, options_.device_rate, options_.device_burst, report);
  }
  Reject(topic, payload, RejectReason::kRateLimited, "device over its rate");
  return false;
}

void Ingest::Enqueue(std::vector<Reading>* readings, uint64_t seq) {
  if (queue_.capacity() == 0) queue_.reserve(batch_max_);
  for (Reading& r : *readings) queue_.push_back(std::move(r));
  queued_msgs_.push_back(QueuedMessage{readings->size(), seq});
}

void Ingest::WakeCommitter(size_t before) {
  // Only when its wait can end: the first reading of a batch (it starts
  // the delay) or the group reaching its target. Its waits test these under
  // mu_, so no wake-up is lost, and the messages in between cost no system
  // call.
  if (before == 0 || (before < group_target_ && queue_.size() >= group_target_)) cv_.notify_one();
}

void Ingest::CommitHeldSlot(Heartbeat* beat) {
  committing_ = true;
  std::vector<DeadLetter> letters;
  uint64_t last = TakeBatch(&letters);
  // Once a batch was given up at stop (the store refusing), no later batch
  // is committed either: its journal mark would move the intake checkpoint
  // past the given-up records, and the next start would not replay them
  // although their PUBACKs went out (found by long_outage_test.cc: a full
  // store at SIGTERM lost 3,159 acknowledged readings). The journal keeps
  // them all; the next start commits them in order.
  const bool skip = gave_up_ && stopping_;
  // The caller's MutexLock stays as it is: mu_ is held again before it
  // sees it.
  mu_.Unlock();
  const bool committed = !skip && CommitBatch(letters, last, beat);
  mu_.Lock();
  if (!committed) gave_up_ = true;
  committing_ = false;
  committed_seq_ = last;
  if (committed) refusing_ = false;
  MaybeOpenIntake();
  done_cv_.notify_all();
}

void Ingest::CloseIntake(const std::string& why) {
  pause_reason_ = why;
  if (!intake_open_) {
    ShowIntakeState();
    return;
  }
  intake_open_ = false;
  paused_since_ms_ = clock_->MonotonicMillis();
  {
    MutexLock c(&counters_mu_);
    counters_.pauses++;
  }
  ShowIntakeState();
  ES_LOG(kWarn, "ingest: not taking messages from the local broker ({}); it keeps them until the store "
         "takes commits again", why);
  intake_cv_.notify_all();
}

void Ingest::MaybeOpenIntake() {
  if (intake_open_ || refusing_ || !queued_msgs_.empty() || committed_seq_ != enqueued_seq_) return;
  intake_open_ = true;
  const int64_t closed_ms = clock_->MonotonicMillis() - paused_since_ms_;
  {
    MutexLock c(&counters_mu_);
    counters_.paused_ms += closed_ms;
  }
  ES_LOG(kInfo, "ingest: taking messages from the local broker again (not taken for {} ms: {})", closed_ms,
         pause_reason_);
  pause_reason_.clear();
  ShowIntakeState();
  intake_cv_.notify_all();
}

void Ingest::ShowIntakeState() {
  MutexLock c(&counters_mu_);
  counters_.journal_bytes = journal_ ? journal_->bytes() : 0;
  counters_.paused = !intake_open_;
  counters_.pause_reason = intake_open_ ? std::string() : pause_reason_;
  shown_paused_since_ms_ = paused_since_ms_;
}

bool Ingest::intake_open() const {
  MutexLock lock(&mu_);
  return intake_open_;
}

bool Ingest::WaitIntakeChange(bool open, int64_t timeout_ms) {
  MutexLock lock(&mu_);
  lock.WaitFor(&intake_cv_, std::chrono::milliseconds(timeout_ms),
               [&]() REQUIRES(mu_) { return intake_open_ != open; });
  return intake_open_;
}

uint64_t Ingest::TakeBatch(std::vector<DeadLetter>* letters) {
  letters->swap(dead_letters_);
  batch_.clear();
  size_t msgs = 0, readings = 0;
  uint64_t last = committed_seq_;
  for (const QueuedMessage& m : queued_msgs_) {
    if (msgs > 0 && readings + m.readings > batch_max_) break;
    readings += m.readings;
    last = m.seq;
    ++msgs;
  }
  if (readings == queue_.size()) {
    batch_.swap(queue_);  // queue_ gets batch_'s old capacity back
  } else {
    batch_.reserve(readings);
    std::move(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(readings), std::back_inserter(batch_));
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(readings));
  }
  queued_msgs_.erase(queued_msgs_.begin(), queued_msgs_.begin() + static_cast<std::ptrdiff_t>(msgs));
  done_cv_.notify_all();  // queue space for producers held back
  return last;
}

bool Ingest::CommitBatch(const std::vector<DeadLetter>& letters, uint64_t last_seq, Heartbeat* beat) {
  if (!letters.empty()) {
    Status s = sink_->AddDeadLetters(letters);
    MutexLock c(&counters_mu_);
    if (s.ok()) {
      counters_.dead_letters += static_cast<int64_t>(letters.size());
    } else {
      counters_.dead_letters_dropped += static_cast<int64_t>(letters.size());
      ES_LOG(kWarn, "ingest: dead letters not stored: {}", s.ToString());
    }
  }
  if (batch_.empty()) return true;
  bool committed = false;
  for (int attempt = 0;; ++attempt) {
    Status s = sink_->AppendReadings(batch_, last_seq);
    if (s.ok()) {
      committed = true;
      break;
    }
    {
      MutexLock c(&counters_mu_);
      counters_.commit_failures++;
    }
    if (attempt == 0 || attempt % 50 == 0) {
      ES_LOG(kError, "ingest: committing {} readings failed (attempt {}): {}", batch_.size(), attempt + 1,
             s.ToString());
    }
    bool stopping;
    {
      MutexLock relock(&mu_);
      stopping = stopping_;
      if (s.code() != Status::Code::kInvalidArgument) {  // retried below: take no more meanwhile
        refusing_ = true;
        CloseIntake(s.code() == Status::Code::kNoSpace ? "store full" : "store refuses commits: " + s.message());
        done_cv_.notify_all();  // a receive thread waiting for room waits no longer
      }
    }
    // Invalid input cannot succeed on retry; every other failure (disk
    // full, busy) is retried while we run: the readings are in hand.
    if (s.code() == Status::Code::kInvalidArgument || (stopping && attempt >= 2)) {
      ES_LOG(kError, "ingest: giving up on {} readings: {}", batch_.size(), s.ToString());
      break;
    }
    // While the store refuses (full until the region acknowledges), the
    // committer is alive and waiting by design: it says so, or the
    // watchdog would have systemd restart a gateway that recovers alone.
    if (beat != nullptr) beat->Beat();
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.retry_delay_ms));
  }
  MutexLock c(&counters_mu_);
  if (committed) {
    counters_.readings_committed += static_cast<int64_t>(batch_.size());
    counters_.batches++;
  }
  return committed;
}

void Ingest::CommitLoop() {
  using Steady = std::chrono::steady_clock;
  MutexLock lock(&mu_);
  Steady::time_point first_seen{};
  bool have_first = false;
  // How long a group gathers follows the arrival rate (commit_pacer.h).
  CommitPacer pacer(options_.batch_delay_ms, batch_max_, options_.synced_commits);
  auto mono_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now().time_since_epoch()).count();
  };
  Heartbeat beat("committer");
  while (true) {
    {
      IdleScope idle(&beat);  // an empty queue is idle by design
      lock.Wait(&cv_, [&]() REQUIRES(mu_) { return stopping_ || !queue_.empty() || !dead_letters_.empty(); });
    }
    if (committing_) {  // the receiving thread is committing (ack after commit)
      committer_wants_slot_ = true;
      lock.Wait(&cv_, [&]() REQUIRES(mu_) { return !committing_; });
      committer_wants_slot_ = false;
      continue;
    }
    if (stopping_ && queue_.empty() && dead_letters_.empty()) break;
    const size_t target = group_target_ = pacer.TargetGroup();
    if (!queue_.empty() && !stopping_ && options_.ack != AckMode::kAfterCommit && queue_.size() < target &&
        committed_seq_ >= replay_until_) {
      // Group commit: wait for the group to fill, at most the pacer's delay
      // after its first reading arrived. OnMessage wakes us when the group
      // reaches its target (or on stop); the deadline covers the rest.
      if (!have_first) {
        first_seen = Steady::now();
        have_first = true;
      }
      auto deadline = first_seen + std::chrono::milliseconds(pacer.DelayMs());
      if (Steady::now() < deadline) {
        lock.WaitUntil(&cv_, deadline, [&]() REQUIRES(mu_) { return stopping_ || queue_.size() >= target; });
        continue;
      }
    }
    have_first = false;
    const size_t readings = std::min(queue_.size(), batch_max_);
    CommitHeldSlot(&beat);
    pacer.Committed(readings, mono_ms());
  }
}

IngestCounters Ingest::counters() const {
  IngestCounters c;
  {
    MutexLock lock(&counters_mu_);
    c = counters_;
    if (c.paused) c.paused_ms += clock_->MonotonicMillis() - shown_paused_since_ms_;
  }
  MutexLock lock(&limiter_mu_);
  c.top_rate_limited = limiter_.TopRejected(20);
  c.rate_limited_evicted = limiter_.evicted_rejections();
  return c;
}

}  // namespace edgesync

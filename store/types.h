// store/types.h: the vocabulary every part shares: readings, device records,
// change-log entries, origins. Plain values; no SQLite here.
//
// Thread safety: values.
#ifndef EDGESYNC_STORE_TYPES_H_
#define EDGESYNC_STORE_TYPES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace edgesync {

// Quality flags carried with a reading (bit set).
enum QualityFlag : uint32_t {
  // Stamped while the wall clock was before the configured epoch floor (a
  // board without RTC before NTP): the timestamp is not to be trusted.
  kQualityUntrustedClock = 1u << 0,
  // The payload had no time; the gateway's receive time was used.
  kQualityReceiveTime = 1u << 1,
  // Set by the sensor itself (e.g. SenML or JSON "q"): out of calibration etc.
  kQualitySensorFlagged = 1u << 2,
  // Stamped while the clock was untrusted and moved to the true time since
  // (store/time_correction.h): kQualityUntrustedClock is then clear.
  kQualityCorrectedTime = 1u << 3,
};

// The low byte: bits 0-3 are the QualityFlag bits above, bits 4-5 the
// reading's priority level (below), bits 6-7 unused. The level shares the
// byte rather than taking a field of its own because every storage form
// (log, chunks, feeds, the wire's quality column, the PostgreSQL hub's
// integer) keeps the quality varint as it is: the level travels and stays
// with the entry everywhere, and no format changed to carry it.
//
// Priority level (sync/PROTOCOL.md, "Priority by topic"): 1..3 when the
// gateway's ingest took the reading from an MQTT topic matching its
// uplink.priority_topics filter 1..3, stamped once at commit and never
// changed; 0 = none (no filter matched, or not from MQTT). A hub decides
// "already held by the priority path" from the entry alone.
constexpr uint32_t kQualityPriorityShift = 4;
constexpr uint32_t kQualityPriorityMask = 0x30u;
constexpr uint32_t kMaxPriorityLevel = 3;
inline uint32_t QualityPriority(uint32_t quality) {
  return (quality & kQualityPriorityMask) >> kQualityPriorityShift;
}
// quality with its level set to `level` (0..kMaxPriorityLevel; higher bits
// of level are dropped, never spilled into the flags or the period).
inline uint32_t WithPriority(uint32_t quality, uint32_t level) {
  return (quality & ~kQualityPriorityMask) | ((level << kQualityPriorityShift) & kQualityPriorityMask);
}

// The bits from kQualityPeriodShift up carry the untrusted clock period a
// reading was stamped in (store/time_correction.h; 0 = none): every storage
// form keeps the quality varint as it is, so each keeps the period too.
constexpr uint32_t kQualityPeriodShift = 8;
// The flags alone (bits 0-3): what a reader is shown as the reading's
// quality; the level and the period are the entry's own business.
constexpr uint32_t kQualityFlagMask = (1u << kQualityPriorityShift) - 1;
// Bit 31 stays clear: the PostgreSQL hub keeps quality in a signed integer.
constexpr uint32_t kMaxClockPeriod = (1u << (31 - kQualityPeriodShift)) - 1;
inline uint32_t QualityPeriod(uint32_t quality) { return quality >> kQualityPeriodShift; }
inline uint32_t QualityFlags(uint32_t quality) { return quality & kQualityFlagMask; }

// One sensor reading. deviceId is the partition key.
struct Reading {
  std::string device_id;
  std::string metric;
  int64_t ts_ms = 0;       // Unix milliseconds
  double value = 0;
  std::string unit;        // empty = none
  uint32_t quality = 0;    // QualityFlag bits, priority level, clock period (above)
};

// Per-device metadata; soft-deleted records appear in the feed as tombstones.
struct DeviceRecord {
  std::string device_id;
  std::string name;
  std::string location;
  std::string default_unit;
  bool deleted = false;
};

// Who wrote a change: the gateway id and the epoch of its store (128 random
// bits, 32 lower-case hex characters). A wiped store is a new origin.
struct Origin {
  std::string gateway_id;
  std::string epoch;
  bool operator==(const Origin& o) const { return gateway_id == o.gateway_id && epoch == o.epoch; }
  bool operator!=(const Origin& o) const { return !(*this == o); }
  std::string ToString() const { return gateway_id + "/" + epoch; }
};

// An inclusive span [first, last] of one origin's LSNs.
struct LsnSpan {
  uint64_t first = 0;
  uint64_t last = 0;
  bool operator==(const LsnSpan& o) const { return first == o.first && last == o.last; }
  bool operator!=(const LsnSpan& o) const { return !(*this == o); }
};

// A hub holds at most this many spans of an origin above its mark (live
// lanes; sync/PROTOCOL.md, "Two lanes"): its state per origin stays constant
// in size however long the outage.
constexpr size_t kMaxHeldRanges = 8;
// What an answer may carry: room for a later hub holding more.
constexpr size_t kMaxHeldSpansOnWire = 64;

// The correction of one untrusted clock period of an origin
// (store/time_correction.h): its readings whose stamped time lies in
// [from_ms, to_ms] move by delta_ms. Setting it again changes nothing.
struct TimeCorrection {
  uint32_t period = 0;  // 1..kMaxClockPeriod
  int64_t delta_ms = 0;  // |delta_ms| <= kMaxCorrectionDeltaMs
  int64_t from_ms = 0;
  int64_t to_ms = 0;
};

// A correction moves times by at most this (2^53 ms, ~285,000 years): every
// store form keeps the delta exactly (a remote chunk holds it as a double),
// so an entry past it is refused before any store takes it.
constexpr int64_t kMaxCorrectionDeltaMs = int64_t{1} << 53;

// One entry of the change log, in LSN order.
struct ChangeEntry {
  // kTimeCorrection (protocol 6, sync/PROTOCOL.md "Time corrections"):
  // belongs to the whole origin, no device; a replica keeps it beside the
  // readings it moves.
  enum class Kind : uint8_t { kReading = 0, kDeviceUpsert = 1, kDeviceDelete = 2, kTimeCorrection = 3 };
  uint64_t lsn = 0;
  Kind kind = Kind::kReading;
  Reading reading;        // kReading
  DeviceRecord device;    // kDeviceUpsert / kDeviceDelete (device.deleted set)
  TimeCorrection correction;  // kTimeCorrection
  // "" for a time correction.
  const std::string& device_id() const { return kind == Kind::kReading ? reading.device_id : device.device_id; }
};
constexpr uint8_t kMaxEntryKind = static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection);

// deviceId and metric: 1 to 128 bytes of valid UTF-8, no control characters,
// no '/', '+' or '#' (they would break MQTT topics and wildcards).
// `what` names the field in the message: "deviceId: contains '/' at byte 3".
Status ValidateKey(std::string_view what, std::string_view key);
// A name the store keeps (checkpoint, upstream target, lease owner): 1 to
// 256 bytes of valid UTF-8; the error names `what`.
Status ValidateName(std::string_view what, std::string_view name);
// Keys, finite value, unit (0..32 bytes UTF-8, no control characters).
Status ValidateReading(const Reading& reading);
// An origin: a valid key as gateway id and an epoch (token.h's IsEpoch).
Status ValidateOrigin(const Origin& origin);
// An entry another gateway wrote: LSN in 1..INT64_MAX, a valid reading or
// device record (fields at most 256 bytes).
Status ValidateChangeEntry(const ChangeEntry& entry);
// True if text is well-formed UTF-8 (no overlongs, no surrogates).
bool IsValidUtf8(std::string_view text);

// The 64-bit partition hash of a deviceId (XXH3-64, seed 0); stable across
// versions and architectures because it decides which range owns a device.
uint64_t PartitionHash(std::string_view device_id);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_TYPES_H_

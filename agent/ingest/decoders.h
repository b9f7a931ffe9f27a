// agent/ingest/decoders.h: sensor payloads to readings.
//
// Every decoder treats its input as hostile: size and UTF-8 are checked
// before parsing, JSON goes through nlohmann-json (Debian), FlatBuffers are
// verified before any field is read, values must be finite, times sane.
// A rejection names its reason (a counter label) and a message.
//
// Formats (docs/INGEST.md):
//  - device description topic (ingest.device_topic): a device's record
//    (store/types.h DeviceRecord), see DecodeDeviceRecord.
//  - metric topic ({deviceId} and {metric} in the topic): a bare number, or
//    JSON {"v": number, "t": seconds, "u": unit, "q": flag}.
//  - device topic ({deviceId} only): a SenML pack (RFC 8428; bn, bt, bu, bv,
//    n, v, vb, t, u, s), a flat JSON object {"metric": number, ..., "t":
//    seconds}, or the FlatBuffers table of readings.fbs.
//
// Thread safety: pure functions.
#ifndef EDGESYNC_AGENT_INGEST_DECODERS_H_
#define EDGESYNC_AGENT_INGEST_DECODERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/types.h"

namespace edgesync {

enum class RejectReason {
  kTooLarge = 0,
  kInvalidUtf8,
  kNotFinite,
  kUnknownFormat,
  kMalformedJson,
  kMalformedSenml,
  kInvalidKey,
  kInvalidReading,   // unit too long, time out of range, ...
  kFlatbuffersInvalid,
  kNoTopicMatch,
  kRateLimited,
  kInvalidDeviceRecord,  // a device description that is not one (see DecodeDeviceRecord)
  kCount,
};
const char* RejectReasonName(RejectReason reason);

// One decoded sample. has_time false: the caller stamps the receive time.
struct DecodedReading {
  std::string device_id;
  std::string metric;
  bool has_time = false;
  bool relative_time = false;  // SenML time relative to "now" (resolved by the caller)
  int64_t ts_ms = 0;           // absolute, or the offset in ms when relative_time
  double value = 0;
  std::string unit;
  bool sensor_flagged = false;
};

struct DecodeError {
  RejectReason reason = RejectReason::kUnknownFormat;
  std::string message;
};

// device_id and metric come from the topic. Returns false with *error set.
bool DecodeMetricPayload(std::string_view payload, const std::string& device_id, const std::string& metric,
                         std::vector<DecodedReading>* out, DecodeError* error);
// device_id may be empty when the topic does not name it (SenML bn or the
// FlatBuffers device_id then supply it).
bool DecodeDevicePayload(std::string_view payload, const std::string& device_id,
                         std::vector<DecodedReading>* out, DecodeError* error);

// A device's description, device_id from the topic: a JSON object with the
// optional strings "name" and "location" (at most kMaxDeviceFieldBytes each)
// and "unit" (the default unit: a reading's unit rule, at most 32 bytes),
// none with control characters; any other member is refused (a typo must
// not pass silently). A deletion sets out->deleted: an empty payload (how a
// retained message is cleared) or {"deleted": true} (then the other members
// are ignored). Returns false with *error set; device_id is not checked here
// (the caller applies the store's key rule).
bool DecodeDeviceRecord(std::string_view payload, const std::string& device_id, DeviceRecord* out,
                        DecodeError* error);
// The store's bound on a device record's text fields (ValidateChangeEntry).
constexpr size_t kMaxDeviceFieldBytes = 256;
constexpr size_t kMaxUnitBytes = 32;

// The individual formats (also the fuzz targets' entry points).
bool DecodeBareNumber(std::string_view payload, const std::string& device_id, const std::string& metric,
                      std::vector<DecodedReading>* out, DecodeError* error);
bool DecodeValueJson(std::string_view payload, const std::string& device_id, const std::string& metric,
                     std::vector<DecodedReading>* out, DecodeError* error);
bool DecodeSenml(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                 DecodeError* error);
bool DecodeFlatJson(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                    DecodeError* error);
bool DecodeFlatbuffers(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                       DecodeError* error);

// A SenML record whose resolved time is below 2^28 s is relative to now.
constexpr double kSenmlRelativeLimitS = 268435456.0;
// Times are accepted from 1970 up to the year 2200.
constexpr int64_t kMaxTimeMs = int64_t{7258118400} * 1000;

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_DECODERS_H_

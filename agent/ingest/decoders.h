// agent/ingest/decoders.h: sensor payloads to readings.
//
// Every decoder treats its input as hostile: size and UTF-8 are checked
// before parsing, JSON goes through nlohmann-json (Debian), FlatBuffers are
// verified before any field is read, values must be finite, times sane.
// A rejection names its reason (a counter label) and a message.
//
// Formats (docs/INGEST.md):
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

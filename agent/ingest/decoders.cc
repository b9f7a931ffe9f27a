#include "agent/ingest/decoders.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "agent/ingest/readings_generated.h"
#include "flatbuffers/flatbuffers.h"
#include "store/types.h"

namespace edgesync {

const char* RejectReasonName(RejectReason reason) {
  switch (reason) {
    case RejectReason::kTooLarge: return "too_large";
    case RejectReason::kInvalidUtf8: return "invalid_utf8";
    case RejectReason::kNotFinite: return "not_finite";
    case RejectReason::kUnknownFormat: return "unknown_format";
    case RejectReason::kMalformedJson: return "malformed_json";
    case RejectReason::kMalformedSenml: return "malformed_senml";
    case RejectReason::kInvalidKey: return "invalid_key";
    case RejectReason::kInvalidReading: return "invalid_reading";
    case RejectReason::kFlatbuffersInvalid: return "flatbuffers_invalid";
    case RejectReason::kNoTopicMatch: return "no_topic_match";
    case RejectReason::kRateLimited: return "rate_limited";
    case RejectReason::kInvalidDeviceRecord: return "invalid_device_record";
    case RejectReason::kCount: break;
  }
  return "unknown";
}

namespace {

using json = nlohmann::json;

bool Fail(DecodeError* error, RejectReason reason, std::string message) {
  error->reason = reason;
  error->message = std::move(message);
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// Seconds (as in SenML) to milliseconds, refusing what no clock can mean.
bool SecondsToMs(double seconds, int64_t* ms, DecodeError* error) {
  if (!std::isfinite(seconds)) return Fail(error, RejectReason::kNotFinite, "time is not finite");
  double v = seconds * 1000.0;
  if (v < 0 || v > static_cast<double>(kMaxTimeMs)) {
    return Fail(error, RejectReason::kInvalidReading, "time out of range");
  }
  *ms = std::llround(v);
  return true;
}

bool ParseJson(std::string_view payload, json* doc, DecodeError* error, RejectReason reason) {
  *doc = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (doc->is_discarded()) return Fail(error, reason, "not valid JSON");
  return true;
}

// The member `key` as a finite number. The message names the key (at most
// 32 bytes of it) and is built only on failure: this runs per reading.
bool FiniteNumber(const json& v, std::string_view key, double* out, DecodeError* error,
                  RejectReason not_a_number = RejectReason::kMalformedJson) {
  auto quoted = [&] { return "\"" + std::string(key.substr(0, 32)) + "\""; };
  if (!v.is_number()) return Fail(error, not_a_number, quoted() + " is not a number");
  *out = v.get<double>();
  if (!std::isfinite(*out)) return Fail(error, RejectReason::kNotFinite, quoted() + " is not finite");
  return true;
}

}  // namespace

bool DecodeBareNumber(std::string_view payload, const std::string& device_id, const std::string& metric,
                      std::vector<DecodedReading>* out, DecodeError* error) {
  std::string_view t = Trim(payload);
  if (t.empty() || t.size() > 64) return Fail(error, RejectReason::kUnknownFormat, "not a number");
  // strtod needs a terminated string; it also accepts hex and "nan"/"inf",
  // which are refused below rather than guessed at.
  char buf[80];
  std::memcpy(buf, t.data(), t.size());
  buf[t.size()] = '\0';
  char* end = nullptr;
  double v = std::strtod(buf, &end);
  if (end != buf + t.size() || end == buf) return Fail(error, RejectReason::kUnknownFormat, "not a number");
  if (!std::isfinite(v)) return Fail(error, RejectReason::kNotFinite, "value is not finite");
  for (char c : t) {
    if (c == 'x' || c == 'X') return Fail(error, RejectReason::kUnknownFormat, "hexadecimal numbers are not accepted");
  }
  DecodedReading r;
  r.device_id = device_id;
  r.metric = metric;
  r.value = v;
  out->push_back(std::move(r));
  return true;
}

bool DecodeValueJson(std::string_view payload, const std::string& device_id, const std::string& metric,
                     std::vector<DecodedReading>* out, DecodeError* error) {
  json doc;
  if (!ParseJson(payload, &doc, error, RejectReason::kMalformedJson)) return false;
  if (!doc.is_object()) return Fail(error, RejectReason::kMalformedJson, "expected an object {\"v\": ...}");
  DecodedReading r;
  r.device_id = device_id;
  r.metric = metric;
  auto v = doc.find("v");
  if (v == doc.end()) return Fail(error, RejectReason::kMalformedJson, "missing \"v\"");
  if (!FiniteNumber(*v, "v", &r.value, error)) return false;
  auto t = doc.find("t");
  if (t != doc.end()) {
    double seconds = 0;
    if (!FiniteNumber(*t, "t", &seconds, error)) return false;
    if (!SecondsToMs(seconds, &r.ts_ms, error)) return false;
    r.has_time = true;
  }
  auto u = doc.find("u");
  if (u != doc.end()) {
    if (!u->is_string()) return Fail(error, RejectReason::kMalformedJson, "\"u\" is not a string");
    r.unit = u->get<std::string>();
  }
  auto q = doc.find("q");
  if (q != doc.end()) {
    if (q->is_boolean()) {
      r.sensor_flagged = q->get<bool>();
    } else if (q->is_number()) {
      r.sensor_flagged = q->get<double>() != 0;
    } else {
      return Fail(error, RejectReason::kMalformedJson, "\"q\" is not a number or boolean");
    }
  }
  out->push_back(std::move(r));
  return true;
}

bool DecodeSenml(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                 DecodeError* error) {
  json doc;
  if (!ParseJson(payload, &doc, error, RejectReason::kMalformedSenml)) return false;
  if (!doc.is_array() || doc.empty()) return Fail(error, RejectReason::kMalformedSenml, "expected a non-empty array");
  std::string bn, bu;
  double bt = 0, bv = 0;
  size_t first = out->size();
  for (const json& rec : doc) {
    if (!rec.is_object()) return Fail(error, RejectReason::kMalformedSenml, "record is not an object");
    DecodedReading r;
    bool has_value = false;
    double t = 0;
    std::string n;
    std::string u;
    for (auto it = rec.begin(); it != rec.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      double num = 0;
      if (k == "bn" || k == "n" || k == "bu" || k == "u") {
        if (!v.is_string()) return Fail(error, RejectReason::kMalformedSenml, "\"" + k + "\" is not a string");
        std::string s = v.get<std::string>();
        if (k == "bn") bn = s;
        if (k == "n") n = s;
        if (k == "bu") bu = s;
        if (k == "u") u = s;
      } else if (k == "bt" || k == "t" || k == "bv" || k == "v" || k == "s" || k == "bver" || k == "ut" ||
                 k == "bs" || k == "but") {
        if (!FiniteNumber(v, k, &num, error, RejectReason::kMalformedSenml)) return false;
        if (k == "bt") bt = num;
        if (k == "t") t = num;
        if (k == "bv") bv = num;
        if (k == "bver" && num > 10) return Fail(error, RejectReason::kMalformedSenml, "unsupported SenML version");
        if (k == "v" || (k == "s" && !has_value)) {
          r.value = num;
          has_value = true;
        }
      } else if (k == "vb") {
        if (!v.is_boolean()) return Fail(error, RejectReason::kMalformedSenml, "\"vb\" is not a boolean");
        r.value = v.get<bool>() ? 1 : 0;
        has_value = true;
      } else if (k == "vs" || k == "vd") {
        return Fail(error, RejectReason::kMalformedSenml, "string and data values are not readings");
      } else if (!k.empty() && k.back() == '_') {
        // RFC 8428 4.4: a label ending in '_' must be understood or the pack refused.
        return Fail(error, RejectReason::kMalformedSenml, "unsupported must-understand label");
      }
    }
    // A record carrying only base fields (no name and no value) is allowed.
    if (!has_value) {
      if (n.empty() && rec.find("t") == rec.end()) continue;
      return Fail(error, RejectReason::kMalformedSenml, "record has no numeric value");
    }
    r.value += bv;
    if (!std::isfinite(r.value)) return Fail(error, RejectReason::kNotFinite, "value is not finite");
    std::string name = bn + n;
    if (device_id.empty()) {
      // The topic does not name the device: bn names it and n the metric.
      r.device_id = bn;
      while (!r.device_id.empty() && (r.device_id.back() == ':' || r.device_id.back() == '.')) {
        r.device_id.pop_back();
      }
      r.metric = n;
    } else {
      r.device_id = device_id;
      r.metric = name;
    }
    r.unit = u.empty() ? bu : u;
    double when = bt + t;
    if (!std::isfinite(when)) return Fail(error, RejectReason::kNotFinite, "time is not finite");
    if (when != 0 || rec.find("t") != rec.end() || bt != 0) {
      if (std::fabs(when) < kSenmlRelativeLimitS) {
        // Relative to now (RFC 8428 4.5.3); the caller adds the receive time.
        r.relative_time = true;
        r.has_time = true;
        r.ts_ms = std::llround(when * 1000.0);
      } else {
        if (!SecondsToMs(when, &r.ts_ms, error)) return false;
        r.has_time = true;
      }
    }
    out->push_back(std::move(r));
  }
  if (out->size() == first) return Fail(error, RejectReason::kMalformedSenml, "pack has no readings");
  return true;
}

bool DecodeFlatJson(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                    DecodeError* error) {
  json doc;
  if (!ParseJson(payload, &doc, error, RejectReason::kMalformedJson)) return false;
  if (!doc.is_object()) return Fail(error, RejectReason::kMalformedJson, "expected an object");
  bool has_time = false;
  int64_t ts = 0;
  auto t = doc.find("t");
  if (t != doc.end()) {
    double seconds = 0;
    if (!FiniteNumber(*t, "t", &seconds, error)) return false;
    if (!SecondsToMs(seconds, &ts, error)) return false;
    has_time = true;
  }
  size_t first = out->size();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "t") continue;
    DecodedReading r;
    r.device_id = device_id;
    r.metric = it.key();
    if (!FiniteNumber(it.value(), it.key(), &r.value, error)) return false;
    r.has_time = has_time;
    r.ts_ms = ts;
    out->push_back(std::move(r));
  }
  if (out->size() == first) return Fail(error, RejectReason::kMalformedJson, "object has no readings");
  return true;
}

bool DecodeFlatbuffers(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                       DecodeError* error) {
  const auto* data = reinterpret_cast<const uint8_t*>(payload.data());
  if (payload.size() < 8 || !ingest::fb::ReadingsBufferHasIdentifier(data)) {
    return Fail(error, RejectReason::kUnknownFormat, "not a FlatBuffers Readings message");
  }
  // Depth and table limits keep a crafted buffer from costing more than its size.
  flatbuffers::Verifier verifier(data, payload.size(), /*max_depth=*/16, /*max_tables=*/100000);
  if (!ingest::fb::VerifyReadingsBuffer(verifier)) {
    return Fail(error, RejectReason::kFlatbuffersInvalid, "FlatBuffers verification failed");
  }
  const ingest::fb::Readings* msg = ingest::fb::GetReadings(data);
  std::string device = device_id;
  if (msg->device_id() != nullptr) {
    std::string named = msg->device_id()->str();
    if (device.empty()) {
      device = named;
    } else if (!named.empty() && named != device) {
      return Fail(error, RejectReason::kInvalidKey, "device_id differs from the topic's deviceId");
    }
  }
  if (msg->samples()->size() == 0) return Fail(error, RejectReason::kFlatbuffersInvalid, "no samples");
  for (const ingest::fb::Sample* s : *msg->samples()) {
    DecodedReading r;
    r.device_id = device;
    r.metric = s->metric()->str();
    r.value = s->value();
    if (!std::isfinite(r.value)) return Fail(error, RejectReason::kNotFinite, "value is not finite");
    if (s->ts_ms() != 0) {
      if (s->ts_ms() < 0 || s->ts_ms() > kMaxTimeMs) return Fail(error, RejectReason::kInvalidReading, "time out of range");
      r.has_time = true;
      r.ts_ms = s->ts_ms();
    }
    if (s->unit() != nullptr) r.unit = s->unit()->str();
    r.sensor_flagged = s->flagged();
    out->push_back(std::move(r));
  }
  return true;
}

bool DecodeMetricPayload(std::string_view payload, const std::string& device_id, const std::string& metric,
                         std::vector<DecodedReading>* out, DecodeError* error) {
  if (!IsValidUtf8(payload)) return Fail(error, RejectReason::kInvalidUtf8, "payload is not valid UTF-8");
  std::string_view t = Trim(payload);
  if (!t.empty() && t.front() == '{') return DecodeValueJson(t, device_id, metric, out, error);
  return DecodeBareNumber(t, device_id, metric, out, error);
}

bool DecodeDevicePayload(std::string_view payload, const std::string& device_id, std::vector<DecodedReading>* out,
                         DecodeError* error) {
  if (payload.size() >= 8 && ingest::fb::ReadingsBufferHasIdentifier(payload.data())) {
    return DecodeFlatbuffers(payload, device_id, out, error);
  }
  if (!IsValidUtf8(payload)) return Fail(error, RejectReason::kInvalidUtf8, "payload is not valid UTF-8");
  std::string_view t = Trim(payload);
  if (!t.empty() && t.front() == '[') return DecodeSenml(t, device_id, out, error);
  if (!t.empty() && t.front() == '{') return DecodeFlatJson(t, device_id, out, error);
  return Fail(error, RejectReason::kUnknownFormat, "expected a SenML pack, a JSON object or FlatBuffers");
}

bool DecodeDeviceRecord(std::string_view payload, const std::string& device_id, DeviceRecord* out,
                        DecodeError* error) {
  *out = DeviceRecord{};
  out->device_id = device_id;
  if (payload.empty()) {
    out->deleted = true;
    return true;
  }
  if (!IsValidUtf8(payload)) return Fail(error, RejectReason::kInvalidUtf8, "payload is not valid UTF-8");
  json doc;
  if (!ParseJson(Trim(payload), &doc, error, RejectReason::kMalformedJson)) return false;
  if (!doc.is_object()) {
    return Fail(error, RejectReason::kInvalidDeviceRecord,
                "expected a JSON object {\"name\", \"location\", \"unit\"} or an empty payload");
  }
  bool deleted = false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    auto quoted = [&] { return "\"" + key.substr(0, 32) + "\""; };
    if (key == "deleted") {
      if (!it->is_boolean()) return Fail(error, RejectReason::kInvalidDeviceRecord, "\"deleted\" is not true or false");
      deleted = it->get<bool>();
      continue;
    }
    std::string* field = key == "name"       ? &out->name
                         : key == "location" ? &out->location
                         : key == "unit"     ? &out->default_unit
                                             : nullptr;
    if (field == nullptr) return Fail(error, RejectReason::kInvalidDeviceRecord, "unknown member " + quoted());
    if (!it->is_string()) return Fail(error, RejectReason::kInvalidDeviceRecord, quoted() + " is not a string");
    *field = it->get<std::string>();
    const size_t max = field == &out->default_unit ? kMaxUnitBytes : kMaxDeviceFieldBytes;
    if (field->size() > max) {
      return Fail(error, RejectReason::kInvalidDeviceRecord,
                  quoted() + " is longer than " + std::to_string(max) + " bytes");
    }
    for (char c : *field) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) {
        return Fail(error, RejectReason::kInvalidDeviceRecord, quoted() + " contains a control character");
      }
    }
  }
  if (deleted) {
    *out = DeviceRecord{};
    out->device_id = device_id;
    out->deleted = true;
  }
  return true;
}

}  // namespace edgesync

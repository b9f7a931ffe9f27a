#include "store/types.h"

#include <xxhash.h>

#include <cmath>

#include "store/token.h"

namespace edgesync {

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

Status ValidateName(std::string_view what, std::string_view name) {
  if (name.empty() || name.size() > 256) return Status::InvalidArgument(std::string(what) + ": 1 to 256 bytes");
  if (!IsValidUtf8(name)) return Status::InvalidArgument(std::string(what) + ": not valid UTF-8");
  return Status::Ok();
}

Status ValidateKey(std::string_view what, std::string_view key) {
  std::string name(what);
  if (key.empty()) return Status::InvalidArgument(name + ": empty");
  if (key.size() > 128) return Status::InvalidArgument(name + ": " + std::to_string(key.size()) + " bytes, more than 128");
  if (!IsValidUtf8(key)) return Status::InvalidArgument(name + ": not valid UTF-8");
  for (size_t i = 0; i < key.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F) {
      return Status::InvalidArgument(name + ": control character at byte " + std::to_string(i));
    }
    if (c == '/' || c == '+' || c == '#') {
      return Status::InvalidArgument(name + ": contains '" + std::string(1, static_cast<char>(c)) + "' at byte " +
                                     std::to_string(i));
    }
  }
  return Status::Ok();
}

Status ValidateReading(const Reading& r) {
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", r.device_id));
  ES_RETURN_IF_ERROR(ValidateKey("metric", r.metric));
  if (!std::isfinite(r.value)) return Status::InvalidArgument("value: not finite");
  if (r.unit.size() > 32) return Status::InvalidArgument("unit: more than 32 bytes");
  if (!IsValidUtf8(r.unit)) return Status::InvalidArgument("unit: not valid UTF-8");
  for (char ch : r.unit) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) return Status::InvalidArgument("unit: control character");
  }
  return Status::Ok();
}

uint64_t PartitionHash(std::string_view device_id) {
  return XXH3_64bits(device_id.data(), device_id.size());
}

Status ValidateOrigin(const Origin& o) {
  ES_RETURN_IF_ERROR(ValidateKey("origin gateway id", o.gateway_id));
  if (!IsEpoch(o.epoch)) return Status::InvalidArgument("origin epoch: not 32 lower-case hex characters");
  return Status::Ok();
}

Status ValidateChangeEntry(const ChangeEntry& e) {
  if (e.lsn == 0 || e.lsn > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("entry LSN out of range");
  switch (e.kind) {
    case ChangeEntry::Kind::kReading:
      return ValidateReading(e.reading);
    case ChangeEntry::Kind::kDeviceUpsert:
    case ChangeEntry::Kind::kDeviceDelete:
      ES_RETURN_IF_ERROR(ValidateKey("deviceId", e.device.device_id));
      if (e.device.name.size() > 256 || e.device.location.size() > 256 || e.device.default_unit.size() > 256) {
        return Status::InvalidArgument("device record field longer than 256 bytes");
      }
      return Status::Ok();
    case ChangeEntry::Kind::kTimeCorrection:
      if (e.correction.period == 0 || e.correction.period > kMaxClockPeriod) {
        return Status::InvalidArgument("time correction: clock period " + std::to_string(e.correction.period) +
                                       " outside 1.." + std::to_string(kMaxClockPeriod));
      }
      if (e.correction.delta_ms > kMaxCorrectionDeltaMs || e.correction.delta_ms < -kMaxCorrectionDeltaMs) {
        return Status::InvalidArgument("time correction: delta " + std::to_string(e.correction.delta_ms) +
                                       " ms beyond +-2^53");
      }
      if (e.correction.from_ms > e.correction.to_ms) {
        return Status::InvalidArgument("time correction: span ends before it begins");
      }
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown entry kind");
}

}  // namespace edgesync

#include "store/token.h"

namespace edgesync {

bool ParseUint64(std::string_view s, uint64_t* value) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *value = v;
  return true;
}

bool IsEpoch(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string EncodeFeedToken(const FeedToken& t) {
  return "v1." + std::to_string(t.range_id) + "." + t.epoch + "." + std::to_string(t.lsn);
}

Status DecodeFeedToken(std::string_view text, FeedToken* token) {
  if (text.size() > 80) return Status::InvalidArgument("continuation token: too long");
  if (text.substr(0, 3) != "v1.") return Status::InvalidArgument("continuation token: not a v1 feed token");
  std::string_view rest = text.substr(3);
  std::string_view parts[3];
  for (int i = 0; i < 3; ++i) {
    size_t dot = rest.find('.');
    if (i < 2) {
      if (dot == std::string_view::npos) return Status::InvalidArgument("continuation token: missing fields");
      parts[i] = rest.substr(0, dot);
      rest = rest.substr(dot + 1);
    } else {
      if (dot != std::string_view::npos) return Status::InvalidArgument("continuation token: too many fields");
      parts[i] = rest;
    }
  }
  uint64_t range = 0, lsn = 0;
  if (!ParseUint64(parts[0], &range) || range == 0 || range > UINT32_MAX) {
    return Status::InvalidArgument("continuation token: bad range id");
  }
  if (!IsEpoch(parts[1])) return Status::InvalidArgument("continuation token: bad epoch");
  if (!ParseUint64(parts[2], &lsn) || lsn > static_cast<uint64_t>(INT64_MAX)) {
    return Status::InvalidArgument("continuation token: bad LSN");
  }
  token->range_id = static_cast<uint32_t>(range);
  token->epoch = std::string(parts[1]);
  token->lsn = lsn;
  return Status::Ok();
}

}  // namespace edgesync

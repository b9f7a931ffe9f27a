#include "store/feed_cursor.h"

#include <algorithm>

namespace edgesync {

int RegionShardOf(const std::string& gateway_id) {
  uint32_t h = 2166136261u;
  for (unsigned char c : gateway_id) {
    h ^= c;
    h *= 16777619u;
  }
  return static_cast<int>(h % kRegionShards);
}

namespace {

void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    uint8_t b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    if (shift == 63 && b > 1) return false;  // past 64 bits
    *v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

std::string EncodeShardPositions(const ShardPositions& positions) {
  std::string out;
  int previous = -1;
  for (int s = 0; s < kRegionShards; ++s) {
    if (positions[s] == 0) continue;
    PutVarint(static_cast<uint64_t>(s - previous - 1), &out);
    PutVarint(positions[s], &out);
    previous = s;
  }
  return out;
}

Status DecodeShardPositions(std::string_view bytes, ShardPositions* positions) {
  positions->fill(0);
  if (bytes.size() > kMaxShardPositionsBytes) return Status::Corruption("shard positions: too long");
  int previous = -1;
  while (!bytes.empty()) {
    uint64_t delta = 0, value = 0;
    if (!GetVarint(&bytes, &delta) || !GetVarint(&bytes, &value)) {
      return Status::Corruption("shard positions: truncated varint");
    }
    if (delta >= static_cast<uint64_t>(kRegionShards - previous - 1)) {
      return Status::Corruption("shard positions: shard past the last");
    }
    previous += static_cast<int>(delta) + 1;
    if (value == 0 || value > static_cast<uint64_t>(INT64_MAX)) {
      return Status::Corruption("shard positions: position of shard " + std::to_string(previous) + " out of range");
    }
    (*positions)[previous] = value;
  }
  return Status::Ok();
}

std::string ShardPositionsText(const ShardPositions& positions) {
  std::string out;
  for (int s = 0; s < kRegionShards; ++s) {
    if (positions[s] == 0) continue;
    if (!out.empty()) out += ' ';
    out += std::to_string(s) + ':' + std::to_string(positions[s]);
  }
  return out.empty() ? "0" : out;
}

uint64_t ShardPositionsSum(const ShardPositions& positions) {
  uint64_t sum = 0;
  for (uint64_t p : positions) sum += p;
  return sum;
}

bool AllAtOrBelow(const ShardPositions& a, const ShardPositions& b) {
  for (int s = 0; s < kRegionShards; ++s) {
    if (a[s] > b[s]) return false;
  }
  return true;
}

uint64_t ShardLag(const ShardPositions& positions, const ShardPositions& head) {
  uint64_t lag = 0;
  for (int s = 0; s < kRegionShards; ++s) lag = std::max(lag, head[s] > positions[s] ? head[s] - positions[s] : 0);
  return lag;
}

}  // namespace edgesync

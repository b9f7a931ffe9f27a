#include "store/chunk_codec.h"

#include "store/column_block.h"
#include "store/column_coding.h"

namespace edgesync {
namespace {

constexpr uint8_t kFormat = 1;
// A reading takes at most this many raw column bytes (4 varints of at most
// 10 bytes, a scale byte, 8 raw bytes): a larger raw length is damage.
constexpr uint64_t kMaxRawPerReading = 4 * 10 + 1 + 8;
constexpr int kColumns = 6;
const char* const kColumnNames[kColumns] = {"series", "ts", "quality", "scale", "mantissa", "raw"};

Status Bad(const std::string& what) { return Status::Corruption("chunk: " + what); }

}  // namespace

void EncodeChunk(const std::vector<ChunkReading>& readings, std::string* out) {
  std::string cols[kColumns];
  int64_t prev_series = 0, prev_ts = 0;
  for (const ChunkReading& r : readings) {
    PutVarint(ZigZag(r.series - prev_series), &cols[0]);
    // Wrapping arithmetic: any two int64 timestamps have a delta mod 2^64.
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.ts_ms) - static_cast<uint64_t>(prev_ts))), &cols[1]);
    PutVarint(r.quality, &cols[2]);
    prev_series = r.series;
    prev_ts = r.ts_ms;
    PutValue(r.value, &cols[3], &cols[4], &cols[5]);
  }
  std::string raw;
  PutVarint(readings.size(), &raw);
  for (const std::string& c : cols) PutColumn(c, &raw);
  SealBlock(kFormat, raw, false, out);
}

Status DecodeChunk(std::string_view block, size_t max_readings, std::vector<ChunkReading>* readings) {
  readings->clear();
  std::string raw;
  std::string why = OpenBlock(block, kFormat, max_readings * kMaxRawPerReading + 64, &raw);
  if (!why.empty()) return Bad(why);
  const auto* r = reinterpret_cast<const uint8_t*>(raw.data());
  VarintReader in(r, r + raw.size());
  uint64_t n = 0;
  if (!in.Next(&n)) return Bad("truncated count");
  if (n > max_readings) return Bad("count " + std::to_string(n) + " above " + std::to_string(max_readings));
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  why = GetColumns(&in, kColumns, kColumnNames, cols);
  if (!why.empty()) return Bad(why);
  if (!in.AtEnd()) return Bad("trailing bytes");
  readings->resize(static_cast<size_t>(n));
  uint64_t series = 0, ts = 0;
  for (ChunkReading& out : *readings) {
    uint64_t ds = 0, dt = 0, q = 0;
    if (!cols[0].Next(&ds)) return Bad("column series truncated");
    if (!cols[1].Next(&dt)) return Bad("column ts truncated");
    if (!cols[2].Next(&q) || q > UINT32_MAX) return Bad("column quality bad");
    series += static_cast<uint64_t>(UnZigZag(ds));
    ts += static_cast<uint64_t>(UnZigZag(dt));
    out.series = static_cast<int64_t>(series);
    out.ts_ms = static_cast<int64_t>(ts);
    out.quality = static_cast<uint32_t>(q);
    if (const char* why_value = GetValue(&cols[3], &cols[4], &cols[5], &out.value)) return Bad(why_value);
  }
  for (int c = 0; c < kColumns; ++c) {
    if (!cols[c].AtEnd()) return Bad(std::string("column ") + kColumnNames[c] + " has trailing bytes");
  }
  return Status::Ok();
}

}  // namespace edgesync

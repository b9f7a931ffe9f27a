#include "store/chunk_codec.h"

#include "store/column_block.h"
#include "store/column_coding.h"

namespace edgesync {
namespace {

// Commit chunks: zstd without a checksum (store/column_block.h says why the
// block kinds differ on the wire).
constexpr BlockFormat kChunkFormat{1, false, 0};
// A reading takes at most this many raw column bytes (4 varints of at most
// 10 bytes, a scale byte, 8 raw bytes): a larger raw length is damage.
constexpr uint64_t kMaxRawPerReading = 4 * 10 + 1 + 8;
constexpr int kColumns = 6;
enum Column { kKey, kTs, kQuality, kScale, kMantissa, kRaw };  // kKey: series, or LSN in a series block
const char* const kColumnNames[kColumns] = {"series", "ts", "quality", "scale", "mantissa", "raw"};

Status Bad(const std::string& what) { return Status::Corruption("chunk: " + what); }

// The raw bytes of both block kinds: varint n, then each column as varint
// length + bytes.
void SealColumns(const BlockFormat& format, size_t n, const std::string* cols, std::string* out) {
  std::string raw;
  PutVarint(n, &raw);
  for (int c = 0; c < kColumns; ++c) PutColumn(cols[c], &raw);
  SealBlock(format, raw, out);
}

// SealColumns' inverse: bounds the raw size by max_readings before
// allocating, and points cols at the columns inside *raw.
Status OpenColumns(std::string_view block, const BlockFormat& format, const char* what, size_t max_readings,
                   const char* const* names, std::string* raw, uint64_t* n, VarintReader* cols) {
  auto bad = [&](const std::string& m) { return Status::Corruption(what + m); };
  std::string why = OpenBlock(block, format, max_readings * kMaxRawPerReading + 64, raw);
  if (!why.empty()) return bad(why);
  const auto* r = reinterpret_cast<const uint8_t*>(raw->data());
  VarintReader in(r, r + raw->size());
  if (!in.Next(n)) return bad("truncated count");
  if (*n > max_readings) return bad("count " + std::to_string(*n) + " above " + std::to_string(max_readings));
  why = GetColumns(&in, kColumns, names, cols);
  if (!why.empty()) return bad(why);
  if (!in.AtEnd()) return bad("trailing bytes");
  return Status::Ok();
}

Status AllRead(const VarintReader* cols, const char* const* names, const char* what) {
  const std::string why = ColumnsAllRead(cols, kColumns, names);
  return why.empty() ? Status::Ok() : Status::Corruption(what + why);
}

// The value columns of cols; prev_mantissa as in GetValue.
Status GetValueOf(VarintReader* cols, int64_t* prev_mantissa, const char* what, double* value) {
  const char* why = GetValue(&cols[kScale], &cols[kMantissa], &cols[kRaw], value, prev_mantissa);
  return why ? Status::Corruption(std::string(what) + why) : Status::Ok();
}

}  // namespace

void EncodeChunk(const std::vector<ChunkReading>& readings, std::string* out) {
  std::string cols[kColumns];
  int64_t prev_series = 0, prev_ts = 0;
  for (const ChunkReading& r : readings) {
    PutVarint(ZigZag(r.series - prev_series), &cols[kKey]);
    // Wrapping arithmetic: any two int64 timestamps have a delta mod 2^64.
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.ts_ms) - static_cast<uint64_t>(prev_ts))),
              &cols[kTs]);
    PutVarint(r.quality, &cols[kQuality]);
    prev_series = r.series;
    prev_ts = r.ts_ms;
    PutValue(r.value, &cols[kScale], &cols[kMantissa], &cols[kRaw]);
  }
  SealColumns(kChunkFormat, readings.size(), cols, out);
}

Status DecodeChunk(std::string_view block, size_t max_readings, std::vector<ChunkReading>* readings) {
  readings->clear();
  std::string raw;
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  uint64_t n = 0;
  ES_RETURN_IF_ERROR(OpenColumns(block, kChunkFormat, "chunk: ", max_readings, kColumnNames, &raw, &n, cols));
  readings->resize(static_cast<size_t>(n));
  uint64_t series = 0, ts = 0;
  for (ChunkReading& out : *readings) {
    uint64_t ds = 0, dt = 0, q = 0;
    if (!cols[kKey].Next(&ds)) return Bad("column series truncated");
    if (!cols[kTs].Next(&dt)) return Bad("column ts truncated");
    if (!cols[kQuality].Next(&q) || q > UINT32_MAX) return Bad("column quality bad");
    series += static_cast<uint64_t>(UnZigZag(ds));
    ts += static_cast<uint64_t>(UnZigZag(dt));
    out.series = static_cast<int64_t>(series);
    out.ts_ms = static_cast<int64_t>(ts);
    out.quality = static_cast<uint32_t>(q);
    ES_RETURN_IF_ERROR(GetValueOf(cols, nullptr, "chunk: ", &out.value));
  }
  return AllRead(cols, kColumnNames, "chunk: ");
}

namespace {

// Series blocks: zstd without a checksum (3), or the same raw columns plain
// (4) when zstd would not make them smaller (store/column_block.h).
constexpr BlockFormat kSeriesFormat{3, false, 4};
constexpr uint8_t kSpanFormat = 2;
const char* const kSeriesColumnNames[kColumns] = {"lsn", "ts", "quality", "scale", "mantissa", "raw"};

}  // namespace

void EncodeSeriesBlock(const std::vector<SeriesPoint>& points, std::string* out) {
  std::string cols[kColumns];
  int64_t prev_lsn = 0, prev_ts = 0, prev_delta = 0, prev_m = 0;
  for (const SeriesPoint& p : points) {
    // LSNs grow within a series: the gap to the previous one (the number of
    // series written in between, about constant at a steady rate).
    PutVarint(static_cast<uint64_t>(p.lsn) - static_cast<uint64_t>(prev_lsn), &cols[kKey]);
    // Delta of deltas: a sensor at a fixed period codes as zeros.
    const int64_t delta = static_cast<int64_t>(static_cast<uint64_t>(p.ts_ms) - static_cast<uint64_t>(prev_ts));
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(delta) - static_cast<uint64_t>(prev_delta))),
              &cols[kTs]);
    PutVarint(p.quality, &cols[kQuality]);
    PutValue(p.value, &cols[kScale], &cols[kMantissa], &cols[kRaw], &prev_m);
    prev_lsn = p.lsn;
    prev_ts = p.ts_ms;
    prev_delta = delta;
  }
  SealColumns(kSeriesFormat, points.size(), cols, out);
}

Status DecodeSeriesBlock(std::string_view block, size_t max_points, std::vector<SeriesPoint>* points) {
  points->clear();
  std::string raw;
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  uint64_t n = 0;
  ES_RETURN_IF_ERROR(
      OpenColumns(block, kSeriesFormat, "series block: ", max_points, kSeriesColumnNames, &raw, &n, cols));
  points->resize(static_cast<size_t>(n));
  uint64_t lsn = 0, ts = 0, delta = 0;
  int64_t prev_m = 0;
  for (SeriesPoint& out : *points) {
    uint64_t dl = 0, dd = 0, q = 0;
    if (!cols[kKey].Next(&dl)) return Status::Corruption("series block: column lsn truncated");
    // LSNs are positive and strictly increasing: a zero gap or a wrap is damage.
    if (dl == 0 || lsn + dl <= lsn || lsn + dl > static_cast<uint64_t>(INT64_MAX)) {
      return Status::Corruption("series block: LSNs not increasing");
    }
    if (!cols[kTs].Next(&dd)) return Status::Corruption("series block: column ts truncated");
    if (!cols[kQuality].Next(&q) || q > UINT32_MAX) return Status::Corruption("series block: column quality bad");
    lsn += dl;
    delta += static_cast<uint64_t>(UnZigZag(dd));
    ts += delta;
    out.lsn = static_cast<int64_t>(lsn);
    out.ts_ms = static_cast<int64_t>(ts);
    out.quality = static_cast<uint32_t>(q);
    ES_RETURN_IF_ERROR(GetValueOf(cols, &prev_m, "series block: ", &out.value));
  }
  return AllRead(cols, kSeriesColumnNames, "series block: ");
}

void EncodeSpanMarker(const SpanMarker& marker, std::string* out) {
  out->clear();
  out->push_back(static_cast<char>(kSpanFormat));
  PutVarint(static_cast<uint64_t>(marker.first_block), out);
  PutVarint(static_cast<uint64_t>(marker.blocks), out);
}

bool IsSpanMarker(std::string_view block) { return !block.empty() && static_cast<uint8_t>(block[0]) == kSpanFormat; }

Status DecodeSpanMarker(std::string_view block, SpanMarker* marker) {
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  VarintReader in(p, p + block.size());
  const uint8_t* format = nullptr;
  uint64_t first = 0, n = 0;
  if (!in.Bytes(1, &format) || *format != kSpanFormat) return Status::Corruption("span marker: not a span marker");
  if (!in.Next(&first) || !in.Next(&n) || !in.AtEnd() || first == 0 || first > INT64_MAX || n > INT64_MAX - first) {
    return Status::Corruption("span marker: damaged");
  }
  marker->first_block = static_cast<int64_t>(first);
  marker->blocks = static_cast<int64_t>(n);
  return Status::Ok();
}

}  // namespace edgesync

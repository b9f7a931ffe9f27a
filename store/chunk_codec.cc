#include "store/chunk_codec.h"

#include <zstd.h>

#include <cstring>

#include "store/column_coding.h"

namespace edgesync {
namespace {

constexpr uint8_t kFormat = 1;
// zstd level 3 (its default): level 1 left ~15% more bytes on the reference
// workload for no measurable commit time at 1,000 readings per chunk.
constexpr int kZstdLevel = 3;
constexpr uint64_t kRawScale = kMaxDecimalScale + 1;  // the value travels as raw bits
// A reading takes at most this many raw column bytes (4 varints of at most
// 10 bytes, a scale byte, 8 raw bytes): a larger raw length is damage.
constexpr uint64_t kMaxRawPerReading = 4 * 10 + 1 + 8;
constexpr int kColumns = 6;
const char* const kColumnNames[kColumns] = {"series", "ts", "quality", "scale", "mantissa", "raw"};

Status Bad(const std::string& what) { return Status::Corruption("chunk: " + what); }

// A value as its decimal scale (one byte in cols[3]) and mantissa (cols[4]),
// or the raw scale and its IEEE bits (cols[5]). A series block codes each
// mantissa as the change from the previous one (*prev): a series moves by a
// few steps of its resolution, where an absolute mantissa has all its digits.
void PutValue(double value, int64_t* prev, std::string* cols, bool delta = false) {
  int scale = MinimalScale(value);
  int64_t m = 0;
  if (scale >= 0 && MantissaAt(value, scale, &m)) {
    cols[0].push_back(static_cast<char>(scale));
    PutVarint(ZigZag(delta ? static_cast<int64_t>(static_cast<uint64_t>(m) - static_cast<uint64_t>(*prev)) : m),
              &cols[1]);
    *prev = m;
  } else {
    cols[0].push_back(static_cast<char>(kRawScale));
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 8; ++i) cols[2].push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
}

// PutValue's inverse on the readers of the same three columns.
Status GetValue(VarintReader* cols, bool delta, int64_t* prev, double* value) {
  const uint8_t* scale = nullptr;
  if (!cols[3].Bytes(1, &scale) || *scale > kRawScale) return Status::Corruption("column scale bad");
  if (*scale == kRawScale) {
    const uint8_t* b = nullptr;
    if (!cols[5].Bytes(8, &b)) return Status::Corruption("column raw truncated");
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(b[i]) << (8 * i);
    std::memcpy(value, &bits, sizeof bits);
    return Status::Ok();
  }
  uint64_t zm = 0;
  if (!cols[4].Next(&zm)) return Status::Corruption("column mantissa truncated");
  int64_t m = UnZigZag(zm);
  if (delta) m = static_cast<int64_t>(static_cast<uint64_t>(*prev) + static_cast<uint64_t>(m));
  if (m >= (int64_t{1} << 53) || m <= -(int64_t{1} << 53)) return Status::Corruption("mantissa out of range");
  *prev = m;
  *value = FromMantissa(m, *scale);
  return Status::Ok();
}

// u8 format | varint raw length | zstd frame of: varint n, then each column
// as varint length + bytes.
// plain_format != 0: when zstd saves nothing (a series block of a few
// readings: its frame header outweighs what it squeezes) the raw columns
// go as they are under that format byte.
void Frame(uint8_t format, size_t n, const std::string* cols, int columns, std::string* out,
           uint8_t plain_format = 0) {
  std::string raw;
  PutVarint(n, &raw);
  for (int c = 0; c < columns; ++c) {
    PutVarint(cols[c].size(), &raw);
    raw += cols[c];
  }
  out->clear();
  out->push_back(static_cast<char>(format));
  PutVarint(raw.size(), out);
  const size_t head = out->size();
  out->resize(head + ZSTD_compressBound(raw.size()));
  size_t got = ZSTD_compress(&(*out)[head], out->size() - head, raw.data(), raw.size(), kZstdLevel);
  // Compressing into a ZSTD_compressBound buffer cannot fail.
  out->resize(head + (ZSTD_isError(got) ? 0 : got));
  if (plain_format != 0 && out->size() >= raw.size() + 1) {
    out->assign(1, static_cast<char>(plain_format));
    *out += raw;
  }
}

// Frame's inverse: checks the format, bounds the raw size by max_readings
// before allocating, and points cols at the columns inside *raw.
Status Unframe(std::string_view block, uint8_t format, const char* what, size_t max_readings, const char* const* names,
               int columns, std::string* raw, uint64_t* n, VarintReader* cols, uint8_t plain_format = 0) {
  auto bad = [&](const std::string& m) { return Status::Corruption(what + m); };
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  VarintReader head(p, p + block.size());
  const uint8_t* got_format = nullptr;
  if (!head.Bytes(1, &got_format)) return bad("empty block");
  const bool plain = plain_format != 0 && *got_format == plain_format;
  if (*got_format != format && !plain) return bad("unknown format " + std::to_string(*got_format));
  if (plain) {
    if (block.size() - 1 > max_readings * kMaxRawPerReading + 64) return bad("raw size too large");
    raw->assign(block.substr(1));
  } else {
    uint64_t raw_size = 0;
    if (!head.Next(&raw_size)) return bad("truncated header");
    if (raw_size > max_readings * kMaxRawPerReading + 64) return bad("raw size " + std::to_string(raw_size) + " too large");
    const size_t frame_size = head.left();
    const char* frame = block.data() + (block.size() - frame_size);
    unsigned long long content = ZSTD_getFrameContentSize(frame, frame_size);
    if (content != raw_size) return bad("frame size does not match the header");
    raw->assign(raw_size, '\0');
    size_t got = ZSTD_decompress(raw->data(), raw->size(), frame, frame_size);
    if (ZSTD_isError(got) || got != raw_size) return bad("zstd frame damaged");
  }
  const auto* r = reinterpret_cast<const uint8_t*>(raw->data());
  VarintReader in(r, r + raw->size());
  if (!in.Next(n)) return bad("truncated count");
  if (*n > max_readings) return bad("count " + std::to_string(*n) + " above " + std::to_string(max_readings));
  for (int c = 0; c < columns; ++c) {
    uint64_t len = 0;
    const uint8_t* start = nullptr;
    if (!in.Next(&len) || len > in.left() || !in.Bytes(static_cast<size_t>(len), &start)) {
      return bad(std::string("column ") + names[c] + " truncated");
    }
    cols[c] = VarintReader(start, start + len);
  }
  if (!in.AtEnd()) return bad("trailing bytes");
  return Status::Ok();
}

Status AllRead(const VarintReader* cols, const char* const* names, int columns, const char* what) {
  for (int c = 0; c < columns; ++c) {
    if (!cols[c].AtEnd()) return Status::Corruption(std::string(what) + "column " + names[c] + " has trailing bytes");
  }
  return Status::Ok();
}

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
    int64_t unused = 0;
    PutValue(r.value, &unused, &cols[3]);
  }
  Frame(kFormat, readings.size(), cols, kColumns, out);
}

Status DecodeChunk(std::string_view block, size_t max_readings, std::vector<ChunkReading>* readings) {
  readings->clear();
  std::string raw;
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  uint64_t n = 0;
  ES_RETURN_IF_ERROR(Unframe(block, kFormat, "chunk: ", max_readings, kColumnNames, kColumns, &raw, &n, cols));
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
    int64_t unused = 0;
    ES_RETURN_IF_ERROR(GetValue(cols, false, &unused, &out.value).Annotate("chunk"));
  }
  return AllRead(cols, kColumnNames, kColumns, "chunk: ");
}

namespace {

constexpr uint8_t kSeriesFormat = 3;
constexpr uint8_t kSeriesPlainFormat = 4;  // the same columns without zstd
constexpr uint8_t kSpanFormat = 2;
const char* const kSeriesColumnNames[kColumns] = {"lsn", "ts", "quality", "scale", "mantissa", "raw"};

}  // namespace

void EncodeSeriesBlock(const std::vector<SeriesPoint>& points, std::string* out) {
  std::string cols[kColumns];
  int64_t prev_lsn = 0, prev_ts = 0, prev_delta = 0, prev_m = 0;
  for (const SeriesPoint& p : points) {
    // LSNs grow within a series: the gap to the previous one (the number of
    // series written in between, about constant at a steady rate).
    PutVarint(static_cast<uint64_t>(p.lsn) - static_cast<uint64_t>(prev_lsn), &cols[0]);
    // Delta of deltas: a sensor at a fixed period codes as zeros.
    const int64_t delta = static_cast<int64_t>(static_cast<uint64_t>(p.ts_ms) - static_cast<uint64_t>(prev_ts));
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(delta) - static_cast<uint64_t>(prev_delta))), &cols[1]);
    PutVarint(p.quality, &cols[2]);
    PutValue(p.value, &prev_m, &cols[3], /*delta=*/true);
    prev_lsn = p.lsn;
    prev_ts = p.ts_ms;
    prev_delta = delta;
  }
  Frame(kSeriesFormat, points.size(), cols, kColumns, out, kSeriesPlainFormat);
}

Status DecodeSeriesBlock(std::string_view block, size_t max_points, std::vector<SeriesPoint>* points) {
  points->clear();
  std::string raw;
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  uint64_t n = 0;
  ES_RETURN_IF_ERROR(
      Unframe(block, kSeriesFormat, "series block: ", max_points, kSeriesColumnNames, kColumns, &raw, &n, cols,
              kSeriesPlainFormat));
  points->resize(static_cast<size_t>(n));
  uint64_t lsn = 0, ts = 0, delta = 0;
  int64_t prev_m = 0;
  for (SeriesPoint& out : *points) {
    uint64_t dl = 0, dd = 0, q = 0;
    if (!cols[0].Next(&dl)) return Status::Corruption("series block: column lsn truncated");
    // LSNs are positive and strictly increasing: a zero gap or a wrap is damage.
    if (dl == 0 || lsn + dl <= lsn || lsn + dl > static_cast<uint64_t>(INT64_MAX)) {
      return Status::Corruption("series block: LSNs not increasing");
    }
    if (!cols[1].Next(&dd)) return Status::Corruption("series block: column ts truncated");
    if (!cols[2].Next(&q) || q > UINT32_MAX) return Status::Corruption("series block: column quality bad");
    lsn += dl;
    delta += static_cast<uint64_t>(UnZigZag(dd));
    ts += delta;
    out.lsn = static_cast<int64_t>(lsn);
    out.ts_ms = static_cast<int64_t>(ts);
    out.quality = static_cast<uint32_t>(q);
    ES_RETURN_IF_ERROR(GetValue(cols, true, &prev_m, &out.value).Annotate("series block"));
  }
  return AllRead(cols, kSeriesColumnNames, kColumns, "series block: ");
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

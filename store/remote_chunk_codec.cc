#include "store/remote_chunk_codec.h"

#include <algorithm>
#include <cmath>

#include "store/column_block.h"
#include "store/column_coding.h"

namespace edgesync {
namespace {

// Remote chunks: zstd with its content checksum (store/column_block.h says
// why the block kinds differ on the wire).
constexpr BlockFormat kRemoteFormat{1, true, 0};
// Raw column bytes an entry may take at most: 5 varints of at most 10
// bytes, a scale byte, 8 raw bytes, and a device record's three texts
// (ValidateChangeEntry bounds each at 256 bytes, plus a 2-byte length).
constexpr uint64_t kMaxRawPerEntry = 5 * 10 + 1 + 8 + 3 * (256 + 2);
constexpr size_t kMaxText = 256;
constexpr int kColumns = 9;
enum Column { kOlsn, kKind, kSeries, kTs, kQuality, kScale, kMantissa, kRaw, kText };
const char* const kColumnNames[kColumns] = {"olsn",  "kind",     "series", "ts",  "quality",
                                            "scale", "mantissa", "raw",    "text"};

Status Bad(const std::string& what) { return Status::Corruption("remote chunk: " + what); }

void PutText(const std::string& text, std::string* out) {
  PutVarint(text.size(), out);
  *out += text;
}

bool GetText(VarintReader* in, std::string* text) {
  uint64_t len = 0;
  const uint8_t* p = nullptr;
  if (!in->Next(&len) || len > kMaxText || !in->Bytes(static_cast<size_t>(len), &p)) return false;
  text->assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  return true;
}

}  // namespace

void EncodeRemoteChunk(const std::vector<RemoteChunkEntry>& entries, std::string* out) {
  // Kept per thread: a hub encodes a chunk per origin of every apply, and
  // ten fresh strings each were ten allocations per chunk.
  thread_local std::string cols[kColumns];
  thread_local std::string raw;
  for (std::string& c : cols) c.clear();
  raw.clear();
  uint64_t prev_olsn = entries.empty() ? 0 : entries.front().olsn - 1;
  int64_t prev_series = 0, prev_ts = 0;
  for (const RemoteChunkEntry& e : entries) {
    PutVarint(e.olsn - prev_olsn - 1, &cols[kOlsn]);
    PutVarint(e.kind, &cols[kKind]);
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(e.series) - static_cast<uint64_t>(prev_series))),
              &cols[kSeries]);
    // Wrapping arithmetic: any two int64 timestamps have a delta mod 2^64.
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(e.ts_ms) - static_cast<uint64_t>(prev_ts))),
              &cols[kTs]);
    PutVarint(e.quality, &cols[kQuality]);
    PutValue(e.value, &cols[kScale], &cols[kMantissa], &cols[kRaw]);
    if (e.kind == static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection)) {
      PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(e.to_ms) - static_cast<uint64_t>(e.ts_ms))),
                &cols[kText]);
    } else if (e.kind != 0) {
      PutText(e.name, &cols[kText]);
      PutText(e.location, &cols[kText]);
      PutText(e.default_unit, &cols[kText]);
    }
    prev_olsn = e.olsn;
    prev_series = e.series;
    prev_ts = e.ts_ms;
  }
  PutVarint(entries.size(), &raw);
  PutVarint(entries.empty() ? 0 : entries.front().olsn, &raw);
  for (const std::string& c : cols) PutColumn(c, &raw);
  SealBlock(kRemoteFormat, raw, out);
}

Status DecodeRemoteChunk(std::string_view block, size_t max_entries, std::vector<RemoteChunkEntry>* entries) {
  entries->clear();
  max_entries = std::min(max_entries, kMaxRemoteChunkEntries);
  std::string raw;
  std::string why = OpenBlock(block, kRemoteFormat, max_entries * kMaxRawPerEntry + 64, &raw);
  if (!why.empty()) return Bad(why);
  const auto* r = reinterpret_cast<const uint8_t*>(raw.data());
  VarintReader in(r, r + raw.size());
  uint64_t n = 0, olsn = 0;
  if (!in.Next(&n)) return Bad("truncated count");
  if (n == 0 || n > max_entries) return Bad("count " + std::to_string(n) + " outside 1.." + std::to_string(max_entries));
  if (!in.Next(&olsn) || olsn == 0 || olsn > static_cast<uint64_t>(INT64_MAX)) return Bad("first origin LSN bad");
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  why = GetColumns(&in, kColumns, kColumnNames, cols);
  if (!why.empty()) return Bad(why);
  if (!in.AtEnd()) return Bad("trailing bytes");
  entries->resize(static_cast<size_t>(n));
  uint64_t series = 0, ts = 0;
  olsn -= 1;
  for (RemoteChunkEntry& out : *entries) {
    uint64_t dl = 0, kind = 0, ds = 0, dt = 0, q = 0;
    if (!cols[kOlsn].Next(&dl) || dl >= static_cast<uint64_t>(INT64_MAX) - olsn) return Bad("column olsn bad");
    if (!cols[kKind].Next(&kind) || kind > kMaxEntryKind) return Bad("column kind bad");
    if (!cols[kSeries].Next(&ds)) return Bad("column series truncated");
    if (!cols[kTs].Next(&dt)) return Bad("column ts truncated");
    if (!cols[kQuality].Next(&q) || q > UINT32_MAX) return Bad("column quality bad");
    olsn += dl + 1;
    series += static_cast<uint64_t>(UnZigZag(ds));
    ts += static_cast<uint64_t>(UnZigZag(dt));
    out.olsn = olsn;
    out.kind = static_cast<uint8_t>(kind);
    out.series = static_cast<int64_t>(series);
    out.ts_ms = static_cast<int64_t>(ts);
    out.quality = static_cast<uint32_t>(q);
    if (const char* why = GetValue(&cols[kScale], &cols[kMantissa], &cols[kRaw], &out.value)) return Bad(why);
    if (kind == static_cast<uint64_t>(ChangeEntry::Kind::kTimeCorrection)) {
      uint64_t span = 0;
      if (!cols[kText].Next(&span)) return Bad("column text bad");
      out.to_ms = static_cast<int64_t>(static_cast<uint64_t>(out.ts_ms) + static_cast<uint64_t>(UnZigZag(span)));
      // Whole milliseconds within +-2^53: anything else is no delta we wrote.
      if (!(std::fabs(out.value) <= 9007199254740992.0) || out.value != std::floor(out.value) ||
          out.quality == 0 || out.quality > kMaxClockPeriod || out.to_ms < out.ts_ms) {
        return Bad("time correction bad");
      }
    } else if (kind != 0 && !(GetText(&cols[kText], &out.name) && GetText(&cols[kText], &out.location) &&
                              GetText(&cols[kText], &out.default_unit))) {
      return Bad("column text bad");
    }
  }
  why = ColumnsAllRead(cols, kColumns, kColumnNames);
  return why.empty() ? Status::Ok() : Bad(why);
}

void FromChangeEntry(const ChangeEntry& e, int64_t series, RemoteChunkEntry* c) {
  c->olsn = e.lsn;
  c->kind = static_cast<uint8_t>(e.kind);
  c->series = series;
  c->name.clear();
  c->location.clear();
  c->default_unit.clear();
  c->to_ms = 0;
  switch (e.kind) {
    case ChangeEntry::Kind::kReading:
      c->ts_ms = e.reading.ts_ms;
      c->value = e.reading.value;
      c->quality = e.reading.quality;
      return;
    case ChangeEntry::Kind::kTimeCorrection:
      c->ts_ms = e.correction.from_ms;
      c->value = static_cast<double>(e.correction.delta_ms);
      c->quality = e.correction.period;
      c->to_ms = e.correction.to_ms;
      return;
    case ChangeEntry::Kind::kDeviceUpsert:
    case ChangeEntry::Kind::kDeviceDelete:
      break;
  }
  c->ts_ms = 0;
  c->value = 0;
  c->quality = 0;
  c->name = e.device.name;
  c->location = e.device.location;
  c->default_unit = e.device.default_unit;
}

void ToChangeEntry(const RemoteChunkEntry& c, const std::string& device_id, const std::string& metric,
                   const std::string& unit, ChangeEntry* e) {
  e->lsn = c.olsn;
  e->kind = static_cast<ChangeEntry::Kind>(c.kind);
  if (e->kind == ChangeEntry::Kind::kReading) {
    e->reading = Reading{device_id, metric, c.ts_ms, c.value, unit, c.quality};
  } else if (e->kind == ChangeEntry::Kind::kTimeCorrection) {
    e->correction = TimeCorrection{c.quality, static_cast<int64_t>(c.value), c.ts_ms, c.to_ms};
  } else {
    e->device = DeviceRecord{device_id, c.name, c.location, c.default_unit, e->kind == ChangeEntry::Kind::kDeviceDelete};
  }
}

}  // namespace edgesync

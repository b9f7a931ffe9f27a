#include "store/remote_chunk_codec.h"

#include <algorithm>

#include "store/column_block.h"
#include "store/column_coding.h"
#include "store/remote_entry_columns.h"

namespace edgesync {
namespace {

// Remote chunks: zstd with its content checksum (store/column_block.h says
// why the block kinds differ on the wire).
constexpr BlockFormat kRemoteFormat{1, true, 0};
// Raw column bytes an entry may take at most: 5 varints of at most 10
// bytes, a scale byte, 8 raw bytes, and a device record's three texts
// (ValidateChangeEntry bounds each at 256 bytes, plus a 2-byte length).
constexpr uint64_t kMaxRawPerEntry = 5 * 10 + 1 + 8 + 3 * (256 + 2);
constexpr int kColumns = 9;
// kKind..kText: store/remote_entry_columns.h, in its order.
enum Column { kOlsn, kKind, kSeries, kTs, kQuality, kScale, kMantissa, kRaw, kText };
const char* const kColumnNames[kColumns] = {"olsn",  "kind",     "series", "ts",  "quality",
                                            "scale", "mantissa", "raw",    "text"};

Status Bad(const std::string& what) { return Status::Corruption("remote chunk: " + what); }

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
    PutRemoteEntryColumns(e, prev_series, prev_ts, &cols[kKind]);
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
    uint64_t dl = 0;
    if (!cols[kOlsn].Next(&dl) || dl >= static_cast<uint64_t>(INT64_MAX) - olsn) return Bad("column olsn bad");
    olsn += dl + 1;
    if (const char* bad = GetRemoteEntryColumns(&cols[kKind], olsn, &series, &ts, &out)) return Bad(bad);
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

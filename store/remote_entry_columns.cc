#include "store/remote_entry_columns.h"

#include <cmath>

namespace edgesync {
namespace {

enum Column { kKind, kSeries, kTs, kQuality, kScale, kMantissa, kRaw, kText };
constexpr size_t kMaxText = 256;

// Wrapping arithmetic: any two int64 values have a delta mod 2^64.
uint64_t Delta(int64_t a, int64_t b) {
  return ZigZag(static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)));
}

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

void PutRemoteEntryColumns(const RemoteChunkEntry& e, int64_t prev_series, int64_t prev_ts, std::string* cols) {
  PutVarint(e.kind, &cols[kKind]);
  PutVarint(Delta(e.series, prev_series), &cols[kSeries]);
  PutVarint(Delta(e.ts_ms, prev_ts), &cols[kTs]);
  PutVarint(e.quality, &cols[kQuality]);
  PutValue(e.value, &cols[kScale], &cols[kMantissa], &cols[kRaw]);
  if (e.kind == static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection)) {
    PutVarint(Delta(e.to_ms, e.ts_ms), &cols[kText]);
  } else if (e.kind != 0) {
    PutText(e.name, &cols[kText]);
    PutText(e.location, &cols[kText]);
    PutText(e.default_unit, &cols[kText]);
  }
}

const char* GetRemoteEntryColumns(VarintReader* cols, uint64_t olsn, uint64_t* series, uint64_t* ts,
                                  RemoteChunkEntry* out) {
  uint64_t kind = 0, ds = 0, dt = 0, q = 0;
  if (!cols[kKind].Next(&kind) || kind > kMaxEntryKind) return "column kind bad";
  if (!cols[kSeries].Next(&ds)) return "column series truncated";
  if (!cols[kTs].Next(&dt)) return "column ts truncated";
  if (!cols[kQuality].Next(&q) || q > UINT32_MAX) return "column quality bad";
  *series += static_cast<uint64_t>(UnZigZag(ds));
  *ts += static_cast<uint64_t>(UnZigZag(dt));
  out->olsn = olsn;
  out->kind = static_cast<uint8_t>(kind);
  out->series = static_cast<int64_t>(*series);
  out->ts_ms = static_cast<int64_t>(*ts);
  out->quality = static_cast<uint32_t>(q);
  if (const char* why = GetValue(&cols[kScale], &cols[kMantissa], &cols[kRaw], &out->value)) return why;
  if (kind == static_cast<uint64_t>(ChangeEntry::Kind::kTimeCorrection)) {
    uint64_t span = 0;
    if (!cols[kText].Next(&span)) return "column text bad";
    out->to_ms = static_cast<int64_t>(static_cast<uint64_t>(out->ts_ms) + static_cast<uint64_t>(UnZigZag(span)));
    // Whole milliseconds within +-2^53: anything else is no delta we wrote.
    if (!(std::fabs(out->value) <= 9007199254740992.0) || out->value != std::floor(out->value) ||
        out->quality == 0 || out->quality > kMaxClockPeriod || out->to_ms < out->ts_ms) {
      return "time correction bad";
    }
  } else if (kind != 0 && !(GetText(&cols[kText], &out->name) && GetText(&cols[kText], &out->location) &&
                            GetText(&cols[kText], &out->default_unit))) {
    return "column text bad";
  }
  return nullptr;
}

}  // namespace edgesync

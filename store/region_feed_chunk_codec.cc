#include "store/region_feed_chunk_codec.h"

#include <algorithm>

#include "store/column_block.h"
#include "store/column_coding.h"
#include "store/remote_entry_columns.h"

namespace edgesync {
namespace {

constexpr BlockFormat kMergedFormat{kMergedRegionChunkFormat, true, 0};
// As store/remote_chunk_codec.cc, plus a run's origin and count (two
// varints) for an entry that is a run of its own.
constexpr uint64_t kMaxRawPerEntry = 5 * 10 + 1 + 8 + 3 * (256 + 2) + 2 * 10;
constexpr int kColumns = 11;
// kKind..kText: store/remote_entry_columns.h, in its order.
enum Column { kRunOrigin, kRunCount, kOlsn, kKind, kSeries, kTs, kQuality, kScale, kMantissa, kRaw, kText };
const char* const kColumnNames[kColumns] = {"run origin", "run count", "olsn",     "kind", "series", "ts",
                                            "quality",    "scale",     "mantissa", "raw",  "text"};

Status Bad(const std::string& what) { return Status::Corruption("merged region chunk: " + what); }

// Wrapping arithmetic: any two int64 values have a delta mod 2^64.
uint64_t Delta(int64_t a, int64_t b) {
  return ZigZag(static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)));
}

}  // namespace

bool IsMergedRegionChunk(std::string_view block) {
  return !block.empty() && static_cast<uint8_t>(block[0]) == kMergedRegionChunkFormat;
}

void EncodeMergedRegionChunk(const std::vector<RegionFeedRun>& runs, std::string* out) {
  std::string cols[kColumns];
  std::string raw;
  size_t total = 0;
  int64_t prev_origin = 0, prev_series = 0, prev_ts = 0;
  for (const RegionFeedRun& run : runs) {
    PutVarint(Delta(run.origin, prev_origin), &cols[kRunOrigin]);
    PutVarint(run.entries.size(), &cols[kRunCount]);
    prev_origin = run.origin;
    total += run.entries.size();
    // A run's first entry keeps its origin LSN whole: origins' LSNs are
    // unrelated to each other.
    uint64_t prev_olsn = 0;
    bool first = true;
    for (const RemoteChunkEntry& e : run.entries) {
      PutVarint(first ? e.olsn : e.olsn - prev_olsn - 1, &cols[kOlsn]);
      first = false;
      PutRemoteEntryColumns(e, prev_series, prev_ts, &cols[kKind]);
      prev_olsn = e.olsn;
      prev_series = e.series;
      prev_ts = e.ts_ms;
    }
  }
  PutVarint(runs.size(), &raw);
  PutVarint(total, &raw);
  for (const std::string& c : cols) PutColumn(c, &raw);
  SealBlock(kMergedFormat, raw, out);
}

Status DecodeMergedRegionChunk(std::string_view block, size_t max_entries, std::vector<RegionFeedRun>* runs) {
  runs->clear();
  max_entries = std::min(max_entries, kMaxRemoteChunkEntries);
  std::string raw;
  std::string why = OpenBlock(block, kMergedFormat, max_entries * kMaxRawPerEntry + 64, &raw);
  if (!why.empty()) return Bad(why);
  const auto* r = reinterpret_cast<const uint8_t*>(raw.data());
  VarintReader in(r, r + raw.size());
  uint64_t nruns = 0, total = 0;
  if (!in.Next(&nruns) || !in.Next(&total)) return Bad("truncated header");
  if (total == 0 || total > max_entries) {
    return Bad("count " + std::to_string(total) + " outside 1.." + std::to_string(max_entries));
  }
  if (nruns == 0 || nruns > total) return Bad("run count " + std::to_string(nruns) + " bad");
  VarintReader cols[kColumns] = {{nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr},
                                 {nullptr, nullptr}, {nullptr, nullptr}, {nullptr, nullptr}};
  why = GetColumns(&in, kColumns, kColumnNames, cols);
  if (!why.empty()) return Bad(why);
  if (!in.AtEnd()) return Bad("trailing bytes");
  runs->resize(static_cast<size_t>(nruns));
  uint64_t origin = 0, series = 0, ts = 0, seen = 0;
  for (RegionFeedRun& run : *runs) {
    uint64_t d_origin = 0, count = 0;
    if (!cols[kRunOrigin].Next(&d_origin)) return Bad("column run origin truncated");
    if (!cols[kRunCount].Next(&count) || count == 0 || count > total - seen) return Bad("column run count bad");
    seen += count;
    origin += static_cast<uint64_t>(UnZigZag(d_origin));
    run.origin = static_cast<int64_t>(origin);
    run.entries.resize(static_cast<size_t>(count));
    uint64_t olsn = 0;
    bool first = true;
    for (RemoteChunkEntry& out : run.entries) {
      uint64_t dl = 0;
      if (!cols[kOlsn].Next(&dl)) return Bad("column olsn truncated");
      if (first) {
        if (dl == 0 || dl > static_cast<uint64_t>(INT64_MAX)) return Bad("column olsn bad");
        olsn = dl;
      } else {
        if (dl >= static_cast<uint64_t>(INT64_MAX) - olsn) return Bad("column olsn bad");
        olsn += dl + 1;
      }
      first = false;
      if (const char* bad = GetRemoteEntryColumns(&cols[kKind], olsn, &series, &ts, &out)) return Bad(bad);
    }
  }
  if (seen != total) return Bad("runs hold " + std::to_string(seen) + " entries, header says " + std::to_string(total));
  why = ColumnsAllRead(cols, kColumns, kColumnNames);
  return why.empty() ? Status::Ok() : Bad(why);
}

Status DecodeRegionRow(std::string_view data, int64_t row_origin, size_t max_entries,
                       std::vector<RemoteChunkEntry>* entries, std::vector<int64_t>* origins) {
  entries->clear();
  origins->clear();
  if (!IsMergedRegionChunk(data)) {
    ES_RETURN_IF_ERROR(DecodeRemoteChunk(data, max_entries, entries));
    origins->assign(entries->size(), row_origin);
    return Status::Ok();
  }
  // Kept per thread: readers decode a row per step of a feed read.
  thread_local std::vector<RegionFeedRun> runs;
  ES_RETURN_IF_ERROR(DecodeMergedRegionChunk(data, max_entries, &runs));
  for (RegionFeedRun& run : runs) {
    origins->insert(origins->end(), run.entries.size(), run.origin);
    for (RemoteChunkEntry& e : run.entries) entries->push_back(std::move(e));
  }
  return Status::Ok();
}

}  // namespace edgesync

// store/chunk_codec.h: a group of readings with consecutive LSNs as one
// compressed column block (a row of the `chunks` table, store/schema.h).
//
// Each field becomes its own column of small varints before zstd squeezes
// the block: series ids as deltas from the previous reading's (readings
// arrive in rounds over the same series), timestamps as deltas from the
// previous reading's (a round shares its tick), quality flags, and values as
// decimal-scaled mantissas with their scale (store/column_coding.h), or raw
// IEEE bits when a value is not an exact decimal, so every value
// round-trips bit for bit. A block decodes on its own: no state is carried
// from one chunk to the next, so chunks can be pruned in any order.
//
// Block: u8 format (1) | varint raw length | zstd frame (no checksum) of
// the raw columns:
//   varint n | for each of series, ts, quality, scale, mantissa, raw bits:
//   varint byte length + the column.
// The value coding (store/column_coding.h) and the frame
// (store/column_block.h) are those of the remote chunks too; this file
// keeps only what its columns mean.
// Measured on the reference workload (tests/bench/storage_bench.cc): about
// 2 bytes per reading at 1,000 readings per chunk.
//
// Compaction (store/compaction.h) rewrites older chunks as series blocks:
// the readings of ONE series within a span of LSNs, each with its LSN. The
// same six columns, coded for one series: LSN gaps (the count of other
// series' readings in between), timestamp deltas of deltas (a fixed period
// codes as zeros) and mantissas as changes from the previous one. Format 3
// (zstd), or 4 (the raw columns, u8 4 | raw) when zstd's frame would be
// larger than what it squeezes (blocks of a few readings).
// The span's row in `chunks` keeps its LSNs and time span and a span marker
// instead of readings (format 2: u8 2 | varint first block id | varint
// blocks): its series blocks are rows first..first+blocks-1 of
// `series_chunks`, written together.
//
// Thread safety: stateless functions.
#ifndef EDGESYNC_STORE_CHUNK_CODEC_H_
#define EDGESYNC_STORE_CHUNK_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"

namespace edgesync {

// One reading as a chunk holds it: the series is the store's interned
// (deviceId, metric, unit).
struct ChunkReading {
  int64_t series = 0;
  int64_t ts_ms = 0;
  double value = 0;
  uint32_t quality = 0;
};

// Readings per chunk at most: a commit group is bounded by ingest.batch_max
// far below this; a decoder refuses more (no memory is reserved for a count
// the bytes do not justify).
constexpr size_t kMaxChunkReadings = size_t{1} << 20;

void EncodeChunk(const std::vector<ChunkReading>& readings, std::string* out);
// Corruption (naming the column) on anything that is not one well-formed
// block of at most max_readings readings.
Status DecodeChunk(std::string_view block, size_t max_readings, std::vector<ChunkReading>* readings);

// One reading of a series block: the series is the block's.
struct SeriesPoint {
  int64_t lsn = 0;
  int64_t ts_ms = 0;
  double value = 0;
  uint32_t quality = 0;
};

// points in increasing LSN order (the decoder refuses anything else).
void EncodeSeriesBlock(const std::vector<SeriesPoint>& points, std::string* out);
// Corruption (naming the column) on anything that is not one well-formed
// series block of at most max_points points with increasing LSNs.
Status DecodeSeriesBlock(std::string_view block, size_t max_points, std::vector<SeriesPoint>* points);

// The `data` of a compacted span's row in `chunks`: where its series blocks are.
struct SpanMarker {
  int64_t first_block = 0;  // row id in series_chunks
  int64_t blocks = 0;
};
void EncodeSpanMarker(const SpanMarker& marker, std::string* out);
bool IsSpanMarker(std::string_view block);
Status DecodeSpanMarker(std::string_view block, SpanMarker* marker);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_CHUNK_CODEC_H_

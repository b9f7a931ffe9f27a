// store/chunk_codec.h: a group of readings with consecutive LSNs as one
// compressed column block (a row of the `chunks` table, store/schema.h), and
// compaction's series blocks (the readings of one series within a span of
// LSNs, rows of `series_chunks`).
//
// Contract: every value round-trips bit for bit; a block decodes on its own
// (no state carried between chunks, so they can be pruned in any order); a
// damaged block is an error, never other readings. The byte layouts (commit
// chunks, format 1; span markers, format 2; series blocks, formats 3 and 4)
// are in docs/FORMATS.md, "Commit chunks" and "Series blocks", and pinned by
// tests/unit/store/codec_golden_test.cc.
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

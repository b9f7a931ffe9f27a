// store/region_feed_chunk_codec.h: a merged region feed chunk, the layout a
// hub's feed compaction rewrites a run of small `region_chunks` rows into
// (consecutive region sequences, any origins): one compressed column block
// for all their entries with the origin kept per run of entries (a batch is
// a run of one origin), so 20-reading batches share one zstd frame and one
// row instead of paying both per batch.
//
// Contract: runs in region sequence order, each of at least one entry in
// increasing origin LSN; entries as store/remote_chunk_codec.h keeps them,
// every value round-trips bit for bit; damage is refused (zstd content
// checksum), never decoded into other values. Its format byte (5) differs
// from a one-origin remote chunk's (1), so a reader tells the two apart by
// the block alone and rows written before compaction stay readable as they
// are. Layout: docs/FORMATS.md, "Remote chunks".
//
// Thread safety: stateless functions.
#ifndef EDGESYNC_STORE_REGION_FEED_CHUNK_CODEC_H_
#define EDGESYNC_STORE_REGION_FEED_CHUNK_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "store/remote_chunk_codec.h"

namespace edgesync {

// One origin's entries inside a merged chunk.
struct RegionFeedRun {
  int64_t origin = 0;
  std::vector<RemoteChunkEntry> entries;
};

// The first byte of a merged chunk's block.
constexpr uint8_t kMergedRegionChunkFormat = 5;

// True when block is a merged chunk (else a one-origin remote chunk or damage).
bool IsMergedRegionChunk(std::string_view block);

// runs: at least one, each non-empty, at most kMaxRemoteChunkEntries entries
// in all.
void EncodeMergedRegionChunk(const std::vector<RegionFeedRun>& runs, std::string* out);
// Corruption (naming what) on anything that is not one well-formed merged
// block of at most max_entries entries, each run in increasing origin LSN.
Status DecodeMergedRegionChunk(std::string_view block, size_t max_entries, std::vector<RegionFeedRun>* runs);

// The entries of one `region_chunks` row in sequence order (entry i has
// sequence seq + i) with the origin id of each, whichever layout the row
// has: a one-origin remote chunk (every entry of row_origin) or a merged
// chunk (the origin of its run). So every reader of the table keeps its
// loop over seq + i and only asks origins[i] instead of the row's origin.
Status DecodeRegionRow(std::string_view data, int64_t row_origin, size_t max_entries,
                       std::vector<RemoteChunkEntry>* entries, std::vector<int64_t>* origins);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_REGION_FEED_CHUNK_CODEC_H_

// store/column_block.h: the one frame of the store's compressed column
// blocks (commit chunks and series blocks, store/chunk_codec.h; remote
// chunks, store/remote_chunk_codec.h), so a BlockFormat names the two ways
// the formats in the field differ (a zstd content checksum; a plain twin for
// blocks too small for zstd) rather than each codec keeping a frame. Layout:
// docs/FORMATS.md, "Column blocks: the one frame".
//
// A block is hostile input to its reader (a damaged file): OpenBlock
// reserves memory only up to the raw size its caller allows and the header
// and the zstd frame agree on.
//
// Thread safety: stateless functions (SealBlock and OpenBlock each keep one
// zstd context per thread).
#ifndef EDGESYNC_STORE_COLUMN_BLOCK_H_
#define EDGESYNC_STORE_COLUMN_BLOCK_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "store/column_coding.h"

namespace edgesync {

// zstd's default level: level 1 left ~15% more bytes on the reference
// workload for no measurable commit time at 1,000 readings per chunk.
constexpr int kBlockZstdLevel = 3;

// How one kind of block is framed (see the top of this file for why they
// differ).
struct BlockFormat {
  uint8_t format = 0;        // first byte of a zstd-framed block
  bool checksum = false;     // the zstd frame carries a content checksum
  uint8_t plain_format = 0;  // != 0: first byte of the same raw bytes unframed,
                             // written when zstd would not make them smaller
};

void SealBlock(const BlockFormat& format, const std::string& raw, std::string* out);
// The raw bytes of a block of `format` at most max_raw long; "" on success,
// else what was wrong ("unknown format 7", "zstd frame damaged", ...).
std::string OpenBlock(std::string_view block, const BlockFormat& format, uint64_t max_raw, std::string* raw);

// Appends a column (length-prefixed) to raw.
void PutColumn(const std::string& column, std::string* raw);
// Reads n length-prefixed columns from *in into cols; "" on success, else
// "column <name> truncated".
std::string GetColumns(VarintReader* in, int n, const char* const* names, VarintReader* cols);
// "" when each of the n columns was read to its end, else "column <name>
// has trailing bytes".
std::string ColumnsAllRead(const VarintReader* cols, int n, const char* const* names);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_COLUMN_BLOCK_H_

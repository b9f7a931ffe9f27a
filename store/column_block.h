// store/column_block.h: the frame shared by the store's compressed column
// blocks (store/chunk_codec.h, store/remote_chunk_codec.h):
//   u8 format | varint raw length | zstd frame of the raw bytes,
// where the raw bytes hold a codec's header varints and then its columns,
// each as varint byte length + bytes.
//
// A block is hostile input to its reader (a damaged file): OpenBlock
// reserves memory only up to the raw size its caller allows and the header
// and the zstd frame agree on.
//
// Thread safety: stateless functions (SealBlock keeps one zstd context per
// thread).
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

// checksum: the zstd frame carries a content checksum (4 bytes), so damage
// is refused rather than decoded into other values.
void SealBlock(uint8_t format, const std::string& raw, bool checksum, std::string* out);
// The raw bytes of a block of `format` at most max_raw long; "" on success,
// else what was wrong ("unknown format 7", "zstd frame damaged", ...).
std::string OpenBlock(std::string_view block, uint8_t format, uint64_t max_raw, std::string* raw);
// Appends a column (length-prefixed) to raw.
void PutColumn(const std::string& column, std::string* raw);
// Reads n length-prefixed columns from *in into cols; "" on success, else
// "column <name> truncated".
std::string GetColumns(VarintReader* in, int n, const char* const* names, VarintReader* cols);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_COLUMN_BLOCK_H_

// Fuzz target: a read view or region feed chunk read back from a store file
// that was damaged on disk (or written by a buggy build) goes through
// DecodeRemoteChunk; whatever the bytes, it must return a Status, never
// crash, hang or allocate beyond the raw size its header may claim for the
// entries it may hold. The input is tried twice: as a stored block, and as
// the raw columns inside a well-formed frame, since a mutated block rarely
// passes the frame's checksum and the column decoder would stay unexplored.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/column_block.h"
#include "store/remote_chunk_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::RemoteChunkEntry> entries;
  edgesync::DecodeRemoteChunk(bytes, 4096, &entries);
  std::string format, sealed;
  edgesync::EncodeRemoteChunk({}, &format);
  edgesync::SealBlock({static_cast<uint8_t>(format[0]), /*checksum=*/true, 0}, std::string(bytes), &sealed);
  edgesync::DecodeRemoteChunk(sealed, 4096, &entries);
  return 0;
}

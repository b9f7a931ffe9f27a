// Fuzz target: a read view or region feed chunk read back from a store file
// that was damaged on disk (or written by a buggy build) goes through
// DecodeRemoteChunk; whatever the bytes, it must return a Status, never
// crash, hang or allocate beyond the raw size its header may claim for the
// entries it may hold.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "store/remote_chunk_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<edgesync::RemoteChunkEntry> entries;
  edgesync::DecodeRemoteChunk(std::string_view(reinterpret_cast<const char*>(data), size), 4096, &entries);
  return 0;
}

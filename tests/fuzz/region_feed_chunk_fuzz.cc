// Fuzz target: a merged region feed chunk (store/region_feed_chunk_codec.h)
// read back from a hub store file that was damaged on disk goes through
// DecodeMergedRegionChunk; whatever the bytes, it must return a Status,
// never crash, hang or allocate beyond the raw size its header may claim.
// The input is tried as a stored block and as the raw columns inside a
// well-formed frame, since a mutated block rarely passes the checksum.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/column_block.h"
#include "store/region_feed_chunk_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<edgesync::RegionFeedRun> runs;
  edgesync::DecodeMergedRegionChunk(bytes, 4096, &runs);
  std::string sealed;
  edgesync::SealBlock({edgesync::kMergedRegionChunkFormat, /*checksum=*/true, 0}, std::string(bytes), &sealed);
  edgesync::DecodeMergedRegionChunk(sealed, 4096, &runs);
  return 0;
}

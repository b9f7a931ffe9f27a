// Fuzz target: continuation tokens come back from outside (`edgesync feed
// --from`, consumers' leases). Whatever the text, DecodeFeedToken returns a
// Status; a token it accepts encodes back to a token that decodes the same.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "store/token.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  edgesync::FeedToken token;
  if (!edgesync::DecodeFeedToken(text, &token).ok()) return 0;
  edgesync::FeedToken again;
  if (!edgesync::DecodeFeedToken(edgesync::EncodeFeedToken(token), &again).ok()) std::abort();
  if (again.range_id != token.range_id || again.epoch != token.epoch || again.lsn != token.lsn) std::abort();
  return 0;
}

// store/token.h: the feed's continuation token, "v1.<range>.<epoch>.<lsn>".
//
// Readable on purpose (operators paste them into `edgesync feed --from`), but
// opaque to callers: only the store builds and interprets them. Parsing is
// strict because tokens come back from outside (CLI, consumers' leases):
// anything but the exact form is InvalidArgument, never a crash.
//
// Thread safety: values and pure functions.
#ifndef EDGESYNC_STORE_TOKEN_H_
#define EDGESYNC_STORE_TOKEN_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace edgesync {

struct FeedToken {
  uint32_t range_id = 0;
  std::string epoch;  // 32 lower-case hex characters
  uint64_t lsn = 0;   // entries after this LSN come next
};

std::string EncodeFeedToken(const FeedToken& token);
Status DecodeFeedToken(std::string_view text, FeedToken* token);
// Parses a decimal uint64 with no sign, no spaces, no overflow.
bool ParseUint64(std::string_view text, uint64_t* value);
bool IsEpoch(std::string_view text);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_TOKEN_H_

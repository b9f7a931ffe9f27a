// store/remote_entry_columns.h: the eight columns every remote entry is
// written in after its origin LSN, shared by the one-origin remote chunk
// (store/remote_chunk_codec.h) and the merged region feed chunk
// (store/region_feed_chunk_codec.h): kind, series and time (deltas from the
// entry before), quality, the value (scale, mantissa, raw: column_coding.h),
// and text (a device record's three strings, or a time correction's span).
// docs/FORMATS.md "Remote chunks" describes them.
//
// Thread safety: stateless functions.
#ifndef EDGESYNC_STORE_REMOTE_ENTRY_COLUMNS_H_
#define EDGESYNC_STORE_REMOTE_ENTRY_COLUMNS_H_

#include <cstdint>
#include <string>

#include "store/column_coding.h"
#include "store/remote_chunk_codec.h"

namespace edgesync {

// The columns, in this order, from the one a codec passes.
constexpr int kRemoteEntryColumns = 8;

// Appends the entry to cols[0..7]; prev_series and prev_ts are the entry's
// before it in the block (0 for the first).
void PutRemoteEntryColumns(const RemoteChunkEntry& e, int64_t prev_series, int64_t prev_ts, std::string* cols);
// Reads the entry at origin LSN olsn from cols[0..7]; *series and *ts carry
// the running sums across entries. nullptr on success, else what was wrong.
const char* GetRemoteEntryColumns(VarintReader* cols, uint64_t olsn, uint64_t* series, uint64_t* ts,
                                  RemoteChunkEntry* out);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_REMOTE_ENTRY_COLUMNS_H_

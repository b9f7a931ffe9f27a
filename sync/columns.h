// sync/columns.h: the column layout of change entries on the wire (the
// `Entries` table of sync/batch.fbs), before compression: dictionaries for
// strings, deltas for LSNs and timestamps, values as decimal-scaled integers
// predicted from the previous value of the same series, raw IEEE bits for
// any value that is not an exact decimal, so every value round-trips bit for
// bit. Layout: docs/FORMATS.md, "Wire batches and feed pages".
//
// Thread safety: stateless functions (the context ones change only the
// context they are given).
#ifndef EDGESYNC_SYNC_COLUMNS_H_
#define EDGESYNC_SYNC_COLUMNS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "store/column_coding.h"  // PutVarint, ZigZag: shared with the store's chunks
#include "store/types.h"
#include "sync/series_context.h"

namespace edgesync {

// The extra columns of a region feed page (empty for uplink batches).
struct FeedColumns {
  std::vector<Origin> origins;         // dictionary
  std::vector<uint32_t> origin_index;  // one per entry
  // One per entry: its shard's sequence (the shard is its origin's,
  // RegionShardOf), strictly increasing inside each shard; the column holds
  // zz(seq - the previous seq of the same shard - 1).
  std::vector<uint64_t> seqs;
};

// Builds an `Entries` FlatBuffer. lsn_base is the LSN "before" the first
// entry (first_lsn - 1 for a batch, 0 for a feed page); feed may be null.
std::string EncodeEntries(const std::vector<ChangeEntry>& entries, uint64_t lsn_base, const FeedColumns* feed);

// Verifies and decodes an `Entries` FlatBuffer. Every index, count and
// varint is checked; readings are validated (ValidateReading). Errors are
// Corruption naming the column. max_entries bounds what is allocated.
Status DecodeEntries(std::string_view bytes, uint64_t lsn_base, size_t max_entries, std::vector<ChangeEntry>* entries,
                     FeedColumns* feed);

// The ColumnsContext layout (uplink batches only): entries coded against the
// origin's series context, which the call advances (sync/series_context.h).
// Strings and series new to the context travel in the batch; a reading
// carries its series id and residues against that series' last timestamp
// (plus its last interval) and value. The caller Seals the context with the
// returned bytes.
std::string EncodeEntriesWithContext(const std::vector<ChangeEntry>& entries, uint64_t lsn_base, SeriesContext* ctx);
// Its inverse against the same context, which it advances likewise. On an
// error the context is left part-way: the caller must drop it.
Status DecodeEntriesWithContext(std::string_view bytes, uint64_t lsn_base, size_t max_entries, SeriesContext* ctx,
                                std::vector<ChangeEntry>* entries);

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_COLUMNS_H_

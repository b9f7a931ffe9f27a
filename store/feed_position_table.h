// store/feed_position_table.h: the read view's positions in the region
// hubs' feeds, as a gateway store keeps them: per region, the hub's epoch
// and one sequence per shard in meta ("feed_epoch:<region>",
// "feed_shards:<region>", store/feed_cursor.h's encoding in hex), and the
// highest shard position in the checkpoint "feed:<region>" (what status and
// older tools read). Both move in one transaction.
//
// A store from before shards holds only "feed:<region>", one region-wide
// sequence that cannot be split into shards: Read hands out a fresh
// position (epoch "", every shard 0) with single_seq set, and the feed
// puller logs and counts it as a reset (the read view stays; applies are
// idempotent by (origin, LSN)).
//
// Thread safety: no state of its own. Each call runs on the connection it
// is given, inside the caller's transaction; the caller holds that
// connection's mutex.
#ifndef EDGESYNC_STORE_FEED_POSITION_TABLE_H_
#define EDGESYNC_STORE_FEED_POSITION_TABLE_H_

#include <string>

#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {
namespace feed_position_table {

// InvalidArgument unless the region name is 1..64 bytes.
Status ValidateRegion(const std::string& region);
// The region's position (all zero, epoch "", when none is held).
// Corruption when the stored shards do not decode.
Status Read(Db* db, const std::string& region, FeedPosition* position);
// Writes the region's position. Within one epoch no shard moves back
// unless `reset` (the hub said its feed restarted): InvalidArgument, and
// nothing written. The epoch must be 32 lower-case hex.
Status Write(Db* db, const std::string& region, const FeedPosition& position, bool reset);

}  // namespace feed_position_table
}  // namespace edgesync

#endif  // EDGESYNC_STORE_FEED_POSITION_TABLE_H_

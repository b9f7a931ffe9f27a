// store/feed_cursor.h: a position in a region feed, one sequence per shard.
//
// A region's origins fall into kRegionShards shards (a hash of the gateway
// id). Every entry of the region feed carries (shard, shard sequence); the
// numbers of one shard become visible in their order (one shard's appends
// serialise in the hub store), the shards' numbers are independent, so
// several hubs append in parallel. A reader's continuation is therefore one
// position per shard (as a change feed keeps one continuation per partition
// key range): a single region-wide sequence drawn by several writers becomes
// visible out of order, and a reader at S would skip a late commit below S.
//
// Wire and durable form (EncodeShardPositions): the shards whose position is
// not 0, as LEB128 varint pairs (shard delta from the previous listed shard
// + 1, position), shards ascending: at most 32 x 11 bytes, empty for "the
// beginning". The decoder refuses anything else (a shard past the last, a
// position over INT64_MAX, a zero position listed, trailing bytes), so it is
// safe on hostile input.
//
// Thread safety: stateless functions over values.
#ifndef EDGESYNC_STORE_FEED_CURSOR_H_
#define EDGESYNC_STORE_FEED_CURSOR_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace edgesync {

// The fixed number of shards a region's origins fall into. Part of the
// protocol: every gateway and hub must agree on it, so it is not a setting.
// It bounds how many hubs can share a region's load (32: more than a region
// on this hardware needs, see docs/REGION.md; few enough that a hub's
// subscriptions, lease rows and a reader's continuation stay a handful).
inline constexpr int kRegionShards = 32;
// FNV-1a (32 bits) of the gateway id, modulo kRegionShards: stable across
// builds, machines and languages (sync/PROTOCOL.md gives it).
int RegionShardOf(const std::string& gateway_id);

// Position s = the last shard-s sequence read (0 = none yet).
using ShardPositions = std::array<uint64_t, kRegionShards>;

// The largest encoded form: every shard listed with a 10-byte position.
inline constexpr size_t kMaxShardPositionsBytes = kRegionShards * 11;

std::string EncodeShardPositions(const ShardPositions& positions);
Status DecodeShardPositions(std::string_view bytes, ShardPositions* positions);

// "s:n s:n" of the shards not at 0 ("0" when all are): logs and status.
std::string ShardPositionsText(const ShardPositions& positions);
// Sum over the shards: how many numbers lie below (a figure for status).
uint64_t ShardPositionsSum(const ShardPositions& positions);
// True when every shard of a is at or below b's.
bool AllAtOrBelow(const ShardPositions& a, const ShardPositions& b);
// The largest distance from a shard's position to its head: how far the
// reader is behind (exact on a one-writer SQLite hub, whose shards all move
// with its one sequence; the most behind shard's figure on PostgreSQL).
uint64_t ShardLag(const ShardPositions& positions, const ShardPositions& head);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_FEED_CURSOR_H_

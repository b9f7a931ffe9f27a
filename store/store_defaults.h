// store/store_defaults.h: the defaults (and the bounds the store itself
// checks) of StoreOptions, RetentionOptions and HubStoreOptions, each
// written once.
//
// The option structs start from these constants, and the option table
// (firmware-config/config.cc, which sits above store/) shows, checks and
// documents the same ones: a default or bound is changed here and nowhere
// else. Values are in the unit the config file uses (seconds where the
// option's key ends in _s); the structs convert. Kept apart from store.h so
// that firmware-config/config.h can include them without the store's
// interfaces.
//
// Thread safety: constants only.
#ifndef EDGESYNC_STORE_STORE_DEFAULTS_H_
#define EDGESYNC_STORE_STORE_DEFAULTS_H_

#include <cstdint>

#include "store/chunk_codec.h"

namespace edgesync {

// [store]: StoreOptions.
namespace store_options {

// Partition key ranges of a new store; OpenStore refuses a count outside
// [kInitialRangesMin, kInitialRangesMax], as the config check does.
inline constexpr int64_t kInitialRanges = 4;
inline constexpr int64_t kInitialRangesMin = 1;
inline constexpr int64_t kInitialRangesMax = 256;
inline constexpr int64_t kSplitMaxEntries = 1000000;
inline constexpr int64_t kSplitMaxBytes = int64_t{64} << 20;
inline constexpr int64_t kRetentionAgeS = int64_t{7} * 86400;
// Acknowledged readings are also kept this long after their
// acknowledgement under normal space, so that a region whose store is lost
// (a dead disk, a rebuilt machine, a restored backup) is refilled by its
// gateways. 72 h: a hub lost on a Friday evening and rebuilt on Monday
// morning; the cost is disk only where retention_age_s is shorter than
// that or acknowledgements come late (space pressure prunes regardless).
inline constexpr int64_t kAckGraceS = int64_t{72} * 3600;
inline constexpr int64_t kMaxBytes = 0;  // only the filesystem limits the store
inline constexpr int64_t kTombstoneRetentionS = int64_t{30} * 86400;
inline constexpr int64_t kReadViewRetentionS = int64_t{7} * 86400;
inline constexpr int64_t kMinFreeBytes = int64_t{64} << 20;
inline constexpr int64_t kDeadLetterCap = 1000;
inline constexpr int64_t kLeaseExpiryMs = 15000;
// Compaction (store/chunk_compactor.h): acknowledged commit chunks
// older than this become per-series blocks. Ten minutes keeps the recent
// part (what a feed consumer following the head reads) in commit chunks.
inline constexpr int64_t kCompactAfterS = 600;
// Readings per compacted span, the store's own choice (no config option):
// a reader by LSN of a span decodes it whole (32 bytes a reading: 4 MiB),
// a one-series query reads one block per span (tests/bench/storage_bench.cc
// measures both). At most what one chunk may hold: decoded as one.
inline constexpr int64_t kCompactSpanReadings = 131072;
inline constexpr int64_t kCompactSpanReadingsMax = static_cast<int64_t>(kMaxChunkReadings);
// A span whose blocks would take more room than its chunks (thousands of
// series in a span, each block holding few readings; measured by
// tests/bench/retention_bench.cc) is left as it is: the store compacts only
// what gets smaller (no config option).
inline constexpr bool kCompactOnlySmaller = true;

}  // namespace store_options

// [store] retention_interval_s and prune_step_rows: RetentionOptions.
namespace retention_options {

inline constexpr int64_t kIntervalS = 10;
// Rows one retention step deletes in one write transaction: ingest waits
// at most one step for the write lock. The longest 2000-row step held it
// about half as long as the longest 1000-reading ingest commit
// (tests/bench/retention_bench.cc).
inline constexpr int64_t kStepRows = 2000;

}  // namespace retention_options

// [hub] feed_retention_s: HubStoreOptions.
namespace hub_store_options {

inline constexpr int64_t kFeedRetentionS = int64_t{7} * 86400;

}  // namespace hub_store_options

}  // namespace edgesync

#endif  // EDGESYNC_STORE_STORE_DEFAULTS_H_

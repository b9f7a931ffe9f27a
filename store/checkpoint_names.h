// store/checkpoint_names.h: the names of the store's checkpoints
// (ReadingLog/UplinkSource GetCheckpoint, SetCheckpoint), in one place.
// A checkpoint only moves forward; a missing one reads 0.
#ifndef EDGESYNC_STORE_CHECKPOINT_NAMES_H_
#define EDGESYNC_STORE_CHECKPOINT_NAMES_H_

#include <string>

namespace edgesync {
namespace checkpoint {

// The highest LSN acknowledged by any region (what retention may prune).
constexpr char kUpstream[] = "upstream";
// Ingest's intake journal: the last intake sequence number the store holds.
constexpr char kIntake[] = "ingest:intake";
// Per region: the highest LSN it acknowledged, and the epoch tag of the hub
// store that acknowledged it (a region whose store changed is refilled).
constexpr char kUpstreamRegionPrefix[] = "upstream:";
constexpr char kUpstreamEpochPrefix[] = "upstream-epoch:";
// Per region: the read view's position in the region's feed.
constexpr char kFeedPrefix[] = "feed:";

inline std::string UpstreamOf(const std::string& region) { return kUpstreamRegionPrefix + region; }
inline std::string UpstreamEpochOf(const std::string& region) { return kUpstreamEpochPrefix + region; }
inline std::string FeedOf(const std::string& region) { return kFeedPrefix + region; }

}  // namespace checkpoint
}  // namespace edgesync

#endif  // EDGESYNC_STORE_CHECKPOINT_NAMES_H_

// store/remote_chunk_codec.h: other gateways' entries, one origin's, as one
// compressed column block: a row of `region_chunks` (a batch a region hub
// applied) or of `view_chunks` (what a gateway's read view took from one feed
// page for one origin), store/schema.h.
//
// Contract: entries in increasing, not necessarily consecutive, origin LSNs;
// every value round-trips bit for bit; a block decodes on its own; damage is
// refused (these blocks carry zstd's content checksum), never decoded into
// other values. Layout: docs/FORMATS.md, "Remote chunks".
//
// Thread safety: stateless functions.
#ifndef EDGESYNC_STORE_REMOTE_CHUNK_CODEC_H_
#define EDGESYNC_STORE_REMOTE_CHUNK_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "store/types.h"

namespace edgesync {

// One entry as a remote chunk holds it: the series is the store's interned
// (deviceId, metric, unit), (deviceId, "", "") for a device record and
// ("", "", "") for a time correction. A time correction keeps its span's
// start in ts_ms, its delta in value (whole milliseconds: exact in a
// double up to 2^53), its period in quality and its span's end in to_ms.
struct RemoteChunkEntry {
  uint64_t olsn = 0;
  uint8_t kind = 0;  // ChangeEntry::Kind
  int64_t series = 0;
  int64_t ts_ms = 0;  // readings; a time correction's from_ms
  double value = 0;
  uint32_t quality = 0;
  std::string name, location, default_unit;  // device records
  int64_t to_ms = 0;                         // time corrections
};

// Entries per remote chunk at most: writers split longer runs (an uplink
// batch and a feed page hold at most 5,000 by default), and the decoder
// refuses more, so a damaged header can make it reserve at most
// kMaxRemoteChunkEntries * (per-entry bound) bytes.
constexpr size_t kMaxRemoteChunkEntries = 8192;

// entries: increasing olsn, at least one.
void EncodeRemoteChunk(const std::vector<RemoteChunkEntry>& entries, std::string* out);
// Corruption (naming the column) on anything that is not one well-formed
// block of at most max_entries entries in increasing origin LSN order.
Status DecodeRemoteChunk(std::string_view block, size_t max_entries, std::vector<RemoteChunkEntry>* entries);

// The fields of a change entry as a chunk holds them, with its series.
void FromChangeEntry(const ChangeEntry& e, int64_t series, RemoteChunkEntry* c);

// The change entry a decoded one stands for, with its series' names (the
// store's series dictionary, which the block refers to by id).
void ToChangeEntry(const RemoteChunkEntry& c, const std::string& device_id, const std::string& metric,
                   const std::string& unit, ChangeEntry* e);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_REMOTE_CHUNK_CODEC_H_

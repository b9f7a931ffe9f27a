// store/remote_rows.h: the rows of other origins' entries as a SQLite store
// keeps them (the read view's `view_chunks`, a hub's `region_chunks`):
// their blocks decoded with every damaged one counted and named, and an
// entry turned into a remote chunk entry (interning its series) and back.
//
// A damaged block is never skipped silently: the read that meets it fails
// with Corruption naming the row, and corrupt() counts them for `status`.
//
// Thread safety: RemoteRows may be used from any thread (the count is
// atomic). The entry conversions use the series writer or reader of the
// caller's connection, under that connection's mutex.
#ifndef EDGESYNC_STORE_REMOTE_ROWS_H_
#define EDGESYNC_STORE_REMOTE_ROWS_H_

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "store/remote_chunk_codec.h"
#include "store/series_catalog.h"
#include "store/types.h"

namespace edgesync {

class RemoteRows {
 public:
  // A one-origin block (a read view row, or a hub row of one origin); `what`
  // and `key` name the row in the error.
  Status DecodeView(std::string_view block, const char* what, int64_t key, std::vector<RemoteChunkEntry>* entries);
  // A `region_chunks` row of either layout (one origin's, or merged by feed
  // compaction: origin 0), with each entry's origin id. The row's origin
  // column and the block's format must agree.
  Status DecodeRegion(std::string_view block, int64_t seq, int64_t row_origin, std::vector<RemoteChunkEntry>* entries,
                      std::vector<int64_t>* origins);
  // Blocks refused as damaged since the store opened.
  int64_t corrupt() const { return corrupt_.load(); }
  // One more found elsewhere (feed compaction decodes rows itself).
  void NoteCorrupt() { corrupt_.fetch_add(1); }

 private:
  std::atomic<int64_t> corrupt_{0};
};

// The entry as a chunk holds it, its series interned: (deviceId, metric,
// unit) for a reading, (deviceId, "", "") for a device record, ("", "", "")
// for a time correction. Inside the writer's transaction.
Status ToRemoteChunkEntry(SeriesWriter* series, const ChangeEntry& e, RemoteChunkEntry* c);
// And back.
Status FromRemoteChunkEntry(SeriesReader* series, const RemoteChunkEntry& c, ChangeEntry* e);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_REMOTE_ROWS_H_

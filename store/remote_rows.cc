#include "store/remote_rows.h"

#include <string>

#include "store/region_feed_chunk_codec.h"

namespace edgesync {

Status RemoteRows::DecodeView(std::string_view block, const char* what, int64_t key,
                              std::vector<RemoteChunkEntry>* entries) {
  Status d = DecodeRemoteChunk(block, kMaxRemoteChunkEntries, entries);
  if (d.ok()) return d;
  corrupt_.fetch_add(1);
  return Status::Corruption(std::string(what) + " " + std::to_string(key) + ": " + d.message());
}

Status RemoteRows::DecodeRegion(std::string_view block, int64_t seq, int64_t row_origin,
                                std::vector<RemoteChunkEntry>* entries, std::vector<int64_t>* origins) {
  Status d = (row_origin == 0) != IsMergedRegionChunk(block)
                 ? Status::Corruption(row_origin == 0 ? "a one-origin block under origin 0"
                                                      : "a merged block under origin " + std::to_string(row_origin))
                 : DecodeRegionRow(block, row_origin, kMaxRemoteChunkEntries, entries, origins);
  if (d.ok()) return d;
  corrupt_.fetch_add(1);
  return Status::Corruption("region chunk at sequence " + std::to_string(seq) + ": " + d.message());
}

Status ToRemoteChunkEntry(SeriesWriter* series, const ChangeEntry& e, RemoteChunkEntry* c) {
  uint64_t hash = 0;
  int64_t id = 0;
  static const std::string kNone;
  Status st = e.kind == ChangeEntry::Kind::kReading
                  ? series->Intern(e.reading.device_id, e.reading.metric, e.reading.unit, &id, &hash)
                  : series->Intern(e.device_id(), kNone, kNone, &id, &hash);
  ES_RETURN_IF_ERROR(st);
  FromChangeEntry(e, id, c);
  return Status::Ok();
}

Status FromRemoteChunkEntry(SeriesReader* series, const RemoteChunkEntry& c, ChangeEntry* e) {
  SeriesInfo info;
  ES_RETURN_IF_ERROR(series->Find(c.series, &info));
  ToChangeEntry(c, info.device_id, info.metric, info.unit, e);
  return Status::Ok();
}

}  // namespace edgesync

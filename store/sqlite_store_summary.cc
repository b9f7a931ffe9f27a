// Summaries for people: the devices a store knows (readings and records)
// and how old its backlog is. Read side only (read_mu_, one snapshot each).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "store/chunk_codec.h"
#include "store/clock_period_table.h"
#include "store/chunk_compactor.h"
#include "store/sqlite_store.h"

namespace edgesync {

Status SqliteStore::ListDevices(std::vector<DeviceSummary>* devices) {
  devices->clear();
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  // Local readings: every chunk decoded (a scan for people, not a hot path).
  Stmt local, records, remote;
  ES_RETURN_IF_ERROR(local.Prepare(&read_db_, "SELECT first_lsn, last_lsn, data FROM chunks"));
  struct Span {
    int64_t readings = 0, first_ts = INT64_MAX, last_ts = INT64_MIN;
    uint64_t record_olsn = 0;  // the latest record version seen (remote); 0 = none
    bool has_record = false;   // that version is not a deletion
    DeviceRecord record;
  };
  std::map<std::string, Span> by_device;
  std::vector<ChunkReading> chunk;
  // Times as a query shows them: corrected periods at their true times.
  TimeOverlay overlay;
  ES_RETURN_IF_ERROR(clock_period_table::LoadOwnOverlay(&read_db_, &overlay));
  Status st;
  while (local.Step(&st)) {
    ES_RETURN_IF_ERROR(chunk_compactor::DecodeChunkRow(&read_db_, local.Blob(2), local.Int(0), local.Int(1), &chunk));
    for (const ChunkReading& c : chunk) {
      SeriesInfo info;
      ES_RETURN_IF_ERROR(series_reader_.Find(c.series, &info));
      Span& span = by_device[info.device_id];
      ++span.readings;
      int64_t ts = c.ts_ms;
      uint32_t quality = c.quality;
      overlay.Apply(&ts, &quality);
      span.first_ts = std::min(span.first_ts, ts);
      span.last_ts = std::max(span.last_ts, ts);
    }
  }
  ES_RETURN_IF_ERROR(st);
  // Local records: the devices table holds each one's latest version.
  ES_RETURN_IF_ERROR(records.Prepare(&read_db_, "SELECT device_id, name, location, default_unit FROM devices "
                                                "WHERE deleted = 0"));
  while (records.Step(&st)) {
    Span& span = by_device[records.Text(0)];
    span.has_record = true;
    span.record = DeviceRecord{records.Text(0), records.Text(1), records.Text(2), records.Text(3), false};
  }
  ES_RETURN_IF_ERROR(st);
  auto summary = [](const std::string& device, const Origin& origin, bool is_local, const Span& span) {
    DeviceSummary d{device, origin, is_local, span.readings, 0, 0, span.has_record, span.record};
    if (span.readings > 0) {
      d.first_ts_ms = span.first_ts;
      d.last_ts_ms = span.last_ts;
    }
    return d;
  };
  for (const auto& [device, span] : by_device) devices->push_back(summary(device, origin_, true, span));
  // Other origins' readings and records: every remote chunk decoded, by
  // (device, origin). A read view keeps every version of a record it was
  // sent: the one with the highest origin LSN is the latest.
  std::map<std::pair<std::string, int64_t>, Span> by_origin;
  std::unordered_map<int64_t, TimeOverlay> origin_overlays;
  ES_RETURN_IF_ERROR(clock_period_table::LoadOriginOverlays(&read_db_, &origin_overlays));
  std::vector<RemoteChunkEntry> entries;
  std::vector<int64_t> origins;  // each entry's (a merged region row holds several origins')
  const std::pair<const char*, const char*> tables[] = {{"SELECT id, origin, data FROM view_chunks", "read view chunk"},
                                                        {"SELECT seq, origin, data FROM region_chunks", nullptr}};
  for (const auto& [sql, what] : tables) {
    ES_RETURN_IF_ERROR(remote.Prepare(&read_db_, sql));
    while (remote.Step(&st)) {
      if (what == nullptr) {
        ES_RETURN_IF_ERROR(remote_rows_.DecodeRegion(remote.Blob(2), remote.Int(0), remote.Int(1), &entries, &origins));
      } else {
        ES_RETURN_IF_ERROR(remote_rows_.DecodeView(remote.Blob(2), what, remote.Int(0), &entries));
        origins.assign(entries.size(), remote.Int(1));
      }
      for (size_t i = 0; i < entries.size(); ++i) {
        const RemoteChunkEntry& e = entries[i];
        if (e.kind == static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection)) continue;  // no device
        SeriesInfo info;
        ES_RETURN_IF_ERROR(series_reader_.Find(e.series, &info));
        Span& span = by_origin[{info.device_id, origins[i]}];
        if (e.kind != 0) {
          if (e.olsn > span.record_olsn) {
            span.record_olsn = e.olsn;
            span.has_record = e.kind == static_cast<uint8_t>(ChangeEntry::Kind::kDeviceUpsert);
            span.record = span.has_record ? DeviceRecord{info.device_id, e.name, e.location, e.default_unit, false}
                                          : DeviceRecord{};
          }
          continue;
        }
        ++span.readings;
        int64_t ts = e.ts_ms;
        uint32_t quality = e.quality;
        auto corrected = origin_overlays.find(origins[i]);
        if (corrected != origin_overlays.end()) corrected->second.Apply(&ts, &quality);
        span.first_ts = std::min(span.first_ts, ts);
        span.last_ts = std::max(span.last_ts, ts);
      }
    }
    ES_RETURN_IF_ERROR(st);
  }
  std::vector<std::pair<int64_t, DeviceSummary>> rows;
  for (const auto& [key, span] : by_origin) {
    if (span.readings == 0 && !span.has_record) continue;  // a deleted record, nothing else
    rows.emplace_back(key.second, summary(key.first, Origin{}, false, span));
  }
  for (auto& [origin_id, d] : rows) {
    ES_RETURN_IF_ERROR(origin_catalog_.ById(origin_id, &r_origin_, &d.origin));
    // Our own entries that came back through a region feed are local rows.
    if (d.origin == origin_) continue;
    devices->push_back(std::move(d));
  }
  std::sort(devices->begin(), devices->end(), [](const DeviceSummary& a, const DeviceSummary& b) {
    if (a.device_id != b.device_id) return a.device_id < b.device_id;
    if (a.local != b.local) return a.local;
    return a.origin.ToString() < b.origin.ToString();
  });
  return Status::Ok();
}

Status SqliteStore::Backlog(uint64_t after_lsn, BacklogInfo* info) {
  *info = BacklogInfo{};
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  // The oldest entry after after_lsn: the chunk holding after_lsn + 1 (or
  // the next one) carries its write time; a device record's is in batches.
  Stmt st_oldest;
  ES_RETURN_IF_ERROR(st_oldest.Prepare(
      &read_db_,
      "SELECT min(ifnull((SELECT written_at FROM chunks WHERE first_lsn >= ifnull((SELECT max(first_lsn) FROM chunks "
      "WHERE first_lsn <= ?1), 0) AND last_lsn >= ?1 ORDER BY first_lsn LIMIT 1), 9223372036854775807), "
      "ifnull((SELECT written_at FROM batches WHERE first_lsn = (SELECT min(lsn) FROM log WHERE lsn >= ?1)), "
      "9223372036854775807))"));
  st_oldest.Bind(1, static_cast<int64_t>(after_lsn + 1));
  Status st;
  if (st_oldest.Step(&st) && st_oldest.Int(0) != INT64_MAX) info->oldest_written_ms = st_oldest.Int(0);
  ES_RETURN_IF_ERROR(st);
  Stmt mean;
  ES_RETURN_IF_ERROR(mean.Prepare(&read_db_, "SELECT ifnull(sum(bytes), 0), ifnull(sum(entries), 0) FROM ranges"));
  if (mean.Step(&st) && mean.Int(1) > 0) {
    info->avg_entry_bytes = static_cast<double>(mean.Int(0)) / static_cast<double>(mean.Int(1));
  }
  return st;
}

}  // namespace edgesync

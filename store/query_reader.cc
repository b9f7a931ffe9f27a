#include "store/query_reader.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "store/chunk_codec.h"
#include "store/chunk_compactor.h"
#include "store/clock_period_table.h"

namespace edgesync {
namespace {

struct Hit {
  int64_t ts_ms = 0;
  uint64_t lsn = 0;  // at its origin
  double value = 0;
  uint32_t quality = 0;
  uint32_t series = 0;  // index into the query's series
  uint32_t source = 0;  // index into the query's sources (0: this store's own rows)
};

struct QuerySeries {
  int64_t id = 0;
  std::string metric, unit;
};

// Where rows come from: this store (local) or an origin of the read view or
// the hub's chunks (this store's own origin too, for entries that came back
// through a feed and are no longer held locally).
struct Source {
  Origin origin;
  bool local = false;
};

// The rows found so far, ordered and bounded as the request asks.
class HitSet {
 public:
  HitSet(const QueryRequest& q, const std::vector<Source>* sources) : q_(q), sources_(sources) {}

  void Add(const Hit& h) { hits_.push_back(h); }
  // Keeps memory bounded by the limit however long the device's history:
  // called after each block or chunk, it keeps the first `limit` rows in
  // the answer's order once twice as many are held.
  void Trim() {
    const size_t limit = static_cast<size_t>(q_.limit);
    if (hits_.size() <= 2 * limit) return;
    std::nth_element(hits_.begin(), hits_.begin() + static_cast<ptrdiff_t>(limit), hits_.end(),
                     [&](const Hit& a, const Hit& b) { return InAnswerOrder(a, b); });
    hits_.resize(limit);
  }
  // The answer: at most `limit` rows in its order.
  void Finish(const std::string& device_id, const std::vector<QuerySeries>& series, std::vector<QueryRow>* rows) {
    auto oldest = [&](const Hit& a, const Hit& b) { return OldestFirst(a, b); };
    // Blocks of one series come in time order: then the answer is the hits
    // as they are (or reversed), with no sort.
    if (!std::is_sorted(hits_.begin(), hits_.end(), oldest)) std::sort(hits_.begin(), hits_.end(), oldest);
    if (q_.newest_first) std::reverse(hits_.begin(), hits_.end());
    const size_t n = std::min(hits_.size(), static_cast<size_t>(q_.limit));
    // Each row is copied from its (source, series) pattern and given its
    // own time, value, LSN and quality: one copy of its strings, no
    // default-constructed row assigned field by field.
    std::unordered_map<uint64_t, QueryRow> patterns;
    rows->reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const Hit& h = hits_[i];
      const uint64_t key = (uint64_t{h.source} << 32) | h.series;
      auto it = patterns.find(key);
      if (it == patterns.end()) {
        QueryRow p;
        p.origin = (*sources_)[h.source].origin;
        p.local = (*sources_)[h.source].local;
        p.reading.device_id = device_id;
        p.reading.metric = series[h.series].metric;
        p.reading.unit = series[h.series].unit;
        it = patterns.emplace(key, std::move(p)).first;
      }
      rows->push_back(it->second);
      QueryRow& r = rows->back();
      r.lsn = h.lsn;
      r.reading.ts_ms = h.ts_ms;
      r.reading.value = h.value;
      r.reading.quality = h.quality;
    }
  }

 private:
  // Time, then origin (gateway id, epoch), then LSN.
  bool OldestFirst(const Hit& a, const Hit& b) const {
    if (a.ts_ms != b.ts_ms) return a.ts_ms < b.ts_ms;
    if (a.source != b.source) {
      const Origin& x = (*sources_)[a.source].origin;
      const Origin& y = (*sources_)[b.source].origin;
      if (x.gateway_id != y.gateway_id) return x.gateway_id < y.gateway_id;
      if (x.epoch != y.epoch) return x.epoch < y.epoch;
    }
    return a.lsn < b.lsn;
  }
  bool InAnswerOrder(const Hit& a, const Hit& b) const { return q_.newest_first ? OldestFirst(b, a) : OldestFirst(a, b); }

  const QueryRequest& q_;
  const std::vector<Source>* sources_;
  std::vector<Hit> hits_;
};

}  // namespace

Status QueryReader::Query(const QueryRequest& q, std::vector<QueryRow>* rows) {
  rows->clear();
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", q.device_id));
  if (!q.metric.empty()) ES_RETURN_IF_ERROR(ValidateKey("metric", q.metric));
  if (q.limit <= 0) return Status::InvalidArgument("query limit must be positive");
  if (q.from_ms >= q.to_ms) return Status::Ok();
  if (q.limit > QueryRequest::kMaxRows) {
    return Status::InvalidArgument("query limit " + std::to_string(q.limit) + " is above the maximum " +
                                   std::to_string(QueryRequest::kMaxRows));
  }
  Txn snapshot(db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  Stmt series;
  ES_RETURN_IF_ERROR(series.Prepare(db_, q.metric.empty()
                                                   ? "SELECT id, metric, unit FROM series WHERE device_id=? AND metric!=''"
                                                   : "SELECT id, metric, unit FROM series WHERE device_id=? AND metric=?"));
  series.Bind(1, std::string_view(q.device_id));
  if (!q.metric.empty()) series.Bind(2, std::string_view(q.metric));
  std::vector<QuerySeries> list;
  Status st;
  while (series.Step(&st)) list.push_back(QuerySeries{series.Int(0), series.Text(1), series.Text(2)});
  ES_RETURN_IF_ERROR(st);
  if (list.empty()) return Status::Ok();
  std::unordered_map<int64_t, uint32_t> wanted;  // series id -> index into list
  for (size_t i = 0; i < list.size(); ++i) wanted.emplace(list[i].id, static_cast<uint32_t>(i));
  std::vector<Source> sources{Source{self_, true}};
  HitSet hits(q, &sources);
  // The LSNs of the local rows found: our own entries that came back
  // through a feed are one row each. Kept only when the store holds any
  // such entry (8 bytes a local row, however long the window: not bounded
  // by the limit), sorted only when such a chunk shows up.
  int64_t own_id = 0;
  {
    Stmt own;
    ES_RETURN_IF_ERROR(own.Prepare(db_, "SELECT id FROM origins WHERE gateway_id=? AND epoch=?"));
    own.Bind(1, std::string_view(self_.gateway_id));
    own.Bind(2, std::string_view(self_.epoch));
    if (own.Step(&st)) own_id = own.Int(0);
    ES_RETURN_IF_ERROR(st);
  }
  std::vector<uint64_t> local_lsns;
  bool local_lsns_sorted = false;
  // Corrected untrusted clock periods (store/time_correction.h): a reading
  // is shown, and kept or not, at its corrected time, and the stamped times
  // that a correction brings into [from, to) are read as well. Without
  // corrections the only window is [from, to).
  TimeOverlay own_overlay;
  ES_RETURN_IF_ERROR(clock_period_table::LoadOwnOverlay(db_, &own_overlay));
  const std::vector<std::pair<int64_t, int64_t>> own_windows = own_overlay.ScanWindows(q.from_ms, q.to_ms);
  const std::vector<std::pair<int64_t, int64_t>> plain_windows{{q.from_ms, q.to_ms}};
  // Other origins' corrections, as a hub or this read view took them from
  // the change log: their readings are shown through them the same way.
  std::unordered_map<int64_t, TimeOverlay> origin_overlays;
  ES_RETURN_IF_ERROR(clock_period_table::LoadOriginOverlays(db_, &origin_overlays));
  // The time and quality shown: false when outside [from, to).
  auto shown = [&q](const TimeOverlay* overlay, int64_t* ts, uint32_t* quality) {
    if (overlay != nullptr) overlay->Apply(ts, quality);
    return *ts >= q.from_ms && *ts < q.to_ms;
  };
  // A block or chunk met by two windows is read once.
  std::set<int64_t> read_keys;

  // Compacted spans: the series' own blocks that meet the windows.
  Stmt blocks;
  ES_RETURN_IF_ERROR(blocks.Prepare(db_,
                                    "SELECT span, data, id FROM series_chunks WHERE series = ? AND max_ts >= ? AND "
                                    "min_ts < ?"));
  std::vector<SeriesPoint> points;
  for (uint32_t si = 0; si < list.size(); ++si) {
    for (const auto& window : own_windows) {
      StmtScope scope(&blocks);
      blocks.Bind(1, list[si].id);
      blocks.Bind(2, window.first);
      blocks.Bind(3, window.second);
      while (blocks.Step(&st)) {
        if (own_windows.size() > 1 && !read_keys.insert(blocks.Int(2)).second) continue;
        Status d = DecodeSeriesBlock(blocks.Blob(1), kMaxChunkReadings, &points);
        if (!d.ok()) return Status::Corruption("span at LSN " + std::to_string(blocks.Int(0)) + ": " + d.message());
        for (const SeriesPoint& p : points) {
          int64_t ts = p.ts_ms;
          uint32_t quality = p.quality;
          if (!shown(&own_overlay, &ts, &quality)) continue;
          hits.Add(Hit{ts, static_cast<uint64_t>(p.lsn), p.value, quality, si, 0});
          if (own_id != 0) local_lsns.push_back(static_cast<uint64_t>(p.lsn));
        }
        hits.Trim();
      }
      ES_RETURN_IF_ERROR(st);
    }
  }
  read_keys.clear();
  // Commit chunks whose time span meets [from, to), decoded (span markers
  // were read above, by series). No time index: one per commit would cost
  // an index page written per commit; the scan reads each row's head only.
  {
    Stmt local;
    ES_RETURN_IF_ERROR(local.Prepare(db_,
                                     "SELECT first_lsn, data FROM chunks WHERE max_ts >= ? AND min_ts < ? "
                                     "ORDER BY first_lsn"));
    std::vector<ChunkReading> chunk;
    for (const auto& window : own_windows) {
      StmtScope scope(&local);
      local.Bind(1, window.first);
      local.Bind(2, window.second);
      while (local.Step(&st)) {
        const uint64_t first = static_cast<uint64_t>(local.Int(0));
        if (IsSpanMarker(local.Blob(1))) continue;
        if (own_windows.size() > 1 && !read_keys.insert(local.Int(0)).second) continue;
        Status d = DecodeChunk(local.Blob(1), kMaxChunkReadings, &chunk);
        if (!d.ok()) return Status::Corruption("chunk at LSN " + std::to_string(first) + ": " + d.message());
        for (size_t i = 0; i < chunk.size(); ++i) {
          const ChunkReading& c = chunk[i];
          auto it = wanted.find(c.series);
          if (it == wanted.end()) continue;
          int64_t ts = c.ts_ms;
          uint32_t quality = c.quality;
          if (!shown(&own_overlay, &ts, &quality)) continue;
          hits.Add(Hit{ts, first + i, c.value, quality, it->second, 0});
          if (own_id != 0) local_lsns.push_back(first + i);
        }
        hits.Trim();
      }
      ES_RETURN_IF_ERROR(st);
    }
    read_keys.clear();
  }
  // Other origins' rows: the read view's chunks of the origins that wrote
  // the device's series (view_series), and the hub's chunks, whose time
  // span meets [from, to), decoded. A hub's chunks are not indexed by time
  // (an index entry per applied batch for a query a hub rarely answers):
  // their scan reads each row's head, not its block.
  std::unordered_map<int64_t, uint32_t> source_of;  // origin id -> index into sources
  std::set<std::pair<int64_t, uint64_t>> view_seen;
  int64_t both = 0;
  ES_RETURN_IF_ERROR(db_->QueryInt("SELECT EXISTS (SELECT 1 FROM view_chunks) AND EXISTS (SELECT 1 FROM "
                                       "region_chunks)",
                                       &both));
  std::vector<RemoteChunkEntry> chunk;
  std::vector<int64_t> chunk_origins;
  // Rows of a statement giving (key, origin, data) of remote chunks. A
  // region row merged by feed compaction (origin 0) holds several
  // origins' entries: each entry's origin decides its source and overlay.
  auto scan = [&](Stmt* remote, bool region, const char* what, bool several) -> Status {
    Status st;
    int64_t origin_id = 0;
    uint32_t source = 0;
    bool own = false;
    const TimeOverlay* overlay = nullptr;
    auto resolve = [&](int64_t id) -> Status {
      origin_id = id;
      auto src = source_of.find(origin_id);
      if (src == source_of.end()) {
        Source s;
        ES_RETURN_IF_ERROR(origins_->ById(origin_id, origin_stmts_, &s.origin));
        sources.push_back(std::move(s));
        src = source_of.emplace(origin_id, static_cast<uint32_t>(sources.size() - 1)).first;
      }
      source = src->second;
      own = sources[source].origin == self_;
      if (own && !local_lsns_sorted) {
        std::sort(local_lsns.begin(), local_lsns.end());
        local_lsns_sorted = true;
      }
      // This store's own entries served back by a feed are corrected as
      // its local rows are; another origin's by what it sent.
      overlay = own ? &own_overlay : nullptr;
      if (!own) {
        auto o = origin_overlays.find(origin_id);
        if (o != origin_overlays.end()) overlay = &o->second;
      }
      return Status::Ok();
    };
    while (remote->Step(&st)) {
      if (several && !read_keys.insert(remote->Int(0)).second) continue;
      if (region) {
        ES_RETURN_IF_ERROR(rows_->DecodeRegion(remote->Blob(2), remote->Int(0), remote->Int(1), &chunk, &chunk_origins));
      } else {
        ES_RETURN_IF_ERROR(rows_->DecodeView(remote->Blob(2), what, remote->Int(0), &chunk));
        chunk_origins.assign(chunk.size(), remote->Int(1));
      }
      origin_id = 0;
      for (size_t i = 0; i < chunk.size(); ++i) {
        const RemoteChunkEntry& c = chunk[i];
        if (c.kind != 0) continue;
        auto it = wanted.find(c.series);
        if (it == wanted.end()) continue;
        if (chunk_origins[i] != origin_id) ES_RETURN_IF_ERROR(resolve(chunk_origins[i]));
        int64_t ts = c.ts_ms;
        uint32_t quality = c.quality;
        if (!shown(overlay, &ts, &quality)) continue;
        if (own && std::binary_search(local_lsns.begin(), local_lsns.end(), c.olsn)) continue;
        // A store in both roles (tests; in the field only a gateway pulls
        // feeds and only a hub applies batches) may hold an entry in both
        // tables: one row each.
        if (both && (region ? view_seen.count({origin_id, c.olsn}) > 0
                            : !view_seen.emplace(origin_id, c.olsn).second)) {
          continue;
        }
        hits.Add(Hit{ts, c.olsn, c.value, quality, it->second, source});
      }
      hits.Trim();
    }
    return st;
  };
  std::set<int64_t> view_origins;
  {
    Stmt writers;
    ES_RETURN_IF_ERROR(writers.Prepare(db_, "SELECT origin FROM view_series WHERE series = ?"));
    for (const QuerySeries& s : list) {
      StmtScope scope(&writers);
      writers.Bind(1, s.id);
      while (writers.Step(&st)) view_origins.insert(writers.Int(0));
      ES_RETURN_IF_ERROR(st);
    }
  }
  Stmt view;
  ES_RETURN_IF_ERROR(view.Prepare(db_,
                                  "SELECT id, origin, data FROM view_chunks WHERE origin = ? AND max_ts >= ? AND "
                                  "min_ts < ?"));
  for (int64_t origin : view_origins) {
    auto corrected = origin_overlays.find(origin);
    const auto windows = origin == own_id                     ? own_windows
                         : corrected != origin_overlays.end() ? corrected->second.ScanWindows(q.from_ms, q.to_ms)
                                                              : plain_windows;
    for (const auto& window : windows) {
      StmtScope scope(&view);
      view.Bind(1, origin);
      view.Bind(2, window.first);
      view.Bind(3, window.second);
      ES_RETURN_IF_ERROR(scan(&view, false, "read view chunk", windows.size() > 1));
    }
    read_keys.clear();
  }
  Stmt region;
  ES_RETURN_IF_ERROR(
      region.Prepare(db_, "SELECT seq, origin, data FROM region_chunks WHERE max_ts >= ? AND min_ts < ?"));
  // Every origin's chunks are scanned together: the windows of them all.
  std::vector<std::pair<int64_t, int64_t>> region_windows = own_id != 0 ? own_windows : plain_windows;
  for (const auto& [origin, overlay] : origin_overlays) {
    for (const auto& w : overlay.ScanWindows(q.from_ms, q.to_ms)) region_windows.push_back(w);
  }
  region_windows = MergeWindows(std::move(region_windows));
  for (const auto& window : region_windows) {
    StmtScope scope(&region);
    region.Bind(1, window.first);
    region.Bind(2, window.second);
    ES_RETURN_IF_ERROR(scan(&region, true, "region chunk at sequence", region_windows.size() > 1));
  }
  hits.Finish(q.device_id, list, rows);
  return Status::Ok();
}

// Summaries for people: the devices a store knows and how old its backlog is.
Status QueryReader::ListDevices(std::vector<DeviceSummary>* devices) {
  devices->clear();
  Txn snapshot(db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  // Local readings: every chunk decoded (a scan for people, not a hot path).
  Stmt local, records, remote;
  ES_RETURN_IF_ERROR(local.Prepare(db_, "SELECT first_lsn, last_lsn, data FROM chunks"));
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
  ES_RETURN_IF_ERROR(clock_period_table::LoadOwnOverlay(db_, &overlay));
  Status st;
  while (local.Step(&st)) {
    ES_RETURN_IF_ERROR(chunk_compactor::DecodeChunkRow(db_, local.Blob(2), local.Int(0), local.Int(1), &chunk));
    for (const ChunkReading& c : chunk) {
      SeriesInfo info;
      ES_RETURN_IF_ERROR(series_->Find(c.series, &info));
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
  ES_RETURN_IF_ERROR(records.Prepare(db_, "SELECT device_id, name, location, default_unit FROM devices "
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
  for (const auto& [device, span] : by_device) devices->push_back(summary(device, self_, true, span));
  // Other origins' readings and records: every remote chunk decoded, by
  // (device, origin). A read view keeps every version of a record it was
  // sent: the one with the highest origin LSN is the latest.
  std::map<std::pair<std::string, int64_t>, Span> by_origin;
  std::unordered_map<int64_t, TimeOverlay> origin_overlays;
  ES_RETURN_IF_ERROR(clock_period_table::LoadOriginOverlays(db_, &origin_overlays));
  std::vector<RemoteChunkEntry> entries;
  std::vector<int64_t> origins;  // each entry's (a merged region row holds several origins')
  const std::pair<const char*, const char*> tables[] = {{"SELECT id, origin, data FROM view_chunks", "read view chunk"},
                                                        {"SELECT seq, origin, data FROM region_chunks", nullptr}};
  for (const auto& [sql, what] : tables) {
    ES_RETURN_IF_ERROR(remote.Prepare(db_, sql));
    while (remote.Step(&st)) {
      if (what == nullptr) {
        ES_RETURN_IF_ERROR(rows_->DecodeRegion(remote.Blob(2), remote.Int(0), remote.Int(1), &entries, &origins));
      } else {
        ES_RETURN_IF_ERROR(rows_->DecodeView(remote.Blob(2), what, remote.Int(0), &entries));
        origins.assign(entries.size(), remote.Int(1));
      }
      for (size_t i = 0; i < entries.size(); ++i) {
        const RemoteChunkEntry& e = entries[i];
        if (e.kind == static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection)) continue;  // no device
        SeriesInfo info;
        ES_RETURN_IF_ERROR(series_->Find(e.series, &info));
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
    ES_RETURN_IF_ERROR(origins_->ById(origin_id, origin_stmts_, &d.origin));
    // Our own entries that came back through a region feed are local rows.
    if (d.origin == self_) continue;
    devices->push_back(std::move(d));
  }
  std::sort(devices->begin(), devices->end(), [](const DeviceSummary& a, const DeviceSummary& b) {
    if (a.device_id != b.device_id) return a.device_id < b.device_id;
    if (a.local != b.local) return a.local;
    return a.origin.ToString() < b.origin.ToString();
  });
  return Status::Ok();
}

Status QueryReader::Backlog(uint64_t after_lsn, BacklogInfo* info) {
  *info = BacklogInfo{};
  Txn snapshot(db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  // The oldest entry after after_lsn: the chunk holding after_lsn + 1 (or
  // the next one) carries its write time; a device record's is in batches.
  Stmt st_oldest;
  ES_RETURN_IF_ERROR(st_oldest.Prepare(
      db_,
      "SELECT min(ifnull((SELECT written_at FROM chunks WHERE first_lsn >= ifnull((SELECT max(first_lsn) FROM chunks "
      "WHERE first_lsn <= ?1), 0) AND last_lsn >= ?1 ORDER BY first_lsn LIMIT 1), 9223372036854775807), "
      "ifnull((SELECT written_at FROM batches WHERE first_lsn = (SELECT min(lsn) FROM log WHERE lsn >= ?1)), "
      "9223372036854775807))"));
  st_oldest.Bind(1, static_cast<int64_t>(after_lsn + 1));
  Status st;
  if (st_oldest.Step(&st) && st_oldest.Int(0) != INT64_MAX) info->oldest_written_ms = st_oldest.Int(0);
  ES_RETURN_IF_ERROR(st);
  Stmt mean;
  ES_RETURN_IF_ERROR(mean.Prepare(db_, "SELECT ifnull(sum(bytes), 0), ifnull(sum(entries), 0) FROM ranges"));
  if (mean.Step(&st) && mean.Int(1) > 0) {
    info->avg_entry_bytes = static_cast<double>(mean.Int(0)) / static_cast<double>(mean.Int(1));
  }
  return st;
}

}  // namespace edgesync

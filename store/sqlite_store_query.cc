// The union query (Store::Query): one device's readings over a window, from
// the local store (compacted spans' series blocks, then commit chunks), the
// read view (only the chunks of the origins that wrote the device's series)
// and a hub's region chunks, deduplicated by (origin, LSN), in time order
// under a limit.
//
// Why it collects small hits and builds QueryRows last: a day of one
// series at 1 Hz is 86,400 rows. Built as QueryRows while scanning (five
// strings each, the epoch a heap copy; ~200 bytes) and then sorted, the
// rows' construction, the vector's growth and the sort's moves were most of
// the query's time (perf on bench_storage's 50.5M-reading store). A Hit is
// 40 bytes without strings: trimming and ordering move only those, blocks
// of one series mostly arrive in order already (then nothing is sorted),
// and only the rows kept become QueryRows, each built once in place.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "store/chunk_codec.h"
#include "store/clock_period_table.h"
#include "store/sqlite_store.h"

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

Status SqliteStore::Query(const QueryRequest& q, std::vector<QueryRow>* rows) {
  rows->clear();
  ES_RETURN_IF_ERROR(ValidateKey("deviceId", q.device_id));
  if (!q.metric.empty()) ES_RETURN_IF_ERROR(ValidateKey("metric", q.metric));
  if (q.limit <= 0) return Status::InvalidArgument("query limit must be positive");
  if (q.from_ms >= q.to_ms) return Status::Ok();
  if (q.limit > QueryRequest::kMaxRows) {
    return Status::InvalidArgument("query limit " + std::to_string(q.limit) + " is above the maximum " +
                                   std::to_string(QueryRequest::kMaxRows));
  }
  MutexLock lock(&read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  Stmt series;
  ES_RETURN_IF_ERROR(series.Prepare(&read_db_, q.metric.empty()
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
  std::vector<Source> sources{Source{origin_, true}};
  HitSet hits(q, &sources);
  // The LSNs of the local rows found: our own entries that came back
  // through a feed are one row each. Kept only when the store holds any
  // such entry (8 bytes a local row, however long the window: not bounded
  // by the limit), sorted only when such a chunk shows up.
  int64_t own_id = 0;
  {
    Stmt own;
    ES_RETURN_IF_ERROR(own.Prepare(&read_db_, "SELECT id FROM origins WHERE gateway_id=? AND epoch=?"));
    own.Bind(1, std::string_view(origin_.gateway_id));
    own.Bind(2, std::string_view(origin_.epoch));
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
  ES_RETURN_IF_ERROR(clock_period_table::LoadOwnOverlay(&read_db_, &own_overlay));
  const std::vector<std::pair<int64_t, int64_t>> own_windows = own_overlay.ScanWindows(q.from_ms, q.to_ms);
  const std::vector<std::pair<int64_t, int64_t>> plain_windows{{q.from_ms, q.to_ms}};
  // Other origins' corrections, as a hub or this read view took them from
  // the change log: their readings are shown through them the same way.
  std::unordered_map<int64_t, TimeOverlay> origin_overlays;
  ES_RETURN_IF_ERROR(clock_period_table::LoadOriginOverlays(&read_db_, &origin_overlays));
  // The time and quality shown: false when outside [from, to).
  auto shown = [&q](const TimeOverlay* overlay, int64_t* ts, uint32_t* quality) {
    if (overlay != nullptr) overlay->Apply(ts, quality);
    return *ts >= q.from_ms && *ts < q.to_ms;
  };
  // A block or chunk met by two windows is read once.
  std::set<int64_t> read_keys;

  // Compacted spans: the series' own blocks that meet the windows.
  Stmt blocks;
  ES_RETURN_IF_ERROR(blocks.Prepare(&read_db_,
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
    ES_RETURN_IF_ERROR(local.Prepare(&read_db_,
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
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT EXISTS (SELECT 1 FROM view_chunks) AND EXISTS (SELECT 1 FROM "
                                       "region_chunks)",
                                       &both));
  std::vector<RemoteChunkEntry> chunk;
  std::vector<int64_t> chunk_origins;
  // Rows of a statement giving (key, origin, data) of remote chunks. A
  // region row merged by feed compaction (origin 0) holds several
  // origins' entries: each entry's origin decides its source and overlay.
  auto scan = [&](Stmt* remote, bool region, const char* what, bool several) REQUIRES(read_mu_) -> Status {
    Status st;
    int64_t origin_id = 0;
    uint32_t source = 0;
    bool own = false;
    const TimeOverlay* overlay = nullptr;
    auto resolve = [&](int64_t id) REQUIRES(read_mu_) -> Status {
      origin_id = id;
      auto src = source_of.find(origin_id);
      if (src == source_of.end()) {
        Source s;
        ES_RETURN_IF_ERROR(origin_catalog_.ById(origin_id, &r_origin_, &s.origin));
        sources.push_back(std::move(s));
        src = source_of.emplace(origin_id, static_cast<uint32_t>(sources.size() - 1)).first;
      }
      source = src->second;
      own = sources[source].origin == origin_;
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
        ES_RETURN_IF_ERROR(remote_rows_.DecodeRegion(remote->Blob(2), remote->Int(0), remote->Int(1), &chunk, &chunk_origins));
      } else {
        ES_RETURN_IF_ERROR(remote_rows_.DecodeView(remote->Blob(2), what, remote->Int(0), &chunk));
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
    ES_RETURN_IF_ERROR(writers.Prepare(&read_db_, "SELECT origin FROM view_series WHERE series = ?"));
    for (const QuerySeries& s : list) {
      StmtScope scope(&writers);
      writers.Bind(1, s.id);
      while (writers.Step(&st)) view_origins.insert(writers.Int(0));
      ES_RETURN_IF_ERROR(st);
    }
  }
  Stmt view;
  ES_RETURN_IF_ERROR(view.Prepare(&read_db_,
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
      region.Prepare(&read_db_, "SELECT seq, origin, data FROM region_chunks WHERE max_ts >= ? AND min_ts < ?"));
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

}  // namespace edgesync

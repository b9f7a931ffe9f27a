// Other gateways' data: the read view (ApplyRemote), the region hub's
// per-origin high-water marks and region feed, and the union query. Both
// keep compressed chunks of one origin's entries (store/schema.h): a hub
// writes one row per applied batch, a read view one per origin per page.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "store/chunk_codec.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {
namespace {

// The region feed's head: the last sequence number given out. Retention
// prunes the oldest chunks first, so the newest chunk holds it, or, with
// every chunk pruned, the pruned mark does (sequences are never reused).
constexpr char kRegionHeadSql[] =
    "SELECT max(ifnull((SELECT seq + n - 1 FROM region_chunks ORDER BY seq DESC LIMIT 1), 0), "
    "ifnull((SELECT value FROM meta WHERE key = 'region_pruned_seq'), 0))";

constexpr char kFindOriginSql[] = "SELECT id FROM origins WHERE gateway_id=? AND epoch=?";

}  // namespace

Status SqliteStore::OriginId(const Origin& origin, bool create, int64_t* id) {
  std::string key = origin.ToString();
  {
    std::lock_guard<std::mutex> lock(origins_mu_);
    auto it = origin_ids_.find(key);
    if (it != origin_ids_.end()) {
      *id = it->second;
      return Status::Ok();
    }
  }
  // Prepared once (a hub sees every new gateway here, and its marks on
  // every batch): see PrepareApply and GetHighWater.
  Stmt& s = create ? w_find_origin_ : r_find_origin_;
  StmtScope scope(&s);
  s.Bind(1, std::string_view(origin.gateway_id));
  s.Bind(2, std::string_view(origin.epoch));
  Status st;
  if (s.Step(&st)) {
    *id = s.Int(0);
  } else {
    ES_RETURN_IF_ERROR(st);
    *id = 0;
    if (!create) return Status::Ok();
    Stmt& ins = w_insert_origin_;
    StmtScope ins_scope(&ins);
    ins.Bind(1, std::string_view(origin.gateway_id));
    ins.Bind(2, std::string_view(origin.epoch));
    if (!ins.Step(&st)) return st.ok() ? Status::IoError("origin insert returned no id") : st;
    *id = ins.Int(0);
    return Status::Ok();  // not cached until its transaction commits
  }
  std::lock_guard<std::mutex> lock(origins_mu_);
  origin_ids_[key] = *id;
  origins_[*id] = origin;
  return Status::Ok();
}

Status SqliteStore::OriginById(int64_t id, Origin* origin) {
  {
    std::lock_guard<std::mutex> lock(origins_mu_);
    auto it = origins_.find(id);
    if (it != origins_.end()) {
      *origin = it->second;
      return Status::Ok();
    }
  }
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_, "SELECT gateway_id, epoch FROM origins WHERE id=?"));
  s.Bind(1, id);
  Status st;
  if (!s.Step(&st)) return st.ok() ? Status::Corruption("unknown origin id " + std::to_string(id)) : st;
  *origin = Origin{s.Text(0), s.Text(1)};
  std::lock_guard<std::mutex> lock(origins_mu_);
  origins_[id] = *origin;
  origin_ids_[origin->ToString()] = id;
  return Status::Ok();
}

// Origins created by a transaction that rolled back must not stay cached.
void SqliteStore::ForgetOrigins() {
  std::lock_guard<std::mutex> lock(origins_mu_);
  origin_ids_.clear();
  origins_.clear();
}

Status SqliteStore::PrepareApply() {
  if (apply_prepared_) return Status::Ok();
  ES_RETURN_IF_ERROR(w_insert_region_chunk_.Prepare(&write_db_, kInsertRegionChunkSql));
  ES_RETURN_IF_ERROR(w_insert_view_chunk_.Prepare(&write_db_, kInsertViewChunkSql));
  ES_RETURN_IF_ERROR(w_view_overlap_.Prepare(&write_db_,
                                             "SELECT id, data FROM view_chunks WHERE origin = ? AND last_olsn >= ? "
                                             "AND first_olsn <= ?"));
  ES_RETURN_IF_ERROR(w_region_head_.Prepare(&write_db_, kRegionHeadSql));
  ES_RETURN_IF_ERROR(w_get_high_water_.Prepare(&write_db_, "SELECT lsn FROM high_water WHERE origin=?"));
  ES_RETURN_IF_ERROR(w_put_high_water_.Prepare(&write_db_, "INSERT OR REPLACE INTO high_water VALUES(?, ?)"));
  ES_RETURN_IF_ERROR(w_find_origin_.Prepare(&write_db_, kFindOriginSql));
  ES_RETURN_IF_ERROR(
      w_insert_origin_.Prepare(&write_db_, "INSERT INTO origins(gateway_id, epoch) VALUES(?, ?) RETURNING id"));
  apply_prepared_ = true;
  return Status::Ok();
}

// Interns the entry's series: (deviceId, metric, unit) for a reading,
// (deviceId, "", "") for a device record.
Status SqliteStore::ToChunkEntry(const ChangeEntry& e, RemoteChunkEntry* c) {
  uint64_t hash = 0;
  c->olsn = e.lsn;
  c->kind = static_cast<uint8_t>(e.kind);
  if (e.kind == ChangeEntry::Kind::kReading) {
    c->ts_ms = e.reading.ts_ms;
    c->value = e.reading.value;
    c->quality = e.reading.quality;
    return InternSeries(e.reading.device_id, e.reading.metric, e.reading.unit, &c->series, &hash);
  }
  static const std::string kNone;
  c->name = e.device.name;
  c->location = e.device.location;
  c->default_unit = e.device.default_unit;
  return InternSeries(e.device.device_id, kNone, kNone, &c->series, &hash);
}

Status SqliteStore::DecodeRemote(std::string_view block, const char* what, int64_t key,
                                 std::vector<RemoteChunkEntry>* entries) {
  Status d = DecodeRemoteChunk(block, kMaxRemoteChunkEntries, entries);
  if (d.ok()) return d;
  corrupt_chunks_.fetch_add(1);
  return Status::Corruption(std::string(what) + " " + std::to_string(key) + ": " + d.message());
}

// The end of a read-view or hub write: on failure the transaction is rolled
// back and the series and origins it interned are forgotten (their rows are
// gone with it); on success they become part of the caches.
Status SqliteStore::EndRemoteWrite(Txn* txn, const Status& status) {
  if (!status.ok()) {
    txn->Rollback();
    ForgetPendingSeries();
    ForgetOrigins();
    return status;
  }
  pending_series_.clear();
  return Status::Ok();
}

// Inside the write transaction: one origin's entries new to the read view,
// as chunks of at most kMaxRemoteChunkEntries. *added counts them.
Status SqliteStore::ApplyViewOrigin(int64_t origin_id, std::vector<const ChangeEntry*>* group, int64_t now,
                                    int64_t* added) {
  std::stable_sort(group->begin(), group->end(),
                   [](const ChangeEntry* a, const ChangeEntry* b) { return a->lsn < b->lsn; });
  // What the read view already holds of [lo, hi]: the chunks whose span
  // meets it (mostly none: a page continues where the last one ended).
  std::set<uint64_t> held;
  {
    Stmt& o = w_view_overlap_;
    StmtScope scope(&o);
    o.Bind(1, origin_id);
    o.Bind(2, static_cast<int64_t>(group->front()->lsn));
    o.Bind(3, static_cast<int64_t>(group->back()->lsn));
    Status st;
    std::vector<RemoteChunkEntry> old;
    while (o.Step(&st)) {
      ES_RETURN_IF_ERROR(DecodeRemote(o.Blob(1), "read view chunk", o.Int(0), &old));
      for (const RemoteChunkEntry& e : old) held.insert(e.olsn);
    }
    ES_RETURN_IF_ERROR(st);
  }
  std::vector<RemoteChunkEntry>& chunk = remote_buffer_;
  chunk.clear();
  auto flush = [&]() -> Status {
    if (chunk.empty()) return Status::Ok();
    *added += static_cast<int64_t>(chunk.size());
    Status st = InsertRemoteChunkRow(&w_insert_view_chunk_, 0, origin_id, chunk, now, &block_buffer_);
    chunk.clear();
    return st;
  };
  uint64_t last = 0;
  for (const ChangeEntry* e : *group) {
    if (e->lsn == last || held.count(e->lsn)) continue;  // a repeat within the call, or already held
    last = e->lsn;
    chunk.emplace_back();
    ES_RETURN_IF_ERROR(ToChunkEntry(*e, &chunk.back()));
    if (chunk.size() >= kMaxRemoteChunkEntries) ES_RETURN_IF_ERROR(flush());
  }
  return flush();
}

Status SqliteStore::ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) {
  *applied = 0;
  const Origin* checked = nullptr;  // entries mostly share one origin: validate it once
  for (size_t i = 0; i < entries.size(); ++i) {
    const RemoteEntry& r = entries[i];
    Status v;
    if (!checked || !(r.origin == *checked)) {
      v = ValidateOrigin(r.origin);
      checked = &r.origin;
    }
    if (v.ok()) v = ValidateChangeEntry(r.entry);
    if (v.ok() && r.entry.lsn != r.origin_lsn) v = Status::InvalidArgument("entry LSN differs from origin LSN");
    if (!v.ok()) return v.Annotate("remote entry " + std::to_string(i));
  }
  if (entries.empty()) return Status::Ok();
  // One chunk per origin of the page, in the order the origins first appear.
  std::vector<std::pair<const Origin*, std::vector<const ChangeEntry*>>> groups;
  for (const RemoteEntry& r : entries) {
    if (groups.empty() || !(*groups.back().first == r.origin)) {
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return *g.first == r.origin; });
      if (it == groups.end()) {
        groups.emplace_back(&r.origin, std::vector<const ChangeEntry*>{});
      } else {
        std::rotate(it, it + 1, groups.end());  // keep the current group last
      }
    }
    groups.back().second.push_back(&r.entry);
  }
  std::lock_guard<std::mutex> lock(write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  pending_series_.clear();
  int64_t count = 0;
  Status s = [&]() -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    const int64_t now = clock_->WallMillis();
    for (auto& [origin, group] : groups) {
      int64_t origin_id = 0;
      ES_RETURN_IF_ERROR(OriginId(*origin, true, &origin_id));
      ES_RETURN_IF_ERROR(ApplyViewOrigin(origin_id, &group, now, &count));
    }
    return txn.Commit();
  }();
  ES_RETURN_IF_ERROR(EndRemoteWrite(&txn, s));
  *applied = count;
  return Status::Ok();
}

Status SqliteStore::ApplyOriginBatch(const Origin& origin, uint64_t base_lsn, const std::vector<ChangeEntry>& entries,
                                     uint64_t* high_water) {
  std::vector<uint64_t> marks;
  ES_RETURN_IF_ERROR(ApplyOriginBatches({OriginBatchWrite{&origin, base_lsn, &entries}}, &marks));
  *high_water = marks.front();
  return Status::Ok();
}

Status SqliteStore::ApplyOriginBatches(const std::vector<OriginBatchWrite>& batches, std::vector<uint64_t>* high_waters) {
  high_waters->assign(batches.size(), 0);
  for (const OriginBatchWrite& b : batches) {
    ES_RETURN_IF_ERROR(ValidateOrigin(*b.origin));
    const std::vector<ChangeEntry>& entries = *b.entries;
    for (size_t i = 0; i < entries.size(); ++i) {
      Status v = ValidateChangeEntry(entries[i]);
      if (!v.ok()) return v.Annotate("entry " + std::to_string(i));
      if (i > 0 && entries[i].lsn <= entries[i - 1].lsn) {
        return Status::InvalidArgument("entries of origin " + b.origin->ToString() +
                                       " are not in LSN order at entry " + std::to_string(i));
      }
    }
    if (b.base_lsn > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("base LSN out of range");
  }
  if (batches.empty()) return Status::Ok();
  std::lock_guard<std::mutex> lock(write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  pending_series_.clear();
  Status s = [&]() -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    // The new entries join the feed as chunks with the next sequences.
    int64_t head = 0;
    {
      Status st;
      StmtScope scope(&w_region_head_);
      head = w_region_head_.Step(&st) ? w_region_head_.Int(0) : 0;
      ES_RETURN_IF_ERROR(st);
    }
    const int64_t now = clock_->WallMillis();
    for (size_t i = 0; i < batches.size(); ++i) {
      ES_RETURN_IF_ERROR(ApplyOneOriginBatch(batches[i], now, &head, &(*high_waters)[i]));
    }
    return txn.Commit();
  }();
  if (!s.ok()) high_waters->assign(batches.size(), 0);
  return EndRemoteWrite(&txn, s);
}

Status SqliteStore::ApplyOneOriginBatch(const OriginBatchWrite& batch, int64_t now, int64_t* head,
                                        uint64_t* high_water) {
  const Origin& origin = *batch.origin;
  const std::vector<ChangeEntry>& entries = *batch.entries;
  const uint64_t base_lsn = batch.base_lsn;
  int64_t origin_id = 0;
  ES_RETURN_IF_ERROR(OriginId(origin, true, &origin_id));
  uint64_t hw = 0;
  Status st;
  {
    StmtScope scope(&w_get_high_water_);
    w_get_high_water_.Bind(1, origin_id);
    hw = w_get_high_water_.Step(&st) ? static_cast<uint64_t>(w_get_high_water_.Int(0)) : 0;
    ES_RETURN_IF_ERROR(st);
  }
  // The high-water mark alone decides what is new: everything at or below
  // it is held (whatever a resend overlaps), everything above it is not.
  size_t first = 0;
  while (first < entries.size() && entries[first].lsn <= hw) ++first;
  uint64_t start = hw;
  if (base_lsn > hw) start = base_lsn;  // the sender declares everything up to base_lsn held elsewhere
  if (first < entries.size() && entries[first].lsn != start + 1) {
    return Status::InvalidArgument("gap in origin " + origin.ToString() + ": high-water " + std::to_string(hw) +
                                   (base_lsn > hw ? ", base " + std::to_string(base_lsn) : std::string()) +
                                   ", batch starts at " + std::to_string(entries[first].lsn));
  }
  std::vector<RemoteChunkEntry>& chunk = remote_buffer_;
  chunk.clear();
  for (size_t i = first; i < entries.size(); ++i) {
    chunk.emplace_back();
    ES_RETURN_IF_ERROR(ToChunkEntry(entries[i], &chunk.back()));
    if (chunk.size() >= kMaxRemoteChunkEntries || i + 1 == entries.size()) {
      ES_RETURN_IF_ERROR(
          InsertRemoteChunkRow(&w_insert_region_chunk_, *head + 1, origin_id, chunk, now, &block_buffer_));
      *head += static_cast<int64_t>(chunk.size());
      chunk.clear();
    }
  }
  uint64_t new_hw = first < entries.size() ? entries.back().lsn : start;
  if (new_hw > hw) {
    w_put_high_water_.Bind(1, origin_id);
    w_put_high_water_.Bind(2, static_cast<int64_t>(new_hw));
    ES_RETURN_IF_ERROR(w_put_high_water_.Run());
    hw = new_hw;
  }
  *high_water = hw;
  return Status::Ok();
}

Status SqliteStore::GetHighWater(const Origin& origin, uint64_t* high_water) {
  ES_RETURN_IF_ERROR(ValidateOrigin(origin));
  std::lock_guard<std::mutex> lock(read_mu_);
  if (r_get_high_water_.get() == nullptr) {
    ES_RETURN_IF_ERROR(r_find_origin_.Prepare(&read_db_, kFindOriginSql));
    ES_RETURN_IF_ERROR(r_get_high_water_.Prepare(&read_db_, "SELECT lsn FROM high_water WHERE origin=?"));
  }
  int64_t id = 0;
  ES_RETURN_IF_ERROR(OriginId(origin, false, &id));
  *high_water = 0;
  if (id == 0) return Status::Ok();
  Stmt& s = r_get_high_water_;
  StmtScope scope(&s);
  s.Bind(1, id);
  Status st;
  if (s.Step(&st)) *high_water = static_cast<uint64_t>(s.Int(0));
  return st;
}

Status SqliteStore::RegionFeedBounds(uint64_t* oldest_seq, uint64_t* head_seq) {
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t oldest = 0, head = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull((SELECT seq FROM region_chunks ORDER BY seq LIMIT 1), 0)",
                                       &oldest));
  ES_RETURN_IF_ERROR(read_db_.QueryInt(kRegionHeadSql, &head));
  *oldest_seq = static_cast<uint64_t>(oldest);
  *head_seq = static_cast<uint64_t>(head);
  return Status::Ok();
}

Status SqliteStore::ReadRegionFeed(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries,
                                   uint64_t* head_seq, bool* reset) {
  entries->clear();
  *reset = false;
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t head = 0, pruned = 0;
  ES_RETURN_IF_ERROR(read_db_.QueryInt(kRegionHeadSql, &head));
  ES_RETURN_IF_ERROR(GetMetaInt(&read_db_, "region_pruned_seq", &pruned));
  *head_seq = static_cast<uint64_t>(head);
  if (after_seq < static_cast<uint64_t>(pruned)) {
    *reset = true;  // never a silent rewind or skip
    return Status::Ok();
  }
  if (after_seq >= static_cast<uint64_t>(head)) return Status::Ok();
  const size_t max = std::min<size_t>(max_entries, 100000);
  // From the chunk holding after_seq + 1 (the last one starting at or
  // before it), chunk by chunk in sequence order.
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_,
                               "SELECT seq, origin, data FROM region_chunks WHERE seq >= ifnull((SELECT max(seq) "
                               "FROM region_chunks WHERE seq <= ?1), 0) ORDER BY seq"));
  s.Bind(1, static_cast<int64_t>(after_seq + 1));
  Status st;
  std::vector<RemoteChunkEntry>& chunk = region_decoded_;
  while (entries->size() < max && s.Step(&st)) {
    const int64_t seq = s.Int(0);
    Origin origin;
    ES_RETURN_IF_ERROR(OriginById(s.Int(1), &origin));
    ES_RETURN_IF_ERROR(DecodeRemote(s.Blob(2), "region chunk at sequence", seq, &chunk));
    for (size_t i = 0; i < chunk.size() && entries->size() < max; ++i) {
      const uint64_t e_seq = static_cast<uint64_t>(seq) + i;
      if (e_seq <= after_seq) continue;
      const RemoteChunkEntry& c = chunk[i];
      RegionFeedEntry e;
      e.seq = e_seq;
      e.remote.origin = origin;
      e.remote.origin_lsn = c.olsn;
      ES_RETURN_IF_ERROR(FromChunkEntry(c, &e.remote.entry));
      entries->push_back(std::move(e));
    }
  }
  return st;
}

Status SqliteStore::FromChunkEntry(const RemoteChunkEntry& c, ChangeEntry* e) {
  SeriesInfo info;
  ES_RETURN_IF_ERROR(SeriesById(c.series, &info));
  e->lsn = c.olsn;
  e->kind = static_cast<ChangeEntry::Kind>(c.kind);
  if (e->kind == ChangeEntry::Kind::kReading) {
    e->reading = Reading{info.device_id, info.metric, c.ts_ms, c.value, info.unit, c.quality};
  } else {
    e->device = DeviceRecord{info.device_id, c.name, c.location, c.default_unit,
                             e->kind == ChangeEntry::Kind::kDeviceDelete};
  }
  return Status::Ok();
}

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
  const int64_t limit = q.limit;
  std::lock_guard<std::mutex> lock(read_mu_);
  Txn snapshot(&read_db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  Stmt series;
  ES_RETURN_IF_ERROR(series.Prepare(&read_db_, q.metric.empty()
                                                   ? "SELECT id, metric, unit FROM series WHERE device_id=? AND metric!=''"
                                                   : "SELECT id, metric, unit FROM series WHERE device_id=? AND metric=?"));
  series.Bind(1, std::string_view(q.device_id));
  if (!q.metric.empty()) series.Bind(2, std::string_view(q.metric));
  struct S {
    int64_t id;
    std::string metric, unit;
  };
  std::vector<S> list;
  Status st;
  while (series.Step(&st)) list.push_back(S{series.Int(0), series.Text(1), series.Text(2)});
  ES_RETURN_IF_ERROR(st);
  // Local rows: the chunks whose time span meets [from, to), decoded.
  Stmt local;
  ES_RETURN_IF_ERROR(local.Prepare(&read_db_,
                                   "SELECT first_lsn, data FROM chunks WHERE max_ts >= ? AND min_ts < ? "
                                   "ORDER BY first_lsn"));
  auto oldest_first = [](const QueryRow& a, const QueryRow& b) {
    if (a.reading.ts_ms != b.reading.ts_ms) return a.reading.ts_ms < b.reading.ts_ms;
    if (a.origin.gateway_id != b.origin.gateway_id) return a.origin.gateway_id < b.origin.gateway_id;
    if (a.origin.epoch != b.origin.epoch) return a.origin.epoch < b.origin.epoch;
    return a.lsn < b.lsn;
  };
  // The rows kept under the limit are the first in this order.
  auto by_time = [&](const QueryRow& a, const QueryRow& b) {
    return q.newest_first ? oldest_first(b, a) : oldest_first(a, b);
  };
  // Keeps memory bounded by the limit however long the device's history.
  auto trim = [&] {
    if (static_cast<int64_t>(rows->size()) > 2 * limit) {
      std::sort(rows->begin(), rows->end(), by_time);
      rows->resize(static_cast<size_t>(limit));
    }
  };
  std::vector<uint64_t> local_lsns;
  std::unordered_map<int64_t, const S*> wanted;
  for (const S& s : list) wanted.emplace(s.id, &s);
  auto add_local = [&](const S& s, uint64_t lsn, int64_t ts, double value, uint32_t quality) {
    QueryRow row;
    row.origin = origin_;
    row.local = true;
    row.lsn = lsn;
    row.reading = Reading{q.device_id, s.metric, ts, value, s.unit, quality};
    local_lsns.push_back(lsn);
    rows->push_back(std::move(row));
  };
  // Compacted spans: the series' own blocks that meet [from, to).
  Stmt blocks;
  ES_RETURN_IF_ERROR(blocks.Prepare(&read_db_,
                                    "SELECT span, data FROM series_chunks WHERE series = ? AND max_ts >= ? AND "
                                    "min_ts < ?"));
  std::vector<SeriesPoint> points;
  for (const S& s : list) {
    StmtScope scope(&blocks);
    blocks.Bind(1, s.id);
    blocks.Bind(2, q.from_ms);
    blocks.Bind(3, q.to_ms);
    while (blocks.Step(&st)) {
      Status d = DecodeSeriesBlock(blocks.Blob(1), kMaxChunkReadings, &points);
      if (!d.ok()) return Status::Corruption("span at LSN " + std::to_string(blocks.Int(0)) + ": " + d.message());
      for (const SeriesPoint& p : points) {
        if (p.ts_ms >= q.from_ms && p.ts_ms < q.to_ms) add_local(s, static_cast<uint64_t>(p.lsn), p.ts_ms, p.value, p.quality);
      }
      trim();
    }
    ES_RETURN_IF_ERROR(st);
  }
  if (!wanted.empty()) {
    local.Bind(1, q.from_ms);
    local.Bind(2, q.to_ms);
    std::vector<ChunkReading> chunk;
    while (local.Step(&st)) {
      const uint64_t first = static_cast<uint64_t>(local.Int(0));
      if (IsSpanMarker(local.Blob(1))) continue;  // read above, by series
      Status d = DecodeChunk(local.Blob(1), kMaxChunkReadings, &chunk);
      if (!d.ok()) return Status::Corruption("chunk at LSN " + std::to_string(first) + ": " + d.message());
      for (size_t i = 0; i < chunk.size(); ++i) {
        const ChunkReading& c = chunk[i];
        if (c.ts_ms < q.from_ms || c.ts_ms >= q.to_ms) continue;
        auto it = wanted.find(c.series);
        if (it == wanted.end()) continue;
        add_local(*it->second, first + i, c.ts_ms, c.value, c.quality);
      }
      trim();
    }
    ES_RETURN_IF_ERROR(st);
  }
  std::sort(local_lsns.begin(), local_lsns.end());
  // Other origins' rows: the read view's and the hub's chunks whose time
  // span meets [from, to), decoded. A hub's chunks are not indexed by time
  // (an index entry per applied batch for a query a hub rarely answers):
  // their scan reads each row's head, not its block.
  if (!wanted.empty()) {
    std::set<std::pair<int64_t, uint64_t>> view_seen;
    int64_t both = 0;
    ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT EXISTS (SELECT 1 FROM view_chunks) AND EXISTS (SELECT 1 FROM "
                                         "region_chunks)",
                                         &both));
    const std::pair<const char*, const char*> tables[] = {
        {"SELECT id, origin, data FROM view_chunks WHERE max_ts >= ? AND min_ts < ?", "read view chunk"},
        {"SELECT seq, origin, data FROM region_chunks WHERE max_ts >= ? AND min_ts < ?", "region chunk at sequence"}};
    for (const auto& [sql, what] : tables) {
      Stmt remote;
      ES_RETURN_IF_ERROR(remote.Prepare(&read_db_, sql));
      remote.Bind(1, q.from_ms);
      remote.Bind(2, q.to_ms);
      const bool region = what == tables[1].second;
      std::vector<RemoteChunkEntry> chunk;
      while (remote.Step(&st)) {
        ES_RETURN_IF_ERROR(DecodeRemote(remote.Blob(2), what, remote.Int(0), &chunk));
        const int64_t origin_id = remote.Int(1);
        Origin origin;
        ES_RETURN_IF_ERROR(OriginById(origin_id, &origin));
        const bool own = origin == origin_;
        for (const RemoteChunkEntry& c : chunk) {
          if (c.kind != 0 || c.ts_ms < q.from_ms || c.ts_ms >= q.to_ms) continue;
          auto it = wanted.find(c.series);
          if (it == wanted.end()) continue;
          // Our own entries may come back through a region feed: one row each.
          if (own && std::binary_search(local_lsns.begin(), local_lsns.end(), c.olsn)) continue;
          // A store in both roles (tests; in the field only a gateway pulls
          // feeds and only a hub applies batches) may hold an entry in both
          // tables: one row each.
          if (both && (region ? view_seen.count({origin_id, c.olsn}) > 0
                              : !view_seen.emplace(origin_id, c.olsn).second)) {
            continue;
          }
          QueryRow row;
          row.origin = origin;
          row.lsn = c.olsn;
          row.reading = Reading{q.device_id, it->second->metric, c.ts_ms, c.value, it->second->unit, c.quality};
          rows->push_back(std::move(row));
        }
        trim();
      }
      ES_RETURN_IF_ERROR(st);
    }
  }
  std::sort(rows->begin(), rows->end(), by_time);
  if (static_cast<int64_t>(rows->size()) > limit) rows->resize(static_cast<size_t>(limit));
  return Status::Ok();
}

}  // namespace edgesync

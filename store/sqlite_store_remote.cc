// Other gateways' data: the read view (ApplyRemote), the region hub's
// per-origin high-water marks and region feed, and the union query.
#include <algorithm>
#include <unordered_map>

#include "store/chunk_codec.h"
#include "store/schema.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {
namespace {

// The region feed's head: the last sequence number given out, kept by
// AUTOINCREMENT even when the rows holding it have been pruned.
constexpr char kRegionHeadSql[] = "SELECT ifnull((SELECT seq FROM sqlite_sequence WHERE name='region_feed'), 0)";

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
  Db* db = create ? &write_db_ : &read_db_;
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT id FROM origins WHERE gateway_id=? AND epoch=?"));
  s.Bind(1, std::string_view(origin.gateway_id));
  s.Bind(2, std::string_view(origin.epoch));
  Status st;
  if (s.Step(&st)) {
    *id = s.Int(0);
  } else {
    ES_RETURN_IF_ERROR(st);
    *id = 0;
    if (!create) return Status::Ok();
    Stmt ins;
    ES_RETURN_IF_ERROR(ins.Prepare(db, "INSERT INTO origins(gateway_id, epoch) VALUES(?, ?) RETURNING id"));
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
  // Without RETURNING: SQLite materialises a RETURNING row set per
  // execution; changes() and last_insert_rowid() give the same answer free.
  ES_RETURN_IF_ERROR(w_insert_remote_.Prepare(&write_db_,
                                              "INSERT INTO remote(origin, olsn, kind, series, ts, value, quality, at) "
                                              "VALUES(?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"));
  // kRemoteChunk rows per execution: a statement's fixed cost (opening
  // cursors on the table and both indexes, halting, resetting) is then paid
  // once per chunk instead of once per entry.
  std::string chunk = "INSERT INTO remote(origin, olsn, kind, series, ts, value, quality, at) VALUES";
  for (size_t i = 0; i < kRemoteChunk; ++i) chunk += i ? ",(?, ?, ?, ?, ?, ?, ?, ?)" : "(?, ?, ?, ?, ?, ?, ?, ?)";
  chunk += " ON CONFLICT DO NOTHING";
  ES_RETURN_IF_ERROR(w_insert_remote_chunk_.Prepare(&write_db_, chunk.c_str()));
  ES_RETURN_IF_ERROR(w_find_remote_.Prepare(&write_db_, "SELECT rid FROM remote WHERE origin=? AND olsn=?"));
  ES_RETURN_IF_ERROR(
      w_insert_remote_device_.Prepare(&write_db_, "INSERT OR IGNORE INTO remote_devices VALUES(?, ?, ?, ?, ?)"));
  // A run of consecutive rids joins the feed in one statement: region_feed
  // is AUTOINCREMENT, and each execution reads and rewrites its
  // sqlite_sequence row, which per entry cost as much as the entry itself.
  ES_RETURN_IF_ERROR(w_insert_feed_.Prepare(&write_db_,
                                            "WITH RECURSIVE run(rid) AS (VALUES(?1) UNION ALL "
                                            "SELECT rid + 1 FROM run WHERE rid < ?2) "
                                            "INSERT INTO region_feed(rid) SELECT rid FROM run"));
  ES_RETURN_IF_ERROR(w_get_high_water_.Prepare(&write_db_, "SELECT lsn FROM high_water WHERE origin=?"));
  ES_RETURN_IF_ERROR(w_put_high_water_.Prepare(&write_db_, "INSERT OR REPLACE INTO high_water VALUES(?, ?)"));
  apply_prepared_ = true;
  return Status::Ok();
}

// Interns the entry's series and binds its 8 columns of the remote table to
// stmt's parameters first..first+7 (one row of a single or chunked INSERT).
Status SqliteStore::BindRemoteRow(int64_t origin_id, const ChangeEntry& e, int64_t now, Stmt* stmt, int first) {
  int64_t series = 0;
  uint64_t hash = 0;
  const bool reading = e.kind == ChangeEntry::Kind::kReading;
  if (reading) {
    ES_RETURN_IF_ERROR(InternSeries(e.reading.device_id, e.reading.metric, e.reading.unit, &series, &hash));
  } else {
    static const std::string kNone;
    ES_RETURN_IF_ERROR(InternSeries(e.device.device_id, kNone, kNone, &series, &hash));
  }
  stmt->Bind(first, origin_id);
  stmt->Bind(first + 1, static_cast<int64_t>(e.lsn));
  stmt->Bind(first + 2, static_cast<int64_t>(e.kind));
  stmt->Bind(first + 3, series);
  stmt->Bind(first + 4, reading ? e.reading.ts_ms : int64_t{0});
  stmt->Bind(first + 5, reading ? e.reading.value : 0.0);
  stmt->Bind(first + 6, static_cast<int64_t>(reading ? e.reading.quality : 0));
  stmt->Bind(first + 7, now);
  return Status::Ok();
}

// The device record part of a new device entry of the read view.
Status SqliteStore::InsertRemoteDevice(int64_t rid, const ChangeEntry& e) {
  Stmt& dev = w_insert_remote_device_;
  dev.Bind(1, rid);
  dev.Bind(2, std::string_view(e.device.name));
  dev.Bind(3, std::string_view(e.device.location));
  dev.Bind(4, std::string_view(e.device.default_unit));
  dev.Bind(5, int64_t{e.kind == ChangeEntry::Kind::kDeviceDelete ? 1 : 0});
  return dev.Run();
}

// Inside the caller's write transaction (PrepareApply done). *rid is the
// entry's row in the read view, new or already there.
Status SqliteStore::InsertRemote(int64_t origin_id, const ChangeEntry& e, int64_t now, bool* inserted,
                                 int64_t* rid) {
  // Every parameter is bound on every use, so a plain reset (no
  // clear_bindings) is enough between entries.
  Stmt& ins = w_insert_remote_;
  ES_RETURN_IF_ERROR(BindRemoteRow(origin_id, e, now, &ins, 1));
  Status st;
  ins.Step(&st);
  sqlite3_reset(ins.get());
  ES_RETURN_IF_ERROR(st);
  *inserted = write_db_.changes() > 0;
  if (!*inserted) {
    StmtScope scope(&w_find_remote_);
    w_find_remote_.Bind(1, origin_id);
    w_find_remote_.Bind(2, static_cast<int64_t>(e.lsn));
    *rid = w_find_remote_.Step(&st) ? w_find_remote_.Int(0) : 0;
    return st;
  }
  *rid = sqlite3_last_insert_rowid(write_db_.get());
  if (e.kind != ChangeEntry::Kind::kReading) return InsertRemoteDevice(*rid, e);
  return Status::Ok();
}

Status SqliteStore::InsertRemoteChunk(int64_t origin_id, const ChangeEntry* const* chunk, size_t n, int64_t now,
                                      int64_t* rids, int64_t* added) {
  *added = 0;
  if (n < kRemoteChunk) {
    for (size_t i = 0; i < n; ++i) {
      bool inserted = false;
      ES_RETURN_IF_ERROR(InsertRemote(origin_id, *chunk[i], now, &inserted, &rids[i]));
      *added += inserted;
    }
    return Status::Ok();
  }
  Stmt& ins = w_insert_remote_chunk_;
  for (size_t i = 0; i < n; ++i) {
    ES_RETURN_IF_ERROR(BindRemoteRow(origin_id, *chunk[i], now, &ins, static_cast<int>(i) * 8 + 1));
  }
  Status st;
  ins.Step(&st);
  sqlite3_reset(ins.get());
  ES_RETURN_IF_ERROR(st);
  const int64_t count = write_db_.changes();
  const int64_t last = sqlite3_last_insert_rowid(write_db_.get());
  // New rows of one statement get consecutive rids ending at `last` (the
  // writer holds the lock, and a rid is the table's highest plus one).
  const int64_t first_new = count > 0 ? last - count + 1 : INT64_MAX;
  if (count == static_cast<int64_t>(n)) {
    for (size_t i = 0; i < n; ++i) rids[i] = first_new + static_cast<int64_t>(i);
  } else {
    for (size_t i = 0; i < n; ++i) {  // some were already held: look each up
      StmtScope scope(&w_find_remote_);
      w_find_remote_.Bind(1, origin_id);
      w_find_remote_.Bind(2, static_cast<int64_t>(chunk[i]->lsn));
      rids[i] = w_find_remote_.Step(&st) ? w_find_remote_.Int(0) : 0;
      ES_RETURN_IF_ERROR(st);
      if (rids[i] == 0) return Status::Corruption("read view entry missing right after its insert");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const ChangeEntry& e = *chunk[i];
    if (e.kind == ChangeEntry::Kind::kReading || rids[i] < first_new) continue;
    ES_RETURN_IF_ERROR(InsertRemoteDevice(rids[i], e));
  }
  *added = count;
  return Status::Ok();
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
  std::lock_guard<std::mutex> lock(write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  pending_series_.clear();
  int64_t count = 0;
  Status s = [&]() -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    int64_t now = clock_->WallMillis();
    const ChangeEntry* chunk[kRemoteChunk];
    int64_t rids[kRemoteChunk];
    size_t i = 0;
    while (i < entries.size()) {
      // A chunk holds entries of one origin.
      const Origin& origin = entries[i].origin;
      int64_t origin_id = 0;
      ES_RETURN_IF_ERROR(OriginId(origin, true, &origin_id));
      size_t n = 0;
      while (n < kRemoteChunk && i + n < entries.size() && entries[i + n].origin == origin) {
        chunk[n] = &entries[i + n].entry;
        ++n;
      }
      int64_t added = 0;
      ES_RETURN_IF_ERROR(InsertRemoteChunk(origin_id, chunk, n, now, rids, &added));
      count += added;
      i += n;
    }
    return txn.Commit();
  }();
  ES_RETURN_IF_ERROR(EndRemoteWrite(&txn, s));
  *applied = count;
  return Status::Ok();
}

Status SqliteStore::ApplyOriginBatch(const Origin& origin, uint64_t base_lsn, const std::vector<ChangeEntry>& entries,
                                     uint64_t* high_water) {
  ES_RETURN_IF_ERROR(ValidateOrigin(origin));
  for (size_t i = 0; i < entries.size(); ++i) {
    Status v = ValidateChangeEntry(entries[i]);
    if (!v.ok()) return v.Annotate("entry " + std::to_string(i));
    if (i > 0 && entries[i].lsn <= entries[i - 1].lsn) {
      return Status::InvalidArgument("entries of origin " + origin.ToString() + " are not in LSN order at entry " +
                                     std::to_string(i));
    }
  }
  if (base_lsn > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("base LSN out of range");
  std::lock_guard<std::mutex> lock(write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  pending_series_.clear();
  uint64_t hw = 0;
  Status s = [&]() -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    int64_t origin_id = 0;
    ES_RETURN_IF_ERROR(OriginId(origin, true, &origin_id));
    Status st;
    {
      StmtScope scope(&w_get_high_water_);
      w_get_high_water_.Bind(1, origin_id);
      hw = w_get_high_water_.Step(&st) ? static_cast<uint64_t>(w_get_high_water_.Int(0)) : 0;
      ES_RETURN_IF_ERROR(st);
    }
    size_t first = 0;
    while (first < entries.size() && entries[first].lsn <= hw) ++first;  // already held
    uint64_t start = hw;
    if (base_lsn > hw) start = base_lsn;  // the sender declares everything up to base_lsn held elsewhere
    if (first < entries.size() && entries[first].lsn != start + 1) {
      return Status::InvalidArgument("gap in origin " + origin.ToString() + ": high-water " + std::to_string(hw) +
                                     (base_lsn > hw ? ", base " + std::to_string(base_lsn) : std::string()) +
                                     ", batch starts at " + std::to_string(entries[first].lsn));
    }
    int64_t now = clock_->WallMillis();
    // Applied entries join the feed in entry order, as runs of consecutive
    // rids (new rows get consecutive rids; an entry already in the read view
    // keeps its old rid and starts a new run).
    int64_t run_first = 0, run_last = -1;
    auto flush_run = [&]() -> Status {
      if (run_last < run_first) return Status::Ok();
      w_insert_feed_.Bind(1, run_first);
      w_insert_feed_.Bind(2, run_last);
      Status fs;
      w_insert_feed_.Step(&fs);
      sqlite3_reset(w_insert_feed_.get());
      return fs;
    };
    const ChangeEntry* chunk[kRemoteChunk];
    int64_t rids[kRemoteChunk];
    for (size_t i = first; i < entries.size();) {
      size_t n = std::min(kRemoteChunk, entries.size() - i);
      for (size_t k = 0; k < n; ++k) chunk[k] = &entries[i + k];
      int64_t added = 0;
      ES_RETURN_IF_ERROR(InsertRemoteChunk(origin_id, chunk, n, now, rids, &added));
      for (size_t k = 0; k < n; ++k) {
        if (rids[k] != run_last + 1 || run_last < run_first) {
          ES_RETURN_IF_ERROR(flush_run());
          run_first = rids[k];
        }
        run_last = rids[k];
      }
      i += n;
    }
    ES_RETURN_IF_ERROR(flush_run());
    uint64_t new_hw = first < entries.size() ? entries.back().lsn : start;
    if (new_hw > hw) {
      w_put_high_water_.Bind(1, origin_id);
      w_put_high_water_.Bind(2, static_cast<int64_t>(new_hw));
      ES_RETURN_IF_ERROR(w_put_high_water_.Run());
      hw = new_hw;
    }
    return txn.Commit();
  }();
  ES_RETURN_IF_ERROR(EndRemoteWrite(&txn, s));
  *high_water = hw;
  return Status::Ok();
}

Status SqliteStore::GetHighWater(const Origin& origin, uint64_t* high_water) {
  ES_RETURN_IF_ERROR(ValidateOrigin(origin));
  std::lock_guard<std::mutex> lock(read_mu_);
  int64_t id = 0;
  ES_RETURN_IF_ERROR(OriginId(origin, false, &id));
  *high_water = 0;
  if (id == 0) return Status::Ok();
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_, "SELECT lsn FROM high_water WHERE origin=?"));
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
  ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull(min(seq), 0) FROM region_feed", &oldest));
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
  if (after_seq > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("sequence out of range");
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(&read_db_,
                               "SELECT f.seq, r.origin, r.olsn, r.kind, r.series, r.ts, r.value, r.quality, "
                               "d.name, d.location, d.default_unit FROM region_feed f "
                               "JOIN remote r ON r.rid = f.rid LEFT JOIN remote_devices d ON d.rid = f.rid "
                               "WHERE f.seq > ? ORDER BY f.seq LIMIT ?"));
  s.Bind(1, static_cast<int64_t>(after_seq));
  s.Bind(2, static_cast<int64_t>(std::min<size_t>(max_entries, 100000)));
  Status st;
  while (s.Step(&st)) {
    RegionFeedEntry e;
    e.seq = static_cast<uint64_t>(s.Int(0));
    ES_RETURN_IF_ERROR(OriginById(s.Int(1), &e.remote.origin));
    e.remote.origin_lsn = static_cast<uint64_t>(s.Int(2));
    ChangeEntry& c = e.remote.entry;
    c.lsn = e.remote.origin_lsn;
    c.kind = static_cast<ChangeEntry::Kind>(s.Int(3));
    SeriesInfo info;
    ES_RETURN_IF_ERROR(SeriesById(s.Int(4), &info));
    if (c.kind == ChangeEntry::Kind::kReading) {
      c.reading = Reading{info.device_id, info.metric, s.Int(5), s.Double(6), info.unit, static_cast<uint32_t>(s.Int(7))};
    } else {
      c.device = DeviceRecord{info.device_id, s.Text(8), s.Text(9), s.Text(10),
                              c.kind == ChangeEntry::Kind::kDeviceDelete};
    }
    entries->push_back(std::move(e));
  }
  return st;
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
  Stmt local, remote, bounds;
  ES_RETURN_IF_ERROR(local.Prepare(&read_db_,
                                   "SELECT first_lsn, data FROM chunks WHERE max_ts >= ? AND min_ts < ? "
                                   "ORDER BY first_lsn"));
  ES_RETURN_IF_ERROR(remote.Prepare(&read_db_,
                                    "SELECT origin, olsn, ts, value, quality FROM remote WHERE (rid >> 11) = ? "
                                    "AND series = ? AND ts >= ? AND ts < ? AND kind = 0"));
  ES_RETURN_IF_ERROR(bounds.Prepare(&read_db_,
                                    "SELECT ifnull((SELECT min(rid) FROM remote), 1), ifnull((SELECT max(rid) FROM remote), 0)"));
  int64_t min_rid = 1, max_rid = 0;
  if (bounds.Step(&st)) {
    min_rid = bounds.Int(0);
    max_rid = bounds.Int(1);
  }
  ES_RETURN_IF_ERROR(st);
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
  // One seek per segment of a table's query index (local LSNs or remote
  // rids), rows of one series in [from, to).
  auto scan = [&](Stmt* stmt, int64_t min_id, int64_t max_id, int64_t series_id, const auto& add) -> Status {
    for (int64_t seg = min_id >> kQuerySegmentShift; max_id > 0 && seg <= (max_id >> kQuerySegmentShift); ++seg) {
      StmtScope scope(stmt);
      stmt->Bind(1, seg);
      stmt->Bind(2, series_id);
      stmt->Bind(3, q.from_ms);
      stmt->Bind(4, q.to_ms);
      Status step;
      while (stmt->Step(&step)) ES_RETURN_IF_ERROR(add(*stmt));
      ES_RETURN_IF_ERROR(step);
      trim();
    }
    return Status::Ok();
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
  for (const S& s : list) {
    ES_RETURN_IF_ERROR(scan(&remote, min_rid, max_rid, s.id, [&](const Stmt& r) {
      QueryRow row;
      ES_RETURN_IF_ERROR(OriginById(r.Int(0), &row.origin));
      row.lsn = static_cast<uint64_t>(r.Int(1));
      // Our own entries may come back through a region feed: one row each.
      if (row.origin == origin_ && std::binary_search(local_lsns.begin(), local_lsns.end(), row.lsn)) {
        return Status::Ok();
      }
      row.reading = Reading{q.device_id, s.metric, r.Int(2), r.Double(3), s.unit, static_cast<uint32_t>(r.Int(4))};
      rows->push_back(std::move(row));
      return Status::Ok();
    }));
  }
  std::sort(rows->begin(), rows->end(), by_time);
  if (static_cast<int64_t>(rows->size()) > limit) rows->resize(static_cast<size_t>(limit));
  return Status::Ok();
}

}  // namespace edgesync

#include "store/read_view_tables.h"

#include <algorithm>

#include "store/clock_period_table.h"
#include "store/schema.h"

namespace edgesync {

Status ReadViewTables::Open(Db* write_db, SeriesWriter* series, OriginCatalog* origins,
                            OriginCatalog::Statements* origin_stmts, RemoteRows* rows) {
  db_ = write_db;
  series_ = series;
  origins_ = origins;
  origin_stmts_ = origin_stmts;
  rows_ = rows;
  ES_RETURN_IF_ERROR(insert_chunk_.Prepare(db_, kInsertViewChunkSql));
  ES_RETURN_IF_ERROR(insert_series_.Prepare(db_, kInsertViewSeriesSql));
  ES_RETURN_IF_ERROR(overlap_.Prepare(
      db_, "SELECT id, data FROM view_chunks WHERE origin = ? AND last_olsn >= ? AND first_olsn <= ?"));
  return put_watermark_.Prepare(db_,
                                "INSERT INTO view_watermarks VALUES(?1, ?2) ON CONFLICT(origin) DO UPDATE SET "
                                "complete_ms = max(complete_ms, excluded.complete_ms)");
}

void ReadViewTables::Committed() {
  // Bounded: a pair not remembered only costs its INSERT OR IGNORE again.
  if (known_series_.size() + pending_series_.size() > kMaxKnownSeries) known_series_.clear();
  known_series_.insert(pending_series_.begin(), pending_series_.end());
  pending_series_.clear();
}

Status ReadViewTables::Apply(const std::vector<RemoteEntry>& entries, int64_t now, int64_t* added) {
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
  for (auto& [origin, group] : groups) {
    int64_t origin_id = 0;
    ES_RETURN_IF_ERROR(origins_->Find(*origin, origin_stmts_, true, &origin_id));
    ES_RETURN_IF_ERROR(ApplyOrigin(origin_id, &group, now, added));
  }
  return Status::Ok();
}

// One origin's entries new to the read view, as chunks of at most
// kMaxRemoteChunkEntries.
Status ReadViewTables::ApplyOrigin(int64_t origin_id, std::vector<const ChangeEntry*>* group, int64_t now,
                                   int64_t* added) {
  std::stable_sort(group->begin(), group->end(),
                   [](const ChangeEntry* a, const ChangeEntry* b) { return a->lsn < b->lsn; });
  // What the read view already holds of [lo, hi]: the chunks whose span
  // meets it (mostly none: a page continues where the last one ended).
  std::set<uint64_t> held;
  {
    StmtScope scope(&overlap_);
    overlap_.Bind(1, origin_id);
    overlap_.Bind(2, static_cast<int64_t>(group->front()->lsn));
    overlap_.Bind(3, static_cast<int64_t>(group->back()->lsn));
    Status st;
    std::vector<RemoteChunkEntry> old;
    while (overlap_.Step(&st)) {
      ES_RETURN_IF_ERROR(rows_->DecodeView(overlap_.Blob(1), "read view chunk", overlap_.Int(0), &old));
      for (const RemoteChunkEntry& e : old) held.insert(e.olsn);
    }
    ES_RETURN_IF_ERROR(st);
  }
  chunk_.clear();
  auto flush = [&]() -> Status {
    if (chunk_.empty()) return Status::Ok();
    *added += static_cast<int64_t>(chunk_.size());
    // The series this origin wrote, for the query (schema.cc, version 7).
    for (const RemoteChunkEntry& e : chunk_) {
      if (e.kind != 0) continue;
      const std::pair<int64_t, int64_t> key{e.series, origin_id};
      if (known_series_.count(key) > 0 || pending_series_.count(key) > 0) continue;
      insert_series_.Bind(1, e.series);
      insert_series_.Bind(2, origin_id);
      ES_RETURN_IF_ERROR(insert_series_.Run());
      pending_series_.insert(key);
    }
    Status st = InsertRemoteChunkRow(&insert_chunk_, 0, origin_id, chunk_, now, &block_);
    chunk_.clear();
    return st;
  };
  uint64_t last = 0;
  for (const ChangeEntry* e : *group) {
    if (e->lsn == last || held.count(e->lsn)) continue;  // a repeat within the call, or already held
    last = e->lsn;
    if (e->kind == ChangeEntry::Kind::kTimeCorrection) {
      ES_RETURN_IF_ERROR(clock_period_table::KeepOriginCorrection(db_, origin_id, e->correction));
    }
    chunk_.emplace_back();
    ES_RETURN_IF_ERROR(ToRemoteChunkEntry(series_, *e, &chunk_.back()));
    if (chunk_.size() >= kMaxRemoteChunkEntries) ES_RETURN_IF_ERROR(flush());
  }
  return flush();
}

Status ReadViewTables::KeepWatermarks(const std::vector<OriginWatermark>& watermarks, const Origin& self) {
  for (const OriginWatermark& w : watermarks) {
    if (w.complete_through_ms <= 0 || w.origin == self) continue;
    int64_t id = 0;
    ES_RETURN_IF_ERROR(origins_->Find(w.origin, origin_stmts_, true, &id));
    put_watermark_.Bind(1, id);
    put_watermark_.Bind(2, w.complete_through_ms);
    ES_RETURN_IF_ERROR(put_watermark_.Run());
  }
  return Status::Ok();
}

}  // namespace edgesync

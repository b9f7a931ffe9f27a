// Other gateways' data: the read view (ApplyRemote) and what it shares with
// the region hub's tables (sqlite_store_hub.cc): origins, and entries as
// remote chunks. Both keep compressed chunks of one origin's entries
// (store/schema.h): a hub writes one row per applied batch, a read view one
// per origin per page; the union query that reads them is
// sqlite_store_query.cc.
#include <algorithm>
#include <set>

#include "store/chunk_codec.h"
#include "store/schema.h"
#include "store/clock_period_table.h"
#include "store/sqlite_store.h"
#include "store/token.h"

namespace edgesync {

Status SqliteStore::PrepareApply() {
  if (apply_prepared_) return Status::Ok();
  ES_RETURN_IF_ERROR(w_insert_region_chunk_.Prepare(&write_db_, kInsertRegionChunkSql));
  ES_RETURN_IF_ERROR(w_insert_view_chunk_.Prepare(&write_db_, kInsertViewChunkSql));
  ES_RETURN_IF_ERROR(w_insert_view_series_.Prepare(&write_db_, kInsertViewSeriesSql));
  ES_RETURN_IF_ERROR(w_view_overlap_.Prepare(&write_db_,
                                             "SELECT id, data FROM view_chunks WHERE origin = ? AND last_olsn >= ? "
                                             "AND first_olsn <= ?"));
  ES_RETURN_IF_ERROR(w_region_head_.Prepare(&write_db_, kRegionHeadSql));
  ES_RETURN_IF_ERROR(
      w_get_high_water_.Prepare(&write_db_, "SELECT lsn, complete_ms, complete_seq FROM high_water WHERE origin=?"));
  // ApplyHubBatch decides the watermark (only raised) under the write lock.
  ES_RETURN_IF_ERROR(w_put_high_water_.Prepare(
      &write_db_, "INSERT OR REPLACE INTO high_water(origin, lsn, complete_ms, complete_seq) VALUES(?1, ?2, ?3, ?4)"));
  ES_RETURN_IF_ERROR(w_origin_.Prepare(&write_db_, /*can_insert=*/true));
  apply_prepared_ = true;
  return Status::Ok();
}

// The end of a read-view or hub write: on failure the transaction is rolled
// back and the series and origins it interned are forgotten (their rows are
// gone with it); on success they become part of the caches.
Status SqliteStore::EndRemoteWrite(Txn* txn, const Status& status) {
  if (!status.ok()) {
    txn->Rollback();
    series_writer_.Rollback();
    origin_catalog_.Forget();
    pending_view_series_.clear();
    return status;
  }
  series_writer_.Commit();
  // Bounded: a pair not remembered only costs its INSERT OR IGNORE again.
  if (view_series_known_.size() + pending_view_series_.size() > kMaxKnownViewSeries) view_series_known_.clear();
  view_series_known_.insert(pending_view_series_.begin(), pending_view_series_.end());
  pending_view_series_.clear();
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
      ES_RETURN_IF_ERROR(remote_rows_.DecodeView(o.Blob(1), "read view chunk", o.Int(0), &old));
      for (const RemoteChunkEntry& e : old) held.insert(e.olsn);
    }
    ES_RETURN_IF_ERROR(st);
  }
  std::vector<RemoteChunkEntry>& chunk = remote_buffer_;
  chunk.clear();
  auto flush = [&]() REQUIRES(write_mu_) -> Status {
    if (chunk.empty()) return Status::Ok();
    *added += static_cast<int64_t>(chunk.size());
    // The series this origin wrote, for the query (schema.cc, version 7).
    for (const RemoteChunkEntry& e : chunk) {
      if (e.kind != 0) continue;
      const std::pair<int64_t, int64_t> key{e.series, origin_id};
      if (view_series_known_.count(key) > 0 || pending_view_series_.count(key) > 0) continue;
      w_insert_view_series_.Bind(1, e.series);
      w_insert_view_series_.Bind(2, origin_id);
      ES_RETURN_IF_ERROR(w_insert_view_series_.Run());
      pending_view_series_.insert(key);
    }
    Status st = InsertRemoteChunkRow(&w_insert_view_chunk_, 0, origin_id, chunk, now, &block_buffer_);
    chunk.clear();
    return st;
  };
  uint64_t last = 0;
  for (const ChangeEntry* e : *group) {
    if (e->lsn == last || held.count(e->lsn)) continue;  // a repeat within the call, or already held
    last = e->lsn;
    if (e->kind == ChangeEntry::Kind::kTimeCorrection) {
      ES_RETURN_IF_ERROR(clock_period_table::KeepOriginCorrection(&write_db_, origin_id, e->correction));
    }
    chunk.emplace_back();
    ES_RETURN_IF_ERROR(ToRemoteChunkEntry(&series_writer_, *e, &chunk.back()));
    if (chunk.size() >= kMaxRemoteChunkEntries) ES_RETURN_IF_ERROR(flush());
  }
  return flush();
}

Status SqliteStore::ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) {
  *applied = 0;
  // Entries of an origin this store had before it was re-identified are its
  // own local rows (same LSNs), as the feed puller skips the current one's.
  auto former = [&](const RemoteEntry& r) {
    return std::find(former_origins_.begin(), former_origins_.end(), r.origin) != former_origins_.end();
  };
  if (!former_origins_.empty() && std::any_of(entries.begin(), entries.end(), former)) {
    std::vector<RemoteEntry> rest;
    for (const RemoteEntry& r : entries) {
      if (!former(r)) rest.push_back(r);
    }
    return ApplyRemote(rest, applied);
  }
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
  MutexLock lock(&write_mu_);
  ES_RETURN_IF_ERROR(PrepareApply());
  Txn txn(&write_db_);
  series_writer_.Commit();
  int64_t count = 0;
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    const int64_t now = clock_->WallMillis();
    for (auto& [origin, group] : groups) {
      int64_t origin_id = 0;
      ES_RETURN_IF_ERROR(origin_catalog_.Find(*origin, &w_origin_, true, &origin_id));
      ES_RETURN_IF_ERROR(ApplyViewOrigin(origin_id, &group, now, &count));
    }
    return txn.Commit();
  }();
  ES_RETURN_IF_ERROR(EndRemoteWrite(&txn, s));
  *applied = count;
  return Status::Ok();
}

}  // namespace edgesync

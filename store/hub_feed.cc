#include "store/hub_feed.h"

#include <algorithm>

#include "store/clock_period_table.h"
#include "store/schema.h"

namespace edgesync {

Status HubFeedWriter::Open(Db* write_db, SeriesWriter* series, OriginCatalog* origins,
                           OriginCatalog::Statements* origin_stmts) {
  db_ = write_db;
  series_ = series;
  origins_ = origins;
  origin_stmts_ = origin_stmts;
  ES_RETURN_IF_ERROR(head_.Prepare(db_, kRegionHeadSql));
  ES_RETURN_IF_ERROR(get_mark_.Prepare(
      db_, "SELECT lsn, complete_ms, complete_seq, priority_1, priority_2, priority_3 FROM high_water WHERE origin=?"));
  // The batch's decision moves the mark and the priority marks (only
  // raised) in its transaction.
  ES_RETURN_IF_ERROR(put_mark_.Prepare(db_,
                                       "INSERT OR REPLACE INTO high_water(origin, lsn, complete_ms, complete_seq, "
                                       "priority_1, priority_2, priority_3) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  ES_RETURN_IF_ERROR(get_spans_.Prepare(db_, "SELECT first, last FROM held_spans WHERE origin=? ORDER BY first"));
  ES_RETURN_IF_ERROR(delete_spans_.Prepare(db_, "DELETE FROM held_spans WHERE origin=?"));
  ES_RETURN_IF_ERROR(put_span_.Prepare(db_, "INSERT INTO held_spans(origin, first, last) VALUES(?1, ?2, ?3)"));
  return insert_chunk_.Prepare(db_, kInsertRegionChunkSql);
}

// A busy hub's group is one transaction: its commit, not the batches, was
// the cost (WAL pages of the feed, the marks and the origins written once
// per group instead of once per batch).
Status HubFeedWriter::Apply(const std::vector<OriginBatch>& batches, const std::vector<bool>& valid, int64_t now,
                            std::vector<ApplyResult>* results) {
  int64_t head = 0;
  {
    Status st;
    StmtScope scope(&head_);
    head = head_.Step(&st) ? head_.Int(0) : 0;
    ES_RETURN_IF_ERROR(st);
  }
  std::unordered_map<std::string, Mark> marks;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (valid[i]) ES_RETURN_IF_ERROR(ApplyBatch(batches[i], now, &head, &marks, &(*results)[i]));
  }
  return Status::Ok();
}

Status HubFeedWriter::PutMark(int64_t origin_id, const Mark& mark) {
  put_mark_.Bind(1, origin_id);
  put_mark_.Bind(2, static_cast<int64_t>(mark.high_water));
  put_mark_.Bind(3, mark.complete_ms);
  put_mark_.Bind(4, mark.complete_seq);
  for (size_t k = 0; k < mark.priority.size(); ++k) {
    put_mark_.Bind(static_cast<int>(5 + k), static_cast<int64_t>(mark.priority[k]));
  }
  return put_mark_.Run();
}

// The origin's spans are few (kMaxHeldRanges) and change only with a live
// lane: rewritten whole when they do.
Status HubFeedWriter::PutSpans(int64_t origin_id, const std::vector<LsnSpan>& spans) {
  delete_spans_.Bind(1, origin_id);
  ES_RETURN_IF_ERROR(delete_spans_.Run());
  for (const LsnSpan& span : spans) {
    put_span_.Bind(1, origin_id);
    put_span_.Bind(2, static_cast<int64_t>(span.first));
    put_span_.Bind(3, static_cast<int64_t>(span.last));
    ES_RETURN_IF_ERROR(put_span_.Run());
  }
  return Status::Ok();
}

Status HubFeedWriter::ApplyBatch(const OriginBatch& batch, int64_t now, int64_t* head,
                                 std::unordered_map<std::string, Mark>* marks, ApplyResult* r) {
  const std::string key = batch.origin.ToString();
  Mark mark;
  auto found = marks->find(key);
  int64_t known_id = 0;
  if (found != marks->end()) {
    mark = found->second;
  } else {
    ES_RETURN_IF_ERROR(origins_->Find(batch.origin, origin_stmts_, false, &known_id));
    if (known_id != 0) {
      Status st;
      StmtScope scope(&get_mark_);
      get_mark_.Bind(1, known_id);
      if (get_mark_.Step(&st)) {
        mark.high_water = static_cast<uint64_t>(get_mark_.Int(0));
        mark.complete_ms = get_mark_.Int(1);
        mark.complete_seq = get_mark_.Int(2);
        for (size_t k = 0; k < mark.priority.size(); ++k) {
          mark.priority[k] = static_cast<uint64_t>(get_mark_.Int(static_cast<int>(3 + k)));
        }
      }
      ES_RETURN_IF_ERROR(st);
      StmtScope spans_scope(&get_spans_);
      get_spans_.Bind(1, known_id);
      while (get_spans_.Step(&st)) {
        mark.spans.push_back(
            LsnSpan{static_cast<uint64_t>(get_spans_.Int(0)), static_cast<uint64_t>(get_spans_.Int(1))});
      }
      ES_RETURN_IF_ERROR(st);
    }
  }
  const uint64_t held = mark.high_water;
  // The mark and the held spans decide what is new: everything at or below
  // the mark or inside a span is held (whatever a resend overlaps).
  ApplyPlan plan = PlanApply(batch, held, mark.spans, mark.priority);
  r->before = held;
  r->high_water = plan.new_high_water;
  r->base_lsn = plan.base;
  r->outcome = plan.outcome;
  r->detail = plan.detail;
  r->held = plan.new_spans;
  r->priority_held = plan.new_priority;
  const bool completes = (plan.outcome == ApplyOutcome::kApplied || plan.outcome == ApplyOutcome::kAlreadyHeld) &&
                         BatchCompletes(batch, plan.new_high_water) && batch.complete_through_ms > mark.complete_ms;
  if (completes) {
    mark.complete_ms = batch.complete_through_ms;
    // Everything of the origin it covers is at or below the feed's head
    // (after this batch's entries, appended below).
    mark.complete_seq = *head + static_cast<int64_t>(plan.fresh.size());
  }
  mark.high_water = plan.new_high_water;
  const bool spans_changed = plan.outcome == ApplyOutcome::kApplied && plan.new_spans != mark.spans;
  if (plan.outcome == ApplyOutcome::kApplied) {
    mark.spans = std::move(plan.new_spans);
    mark.priority = plan.new_priority;
  }
  (*marks)[key] = mark;
  if (plan.outcome == ApplyOutcome::kApplied || plan.outcome == ApplyOutcome::kAlreadyHeld) {
    r->complete_through_ms = mark.complete_ms;
  }
  if (plan.outcome == ApplyOutcome::kAlreadyHeld && completes) {
    // A resend whose answer was lost carries the watermark again: kept
    // without touching the mark or the feed.
    if (known_id == 0) ES_RETURN_IF_ERROR(origins_->Find(batch.origin, origin_stmts_, false, &known_id));
    if (known_id != 0) {
      ES_RETURN_IF_ERROR(PutMark(known_id, mark));
    }
  }
  if (plan.outcome != ApplyOutcome::kApplied) return Status::Ok();
  int64_t origin_id = 0;
  ES_RETURN_IF_ERROR(origins_->Find(batch.origin, origin_stmts_, true, &origin_id));
  const std::vector<ChangeEntry>& entries = *batch.entries;
  std::vector<RemoteChunkEntry>& chunk = chunk_;
  chunk.clear();
  for (size_t j = 0; j < plan.fresh.size(); ++j) {
    const ChangeEntry& e = entries[plan.fresh[j]];
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) {
      ES_RETURN_IF_ERROR(clock_period_table::KeepOriginCorrection(db_, origin_id, e.correction));
    }
    chunk.emplace_back();
    ES_RETURN_IF_ERROR(ToRemoteChunkEntry(series_, e, &chunk.back()));
    if (chunk.size() >= kMaxRemoteChunkEntries || j + 1 == plan.fresh.size()) {
      ES_RETURN_IF_ERROR(
          InsertRemoteChunkRow(&insert_chunk_, *head + 1, origin_id, chunk, now, &block_));
      *head += static_cast<int64_t>(chunk.size());
      chunk.clear();
    }
  }
  ES_RETURN_IF_ERROR(PutMark(origin_id, mark));
  if (spans_changed) ES_RETURN_IF_ERROR(PutSpans(origin_id, mark.spans));
  r->applied = plan.fresh.size();
  return Status::Ok();
}

Status HubFeedReader::Open(Db* read_db, SeriesReader* series, OriginCatalog* origins,
                           OriginCatalog::Statements* origin_stmts, RemoteRows* rows) {
  db_ = read_db;
  series_ = series;
  origins_ = origins;
  origin_stmts_ = origin_stmts;
  rows_ = rows;
  return high_water_.Prepare(db_, "SELECT lsn FROM high_water WHERE origin=?");
}

Status HubFeedReader::HighWater(const Origin& origin, uint64_t* high_water) {
  ES_RETURN_IF_ERROR(ValidateOrigin(origin));
  int64_t id = 0;
  ES_RETURN_IF_ERROR(origins_->Find(origin, origin_stmts_, false, &id));
  *high_water = 0;
  if (id == 0) return Status::Ok();
  Stmt& s = high_water_;
  StmtScope scope(&s);
  s.Bind(1, id);
  Status st;
  if (s.Step(&st)) *high_water = static_cast<uint64_t>(s.Int(0));
  return st;
}

Status HubFeedReader::Bounds(uint64_t* oldest_seq, uint64_t* head_seq) {
  Txn snapshot(db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t oldest = 0, head = 0;
  ES_RETURN_IF_ERROR(db_->QueryInt("SELECT ifnull((SELECT seq FROM region_chunks ORDER BY seq LIMIT 1), 0)",
                                       &oldest));
  ES_RETURN_IF_ERROR(db_->QueryInt(kRegionHeadSql, &head));
  *oldest_seq = static_cast<uint64_t>(oldest);
  *head_seq = static_cast<uint64_t>(head);
  return Status::Ok();
}

Status HubFeedReader::Read(uint64_t after_seq, size_t max_entries, std::vector<RegionFeedEntry>* entries,
                           uint64_t* head_seq, bool* reset) {
  entries->clear();
  *reset = false;
  Txn snapshot(db_);
  ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
  int64_t head = 0, pruned = 0;
  ES_RETURN_IF_ERROR(db_->QueryInt(kRegionHeadSql, &head));
  ES_RETURN_IF_ERROR(ReadMetaInt(db_, "region_pruned_seq", &pruned));
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
  ES_RETURN_IF_ERROR(s.Prepare(db_,
                               "SELECT seq, origin, data FROM region_chunks WHERE seq >= ifnull((SELECT max(seq) "
                               "FROM region_chunks WHERE seq <= ?1), 0) ORDER BY seq"));
  s.Bind(1, static_cast<int64_t>(after_seq + 1));
  Status st;
  std::vector<RemoteChunkEntry>& chunk = chunk_;
  std::vector<int64_t>& origins = chunk_origins_;
  // A merged row (feed compaction) is read like any other: entry i has
  // sequence seq + i, so a position inside it skips what is at or below.
  int64_t origin_id = 0;
  Origin origin;
  while (entries->size() < max && s.Step(&st)) {
    const int64_t seq = s.Int(0);
    ES_RETURN_IF_ERROR(rows_->DecodeRegion(s.Blob(2), seq, s.Int(1), &chunk, &origins));
    for (size_t i = 0; i < chunk.size() && entries->size() < max; ++i) {
      const uint64_t e_seq = static_cast<uint64_t>(seq) + i;
      if (e_seq <= after_seq) continue;
      const RemoteChunkEntry& c = chunk[i];
      if (origins[i] != origin_id) {
        ES_RETURN_IF_ERROR(origins_->ById(origins[i], origin_stmts_, &origin));
        origin_id = origins[i];
      }
      RegionFeedEntry e;
      e.seq = e_seq;
      e.remote.origin = origin;
      e.remote.origin_lsn = c.olsn;
      ES_RETURN_IF_ERROR(FromRemoteChunkEntry(series_, c, &e.remote.entry));
      entries->push_back(std::move(e));
    }
  }
  return st;
}

Status HubFeedReader::FeedWatermarks(std::vector<OriginWatermark>* watermarks) {
  watermarks->clear();
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db_,
                               "SELECT o.gateway_id, o.epoch, h.complete_ms, h.complete_seq FROM high_water h JOIN "
                               "origins o ON o.id = h.origin WHERE h.complete_ms > 0"));
  Status st;
  while (s.Step(&st)) {
    watermarks->push_back(
        OriginWatermark{Origin{s.Text(0), s.Text(1)}, s.Int(2), static_cast<uint64_t>(std::max<int64_t>(0, s.Int(3)))});
  }
  return st;
}

Status ListStoreWatermarks(Db* db, const Origin& self, std::vector<OriginWatermark>* watermarks) {
  watermarks->clear();
  Stmt s;
  // A hub's marks and a read view's kept watermarks (a store may be both).
  ES_RETURN_IF_ERROR(s.Prepare(db,
                               "SELECT o.gateway_id, o.epoch, max(w.c) FROM (SELECT origin, complete_ms AS c FROM "
                               "view_watermarks UNION ALL SELECT origin, complete_ms FROM high_water WHERE complete_ms "
                               "> 0) w JOIN origins o ON o.id = w.origin GROUP BY w.origin"));
  Status st;
  while (s.Step(&st)) {
    Origin origin{s.Text(0), s.Text(1)};
    if (origin == self) continue;
    watermarks->push_back(OriginWatermark{std::move(origin), s.Int(2), 0});
  }
  return st;
}

}  // namespace edgesync

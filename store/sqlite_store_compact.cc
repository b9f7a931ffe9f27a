// Compaction: older commit chunks rewritten as one block per series.
//
// Why: a commit chunk mixes every series written in one group commit, so a
// query of one series over a day decodes every chunk of that day (8 s over
// 24 h in a 50M-reading store, tests/bench/storage_bench.cc), and at low
// rates each tiny commit's chunk costs its row and zstd frame (~71 bytes
// per reading at 100 readings/s). Like Prometheus' TSDB cutting blocks from
// its head, compaction takes the oldest span of commit chunks and writes one
// block per series (store/chunk_codec.h, series blocks) indexed by (series,
// time), each reading keeping its LSN.
//
// What is compacted: chunks whose readings the uplink's target acknowledged
// (acks) and that were written more than compact_after_ms ago, oldest first,
// in spans of consecutive LSNs (a device record's LSN between two chunks
// ends a span: a span's row in `chunks` then still covers exactly its LSNs,
// which entry counts and retention rely on) of up to compact_span_readings
// readings. A span is cut only once it is full or closed by a gap, so spans
// stay large. What reads by LSN stays on cheap commit chunks: the uplink
// replays only unacknowledged readings, which are never compacted. Other
// readers by LSN (feed, feed leases, `feed --follow` from the beginning)
// get a span decoded whole (DecodeSpan), like a large chunk.
//
// Crash safety: the step reads and encodes without the write lock, then in
// one transaction checks that the chunks it read are still exactly there
// (retention may have pruned or trimmed them meanwhile), inserts the blocks,
// replaces the chunk rows by the span's row and moves compacted_upto. A
// kill -9 or power cut leaves the chunks or the span, never both, never
// neither (tests/integration/store_compact_kill_test.cc).
#include <algorithm>
#include <map>

#include "platform/log.h"
#include "store/chunk_codec.h"
#include "store/schema.h"
#include "store/sqlite_store.h"

namespace edgesync {
namespace {

struct SourceChunk {
  int64_t first = 0, last = 0, written_at = 0;
  std::string data;
};

struct EncodedBlock {
  int64_t series = 0, min_ts = 0, max_ts = 0;
  std::string data;
};

}  // namespace

Status SqliteStore::CompactedUpTo(Db* db, int64_t* upto) { return GetMetaInt(db, "compacted_upto", upto); }

Status SqliteStore::DecodeSpan(Db* db, std::string_view marker_data, int64_t first, int64_t last,
                               std::vector<ChunkReading>* readings) {
  const std::string where = "span at LSN " + std::to_string(first);
  SpanMarker marker;
  ES_RETURN_IF_ERROR(DecodeSpanMarker(marker_data, &marker).Annotate(where));
  const int64_t n = last - first + 1;
  if (n <= 0 || n > static_cast<int64_t>(kMaxChunkReadings)) {
    return Status::Corruption(where + ": LSN span " + std::to_string(n) + " out of bounds");
  }
  readings->assign(static_cast<size_t>(n), ChunkReading{});
  std::vector<bool> filled(static_cast<size_t>(n), false);
  Stmt blocks;
  ES_RETURN_IF_ERROR(blocks.Prepare(db, "SELECT id, span, series, data FROM series_chunks WHERE id >= ? AND id < ?"));
  blocks.Bind(1, marker.first_block);
  blocks.Bind(2, marker.first_block + marker.blocks);
  Status st;
  int64_t got_blocks = 0, got = 0;
  std::vector<SeriesPoint> points;
  while (blocks.Step(&st)) {
    ++got_blocks;
    if (blocks.Int(1) != first) return Status::Corruption(where + ": block " + std::to_string(blocks.Int(0)) + " is another span's");
    Status d = DecodeSeriesBlock(blocks.Blob(3), static_cast<size_t>(n), &points);
    if (!d.ok()) return Status::Corruption(where + ", block " + std::to_string(blocks.Int(0)) + ": " + d.message());
    const int64_t series = blocks.Int(2);
    for (const SeriesPoint& p : points) {
      if (p.lsn < first || p.lsn > last || filled[static_cast<size_t>(p.lsn - first)]) {
        return Status::Corruption(where + ": LSN " + std::to_string(p.lsn) + " outside the span or held twice");
      }
      filled[static_cast<size_t>(p.lsn - first)] = true;
      (*readings)[static_cast<size_t>(p.lsn - first)] = ChunkReading{series, p.ts_ms, p.value, p.quality};
      ++got;
    }
  }
  ES_RETURN_IF_ERROR(st);
  if (got_blocks != marker.blocks || got != n) {
    return Status::Corruption(where + ": " + std::to_string(got_blocks) + " of " + std::to_string(marker.blocks) +
                              " blocks holding " + std::to_string(got) + " of " + std::to_string(n) + " readings");
  }
  return Status::Ok();
}

Status SqliteStore::DecodeChunkRow(Db* db, std::string_view data, int64_t first, int64_t last,
                                   std::vector<ChunkReading>* readings) {
  if (IsSpanMarker(data)) return DecodeSpan(db, data, first, last, readings);
  Status d = DecodeChunk(data, kMaxChunkReadings, readings);
  if (!d.ok()) return Status::Corruption("chunk at LSN " + std::to_string(first) + ": " + d.message());
  if (static_cast<int64_t>(readings->size()) != last - first + 1) {
    return Status::Corruption("chunk at LSN " + std::to_string(first) + " holds " + std::to_string(readings->size()) +
                              " readings, its LSNs say " + std::to_string(last - first + 1));
  }
  return Status::Ok();
}

Status SqliteStore::CompactStep(CompactResult* result) {
  *result = CompactResult{};
  if (options_.read_only) return Status::InvalidArgument("compaction: the store is open read-only");
  const int64_t span_max = std::clamp<int64_t>(options_.compact_span_readings, 1, kMaxChunkReadings);
  const int64_t cutoff = clock_->WallMillis() - options_.compact_after_ms;
  // 1. The oldest run of eligible chunks, read from a snapshot.
  std::vector<SourceChunk> run;
  int64_t upto = 0;
  bool closed = false;  // the run is a whole span: full, or a gap follows it
  {
    MutexLock lock(&read_mu_);
    Txn snapshot(&read_db_);
    ES_RETURN_IF_ERROR(snapshot.Begin(Txn::Mode::kDeferred));
    int64_t acked = 0;
    ES_RETURN_IF_ERROR(read_db_.QueryInt("SELECT ifnull(max(lsn), 0) FROM acks", &acked));
    ES_RETURN_IF_ERROR(CompactedUpTo(&read_db_, &upto));
    if (acked <= upto) return Status::Ok();
    Stmt c;
    ES_RETURN_IF_ERROR(c.Prepare(&read_db_,
                                 "SELECT first_lsn, last_lsn, written_at, data FROM chunks WHERE first_lsn > ? "
                                 "ORDER BY first_lsn"));
    c.Bind(1, upto);
    Status st;
    int64_t readings = 0;
    while (c.Step(&st)) {
      SourceChunk s{c.Int(0), c.Int(1), c.Int(2), std::string()};
      const bool eligible = s.last <= acked && s.written_at < cutoff;
      const bool contiguous = run.empty() || s.first == run.back().last + 1;
      const int64_t n = s.last - s.first + 1;
      if (!run.empty() && (!contiguous || readings + n > span_max)) {
        // A gap, or the span is full: what we have is a whole span.
        closed = true;
        break;
      }
      if (!eligible) break;  // too young or unacknowledged: wait for it to grow
      if (IsSpanMarker(c.Blob(3))) {
        return Status::Corruption("chunk at LSN " + std::to_string(s.first) + " is a span past compacted_upto");
      }
      s.data.assign(c.Blob(3));
      readings += n;
      run.push_back(std::move(s));
      if (readings >= span_max) {
        closed = true;
        break;
      }
    }
    ES_RETURN_IF_ERROR(st);
  }
  if (run.empty() || !closed) return Status::Ok();

  // 2. Decode and regroup by series, outside every lock.
  std::map<int64_t, std::vector<SeriesPoint>> by_series;
  std::vector<ChunkReading> readings;
  int64_t written_at = INT64_MIN, min_ts = INT64_MAX, max_ts = INT64_MIN;
  for (const SourceChunk& s : run) {
    Status d = DecodeChunk(s.data, kMaxChunkReadings, &readings);
    if (!d.ok()) return Status::Corruption("compaction: chunk at LSN " + std::to_string(s.first) + ": " + d.message());
    if (static_cast<int64_t>(readings.size()) != s.last - s.first + 1) {
      return Status::Corruption("compaction: chunk at LSN " + std::to_string(s.first) + " holds the wrong count");
    }
    for (size_t i = 0; i < readings.size(); ++i) {
      const ChunkReading& r = readings[i];
      by_series[r.series].push_back(SeriesPoint{s.first + static_cast<int64_t>(i), r.ts_ms, r.value, r.quality});
      min_ts = std::min(min_ts, r.ts_ms);
      max_ts = std::max(max_ts, r.ts_ms);
    }
    written_at = std::max(written_at, s.written_at);
    result->bytes_before += static_cast<int64_t>(s.data.size());
    result->readings += static_cast<int64_t>(readings.size());
  }
  std::vector<EncodedBlock> blocks;
  blocks.reserve(by_series.size());
  for (auto& [series, points] : by_series) {
    EncodedBlock b{series, INT64_MAX, INT64_MIN, std::string()};
    for (const SeriesPoint& p : points) {
      b.min_ts = std::min(b.min_ts, p.ts_ms);
      b.max_ts = std::max(b.max_ts, p.ts_ms);
    }
    EncodeSeriesBlock(points, &b.data);
    result->bytes_after += static_cast<int64_t>(b.data.size());
    blocks.push_back(std::move(b));
  }
  by_series.clear();
  const int64_t first = run.front().first, last = run.back().last;
  // Compact only what gets smaller. With many series per span (the
  // reference workload's 8,000 in a 131,072-reading span: ~16 readings a
  // block) each block's row, index entry and frame outweigh what
  // per-series coding saves: bench_retention measured 3.57 -> 8.94 bytes per
  // reading in use and ~20 more bytes written per reading; with one-reading
  // commits at 100 readings/s, 70.7 -> 9.7. A span that would grow stays as
  // its commit chunks (queries decode them as before) and compaction moves
  // past it.
  constexpr int64_t kRowBytes = 40;  // a row and its index entry, roughly
  const int64_t cost_before = result->bytes_before + kRowBytes * static_cast<int64_t>(run.size());
  const int64_t cost_after = result->bytes_after + kRowBytes * static_cast<int64_t>(blocks.size() + 1);
  const bool keep = options_.compact_only_smaller && cost_after >= cost_before;

  // 3. One short transaction: still the same chunks? Then swap them.
  MutexLock lock(&write_mu_);
  Txn txn(&write_db_);
  bool swapped = false;
  Status s = [&]() REQUIRES(write_mu_) -> Status {
    ES_RETURN_IF_ERROR(txn.Begin());
    int64_t now_upto = 0;
    ES_RETURN_IF_ERROR(CompactedUpTo(&write_db_, &now_upto));
    Stmt check;
    ES_RETURN_IF_ERROR(check.Prepare(&write_db_,
                                     "SELECT first_lsn, last_lsn FROM chunks WHERE first_lsn >= ? AND first_lsn <= ? "
                                     "ORDER BY first_lsn"));
    check.Bind(1, first);
    check.Bind(2, last);
    Status st;
    size_t i = 0;
    bool same = now_upto == upto;
    while (same && check.Step(&st)) {
      same = i < run.size() && check.Int(0) == run[i].first && check.Int(1) == run[i].last;
      ++i;
    }
    ES_RETURN_IF_ERROR(st);
    check.Reset();
    if (!same || i != run.size()) return Status::Ok();  // retention got there first: try again later
    if (keep) {
      ES_RETURN_IF_ERROR(SetMetaInt("compacted_upto", last));
      ES_RETURN_IF_ERROR(txn.Commit());
      swapped = true;
      return Status::Ok();
    }
    int64_t first_block = 0;
    ES_RETURN_IF_ERROR(write_db_.QueryInt("SELECT ifnull(max(id), 0) + 1 FROM series_chunks", &first_block));
    Stmt ins;
    ES_RETURN_IF_ERROR(ins.Prepare(&write_db_, "INSERT INTO series_chunks VALUES(?, ?, ?, ?, ?, ?)"));
    int64_t id = first_block;
    for (const EncodedBlock& b : blocks) {
      ins.Bind(1, id++);
      ins.Bind(2, first);
      ins.Bind(3, b.series);
      ins.Bind(4, b.min_ts);
      ins.Bind(5, b.max_ts);
      ins.BindBlob(6, b.data);
      ES_RETURN_IF_ERROR(ins.Run());
    }
    Stmt del;
    ES_RETURN_IF_ERROR(del.Prepare(&write_db_, "DELETE FROM chunks WHERE first_lsn >= ? AND first_lsn <= ?"));
    del.Bind(1, first);
    del.Bind(2, last);
    ES_RETURN_IF_ERROR(del.Run());
    std::string marker;
    EncodeSpanMarker(SpanMarker{first_block, static_cast<int64_t>(blocks.size())}, &marker);
    result->bytes_after += static_cast<int64_t>(marker.size());
    Stmt span;
    ES_RETURN_IF_ERROR(span.Prepare(&write_db_, kInsertChunkSql));
    span.Bind(1, first);
    span.Bind(2, last);
    span.Bind(3, written_at);
    span.Bind(4, min_ts);
    span.Bind(5, max_ts);
    span.BindBlob(6, marker);
    ES_RETURN_IF_ERROR(span.Run());
    ES_RETURN_IF_ERROR(SetMetaInt("compacted_upto", last));
    ES_RETURN_IF_ERROR(txn.Commit());
    swapped = true;
    return Status::Ok();
  }();
  if (!s.ok()) {
    txn.Rollback();
    cached_high_lsn_ = -1;
  }
  if (!s.ok() || !swapped) {
    *result = CompactResult{};  // or raced with retention: the next pass reads again
    return s;
  }
  if (keep) {
    const int64_t readings_kept = result->readings;
    *result = CompactResult{};
    result->kept = 1;
    result->kept_readings = readings_kept;
    result->more = true;
    return Status::Ok();
  }
  result->spans = 1;
  result->more = true;  // the next span may be due already; a step that finds none says so
  return Status::Ok();
}

}  // namespace edgesync

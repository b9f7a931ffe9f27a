// The PostgreSQL hub store (store/hub_store.h), through libpq.
//
// Schema (migrated at open, under an advisory lock so hubs starting together
// do not race; a newer schema is refused):
//   es_meta(key, value): schema_version, epoch
//   es_origins(id, gateway_id, epoch, high_water, shard, complete_ms,
//     complete_seq, held_spans, priority_held): one row per origin
//   es_feed_shards(shard, seq, pruned): per shard, the last number given
//     and the pruned mark
//   es_feed_chunks, es_series: the region feed, one compressed row per
//     origin per apply (store/pg/pg_feed_chunks.h)
// An apply group is one transaction: read the origins' marks, decide every
// batch (PlanApply), append the new entries as chunks, then move each
// changed mark with a compare-and-set (UPDATE ... WHERE high_water = the
// value read). Another writer that applied the same span first makes the
// UPDATE match no row: the transaction rolls back and the group is decided
// again on the new marks. Only that compare-and-set guards an origin's
// span (schema 3's unique (origin, olsn) index cost an index entry per
// entry; the soak's audit checks that no origin's chunks overlap).
// Schema 2 adds the shard leases of several hubs (pg_shard_leases.cc).
// Schema 3 numbers the feed per shard (store/feed_cursor.h): every origin
// has its shard, and es_feed_shards one row per shard with its counter and
// pruned mark. An apply locks the counter rows of the shards it appends to
// (in shard order, so two appliers never wait on each other in a circle),
// numbers its entries from them, and moves them; the row lock holds until
// commit, so a shard's numbers become visible in their order while appends
// to other shards run in parallel (several hubs, or two hubs that both act
// for a shard around a lease handover). The chunks' seq (from es_feed_seq)
// is drawn after those locks too, so inside a shard seq follows the shard
// numbers: pages merge shards by seq, and retention deletes a prefix by
// seq that is a prefix of every shard.
// Schema 4 replaces the row per entry (es_region_feed) by chunks: the
// server's work per reading was a heap tuple and three unique index
// entries, 244 bytes on disk (bench_remote_storage); a chunk row costs two
// index entries per batch, 15.6 bytes per reading.
// Schema 6 keeps beside each mark the spans held above it (a live lane's;
// store/hub_store.h PlanApply) in es_origins.held_spans, a flat bigint
// array {first, last, first, last, ...}, part of the same compare-and-set
// as the mark: two writers that both open or grow a span of one origin
// cannot both append its entries. A hub of schema 5 refuses the database
// by its version (it would take the spans' batches for gaps and never
// merge them).
// Schema 7 keeps beside each mark the origin's priority marks P1..P3
// (store/hub_store.h PlanApply) in es_origins.priority_held, always three
// bigints {P1,P2,P3}, part of the same compare-and-set: a priority batch
// and a backlog batch of one origin applied by two writers at once cannot
// both append an entry. A hub of schema 6 refuses the database by its
// version (it would append a priority batch's entries again when the
// backlog brings them).
#include <algorithm>
#include <map>

#include "platform/files.h"
#include "platform/log.h"
#include "platform/mutex.h"
#include "store/hub_store.h"
#include "store/pg/pg_conn.h"
#include "store/pg/pg_feed_chunks.h"

namespace edgesync {
namespace {

constexpr int kSchemaVersion = 7;
// Retries of a group whose compare-and-set lost to another writer: each
// retry decides the group on the marks that writer committed, so the second
// attempt normally finds the span already held.
constexpr int kConflictRetries = 4;

const char* const kMigrations[] = {
    // 1: the first schema.
    "CREATE TABLE IF NOT EXISTS es_origins ("
    "  id bigserial PRIMARY KEY,"
    "  gateway_id text NOT NULL,"
    "  epoch text NOT NULL,"
    "  high_water bigint NOT NULL DEFAULT 0,"
    "  UNIQUE (gateway_id, epoch));"
    "CREATE SEQUENCE IF NOT EXISTS es_feed_seq;"
    "CREATE TABLE IF NOT EXISTS es_region_feed ("
    "  seq bigint PRIMARY KEY DEFAULT nextval('es_feed_seq'),"
    "  origin bigint NOT NULL,"
    "  olsn bigint NOT NULL,"
    "  kind smallint NOT NULL,"
    "  device_id text NOT NULL,"
    "  metric text NOT NULL,"
    "  unit text NOT NULL,"
    "  ts bigint NOT NULL,"
    "  value double precision NOT NULL,"
    "  quality integer NOT NULL,"
    "  name text,"
    "  location text,"
    "  default_unit text,"
    "  applied_ms bigint NOT NULL,"
    "  UNIQUE (origin, olsn));"
    "INSERT INTO es_meta VALUES ('epoch', replace(gen_random_uuid()::text, '-', '')), ('pruned_seq', '0') "
    "ON CONFLICT DO NOTHING;",
    // 2: several hubs per region (store/hub_store_leases.h): members and shard leases.
    "CREATE TABLE IF NOT EXISTS es_hubs ("
    "  id text PRIMARY KEY,"
    "  instance text NOT NULL,"
    "  expires_at timestamptz NOT NULL);"
    "CREATE TABLE IF NOT EXISTS es_shard_leases ("
    "  shard integer PRIMARY KEY,"
    "  owner text NOT NULL DEFAULT '',"
    "  expires_at timestamptz NOT NULL DEFAULT '-infinity',"
    "  version bigint NOT NULL DEFAULT 0);",
    // 3: the feed numbered per shard. The origins' shards are filled in by
    // MigrateShards (FNV-1a is computed in C++, one home for the rule); the
    // rows of the single-sequence feed keep their seq as shard_seq (it grew
    // in commit order under that feed's lock, so it is in order per shard),
    // and every shard's counter and pruned mark start at the old ones.
    "ALTER TABLE es_origins ADD COLUMN IF NOT EXISTS shard smallint NOT NULL DEFAULT 0;"
    "ALTER TABLE es_region_feed ADD COLUMN IF NOT EXISTS shard smallint NOT NULL DEFAULT 0;"
    "ALTER TABLE es_region_feed ADD COLUMN IF NOT EXISTS shard_seq bigint;"
    "CREATE TABLE IF NOT EXISTS es_feed_shards ("
    "  shard integer PRIMARY KEY,"
    "  seq bigint NOT NULL,"
    "  pruned bigint NOT NULL);",
    // 4: the feed as chunks (store/pg/pg_feed_chunks.h); MigrateFeedToChunks
    // moves the rows of es_region_feed into them and drops it. The block is
    // stored as it is (STORAGE EXTERNAL): it is zstd already, and a row stays
    // far below the size where PostgreSQL would move it out of line.
    "CREATE TABLE IF NOT EXISTS es_series ("
    "  id bigserial PRIMARY KEY,"
    "  device_id text NOT NULL,"
    "  metric text NOT NULL,"
    "  unit text NOT NULL,"
    "  UNIQUE (device_id, metric, unit));"
    "CREATE TABLE IF NOT EXISTS es_feed_chunks ("
    "  shard smallint NOT NULL,"
    "  last_seq bigint NOT NULL,"
    "  n integer NOT NULL CHECK (n > 0),"
    "  seq bigint NOT NULL DEFAULT nextval('es_feed_seq'),"
    "  origin bigint NOT NULL,"
    "  first_olsn bigint NOT NULL,"
    "  last_olsn bigint NOT NULL,"
    "  applied_ms bigint NOT NULL,"
    "  data bytea NOT NULL,"
    "  PRIMARY KEY (shard, last_seq));"
    "ALTER TABLE es_feed_chunks ALTER COLUMN data SET STORAGE EXTERNAL;"
    "CREATE INDEX IF NOT EXISTS es_feed_chunks_seq ON es_feed_chunks (seq);",
    // 5: each origin's completeness watermark beside its mark (store/hub_store.h,
    // BatchCompletes) and the sequence of its shard from which a feed reader
    // holds all it covers; 0 = none known yet.
    "ALTER TABLE es_origins ADD COLUMN IF NOT EXISTS complete_ms bigint NOT NULL DEFAULT 0;"
    "ALTER TABLE es_origins ADD COLUMN IF NOT EXISTS complete_seq bigint NOT NULL DEFAULT 0;",
    // 6: the spans held above each mark, {first, last, ...} ascending (see the top of this file).
    "ALTER TABLE es_origins ADD COLUMN IF NOT EXISTS held_spans bigint[] NOT NULL DEFAULT '{}';",
    // 7: the priority marks, {P1,P2,P3} (see the top of this file).
    "ALTER TABLE es_origins ADD COLUMN IF NOT EXISTS priority_held bigint[] NOT NULL DEFAULT '{0,0,0}';",
};

// An origin's held spans as es_origins.held_spans holds them: a flat array
// literal {first,last,...}, and back. A value that is not such a list is
// a Corruption: deciding against made-up spans could drop entries.
std::string SpansLiteral(const std::vector<LsnSpan>& spans) {
  std::string out = "{";
  for (const LsnSpan& s : spans) {
    if (out.size() > 1) out += ',';
    out += std::to_string(s.first) + ',' + std::to_string(s.last);
  }
  return out + "}";
}

Status ParseSpans(const std::string& text, std::vector<LsnSpan>* spans) {
  spans->clear();
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
    return Status::Corruption("es_origins.held_spans is not an array: " + text);
  }
  std::vector<uint64_t> values;
  size_t at = 1;
  while (at < text.size() - 1) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size() - 1;
    const std::string item = text.substr(at, end - at);
    if (item.empty() || item.size() > 19 || item.find_first_not_of("0123456789") != std::string::npos) {
      return Status::Corruption("es_origins.held_spans holds " + text);
    }
    values.push_back(std::stoull(item));
    at = end + 1;
  }
  if (values.size() % 2 != 0 || values.size() / 2 > kMaxHeldSpansOnWire) {
    return Status::Corruption("es_origins.held_spans holds " + text);
  }
  for (size_t i = 0; i < values.size(); i += 2) spans->push_back(LsnSpan{values[i], values[i + 1]});
  for (size_t i = 0; i < spans->size(); ++i) {
    if ((*spans)[i].last < (*spans)[i].first || (i > 0 && (*spans)[i].first <= (*spans)[i - 1].last + 1)) {
      return Status::Corruption("es_origins.held_spans holds " + text);
    }
  }
  return Status::Ok();
}

// An origin's priority marks as es_origins.priority_held holds them,
// exactly three values (the compare-and-set compares the literal), and back.
std::string PriorityLiteral(const PriorityMarks& marks) {
  return "{" + std::to_string(marks[0]) + "," + std::to_string(marks[1]) + "," + std::to_string(marks[2]) + "}";
}

Status ParsePriority(const std::string& text, PriorityMarks* marks) {
  static_assert(kMaxPriorityLevel == 3, "PriorityLiteral writes three marks");
  std::vector<LsnSpan> pairs;
  size_t at = 1, k = 0;
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') {
    return Status::Corruption("es_origins.priority_held is not an array: " + text);
  }
  while (at < text.size() - 1 && k < marks->size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size() - 1;
    const std::string item = text.substr(at, end - at);
    if (item.empty() || item.size() > 19 || item.find_first_not_of("0123456789") != std::string::npos) break;
    (*marks)[k++] = std::stoull(item);
    at = end + 1;
  }
  if (k != marks->size() || at != text.size()) return Status::Corruption("es_origins.priority_held holds " + text);
  return Status::Ok();
}

class PgHubStore : public HubStore {
 public:
  PgHubStore(std::unique_ptr<PgConn> conn, HubStoreOptions options)
      : conn_(std::move(conn)), options_(std::move(options)), clock_(options_.clock ? options_.clock : SystemClock()) {}

  Status Init() {
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(Migrate());
    PgResult r;
    ES_RETURN_IF_ERROR(conn_->Query("SELECT value FROM es_meta WHERE key='epoch'", {}, &r));
    if (r.rows() != 1) return Status::Corruption("PostgreSQL hub store: its epoch is missing");
    epoch_ = r.Text(0, 0);
    return Status::Ok();
  }

  std::string epoch() const override { return epoch_; }
  std::string backend() const override { return "postgresql"; }

  // What the open found, for its log line: the server's version, the schema
  // version and where it was migrated from.
  std::string OpenSummary() {
    MutexLock lock(&mu_);
    int server = conn_->server_version();  // e.g. 150004 = 15.4
    std::string schema = std::to_string(kSchemaVersion);
    if (found_schema_ == 0) {
      schema += " (created)";
    } else if (found_schema_ < kSchemaVersion) {
      schema += " (migrated from " + std::to_string(found_schema_) + ")";
    }
    return fmt::format("PostgreSQL server {}.{}, schema version {}, epoch {}", server / 10000, server % 10000,
                       schema, epoch_);
  }

  Status ApplyBatches(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) override {
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    Status st;
    for (int attempt = 0; attempt <= kConflictRetries; ++attempt) {
      st = ApplyGroup(batches, results);
      if (!st.ok()) conn_->Rollback();
      if (st.code() != Status::Code::kConflict) return st;
    }
    return st.Annotate("applying a group of " + std::to_string(batches.size()) + " batches");
  }

  Status HighWater(const Origin& origin, uint64_t* high_water) override {
    ES_RETURN_IF_ERROR(ValidateOrigin(origin));
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    PgResult r;
    ES_RETURN_IF_ERROR(conn_->Query("SELECT high_water FROM es_origins WHERE gateway_id=$1 AND epoch=$2",
                                    {origin.gateway_id, origin.epoch}, &r));
    *high_water = r.rows() ? static_cast<uint64_t>(r.Int(0, 0)) : 0;
    return Status::Ok();
  }

  Status FeedWatermarks(std::vector<OriginWatermark>* watermarks) override {
    watermarks->clear();
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    PgResult r;
    ES_RETURN_IF_ERROR(conn_->Query(
        "SELECT gateway_id, epoch, complete_ms, complete_seq FROM es_origins WHERE complete_ms > 0", {}, &r));
    for (int i = 0; i < r.rows(); ++i) {
      watermarks->push_back(OriginWatermark{Origin{r.Text(i, 0), r.Text(i, 1)}, r.Int(i, 2),
                                            static_cast<uint64_t>(std::max<int64_t>(0, r.Int(i, 3)))});
    }
    return Status::Ok();
  }

  Status ReadFeed(const ShardPositions& after, size_t max_entries, FeedRead* page) override {
    *page = FeedRead{};
    for (uint64_t p : after) {
      if (p > static_cast<uint64_t>(INT64_MAX)) return Status::InvalidArgument("sequence out of range");
    }
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    // One snapshot for the bounds and the page.
    ES_RETURN_IF_ERROR(conn_->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
    Status st = [&]() REQUIRES(mu_) -> Status {
      FeedBoundsInfo bounds;
      ES_RETURN_IF_ERROR(Bounds(&bounds));
      page->head = bounds.head;
      page->next = after;
      for (int s = 0; s < kRegionShards; ++s) {
        if (after[s] < bounds.pruned[s]) {
          page->reset = true;  // never a silent rewind or skip
          page->next[s] = bounds.pruned[s];
        }
      }
      if (page->reset) return Status::Ok();
      // Only the shards with something new.
      std::string shards = "{", afters = "{";
      for (int s = 0; s < kRegionShards; ++s) {
        if (after[s] >= bounds.head[s]) continue;
        if (shards.size() > 1) shards += ',', afters += ',';
        shards += std::to_string(s);
        afters += std::to_string(after[s]);
      }
      if (shards.size() == 1) return Status::Ok();
      return ReadChunkPage(conn_.get(), &dict_, after, std::max<size_t>(1, std::min<size_t>(max_entries, 100000)),
                           shards + "}", afters + "}", page);
    }();
    if (!st.ok()) {
      conn_->Rollback();
      *page = FeedRead{};
      return st;
    }
    return conn_->Exec("COMMIT");
  }

  Status FeedBounds(FeedBoundsInfo* bounds) override {
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    return Bounds(bounds);
  }

  // A PostgreSQL hub's feed rows are not merged (docs/LIMITS.md): a pass
  // finds nothing to do.
  Status CompactFeedStep(CompactResult* result) override {
    *result = CompactResult{};
    return Status::Ok();
  }

  Status PruneStep(int64_t max_rows, PruneResult* result) override {
    *result = PruneResult{};
    MutexLock lock(&mu_);
    ES_RETURN_IF_ERROR(conn_->EnsureConnected());
    const int64_t cutoff = clock_->WallMillis() - options_.feed_retention_ms;
    ES_RETURN_IF_ERROR(conn_->Exec("BEGIN"));
    Status st = [&]() REQUIRES(mu_) -> Status {
      // Only a prefix of the feed goes: a reader is reset when it is behind
      // the pruned mark, so nothing at or below it may stay (a reader sent
      // back to the oldest entry would be reset again). A step takes whole
      // chunks, at least one, at most max_rows entries when it takes more.
      PgResult r;
      ES_RETURN_IF_ERROR(conn_->Query("SELECT seq, n, applied_ms FROM es_feed_chunks ORDER BY seq LIMIT $1",
                                      {std::to_string(max_rows + 1)}, &r));
      int64_t last = 0, n = 0;
      int taken = 0;
      for (; taken < r.rows() && r.Int(taken, 2) < cutoff; ++taken) {
        if (taken > 0 && n + r.Int(taken, 1) > max_rows) break;
        n += r.Int(taken, 1);
        last = r.Int(taken, 0);
      }
      if (taken == 0) return Status::Ok();
      // A prefix by seq is a prefix of every shard (seq follows the shard
      // numbers inside a shard); each shard's pruned mark moves to its last
      // entry gone.
      PgResult d;
      ES_RETURN_IF_ERROR(conn_->Query(
          "WITH d AS (DELETE FROM es_feed_chunks WHERE seq <= $1 RETURNING shard, last_seq, n), "
          "m AS (SELECT shard, max(last_seq) AS mx, sum(n) AS n FROM d GROUP BY shard), "
          "u AS (UPDATE es_feed_shards f SET pruned = GREATEST(f.pruned, m.mx) FROM m WHERE f.shard = m.shard) "
          "SELECT coalesce(sum(n), 0) FROM m",
          {std::to_string(last)}, &d));
      result->remote = d.Int(0, 0);
      result->more = taken < r.rows() && r.Int(taken, 2) < cutoff;
      return Status::Ok();
    }();
    if (!st.ok()) {
      conn_->Rollback();
      *result = PruneResult{};
      return st;
    }
    return conn_->Exec("COMMIT");
  }

  Status Stats(HubStoreStats* stats) override {
    stats->backend = backend();
    FeedBoundsInfo bounds;
    ES_RETURN_IF_ERROR(FeedBounds(&bounds));
    stats->feed_oldest = bounds.oldest;
    stats->feed_head = bounds.numbered;
    return Status::Ok();
  }

 private:
  Status Migrate() REQUIRES(mu_) {
    ES_RETURN_IF_ERROR(conn_->Exec("BEGIN"));
    Status st = [&]() REQUIRES(mu_) -> Status {
      // Hubs of one region open the database together: one migrates, the
      // others wait here and find the schema current.
      ES_RETURN_IF_ERROR(conn_->Exec("SELECT pg_advisory_xact_lock(4451997360211771)"));
      ES_RETURN_IF_ERROR(conn_->Exec("CREATE TABLE IF NOT EXISTS es_meta (key text PRIMARY KEY, value text NOT NULL)"));
      PgResult r;
      ES_RETURN_IF_ERROR(conn_->Query("SELECT value::int FROM es_meta WHERE key='schema_version'", {}, &r));
      int version = r.rows() ? static_cast<int>(r.Int(0, 0)) : 0;
      found_schema_ = version;
      if (version > kSchemaVersion) {
        return Status::Unsupported("PostgreSQL hub store has schema version " + std::to_string(version) +
                                   ", newer than this edgesync's " + std::to_string(kSchemaVersion));
      }
      for (int v = version + 1; v <= kSchemaVersion; ++v) {
        ES_RETURN_IF_ERROR(conn_->Exec(kMigrations[v - 1]).Annotate("migrating to schema " + std::to_string(v)));
        if (v == 3) ES_RETURN_IF_ERROR(MigrateShards().Annotate("migrating to schema 3"));
        if (v == 4) ES_RETURN_IF_ERROR(MigrateFeedToChunks(conn_.get(), &dict_).Annotate("migrating to schema 4"));
      }
      return conn_->Query(
          "INSERT INTO es_meta VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
          {std::to_string(kSchemaVersion)});
    }();
    if (!st.ok()) {
      conn_->Rollback();
      return st;
    }
    return conn_->Exec("COMMIT");
  }

  Status Bounds(FeedBoundsInfo* bounds) REQUIRES(mu_) {
    *bounds = FeedBoundsInfo{};
    PgResult r;
    ES_RETURN_IF_ERROR(conn_->Query(
        "SELECT shard, seq, pruned, (SELECT coalesce(min(seq), 0) FROM es_feed_chunks) FROM es_feed_shards "
        "ORDER BY shard",
        {}, &r));
    if (r.rows() != kRegionShards) return Status::Corruption("es_feed_shards does not hold every shard");
    for (int i = 0; i < r.rows(); ++i) {
      const int s = static_cast<int>(r.Int(i, 0));
      if (s != i) return Status::Corruption("es_feed_shards does not hold every shard");
      bounds->head[s] = static_cast<uint64_t>(r.Int(i, 1));
      bounds->pruned[s] = static_cast<uint64_t>(r.Int(i, 2));
      bounds->numbered += bounds->head[s];
      bounds->oldest = static_cast<uint64_t>(r.Int(i, 3));
    }
    return Status::Ok();
  }

  // Schema 3's data step (see kMigrations): the origins' shards, the old
  // rows' shard numbers, every shard's counter row.
  Status MigrateShards() REQUIRES(mu_) {
    PgResult o;
    ES_RETURN_IF_ERROR(conn_->Query("SELECT id, gateway_id FROM es_origins", {}, &o));
    std::string ids = "{", shards = "{";
    for (int i = 0; i < o.rows(); ++i) {
      if (i > 0) ids += ',', shards += ',';
      ids += std::to_string(o.Int(i, 0));
      shards += std::to_string(RegionShardOf(o.Text(i, 1)));
    }
    ES_RETURN_IF_ERROR(conn_->Query(
        "UPDATE es_origins o SET shard = v.s FROM unnest($1::bigint[], $2::smallint[]) AS v(id, s) WHERE o.id = v.id",
        {ids + "}", shards + "}"}));
    ES_RETURN_IF_ERROR(conn_->Exec(
        "UPDATE es_region_feed f SET shard = o.shard, shard_seq = f.seq FROM es_origins o WHERE o.id = f.origin;"
        "ALTER TABLE es_region_feed ALTER COLUMN shard_seq SET NOT NULL;"
        "CREATE UNIQUE INDEX IF NOT EXISTS es_region_feed_shard_seq ON es_region_feed (shard, shard_seq);"
        "INSERT INTO es_feed_shards (shard, seq, pruned) SELECT g.s, GREATEST(p.v, coalesce((SELECT "
        "max(shard_seq) FROM es_region_feed f WHERE f.shard = g.s), 0)), p.v FROM generate_series(0, " +
        std::to_string(kRegionShards - 1) +
        ") AS g(s), (SELECT coalesce((SELECT value::bigint FROM es_meta WHERE key = 'pruned_seq'), 0) AS v) AS p "
        "ON CONFLICT DO NOTHING"));
    return Status::Ok();
  }

  struct OriginRow {
    int64_t id = 0;
    uint64_t read = 0;     // the mark as read in this transaction
    uint64_t current = 0;  // after the group's batches so far
    std::vector<LsnSpan> spans_read;  // the held spans, likewise
    std::vector<LsnSpan> spans;
    PriorityMarks priority_read = {};  // the priority marks, likewise
    PriorityMarks priority = {};
    int64_t complete_read = 0;  // the watermark as read, and after the group's batches so far
    int64_t complete = 0;
  };

  Status ApplyGroup(const std::vector<OriginBatch>& batches, std::vector<ApplyResult>* results) REQUIRES(mu_) {
    results->assign(batches.size(), ApplyResult{});
    std::vector<bool> valid(batches.size());
    std::map<std::string, OriginRow> origins;  // by origin name
    std::vector<std::string> gateways, epochs;
    std::string shards = "{";
    for (size_t i = 0; i < batches.size(); ++i) {
      Status v = ValidateOriginBatch(batches[i]);
      valid[i] = v.ok();
      if (!v.ok()) {
        (*results)[i].outcome = ApplyOutcome::kInvalid;
        (*results)[i].detail = v.message();
      }
      if (!ValidateOrigin(batches[i].origin).ok()) continue;
      if (origins.emplace(batches[i].origin.ToString(), OriginRow{}).second) {
        gateways.push_back(batches[i].origin.gateway_id);
        epochs.push_back(batches[i].origin.epoch);
        if (shards.size() > 1) shards += ',';
        shards += std::to_string(RegionShardOf(batches[i].origin.gateway_id));
      }
    }
    if (origins.empty()) return Status::Ok();
    // The series get their ids before the transaction, each in its own
    // commit (pg_feed_chunks.h); a busy hub has them all cached.
    std::vector<const ChangeEntry*> entries;
    std::vector<size_t> ids_from(batches.size(), 0);  // batch i's first entry's place in series_ids
    size_t total = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      if (valid[i]) total += batches[i].entries->size();
    }
    entries.reserve(total);
    std::vector<PgFeedDictionary::Run> runs;  // a batch each, named by its sender (the origin's gateway)
    runs.reserve(batches.size());
    for (size_t i = 0; i < batches.size(); ++i) {
      if (!valid[i]) continue;
      ids_from[i] = entries.size();
      for (const ChangeEntry& e : *batches[i].entries) entries.push_back(&e);
      runs.push_back(PgFeedDictionary::Run{&batches[i].origin.gateway_id, ids_from[i], entries.size()});
    }
    std::vector<int64_t> series_ids;  // each entry's series, in `entries` order
    ES_RETURN_IF_ERROR(dict_.Intern(conn_.get(), entries, &series_ids, &runs));
    ES_RETURN_IF_ERROR(conn_->Exec("BEGIN"));
    // Creates the origins not seen before, then reads every mark. An origin
    // another hub created after this statement's snapshot is missing from
    // the answer: the group is retried (Conflict).
    PgResult r;
    ES_RETURN_IF_ERROR(conn_->Query(
        "WITH want(g, e, s) AS (SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[])), "
        "ins AS (INSERT INTO es_origins(gateway_id, epoch, shard) SELECT g, e, s FROM want ON CONFLICT DO NOTHING "
        "RETURNING id, gateway_id, epoch, high_water, complete_ms, held_spans, priority_held) "
        "SELECT id, gateway_id, epoch, high_water, complete_ms, held_spans, priority_held FROM ins UNION ALL "
        "SELECT o.id, o.gateway_id, o.epoch, o.high_water, o.complete_ms, o.held_spans, o.priority_held FROM "
        "es_origins o JOIN want ON o.gateway_id = want.g AND o.epoch = want.e",
        {PgTextArray(gateways), PgTextArray(epochs), shards + "}"}, &r));
    for (int i = 0; i < r.rows(); ++i) {
      OriginRow& o = origins[Origin{r.Text(i, 1), r.Text(i, 2)}.ToString()];
      o.id = r.Int(i, 0);
      o.read = o.current = static_cast<uint64_t>(r.Int(i, 3));
      o.complete_read = o.complete = r.Int(i, 4);
      ES_RETURN_IF_ERROR(ParseSpans(r.Text(i, 5), &o.spans_read).Annotate("origin " + r.Text(i, 1)));
      o.spans = o.spans_read;
      ES_RETURN_IF_ERROR(ParsePriority(r.Text(i, 6), &o.priority_read).Annotate("origin " + r.Text(i, 1)));
      o.priority = o.priority_read;
    }
    for (const auto& [name, o] : origins) {
      if (o.id == 0) return Status::Conflict("origin " + name + " was created by another writer meanwhile");
    }
    // Decide every batch first; the rows are numbered once the shards they
    // go to are locked.
    struct Append {
      int64_t origin_id;
      int shard;
      const std::vector<ChangeEntry>* entries;
      std::vector<size_t> fresh;  // the new entries' indexes (PlanApply)
      const int64_t* series_ids;  // of entries (from index 0)
    };
    std::vector<Append> appends;
    for (size_t i = 0; i < batches.size(); ++i) {
      const OriginBatch& b = batches[i];
      ApplyResult& res = (*results)[i];
      auto found = origins.find(b.origin.ToString());
      if (found == origins.end()) continue;  // an invalid origin
      OriginRow& o = found->second;
      res.before = res.high_water = o.current;
      if (!valid[i]) continue;
      ApplyPlan plan = PlanApply(b, o.current, o.spans, o.priority);
      res.outcome = plan.outcome;
      res.detail = plan.detail;
      res.base_lsn = plan.base;
      res.held = plan.new_spans;
      res.priority_held = plan.new_priority;
      if (plan.outcome == ApplyOutcome::kApplied || plan.outcome == ApplyOutcome::kAlreadyHeld) {
        if (BatchCompletes(b, plan.new_high_water)) o.complete = std::max(o.complete, b.complete_through_ms);
        res.complete_through_ms = o.complete;
      }
      if (plan.outcome != ApplyOutcome::kApplied) continue;
      res.applied = plan.fresh.size();
      if (!plan.fresh.empty()) {
        appends.push_back(Append{o.id, RegionShardOf(b.origin.gateway_id), b.entries, std::move(plan.fresh),
                                 series_ids.data() + ids_from[i]});
      }
      res.high_water = o.current = plan.new_high_water;
      o.spans = std::move(plan.new_spans);
      o.priority = plan.new_priority;
    }
    if (!appends.empty()) ES_RETURN_IF_ERROR(AppendToFeed(appends));
    std::string ids = "{", olds = "{", news = "{";
    std::vector<std::string> old_spans, new_spans, old_priority, new_priority;
    int changed = 0;
    for (const auto& [name, o] : origins) {
      if (o.current == o.read && o.spans == o.spans_read && o.priority == o.priority_read) continue;
      const char* sep = changed++ ? "," : "";
      ids += sep + std::to_string(o.id);
      olds += sep + std::to_string(o.read);
      news += sep + std::to_string(o.current);
      old_spans.push_back(SpansLiteral(o.spans_read));
      new_spans.push_back(SpansLiteral(o.spans));
      old_priority.push_back(PriorityLiteral(o.priority_read));
      new_priority.push_back(PriorityLiteral(o.priority));
    }
    if (changed > 0) {
      // The compare-and-set: a mark, spans or priority marks another
      // writer moved since they were read match no row (READ COMMITTED
      // re-checks the WHERE on the row's newest version).
      PgResult u;
      ES_RETURN_IF_ERROR(conn_->Query(
          "UPDATE es_origins AS o SET high_water = v.new, held_spans = v.new_spans::bigint[], priority_held = "
          "v.new_priority::bigint[] FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], "
          "$6::text[], $7::text[]) AS v(id, old, new, old_spans, new_spans, old_priority, new_priority) WHERE "
          "o.id = v.id AND o.high_water = v.old AND o.held_spans = v.old_spans::bigint[] AND o.priority_held = "
          "v.old_priority::bigint[]",
          {ids + "}", olds + "}", news + "}", PgTextArray(old_spans), PgTextArray(new_spans),
           PgTextArray(old_priority), PgTextArray(new_priority)},
          &u));
      if (u.affected() != changed) {
        return Status::Conflict("another writer moved a high-water mark, held spans or priority marks meanwhile");
      }
    }
    std::string wm_ids = "{", wm_times = "{";
    int wm_changed = 0;
    for (const auto& [name, o] : origins) {
      if (o.complete <= o.complete_read) continue;
      const char* sep = wm_changed++ ? "," : "";
      wm_ids += sep + std::to_string(o.id);
      wm_times += sep + std::to_string(o.complete);
    }
    if (wm_changed > 0) {
      // Only ever raised: another writer's later watermark for the origin
      // stays. The shard's counter is ours while we hold its row (an
      // append), else the last one committed: either is at or past every
      // entry of the origin the watermark covers.
      PgResult u;
      ES_RETURN_IF_ERROR(conn_->Query(
          "UPDATE es_origins AS o SET complete_ms = v.t, complete_seq = (SELECT f.seq FROM es_feed_shards f WHERE "
          "f.shard = o.shard) FROM unnest($1::bigint[], $2::bigint[]) AS v(id, t) WHERE o.id = v.id AND "
          "o.complete_ms < v.t",
          {wm_ids + "}", wm_times + "}"}, &u));
    }
    return conn_->Exec("COMMIT");
  }

  template <typename Append>
  Status AppendToFeed(const std::vector<Append>& appends) REQUIRES(mu_) {
    std::map<int, int64_t> count;  // shard -> rows it gets
    for (const Append& a : appends) count[a.shard] += static_cast<int64_t>(a.fresh.size());
    std::string shards = "{", adds = "{";
    for (const auto& [shard, n] : count) {
      if (shards.size() > 1) shards += ',', adds += ',';
      shards += std::to_string(shard);
      adds += std::to_string(n);
    }
    // The per-shard order: these row locks hold until commit (see the top
    // of this file). Locked in shard order, then moved.
    PgResult locked;
    ES_RETURN_IF_ERROR(conn_->Query(
        "SELECT shard, seq FROM es_feed_shards WHERE shard = ANY($1::int[]) ORDER BY shard FOR UPDATE",
        {shards + "}"}, &locked));
    if (locked.rows() != static_cast<int>(count.size())) return Status::Corruption("es_feed_shards lacks a shard");
    std::map<int, uint64_t> next;  // shard -> the last number given so far
    for (int i = 0; i < locked.rows(); ++i) {
      next[static_cast<int>(locked.Int(i, 0))] = static_cast<uint64_t>(locked.Int(i, 1));
    }
    ES_RETURN_IF_ERROR(conn_->Query(
        "UPDATE es_feed_shards f SET seq = f.seq + v.n FROM unnest($1::int[], $2::bigint[]) AS v(shard, n) "
        "WHERE f.shard = v.shard",
        {shards + "}", adds + "}"}));
    // One chunk per origin of the group (its batches' new entries follow
    // each other), numbered on in its shard; the rows go in numbering
    // order, so their seq (drawn by the COPY, row by row) follows it too.
    // A chunk holds increasing LSNs: an origin's live lane applied ahead of
    // its backlog in one group starts a chunk of its own.
    const int64_t now = clock_->WallMillis();
    std::vector<PgChunkRow> rows;
    rows.reserve(appends.size());
    std::map<int64_t, size_t> open;  // origin id -> its chunk being filled in rows
    for (const Append& a : appends) {
      for (size_t j = 0; j < a.fresh.size(); ++j) {
        const size_t k = a.fresh[j];
        auto it = open.find(a.origin_id);
        if (it == open.end() || rows[it->second].entries.size() >= kMaxRemoteChunkEntries ||
            rows[it->second].entries.back().olsn >= (*a.entries)[k].lsn) {
          rows.emplace_back();
          rows.back().shard = a.shard;
          rows.back().origin_id = a.origin_id;
          rows.back().applied_ms = now;
          rows.back().entries.reserve(std::min(a.fresh.size() - j, kMaxRemoteChunkEntries));
          it = open.insert_or_assign(a.origin_id, rows.size() - 1).first;
        }
        PgChunkRow& row = rows[it->second];
        row.entries.emplace_back();
        PgFeedDictionary::ToChunkEntry((*a.entries)[k], a.series_ids[k], &row.entries.back());
      }
    }
    for (PgChunkRow& row : rows) {
      next[row.shard] += row.entries.size();
      row.last_seq = next[row.shard];
    }
    return WriteChunkRows(conn_.get(), rows);
  }

  Mutex mu_;  // one connection, one user at a time
  const std::unique_ptr<PgConn> conn_ PT_GUARDED_BY(mu_);
  PgFeedDictionary dict_ GUARDED_BY(mu_);
  const HubStoreOptions options_;
  Clock* const clock_;
  std::string epoch_;  // set by Init, before the store is shared; read-only after
  int found_schema_ GUARDED_BY(mu_) = 0;  // the schema version Init found; 0 = a new database
};

}  // namespace

bool HavePostgres() { return true; }

Status ConnectPostgres(const HubStoreOptions& options, std::unique_ptr<PgConn>* conn) {
  PgConnectOptions co;
  co.uri = options.location;
  co.connect_timeout_s = options.connect_timeout_s;
  co.application_name = options.application_name;
  if (!options.password_file.empty()) {
    Status st = ReadFile(options.password_file, &co.password);
    if (!st.ok()) return Status::InvalidArgument("PostgreSQL password file: " + st.ToString());
    co.password = co.password.substr(0, co.password.find_first_of("\r\n"));
    if (co.password.empty()) return Status::InvalidArgument("PostgreSQL password file " + options.password_file + " is empty");
  }
  return PgConn::Connect(co, conn);
}

Status OpenPostgresHubStore(const HubStoreOptions& options, std::unique_ptr<HubStore>* store) {
  std::unique_ptr<PgConn> conn;
  ES_RETURN_IF_ERROR(ConnectPostgres(options, &conn));
  auto s = std::make_unique<PgHubStore>(std::move(conn), options);
  ES_RETURN_IF_ERROR(s->Init());
  // The location never holds a password (PgConn::Connect refuses one).
  ES_LOG(kInfo, "hub store {} open as {}: {}", options.location, options.application_name, s->OpenSummary());
  *store = std::move(s);
  return Status::Ok();
}

}  // namespace edgesync

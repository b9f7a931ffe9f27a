#include "store/pg/pg_feed_chunks.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <unordered_set>

#include "store/feed_cursor.h"

namespace edgesync {

namespace {

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

size_t PgFeedDictionary::SeriesKeyHash::operator()(const SeriesKey& k) const {
  std::hash<std::string_view> h;
  size_t v = h(k.device);
  v ^= h(k.metric) + 0x9e3779b97f4a7c15ULL + (v << 6) + (v >> 2);
  v ^= h(k.unit) + 0x9e3779b97f4a7c15ULL + (v << 6) + (v >> 2);
  return v;
}

PgFeedDictionary::SeriesKey PgFeedDictionary::KeyOf(const ChangeEntry& e) {
  if (e.kind == ChangeEntry::Kind::kReading) return {e.reading.device_id, e.reading.metric, e.reading.unit};
  if (e.kind == ChangeEntry::Kind::kTimeCorrection) return {};  // a time correction's series: no device
  return {e.device.device_id, std::string_view(), std::string_view()};  // a device record's series
}

void PgFeedDictionary::Add(int64_t id, Series s) {
  auto [it, fresh] = series_.try_emplace(id, std::move(s));
  if (!fresh) return;  // its key is in series_ids_ already, viewing these strings
  const Series& held = it->second;
  series_ids_.insert_or_assign(SeriesKey{held.device_id, held.metric, held.unit}, id);
}

void PgFeedDictionary::AppendKeyPart(std::string_view part, std::string* out) {
  const size_t n = std::min<size_t>(part.size(), 0xffff);  // keys are far shorter; a longer one never matches
  out->push_back(static_cast<char>(n & 0xff));
  out->push_back(static_cast<char>(n >> 8));
  out->append(part.data(), n);
}

bool PgFeedDictionary::MatchKeyPart(std::string_view part, const std::string& keys, size_t* at) {
  if (*at + 2 > keys.size()) return false;
  const size_t n = static_cast<unsigned char>(keys[*at]) | static_cast<size_t>(static_cast<unsigned char>(keys[*at + 1])) << 8;
  if (n != part.size() || *at + 2 + n > keys.size() || keys.compare(*at + 2, n, part.data(), n) != 0) return false;
  *at += 2 + n;
  return true;
}

Status PgFeedDictionary::Intern(PgConn* conn, const std::vector<const ChangeEntry*>& entries,
                                std::vector<int64_t>* ids, const std::vector<Run>* runs) {
  ids->assign(entries.size(), 0);
  // Each sender's last layout, where it still holds: the entries it names
  // need no lookup.
  std::vector<bool> known(entries.size(), false);
  std::vector<const Run*> relayout;  // runs whose layout changed
  if (runs != nullptr) {
    for (const Run& run : *runs) {
      auto found = layouts_.find(*run.sender);
      const Layout* layout = found == layouts_.end() ? nullptr : &found->second;
      size_t at = 0;
      bool same = layout != nullptr && layout->ids.size() == run.end - run.begin;
      for (size_t i = run.begin; same && i < run.end; ++i) {
        const SeriesKey k = KeyOf(*entries[i]);
        same = MatchKeyPart(k.device, layout->keys, &at) && MatchKeyPart(k.metric, layout->keys, &at) &&
               MatchKeyPart(k.unit, layout->keys, &at);
        if (!same) break;
        (*ids)[i] = layout->ids[i - run.begin];
        known[i] = true;
      }
      if (!same) relayout.push_back(&run);
    }
  }
  std::vector<size_t> missing;  // entries whose series is not cached
  std::vector<std::string> devices, metrics, units;
  std::unordered_set<SeriesKey, SeriesKeyHash> wanted;  // views the entries' strings
  for (size_t i = 0; i < entries.size(); ++i) {
    if (known[i]) continue;
    const SeriesKey k = KeyOf(*entries[i]);
    auto it = series_ids_.find(k);
    if (it != series_ids_.end()) {
      (*ids)[i] = it->second;
      continue;
    }
    missing.push_back(i);
    if (!wanted.insert(k).second) continue;
    devices.emplace_back(k.device);
    metrics.emplace_back(k.metric);
    units.emplace_back(k.unit);
  }
  // A series another writer inserts at the same moment is waited for by ON
  // CONFLICT but missing from this statement's snapshot: the next attempt
  // sees it.
  for (int attempt = 0; attempt < 3 && !devices.empty(); ++attempt) {
    PgResult r;
    ES_RETURN_IF_ERROR(conn->Query(
        "WITH want(d, m, u) AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])), "
        "ins AS (INSERT INTO es_series (device_id, metric, unit) SELECT d, m, u FROM want ON CONFLICT DO NOTHING "
        "RETURNING id, device_id, metric, unit) "
        "SELECT id, device_id, metric, unit FROM ins UNION ALL SELECT s.id, s.device_id, s.metric, s.unit "
        "FROM es_series s JOIN want ON s.device_id = want.d AND s.metric = want.m AND s.unit = want.u",
        {PgTextArray(devices), PgTextArray(metrics), PgTextArray(units)}, &r));
    for (int i = 0; i < r.rows(); ++i) Add(r.Int(i, 0), Series{r.Text(i, 1), r.Text(i, 2), r.Text(i, 3)});
    size_t kept = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (series_ids_.count(SeriesKey{devices[i], metrics[i], units[i]})) continue;
      // Never a string moved onto itself: libstdc++ leaves a short one
      // empty, and the next attempt interned a series of device "" instead
      // (seen when another writer inserted the same series at that moment).
      if (kept != i) {
        devices[kept] = std::move(devices[i]);
        metrics[kept] = std::move(metrics[i]);
        units[kept] = std::move(units[i]);
      }
      ++kept;
    }
    devices.resize(kept);
    metrics.resize(kept);
    units.resize(kept);
  }
  if (!devices.empty()) return Status::Conflict("a series another writer was inserting is not visible yet");
  for (size_t i : missing) {
    auto it = series_ids_.find(KeyOf(*entries[i]));
    if (it == series_ids_.end()) {
      // A chunk naming no series would be unreadable for every reader.
      const SeriesKey k = KeyOf(*entries[i]);
      return Status::Corruption("region feed: series (" + std::string(k.device) + ", " + std::string(k.metric) +
                                ", " + std::string(k.unit) + ") of entry " + std::to_string(entries[i]->lsn) +
                                " has no id");
    }
    (*ids)[i] = it->second;
  }
  if (!relayout.empty() && layouts_.size() + relayout.size() > kMaxLayouts) layouts_.clear();
  for (const Run* run : relayout) {
    Layout& layout = layouts_[*run->sender];
    layout.keys.clear();
    layout.ids.assign(ids->begin() + static_cast<std::ptrdiff_t>(run->begin),
                      ids->begin() + static_cast<std::ptrdiff_t>(run->end));
    for (size_t i = run->begin; i < run->end; ++i) {
      const SeriesKey k = KeyOf(*entries[i]);
      AppendKeyPart(k.device, &layout.keys);
      AppendKeyPart(k.metric, &layout.keys);
      AppendKeyPart(k.unit, &layout.keys);
    }
  }
  return Status::Ok();
}

void PgFeedDictionary::ToChunkEntry(const ChangeEntry& e, int64_t series_id, RemoteChunkEntry* c) {
  FromChangeEntry(e, series_id, c);
}

namespace {
// The ids not cached yet as a bigint[] literal; "" when there are none.
template <typename Cache>
std::string MissingIds(const std::vector<int64_t>& ids, const Cache& cache) {
  std::string want = "{";
  for (int64_t id : ids) {
    if (cache.count(id)) continue;
    if (want.size() > 1) want += ',';
    AppendInt(&want, id);
  }
  return want.size() > 1 ? want + "}" : std::string();
}
}  // namespace

Status PgFeedDictionary::Resolve(PgConn* conn, const std::vector<int64_t>& series_ids,
                                 const std::vector<int64_t>& origin_ids) {
  std::string want = MissingIds(series_ids, series_);
  if (!want.empty()) {
    PgResult r;
    ES_RETURN_IF_ERROR(
        conn->Query("SELECT id, device_id, metric, unit FROM es_series WHERE id = ANY($1::bigint[])", {want}, &r));
    for (int i = 0; i < r.rows(); ++i) Add(r.Int(i, 0), Series{r.Text(i, 1), r.Text(i, 2), r.Text(i, 3)});
  }
  want = MissingIds(origin_ids, origins_);
  if (!want.empty()) {
    PgResult r;
    ES_RETURN_IF_ERROR(
        conn->Query("SELECT id, gateway_id, epoch FROM es_origins WHERE id = ANY($1::bigint[])", {want}, &r));
    for (int i = 0; i < r.rows(); ++i) origins_[r.Int(i, 0)] = Origin{r.Text(i, 1), r.Text(i, 2)};
  }
  return Status::Ok();
}

Status PgFeedDictionary::FromChunkEntry(const RemoteChunkEntry& c, ChangeEntry* e) const {
  auto it = series_.find(c.series);
  if (it == series_.end()) {
    return Status::Corruption("region feed chunk names unknown series " + std::to_string(c.series));
  }
  const Series& s = it->second;
  ToChangeEntry(c, s.device_id, s.metric, s.unit, e);
  return Status::Ok();
}

Status PgFeedDictionary::OriginOf(int64_t origin_id, Origin* origin) const {
  auto it = origins_.find(origin_id);
  if (it == origins_.end()) {
    return Status::Corruption("region feed chunk of unknown origin " + std::to_string(origin_id));
  }
  *origin = it->second;
  return Status::Ok();
}

void PgFeedDictionary::Forget() {
  layouts_.clear();
  series_ids_.clear();
  series_.clear();
  origins_.clear();
}

Status WriteChunkRows(PgConn* conn, const std::vector<PgChunkRow>& rows) {
  if (rows.empty()) return Status::Ok();
  const bool with_seq = rows.front().seq != 0;
  static const char kHex[] = "0123456789abcdef";
  std::string copy, block;
  copy.reserve(rows.size() * 256);
  for (const PgChunkRow& row : rows) {
    EncodeRemoteChunk(row.entries, &block);
    AppendInt(&copy, row.shard);
    copy += '\t';
    AppendInt(&copy, static_cast<int64_t>(row.last_seq));
    copy += '\t';
    AppendInt(&copy, static_cast<int64_t>(row.entries.size()));
    copy += '\t';
    if (with_seq) {
      AppendInt(&copy, row.seq);
      copy += '\t';
    }
    AppendInt(&copy, row.origin_id);
    copy += '\t';
    AppendInt(&copy, static_cast<int64_t>(row.entries.front().olsn));
    copy += '\t';
    AppendInt(&copy, static_cast<int64_t>(row.entries.back().olsn));
    copy += '\t';
    AppendInt(&copy, row.applied_ms);
    copy += "\t\\\\x";  // bytea's hex form, its backslash escaped for COPY
    const size_t at = copy.size();
    copy.resize(at + 2 * block.size());
    char* hex = &copy[at];
    for (unsigned char b : block) {
      *hex++ = kHex[b >> 4];
      *hex++ = kHex[b & 15];
    }
    copy += '\n';
  }
  return conn->CopyIn(with_seq ? "COPY es_feed_chunks (shard, last_seq, n, seq, origin, first_olsn, last_olsn, "
                                 "applied_ms, data) FROM STDIN"
                               : "COPY es_feed_chunks (shard, last_seq, n, origin, first_olsn, last_olsn, applied_ms, "
                                 "data) FROM STDIN",
                      copy);
}

Status DecodeByteaHex(std::string_view text, std::string* bytes) {
  bytes->clear();
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2 != 0) {
    return Status::Corruption("region feed chunk: not a hex bytea");
  }
  bytes->reserve((text.size() - 2) / 2);
  for (size_t i = 2; i < text.size(); i += 2) {
    const int hi = HexDigit(text[i]), lo = HexDigit(text[i + 1]);
    if (hi < 0 || lo < 0) return Status::Corruption("region feed chunk: not a hex bytea");
    *bytes += static_cast<char>(hi << 4 | lo);
  }
  return Status::Ok();
}

Status ReadChunkPage(PgConn* conn, PgFeedDictionary* dict, const ShardPositions& after, size_t max_entries,
                     const std::string& shards, const std::string& afters, FeedRead* page) {
  PgResult r;
  ES_RETURN_IF_ERROR(conn->Query(
      "SELECT shard, last_seq, n, origin, data, tail FROM (SELECT x.*, sum(x.fresh) OVER (ORDER BY x.seq) "
      "AS fresh_so_far "
      "FROM unnest($1::int[], $2::bigint[]) AS p(shard, after) CROSS JOIN LATERAL ("
      "SELECT y.shard, y.last_seq, y.n, y.seq, y.origin, y.data, false AS tail, "
      "y.last_seq - GREATEST(p.after, y.last_seq - y.n) AS fresh FROM es_feed_chunks y "
      "WHERE y.shard = p.shard AND y.last_seq > p.after AND y.last_seq <= p.after + $3 "
      "UNION ALL (SELECT y.shard, y.last_seq, y.n, y.seq, y.origin, y.data, true, "
      "y.last_seq - GREATEST(p.after, y.last_seq - y.n) FROM es_feed_chunks y "
      "WHERE y.shard = p.shard AND y.last_seq > p.after + $3 ORDER BY y.last_seq LIMIT 1)) x) c "
      "WHERE c.fresh_so_far - c.fresh < $3 ORDER BY c.seq",
      {shards, afters, std::to_string(max_entries)}, &r));
  std::vector<std::vector<RemoteChunkEntry>> chunks(static_cast<size_t>(r.rows()));
  std::vector<int64_t> series, origins;
  std::string block;
  for (int i = 0; i < r.rows(); ++i) {
    std::vector<RemoteChunkEntry>& chunk = chunks[static_cast<size_t>(i)];
    const std::string where = "region feed chunk " + r.Text(i, 0) + "/" + r.Text(i, 1);
    ES_RETURN_IF_ERROR(DecodeByteaHex(r.Text(i, 4), &block).Annotate(where));
    ES_RETURN_IF_ERROR(DecodeRemoteChunk(block, kMaxRemoteChunkEntries, &chunk).Annotate(where));
    if (static_cast<int64_t>(chunk.size()) != r.Int(i, 2)) return Status::Corruption(where + ": count differs");
    for (const RemoteChunkEntry& c : chunk) series.push_back(c.series);
    origins.push_back(r.Int(i, 3));
  }
  ES_RETURN_IF_ERROR(dict->Resolve(conn, series, origins));
  for (int i = 0; i < r.rows() && page->entries.size() < max_entries; ++i) {
    const int shard = static_cast<int>(r.Int(i, 0));
    if (shard < 0 || shard >= kRegionShards) return Status::Corruption("region feed chunk of shard out of range");
    const std::vector<RemoteChunkEntry>& chunk = chunks[static_cast<size_t>(i)];
    const uint64_t first = static_cast<uint64_t>(r.Int(i, 1)) - chunk.size() + 1;
    Origin origin;
    ES_RETURN_IF_ERROR(dict->OriginOf(r.Int(i, 3), &origin));
    for (size_t k = 0; k < chunk.size() && page->entries.size() < max_entries; ++k) {
      if (first + k <= after[shard]) continue;  // a position inside the chunk
      RegionFeedEntry e;
      e.shard = shard;
      e.seq = first + k;
      e.remote.origin = origin;
      e.remote.origin_lsn = chunk[k].olsn;
      ES_RETURN_IF_ERROR(dict->FromChunkEntry(chunk[k], &e.remote.entry));
      page->next[shard] = e.seq;
      page->entries.push_back(std::move(e));
    }
    // Numbers with holes (rows of a schema-2 feed kept theirs): a shard
    // whose last fetched chunk was read to its end may have more chunks
    // applied before the other shards' next ones; the page ends here, so
    // the merge stays in apply order.
    if (r.Text(i, 5) == "t" && page->next[shard] == static_cast<uint64_t>(r.Int(i, 1))) break;
  }
  return Status::Ok();
}

Status MigrateFeedToChunks(PgConn* conn, PgFeedDictionary* dict) {
  // Rows in apply order, a page at a time; a run may continue across pages.
  constexpr int kPage = 20000;
  constexpr size_t kFlushRows = 2000;
  std::vector<PgChunkRow> out;
  PgChunkRow run;
  int64_t run_row_seq = 0;  // the seq of the run's last row
  int64_t after = 0;
  Status st = [&]() -> Status {
    for (;;) {
      PgResult r;
      ES_RETURN_IF_ERROR(conn->Query(
          "SELECT seq, origin, shard, shard_seq, olsn, kind, device_id, metric, unit, ts, value, quality, name, "
          "location, default_unit, applied_ms FROM es_region_feed WHERE seq > $1 ORDER BY seq LIMIT " +
              std::to_string(kPage),
          {std::to_string(after)}, &r));
      if (r.rows() == 0) break;
      std::vector<ChangeEntry> entries(static_cast<size_t>(r.rows()));
      std::vector<const ChangeEntry*> pointers;
      for (int i = 0; i < r.rows(); ++i) {
        ChangeEntry& c = entries[static_cast<size_t>(i)];
        const int64_t kind = r.Int(i, 5), olsn = r.Int(i, 4), shard = r.Int(i, 2);
        if (kind < 0 || kind > 2 || olsn <= 0 || shard < 0 || shard >= kRegionShards || r.Int(i, 3) <= 0) {
          return Status::Corruption("es_region_feed row at seq " + r.Text(i, 0) + " is malformed");
        }
        c.lsn = static_cast<uint64_t>(olsn);
        c.kind = static_cast<ChangeEntry::Kind>(kind);
        if (c.kind == ChangeEntry::Kind::kReading) {
          c.reading = Reading{r.Text(i, 6), r.Text(i, 7), r.Int(i, 9), r.Double(i, 10), r.Text(i, 8),
                              static_cast<uint32_t>(r.Int(i, 11))};
        } else {
          c.device = DeviceRecord{r.Text(i, 6), r.Text(i, 12), r.Text(i, 13), r.Text(i, 14),
                                  c.kind == ChangeEntry::Kind::kDeviceDelete};
        }
        pointers.push_back(&c);
      }
      std::vector<int64_t> series_ids;
      ES_RETURN_IF_ERROR(dict->Intern(conn, pointers, &series_ids));
      for (int i = 0; i < r.rows(); ++i) {
        const int64_t seq = r.Int(i, 0), origin = r.Int(i, 1), applied = r.Int(i, 15);
        const int shard = static_cast<int>(r.Int(i, 2));
        const uint64_t shard_seq = static_cast<uint64_t>(r.Int(i, 3));
        const ChangeEntry& c = entries[static_cast<size_t>(i)];
        const bool joins = !run.entries.empty() && origin == run.origin_id && shard == run.shard &&
                           seq == run_row_seq + 1 && shard_seq == run.last_seq + 1 && applied == run.applied_ms &&
                           c.lsn > run.entries.back().olsn && run.entries.size() < kMaxRemoteChunkEntries;
        if (!joins) {
          if (!run.entries.empty()) out.push_back(std::move(run));
          run = PgChunkRow{};
          run.shard = shard;
          run.seq = seq;
          run.origin_id = origin;
          run.applied_ms = applied;
        }
        run.last_seq = shard_seq;
        run_row_seq = seq;
        run.entries.emplace_back();
        PgFeedDictionary::ToChunkEntry(c, series_ids[static_cast<size_t>(i)], &run.entries.back());
      }
      after = r.Int(r.rows() - 1, 0);
      if (out.size() >= kFlushRows) {
        ES_RETURN_IF_ERROR(WriteChunkRows(conn, out));
        out.clear();
      }
    }
    if (!run.entries.empty()) out.push_back(std::move(run));
    ES_RETURN_IF_ERROR(WriteChunkRows(conn, out));
    return conn->Exec("DROP TABLE es_region_feed");
  }();
  if (!st.ok()) dict->Forget();
  return st;
}

}  // namespace edgesync

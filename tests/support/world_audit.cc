// The audit of a stopped World: what the sensors saw acknowledged, held
// against every store (gateways' change logs and read views through the
// Store API read only, hubs' region feeds through the hub store interface:
// the SQLite file or the region's PostgreSQL database), plus each store's
// own integrity check: SQLite's, run by the sqlite3 program, and for a
// database amcheck and the schema's invariants, run by psql.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <tuple>

#include "store/store.h"
#include "tests/support/world.h"

namespace edgesync::test {
namespace {

// A reading as the sensors made it: gateway, device index, value.
struct Key {
  int g, d;
  int64_t v;
  bool operator<(const Key& o) const { return std::tie(g, d, v) < std::tie(o.g, o.d, o.v); }
};

using OriginLsn = std::pair<std::string, uint64_t>;

// Which of the world's gateways and devices a device id names ("gw3-d1").
bool ParseDevice(const std::string& id, int* g, int* d) {
  return std::sscanf(id.c_str(), "gw%d-d%d", g, d) == 2;
}

// An order-independent summary of a set of (origin, LSN, device): its size,
// the entries per quarter of the partition hash space, and a sum of mixed
// hashes. Two stores holding the same set have the same summary.
class SetSummary {
 public:
  void Add(const std::string& origin, uint64_t lsn, const std::string& device) {
    ++count_;
    ++quarters_[PartitionHash(device) >> 62];
    uint64_t h = std::hash<std::string>{}(origin) ^ (lsn * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    sum_ += h;
  }
  std::string ToString() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%lld entries, per range [%lld %lld %lld %lld], sum %016llx",
                  static_cast<long long>(count_), static_cast<long long>(quarters_[0]),
                  static_cast<long long>(quarters_[1]), static_cast<long long>(quarters_[2]),
                  static_cast<long long>(quarters_[3]), static_cast<unsigned long long>(sum_));
    return buf;
  }

 private:
  int64_t count_ = 0;
  int64_t quarters_[4] = {0, 0, 0, 0};
  uint64_t sum_ = 0;
};

std::unique_ptr<Store> OpenReadOnly(const std::string& path, AuditResult* out) {
  StoreOptions o;
  o.path = path;
  o.create_if_missing = false;
  o.read_only = true;
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (!st.ok()) {
    out->problems.push_back("opening " + path + ": " + st.ToString());
    ++out->integrity_failures;
    return nullptr;
  }
  return store;
}

// SQLite's own verdict, from the sqlite3 program opening the file read only.
bool IntegrityOk(const std::string& path, std::string* said) {
  std::string cmd = "sqlite3 -readonly '" + path + "' 'PRAGMA integrity_check;' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char buf[512];
  said->clear();
  while (std::fgets(buf, sizeof buf, p) != nullptr) *said += buf;
  int rc = ::pclose(p);
  return rc == 0 && *said == "ok\n";
}

void Note(AuditResult* out, const std::string& what) {
  if (out->problems.size() < 20) out->problems.push_back(what);
}

// A region database's integrity, from psql: every query must print "0".
// amcheck's bt_index_check with heapallindexed finds an index entry missing
// for a table row or a damaged B-tree (what PRAGMA integrity_check is to
// SQLite); the others are the schema's own invariants, which the apply's
// compare-and-set and the shard counters' row locks are there to keep.
bool DatabaseIntegrityOk(Postgres* db, std::string* said) {
  const std::pair<const char*, const char*> checks[] = {
      {"amcheck (B-tree indexes not checked, of the 10 of the schema)",
       "CREATE EXTENSION IF NOT EXISTS amcheck; "
       "WITH checked AS MATERIALIZED (SELECT bt_index_check(i.indexrelid, true) FROM pg_index i "
       "JOIN pg_class t ON t.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid "
       "JOIN pg_am a ON a.oid = ic.relam WHERE t.relname LIKE 'es\\_%' AND a.amname = 'btree') "
       "SELECT greatest(10 - count(*), 0) FROM checked"},
      // The compare-and-set on the mark is what keeps an origin's chunks
      // apart (no index per entry): no two of its chunks may share an LSN.
      {"(origin, LSN) held twice (overlapping chunks of one origin)",
       "SELECT count(*) FROM (SELECT first_olsn, lag(last_olsn) OVER (PARTITION BY origin ORDER BY first_olsn) "
       "AS prev FROM es_feed_chunks) c WHERE c.first_olsn <= c.prev"},
      {"feed chunks of an unknown origin",
       "SELECT count(*) FROM es_feed_chunks f WHERE NOT EXISTS (SELECT 1 FROM es_origins o WHERE o.id = f.origin)"},
      {"feed chunks above their origin's high-water mark",
       "SELECT count(*) FROM es_feed_chunks f JOIN es_origins o ON o.id = f.origin WHERE f.last_olsn > o.high_water"},
      {"feed chunks whose shard numbers overlap, lie at or below the pruned mark or pass the counter",
       "SELECT count(*) FROM (SELECT c.last_seq, c.last_seq - c.n AS before, lag(c.last_seq) OVER (PARTITION BY "
       "c.shard ORDER BY c.last_seq) AS prev, s.seq AS head, s.pruned FROM es_feed_chunks c JOIN es_feed_shards s "
       "ON s.shard = c.shard) x WHERE x.before < x.prev OR x.before < x.pruned OR x.last_seq > x.head"},
      {"feed chunks holding more entries than their LSN span",
       "SELECT count(*) FROM es_feed_chunks WHERE last_olsn - first_olsn + 1 < n"},
  };
  said->clear();
  bool ok = true;
  for (const auto& [what, sql] : checks) {
    std::string out;
    if (!db->Query("hub", sql, &out) || out != "0\n") {
      ok = false;
      *said += std::string(what) + ": " + out;
    }
  }
  return ok;
}

}  // namespace

nlohmann::json AuditResult::ToJson() const {
  return {{"accepted", accepted},
          {"stored", stored},
          {"lost", lost},
          {"lost_at_local_broker_kill", lost_at_local_broker_kill},
          {"only_in_wiped_hub", only_in_wiped_hub},
          {"pruned_before_refill", pruned_before_refill},
          {"duplicated", duplicated},
          {"region_duplicates", region_duplicates},
          {"lsn_gaps", lsn_gaps},
          {"pruned_after_ack", pruned_after_ack},
          {"read_view_missing", read_view_missing},
          {"read_view_missing_wiped", read_view_missing_wiped},
          {"extras", extras},
          {"integrity_failures", integrity_failures},
          {"views_differ", views_differ},
          {"summaries", summaries},
          {"problems", problems},
          {"ok", ok()}};
}

AuditResult Audit(const World& world, const WipedEntries& wiped) {
  AuditResult out;
  const int G = world.options().gateways, R = world.options().regions;

  // 1. What the sensors saw acknowledged, and when.
  std::map<Key, int64_t> accepted;
  for (int g = 0; g < G; ++g) {
    std::ifstream in(world.ack_log(g));
    int d;
    long long v, at;
    while (in >> d >> v >> at) accepted[{g, d, v}] = at;
  }
  out.accepted = static_cast<int64_t>(accepted.size());

  // 2. Each gateway's change log: reading -> LSNs; LSNs 1..last.
  std::vector<std::string> origin_of(G);
  std::map<Key, std::vector<uint64_t>> local;
  std::map<OriginLsn, Key> by_lsn;
  std::vector<SetSummary> view_summary(G);
  std::vector<std::set<uint64_t>> held_lsns(G);
  std::vector<uint64_t> last_lsn(G, 0), acked_lsn(G, 0);
  std::vector<int64_t> dropped_acked(G, 0);
  for (int g = 0; g < G; ++g) {
    auto store = OpenReadOnly(world.gateway_store(g), &out);
    if (!store) continue;
    origin_of[g] = store->origin().ToString();
    StoreStats stats;
    store->Stats(&stats);
    std::set<uint64_t> lsns;
    std::vector<ChangeEntry> page;
    uint64_t after = 0;
    do {
      page.clear();
      if (!store->ReadLog(after, 10000, &page).ok()) break;
      for (const ChangeEntry& e : page) {
        after = e.lsn;
        lsns.insert(e.lsn);
        if (e.kind != ChangeEntry::Kind::kReading) continue;
        int eg, ed;
        if (!ParseDevice(e.reading.device_id, &eg, &ed) || eg != g) {
          Note(&out, world.gateway_id(g) + " holds a local reading of a foreign device " + e.reading.device_id);
          continue;
        }
        Key k{g, ed, static_cast<int64_t>(e.reading.value)};
        local[k].push_back(e.lsn);
        by_lsn[{origin_of[g], e.lsn}] = k;
        view_summary[g].Add(origin_of[g], e.lsn, e.reading.device_id);
      }
    } while (!page.empty());
    held_lsns[g] = std::move(lsns);
    last_lsn[g] = stats.last_lsn;
    acked_lsn[g] = stats.acked_lsn;
    dropped_acked[g] = stats.dropped_acked;
  }

  // 3. Every region's feed: (origin, LSN) -> copies; the union of regions.
  std::map<OriginLsn, int> in_regions;
  std::map<OriginLsn, std::string> region_device;
  std::map<Key, OriginLsn> held_by_key;  // readings the regions (or the wiped hub) held
  SetSummary regions_summary;
  for (int r = 0; r < R; ++r) {
    std::unique_ptr<HubStore> store;
    Status st = world.region(r).OpenHubStore(HubOpen::kReadOnly, &store);
    if (!st.ok()) {
      ++out.integrity_failures;
      Note(&out, "opening the hub store of " + world.region_name(r) + ": " + st.ToString());
      continue;
    }
    std::map<OriginLsn, int> held;
    std::map<Key, int> readings;
    SetSummary summary;
    ForEachFeedEntry(store.get(), [&](const RegionFeedEntry& e) {
      OriginLsn ol{e.remote.origin.ToString(), e.remote.origin_lsn};
      if (++held[ol] == 1) {
        summary.Add(ol.first, ol.second, e.remote.entry.device_id());
        if (in_regions[ol]++ == 0) {
          regions_summary.Add(ol.first, ol.second, e.remote.entry.device_id());
          region_device[ol] = e.remote.entry.device_id();
        }
      }
      int eg, ed;
      if (e.remote.entry.kind == ChangeEntry::Kind::kReading && ParseDevice(e.remote.entry.reading.device_id, &eg, &ed)) {
        Key k{eg, ed, static_cast<int64_t>(e.remote.entry.reading.value)};
        ++readings[k];
        held_by_key.emplace(k, ol);
        auto it = by_lsn.find(ol);
        if (it != by_lsn.end() && (it->second.g != k.g || it->second.d != k.d || it->second.v != k.v)) {
          ++out.lost;
          Note(&out, world.region_name(r) + " holds " + ol.first + " LSN " + std::to_string(ol.second) +
                         " with other content than its gateway");
        }
      }
    });
    for (const auto& [ol, n] : held) {
      if (n > 1) {
        out.region_duplicates += n - 1;
        Note(&out, world.region_name(r) + " holds " + ol.first + " LSN " + std::to_string(ol.second) + " " +
                       std::to_string(n) + " times");
      }
    }
    for (const auto& [k, n] : readings) {
      if (n > 1) out.region_duplicates += n - 1;
    }
    out.summaries[world.region_name(r)] = summary.ToString();
  }
  out.summaries["regions"] = regions_summary.ToString();
  out.duplicated += out.region_duplicates;
  for (const auto& [ol, reading] : wiped) {
    int eg, ed;
    if (ParseDevice(reading.first, &eg, &ed)) held_by_key.emplace(Key{eg, ed, static_cast<int64_t>(reading.second)}, ol);
  }

  // LSNs 1..last of each change log. The gateway whose filesystem fills up
  // may make room by dropping its oldest readings that a region acknowledged
  // (Store: acknowledged data goes first): such an LSN is missing from its
  // log, held by a region (or by the wiped hub), and counted by the store
  // (dropped_acked; its retention prunes nothing in a soak: no size limit,
  // no free-space floor, and the clock never steps past the retention age).
  // Any other hole is a loss.
  std::vector<std::set<uint64_t>> pruned(G);
  for (int g = 0; g < G; ++g) {
    if (origin_of[g].empty()) continue;
    // An entry above the LSN head would be one given out twice next time.
    int64_t gaps = !held_lsns[g].empty() && *held_lsns[g].rbegin() > last_lsn[g] ? 1 : 0;
    for (uint64_t lsn = 1; lsn <= last_lsn[g]; ++lsn) {
      if (held_lsns[g].count(lsn) != 0) continue;
      const OriginLsn ol{origin_of[g], lsn};
      const bool may_prune = g == world.options().tmpfs_gateway && lsn <= acked_lsn[g];
      if (may_prune && in_regions.count(ol) != 0) {
        pruned[g].insert(lsn);
        view_summary[g].Add(ol.first, ol.second, region_device[ol]);
      } else if (may_prune && wiped.count(ol) != 0) {
        pruned[g].insert(lsn);
      } else {
        ++gaps;
      }
    }
    out.pruned_after_ack += static_cast<int64_t>(pruned[g].size());
    if (static_cast<int64_t>(pruned[g].size()) != dropped_acked[g]) {
      gaps += std::max<int64_t>(1, std::abs(static_cast<int64_t>(pruned[g].size()) - dropped_acked[g]));
      Note(&out, world.gateway_id(g) + " counts " + std::to_string(dropped_acked[g]) +
                     " acknowledged readings dropped for space, its log lacks " + std::to_string(pruned[g].size()) +
                     " a region holds");
    }
    if (gaps != 0) {
      out.lsn_gaps += gaps;
      Note(&out, world.gateway_id(g) + ": " + std::to_string(held_lsns[g].size()) + " LSNs held, " +
                     std::to_string(pruned[g].size()) + " pruned after a region acknowledged them, last " +
                     std::to_string(last_lsn[g]));
    }
  }

  // Once everything the wiped hub store held is back in some region (its
  // gateways refilled it), every view is the regions' union again.
  bool wiped_all_back = true;
  for (const auto& [ol, reading] : wiped) {
    if (in_regions.count(ol) == 0) wiped_all_back = false;
  }

  // 4. Every gateway's read view: reading -> copies (other gateways' only).
  std::vector<std::map<Key, int>> view(G);
  for (int h = 0; h < G; ++h) {
    auto store = OpenReadOnly(world.gateway_store(h), &out);
    if (!store) continue;
    std::vector<DeviceSummary> devices;
    store->ListDevices(&devices);
    std::set<std::string> remote_devices;
    for (const auto& d : devices) {
      if (!d.local) remote_devices.insert(d.device_id);
    }
    for (const std::string& device : remote_devices) {
      QueryRequest q;
      q.device_id = device;
      q.limit = QueryRequest::kMaxRows;
      std::vector<QueryRow> rows;
      if (!store->Query(q, &rows).ok()) continue;
      for (const QueryRow& row : rows) {
        if (row.local) continue;
        view_summary[h].Add(row.origin.ToString(), row.lsn, row.reading.device_id);
        int eg, ed;
        if (ParseDevice(row.reading.device_id, &eg, &ed)) ++view[h][{eg, ed, static_cast<int64_t>(row.reading.value)}];
      }
    }
    out.summaries[world.gateway_id(h)] = view_summary[h].ToString();
    if (wiped_all_back && out.summaries[world.gateway_id(h)] != out.summaries["regions"]) {
      ++out.views_differ;
      Note(&out, world.gateway_id(h) + " (local + read view) holds " + out.summaries[world.gateway_id(h)] +
                     ", the regions " + out.summaries["regions"]);
    }
  }

  // Readings missing from their gateway's log because it pruned them after
  // a region acknowledged them (above): they reached the gateway.
  std::map<Key, OriginLsn> pruned_readings;
  for (const auto& [k, acked_at] : accepted) {
    auto held = held_by_key.find(k);
    if (local.count(k) == 0 && held != held_by_key.end() && held->second.first == origin_of[k.g] &&
        pruned[k.g].count(held->second.second) != 0) {
      pruned_readings.emplace(k, held->second);
    }
  }

  // A SIGKILLed local broker loses what it acknowledged but had not yet
  // handed on; it hands a sensor's readings on in order, so only readings
  // acknowledged after the last one of that broker's life that reached the
  // gateway can be its loss. A hole before that is edgesync's.
  std::map<std::pair<int, size_t>, int64_t> last_handed_on;  // (gateway, broker life) -> ack time
  for (const auto& [k, acked_at] : accepted) {
    if (local.count(k) == 0 && pruned_readings.count(k) == 0) continue;
    const auto& lives = world.local_broker_kills(k.g);
    for (size_t i = 0; i < lives.size(); ++i) {
      if (acked_at >= lives[i].started_ms && acked_at <= lives[i].killed_ms) {
        int64_t& t = last_handed_on[{k.g, i}];
        t = std::max(t, acked_at);
      }
    }
  }

  // 5. Each accepted reading: stored once by its gateway, held by a region,
  // once in every other gateway's read view.
  for (const auto& [k, acked_at] : accepted) {
    auto it = local.find(k);
    OriginLsn ol;
    auto pruned_it = pruned_readings.find(k);
    if (it != local.end()) {
      ++out.stored;
      if (it->second.size() > 1) {
        out.duplicated += static_cast<int64_t>(it->second.size()) - 1;
        Note(&out, world.gateway_id(k.g) + " stored a reading " + std::to_string(it->second.size()) + " times");
      }
      ol = {origin_of[k.g], it->second.front()};
    } else if (pruned_it != pruned_readings.end()) {
      ol = pruned_it->second;  // stored, acknowledged, then pruned by its gateway for space
    } else {
      bool broker_lost = false;
      const auto& lives = world.local_broker_kills(k.g);
      for (size_t i = 0; i < lives.size(); ++i) {
        if (acked_at >= lives[i].started_ms && acked_at <= lives[i].killed_ms &&
            acked_at > last_handed_on[{k.g, i}]) {
          broker_lost = true;
        }
      }
      if (broker_lost) {
        ++out.lost_at_local_broker_kill;
      } else {
        ++out.lost;
        Note(&out, "never stored: gw" + std::to_string(k.g) + "-d" + std::to_string(k.d) + " value " +
                       std::to_string(k.v));
      }
      continue;
    }
    // Pruned by its gateway before it could refill the region that lost
    // it: the one way a reading may end in no region.
    bool pruned_unrefilled = false;
    if (in_regions.count(ol) == 0) {
      if (wiped.count(ol) != 0 && it == local.end()) {
        ++out.pruned_before_refill;
        pruned_unrefilled = true;
      } else if (wiped.count(ol) != 0) {
        ++out.only_in_wiped_hub;
        Note(&out, "in no region, though its gateway holds it: " + ol.first + " LSN " + std::to_string(ol.second) +
                       " (only the wiped hub store had it)");
      } else {
        ++out.lost;
        Note(&out, "in no region: " + ol.first + " LSN " + std::to_string(ol.second));
      }
    }
    for (int h = 0; h < G; ++h) {
      if (h == k.g) continue;
      auto v = view[h].find(k);
      int copies = v == view[h].end() ? 0 : v->second;
      if (copies == 0 && pruned_unrefilled) {
        ++out.read_view_missing_wiped;
      } else if (copies == 0) {
        ++out.read_view_missing;
        Note(&out, world.gateway_id(h) + "'s read view lacks " + ol.first + " LSN " + std::to_string(ol.second));
      }
      if (copies > 1) out.duplicated += copies - 1;
    }
  }
  for (const auto& [k, lsns] : local) {
    if (accepted.count(k) == 0) ++out.extras;
  }

  // 6. Each store's own integrity check: SQLite's on every store file,
  // amcheck and the schema's invariants on every region database.
  std::vector<std::string> files;
  for (int g = 0; g < G; ++g) files.push_back(world.gateway_store(g));
  for (int r = 0; r < R; ++r) {
    if (!world.on_postgres(r)) files.push_back(world.hub_store(r));
  }
  for (const std::string& f : files) {
    std::string said;
    if (!IntegrityOk(f, &said)) {
      ++out.integrity_failures;
      Note(&out, "integrity_check " + f + ": " + said);
    }
  }
  for (int r = 0; r < R; ++r) {
    std::string said;
    if (world.on_postgres(r) && !DatabaseIntegrityOk(world.database(r), &said)) {
      ++out.integrity_failures;
      Note(&out, "integrity of " + world.region_name(r) + "'s database: " + said);
    }
  }
  return out;
}

}  // namespace edgesync::test

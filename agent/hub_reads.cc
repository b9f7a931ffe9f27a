#include "agent/hub_reads.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "agent/roles.h"
#include "store/pg_module.h"
#include "store/sqlite_hub_store.h"
#include "store/time_correction.h"

namespace edgesync {
namespace {

// A page of the scan: large enough that a region of millions of entries is
// read in few round trips, small enough to stay a few MB in memory.
constexpr size_t kScanPage = 10000;

// The SQLite store's order of query rows (store/query_reader.h):
// time, then origin, then LSN at the origin.
bool OldestFirst(const QueryRow& a, const QueryRow& b) {
  if (a.reading.ts_ms != b.reading.ts_ms) return a.reading.ts_ms < b.reading.ts_ms;
  if (a.origin.gateway_id != b.origin.gateway_id) return a.origin.gateway_id < b.origin.gateway_id;
  if (a.origin.epoch != b.origin.epoch) return a.origin.epoch < b.origin.epoch;
  return a.lsn < b.lsn;
}

}  // namespace

bool HubStoreIsRemote(const Config& config) { return !config.hub_store.empty(); }

Status OpenHubStoreForReading(const Config& config, HubStoreHandle* hub) {
  hub->reset();
  if (!HubStoreIsRemote(config)) {
    std::unique_ptr<SqliteHubStore> sqlite;
    ES_RETURN_IF_ERROR(OpenSqliteHubStore(StoreOptionsForReading(config), &sqlite));
    Store* store = sqlite->store();
    hub->Own(std::move(sqlite), store);
    return Status::Ok();
  }
  HubStoreOptions o;
  o.location = config.hub_store;
  o.password_file = config.hub_password_file;
  o.feed_retention_ms = config.hub_feed_retention_s * 1000;
  o.application_name = "edgesync-cli";
  const PgModuleApi* pg = nullptr;
  ES_RETURN_IF_ERROR(LoadPgModule(&pg));
  std::unique_ptr<HubStore> store;
  Status st = pg->open_hub_store(o, &store);
  hub->Own(std::move(store), nullptr);
  // The location never holds a password (the store refuses one).
  return st.Annotate("hub store " + config.hub_store);
}

Status ScanRegionFeed(HubStore* hub, const std::function<Status(const RegionFeedEntry&)>& visit) {
  ShardPositions after{};
  for (;;) {
    FeedRead page;
    ES_RETURN_IF_ERROR(hub->ReadFeed(after, kScanPage, &page));
    for (const RegionFeedEntry& e : page.entries) ES_RETURN_IF_ERROR(visit(e));
    // Retention pruned below `after` meanwhile: what is left starts at next.
    if (page.reset) {
      after = page.next;
      continue;
    }
    if (page.entries.empty() && page.next == after) return Status::Ok();
    after = page.next;
  }
}

Status QueryRegionFeed(HubStore* hub, const QueryRequest& q, std::vector<QueryRow>* rows) {
  rows->clear();
  if (q.limit <= 0) return Status::InvalidArgument("query limit must be positive");
  if (q.from_ms >= q.to_ms) return Status::Ok();
  const size_t limit = static_cast<size_t>(q.limit);
  auto in_answer_order = [&](const QueryRow& a, const QueryRow& b) {
    return q.newest_first ? OldestFirst(b, a) : OldestFirst(a, b);
  };
  // Time corrections (store/time_correction.h) come later in the feed than
  // the readings they move: readings stamped in an untrusted clock period
  // wait (all of them: a correction may bring any into the window) until
  // the scan has seen every correction.
  std::map<std::string, TimeOverlay> overlays;  // by origin
  std::vector<QueryRow> stamped_untrusted;
  auto keep = [&](QueryRow row) {
    if (row.reading.ts_ms < q.from_ms || row.reading.ts_ms >= q.to_ms) return;
    rows->push_back(std::move(row));
    // Memory stays bounded by the limit however long the history.
    if (rows->size() > 2 * limit) {
      std::nth_element(rows->begin(), rows->begin() + static_cast<ptrdiff_t>(limit), rows->end(), in_answer_order);
      rows->resize(limit);
    }
  };
  ES_RETURN_IF_ERROR(ScanRegionFeed(hub, [&](const RegionFeedEntry& e) {
    const ChangeEntry& c = e.remote.entry;
    if (c.kind == ChangeEntry::Kind::kTimeCorrection) {
      overlays[e.remote.origin.ToString()].Add(c.correction);
      return Status::Ok();
    }
    if (c.kind != ChangeEntry::Kind::kReading || c.reading.device_id != q.device_id) return Status::Ok();
    if (!q.metric.empty() && c.reading.metric != q.metric) return Status::Ok();
    QueryRow row{e.remote.origin, e.remote.origin_lsn, false, c.reading};
    if ((c.reading.quality & kQualityUntrustedClock) != 0 && QualityPeriod(c.reading.quality) != 0) {
      stamped_untrusted.push_back(std::move(row));
    } else {
      keep(std::move(row));
    }
    return Status::Ok();
  }));
  for (QueryRow& row : stamped_untrusted) {
    auto o = overlays.find(row.origin.ToString());
    if (o != overlays.end()) o->second.Apply(&row.reading.ts_ms, &row.reading.quality);
    keep(std::move(row));
  }
  std::sort(rows->begin(), rows->end(), in_answer_order);
  if (rows->size() > limit) rows->resize(limit);
  return Status::Ok();
}

Status ListRegionFeedDevices(HubStore* hub, std::vector<DeviceSummary>* devices) {
  devices->clear();
  std::map<std::pair<std::string, std::string>, DeviceSummary> by_origin;  // (device, origin)
  // Per (device, origin): the origin LSN of the latest record version seen
  // (the feed holds every version the origin sent).
  std::map<std::pair<std::string, std::string>, uint64_t> record_lsn;
  // Readings stamped in an untrusted clock period: their stamped span per
  // (device, origin, period), shown through the origin's correction once
  // the scan has seen them all.
  std::map<std::string, TimeOverlay> overlays;  // by origin
  std::map<std::tuple<std::string, std::string, uint32_t>, std::pair<Reading, Reading>> untrusted_spans;
  std::set<std::pair<std::string, std::string>> timed;  // the keys whose first and last times are set
  ES_RETURN_IF_ERROR(ScanRegionFeed(hub, [&](const RegionFeedEntry& e) {
    const ChangeEntry& c = e.remote.entry;
    if (c.kind == ChangeEntry::Kind::kTimeCorrection) {
      overlays[e.remote.origin.ToString()].Add(c.correction);
      return Status::Ok();
    }
    std::pair<std::string, std::string> key{c.device_id(), e.remote.origin.ToString()};
    auto [it, added] = by_origin.try_emplace(key);
    DeviceSummary& d = it->second;
    if (added) d = DeviceSummary{c.device_id(), e.remote.origin, false, 0, 0, 0};
    if (c.kind != ChangeEntry::Kind::kReading) {
      uint64_t& latest = record_lsn[key];
      if (e.remote.origin_lsn > latest) {
        latest = e.remote.origin_lsn;
        d.has_record = c.kind == ChangeEntry::Kind::kDeviceUpsert;
        d.record = d.has_record ? c.device : DeviceRecord{};
      }
      return Status::Ok();
    }
    ++d.readings;
    if ((c.reading.quality & kQualityUntrustedClock) != 0 && QualityPeriod(c.reading.quality) != 0) {
      auto [span, fresh] = untrusted_spans.try_emplace({key.first, key.second, QualityPeriod(c.reading.quality)},
                                                       c.reading, c.reading);
      if (!fresh && c.reading.ts_ms < span->second.first.ts_ms) span->second.first = c.reading;
      if (!fresh && c.reading.ts_ms > span->second.second.ts_ms) span->second.second = c.reading;
      return Status::Ok();
    }
    const bool first = timed.insert(key).second;
    d.first_ts_ms = first ? c.reading.ts_ms : std::min(d.first_ts_ms, c.reading.ts_ms);
    d.last_ts_ms = first ? c.reading.ts_ms : std::max(d.last_ts_ms, c.reading.ts_ms);
    return Status::Ok();
  }));
  for (auto& [k, span] : untrusted_spans) {
    DeviceSummary& d = by_origin[{std::get<0>(k), std::get<1>(k)}];
    auto o = overlays.find(std::get<1>(k));
    for (Reading* r : {&span.first, &span.second}) {
      if (o != overlays.end()) o->second.Apply(&r->ts_ms, &r->quality);
      const bool first = timed.insert({std::get<0>(k), std::get<1>(k)}).second;
      d.first_ts_ms = first ? r->ts_ms : std::min(d.first_ts_ms, r->ts_ms);
      d.last_ts_ms = first ? r->ts_ms : std::max(d.last_ts_ms, r->ts_ms);
    }
  }
  // (device, origin text) order: the SQLite store's order for remote rows;
  // a device whose only entry is its deleted record has no row, as there.
  for (auto& [key, d] : by_origin) {
    if (d.readings > 0 || d.has_record) devices->push_back(std::move(d));
  }
  return Status::Ok();
}

std::string RegionFeedToken(const std::string& epoch, const ShardPositions& positions) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "region:" + epoch + ":";
  for (unsigned char c : EncodeShardPositions(positions)) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

Status ParseRegionFeedToken(const std::string& token, const std::string& epoch, ShardPositions* positions) {
  const std::string prefix = "region:";
  size_t colon = token.find(':', prefix.size());
  if (token.rfind(prefix, 0) != 0 || colon == std::string::npos) {
    return Status::InvalidArgument("not a region feed continuation: " + token);
  }
  if (token.compare(prefix.size(), colon - prefix.size(), epoch) != 0 || colon - prefix.size() != epoch.size()) {
    return Status::InvalidArgument("the continuation is of another hub store (epoch " +
                                   token.substr(prefix.size(), colon - prefix.size()) + ", the store's is " + epoch +
                                   "): start again with --from beginning");
  }
  std::string hex = token.substr(colon + 1);
  if (hex.size() % 2 != 0 || hex.size() > 2 * kMaxShardPositionsBytes ||
      hex.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::InvalidArgument("not a region feed continuation: " + token);
  }
  std::string bytes;
  for (size_t i = 0; i < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return DecodeShardPositions(bytes, positions);
}

}  // namespace edgesync

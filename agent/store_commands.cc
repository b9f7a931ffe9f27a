// `edgesync query` and `edgesync feed`: read-only views of a gateway's store,
// one JSON object per line (readable by people, parseable by scripts).
// They open the store the config names read only (no migration, no file
// created beside it; see store/store_lock.h); the running gateway may keep
// writing meanwhile (SQLite WAL readers do not block it). The store is
// closed before anything is printed: a reader paused on a full pipe must
// not hold up a gateway that starts or stops.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "agent/options.h"
#include "agent/roles.h"
#include "store/store.h"

namespace edgesync {
namespace {

int Fail(const char* what, const Status& status) {
  std::fprintf(stderr, "edgesync %s: %s\n", what, status.ToString().c_str());
  return 1;
}

Status OpenForReading(const Config& config, std::unique_ptr<Store>* store) {
  StoreOptions o = StoreOptionsFromConfig(config);
  o.create_if_missing = false;
  o.read_only = true;
  // The store's identity comes from the file: a region config has no gateway id.
  o.gateway_id.clear();
  // Reading changes nothing, and a full check of a large store would make
  // every query wait seconds; the gateway checks the file when it opens it.
  o.open_check = StoreOptions::OpenCheck::kNone;
  return Store::Open(o, store);
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A reading's fields as `query` and `feed` print them.
void AddReading(const Reading& r, nlohmann::json* j) {
  (*j)["device"] = r.device_id;
  (*j)["metric"] = r.metric;
  (*j)["ts"] = r.ts_ms;
  (*j)["value"] = r.value;
  if (!r.unit.empty()) (*j)["unit"] = r.unit;
  if (r.quality != 0) (*j)["quality"] = r.quality;
}

nlohmann::json EntryJson(const ChangeEntry& e) {
  nlohmann::json j;
  j["lsn"] = e.lsn;
  if (e.kind == ChangeEntry::Kind::kReading) {
    j["kind"] = "reading";
    AddReading(e.reading, &j);
  } else {
    j["kind"] = e.kind == ChangeEntry::Kind::kDeviceDelete ? "device-delete" : "device-upsert";
    j["device"] = e.device.device_id;
    j["name"] = e.device.name;
    j["location"] = e.device.location;
    j["default_unit"] = e.device.default_unit;
    j["deleted"] = e.device.deleted;
  }
  return j;
}

void PrintLine(const nlohmann::json& j) {
  // Replace keeps a stray invalid byte from aborting the listing.
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::printf("%s\n", s.c_str());
}

Status ParseFrom(const std::string& from, FeedStart* start) {
  auto number = [](const std::string& text, int64_t* out) {
    if (text.empty() || text.size() > 19) return false;
    for (char c : text) {
      if (c < '0' || c > '9') return false;
    }
    *out = std::stoll(text);
    return true;
  };
  int64_t n = 0;
  if (from == "beginning") {
    start->kind = FeedStart::Kind::kBeginning;
  } else if (from == "now") {
    start->kind = FeedStart::Kind::kNow;
  } else if (from.rfind("lsn:", 0) == 0) {
    if (!number(from.substr(4), &n)) return Status::InvalidArgument("--from lsn:N needs a number");
    start->kind = FeedStart::Kind::kLsn;
    start->lsn = static_cast<uint64_t>(n);
  } else if (from.rfind("time:", 0) == 0) {
    if (!number(from.substr(5), &n)) return Status::InvalidArgument("--from time:MS needs Unix milliseconds");
    start->kind = FeedStart::Kind::kTime;
    start->wall_ms = n;
  } else {
    start->kind = FeedStart::Kind::kToken;  // the store validates it
    start->token = from;
  }
  return Status::Ok();
}

}  // namespace

int RunQuery(const Config& config, const QueryOptions& options) {
  std::unique_ptr<Store> store;
  Status st = OpenForReading(config, &store);
  if (!st.ok()) return Fail("query", st);
  QueryRequest q;
  q.device_id = options.device_id;
  q.metric = options.metric;
  q.from_ms = options.from_ms;
  q.to_ms = options.to_ms;
  q.limit = options.limit;
  std::vector<QueryRow> rows;
  st = store->Query(q, &rows);
  if (!st.ok()) return Fail("query", st);
  store.reset();
  for (const QueryRow& r : rows) {
    nlohmann::json j;
    AddReading(r.reading, &j);
    j["origin"] = r.origin.ToString();
    j["lsn"] = r.lsn;
    j["local"] = r.local;
    PrintLine(j);
  }
  return 0;
}

int RunFeed(const Config& config, const FeedOptions& options) {
  std::unique_ptr<Store> store;
  Status st = OpenForReading(config, &store);
  if (!st.ok()) return Fail("feed", st);
  if (options.list_ranges) {
    std::vector<RangeInfo> ranges;
    st = store->ListRanges(&ranges);
    if (!st.ok()) return Fail("feed", st);
    store.reset();
    for (const RangeInfo& r : ranges) {
      PrintLine({{"range", r.id}, {"min", Hex(r.min)}, {"max", Hex(r.max)}, {"parent", r.parent},
                 {"active", r.active}});
    }
    return 0;
  }
  if (options.range_id < 1 || options.range_id > UINT32_MAX) {
    return Fail("feed", Status::InvalidArgument("--range N is required (see `edgesync feed --list`)"));
  }
  if (options.max_entries < 1) return Fail("feed", Status::InvalidArgument("--max must be at least 1"));
  FeedStart start;
  st = ParseFrom(options.from, &start);
  if (!st.ok()) return Fail("feed", st);
  FeedPage page;
  st = store->ReadFeed(static_cast<uint32_t>(options.range_id), start, static_cast<size_t>(options.max_entries), &page);
  if (!st.ok()) return Fail("feed", st);
  store.reset();
  for (const ChangeEntry& e : page.entries) PrintLine(EntryJson(e));
  PrintLine({{"continuation", page.continuation}, {"entries", page.entries.size()}});
  return 0;
}

}  // namespace edgesync

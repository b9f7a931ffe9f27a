// `edgesync query`, `edgesync devices` and `edgesync feed`: read-only views
// of a gateway's or region hub's store: a table for people, JSON lines or
// CSV for scripts. A hub whose store is PostgreSQL is read through the hub
// store (agent/hub_reads.h); `feed` of a hub reads its region feed.
// They open the store the config names read only (no migration, no file
// created beside it; see store/store_lock.h); the running gateway may keep
// writing meanwhile (SQLite WAL readers do not block it). The store is
// closed before anything is printed: a reader paused on a full pipe must
// not hold up a gateway that starts or stops. `edgesync reidentify` is the
// one that writes: a stopped gateway's store takes a new gateway id.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "agent/hub_reads.h"
#include "agent/options.h"
#include "agent/roles.h"
#include "platform/clock.h"
#include "platform/signals.h"
#include "store/store.h"

namespace edgesync {
namespace {

int Fail(const char* what, const Status& status) {
  std::fprintf(stderr, "edgesync %s: %s\n", what, status.ToString().c_str());
  return 1;
}

// Every store command opens an existing store under its file identity.
StoreOptions ExistingStoreOptions(const Config& config, bool read_only) {
  StoreOptions o = StoreOptionsFromConfig(config);
  o.create_if_missing = false;
  o.read_only = read_only;
  // The store's identity comes from the file: a region config has no gateway id.
  o.gateway_id.clear();
  // Reading changes nothing, and a full check of a large store would make
  // every query wait seconds; the gateway checks the file when it opens it.
  o.open_check = StoreOptions::OpenCheck::kNone;
  return o;
}

}  // namespace

StoreOptions StoreOptionsForReading(const Config& config) { return ExistingStoreOptions(config, /*read_only=*/true); }

Status OpenStoreForReading(const Config& config, std::unique_ptr<Store>* store) {
  return Store::Open(StoreOptionsForReading(config), store);
}

Status OpenStoreForLeases(const Config& config, std::unique_ptr<Store>* store) {
  return Store::Open(ExistingStoreOptions(config, /*read_only=*/false), store);
}

Status ParseTimeArg(const std::string& text, int64_t now_ms, int64_t* ms) {
  if (text == "now") {
    *ms = now_ms;
    return Status::Ok();
  }
  auto digits = [](const std::string& t) {
    return !t.empty() && t.size() <= 18 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  if (digits(text)) {
    *ms = std::stoll(text);
    return Status::Ok();
  }
  if ((text[0] == '-' || text[0] == '+') && text.size() >= 3 && digits(text.substr(1, text.size() - 2))) {
    int64_t n = std::stoll(text.substr(1, text.size() - 2));
    int64_t unit = 0;
    switch (text.back()) {
      case 's': unit = 1000; break;
      case 'm': unit = 60 * 1000; break;
      case 'h': unit = 3600 * 1000; break;
      case 'd': unit = 86400 * 1000; break;
      case 'w': unit = 7 * 86400 * 1000; break;
      default: break;
    }
    if (unit > 0 && n <= INT64_MAX / unit / 2) {
      *ms = now_ms + (text[0] == '-' ? -n : n) * unit;
      return Status::Ok();
    }
  }
  // RFC 3339: 2026-03-01T12:00:00[.123](Z|+02:00); a space may stand for T.
  struct tm tm = {};
  int consumed = 0;
  char sep = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) == 7 &&
      (sep == 'T' || sep == 't' || sep == ' ') && tm.tm_mon >= 1 && tm.tm_mon <= 12 && tm.tm_mday >= 1 &&
      tm.tm_mday <= 31 && tm.tm_hour <= 23 && tm.tm_min <= 59 && tm.tm_sec <= 60) {
    std::string rest = text.substr(static_cast<size_t>(consumed));
    int64_t frac_ms = 0;
    if (!rest.empty() && rest[0] == '.') {
      size_t n = 1;
      int64_t scale = 100;
      while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') {
        frac_ms += (rest[n] - '0') * scale;
        scale /= 10;
        ++n;
      }
      if (n == 1) rest = "bad";
      else rest = rest.substr(n);
    }
    int64_t offset_s = 0;
    bool zone_ok = rest == "Z" || rest == "z";
    int oh = 0, om = 0;
    if (!zone_ok && rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
        std::sscanf(rest.c_str() + 1, "%2d:%2d", &oh, &om) == 2 && oh <= 23 && om <= 59) {
      offset_s = (rest[0] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
      zone_ok = true;
    }
    if (zone_ok) {
      tm.tm_year -= 1900;
      tm.tm_mon -= 1;
      *ms = (static_cast<int64_t>(timegm(&tm)) - offset_s) * 1000 + frac_ms;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("\"" + text +
                                 "\" is not a time: use RFC 3339 (2026-03-01T12:00:00Z), a relative time (-1h, -30m, "
                                 "-2d, now) or Unix milliseconds");
}

namespace {

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
  // The flags alone; the untrusted clock period they share the field with
  // (store/types.h) is a number of its own.
  if (QualityFlags(r.quality) != 0) (*j)["quality"] = QualityFlags(r.quality);
  if (QualityPeriod(r.quality) != 0) (*j)["clock_period"] = QualityPeriod(r.quality);
}

// Whose clock a row's time is, as `query` shows it: "sensor" (the
// reading's own time), "gateway" (stamped on arrival by a trusted clock), "corrected"
// (stamped while the clock was untrusted, moved to the true time since:
// store/time_correction.h), "untrusted" (not corrected yet), or
// "untrusted, uncorrectable" (a period of this store whose boot ended
// before the clock was trusted: it keeps the flag for good).
std::string ClockOfRow(const QueryRow& r, const std::vector<ClockPeriod>& periods, const std::string& boot) {
  const uint32_t q = r.reading.quality;
  if (q & kQualityCorrectedTime) return "corrected";
  if (q & kQualityUntrustedClock) {
    const uint32_t period = QualityPeriod(q);
    if (r.local && period != 0) {
      for (const ClockPeriod& p : periods) {
        if (p.id == period && !p.corrected && p.boot_id != boot) return "untrusted, uncorrectable";
      }
    }
    return "untrusted";
  }
  return (q & kQualityReceiveTime) ? "gateway" : "sensor";
}

}  // namespace

nlohmann::json FeedEntryJson(const ChangeEntry& e) {
  nlohmann::json j;
  j["lsn"] = e.lsn;
  if (e.kind == ChangeEntry::Kind::kReading) {
    j["kind"] = "reading";
    AddReading(e.reading, &j);
  } else if (e.kind == ChangeEntry::Kind::kTimeCorrection) {
    j["kind"] = "time-correction";
    j["clock_period"] = e.correction.period;
    j["delta_ms"] = e.correction.delta_ms;
    j["from_ms"] = e.correction.from_ms;
    j["to_ms"] = e.correction.to_ms;
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

namespace {

void PrintLine(const nlohmann::json& j) {
  // Replace keeps a stray invalid byte from aborting the listing.
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::printf("%s\n", s.c_str());
}

std::string Rfc3339(int64_t ms) {
  time_t secs = static_cast<time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  struct tm tm = {};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms - static_cast<int64_t>(secs) * 1000));
  return buf;
}

std::string Value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

// Rows printed as an aligned table, JSON lines (the JSON filled by each
// row's own callback, so types stay numbers) or CSV (RFC 4180 quoting).
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  template <typename F>
  void Add(std::vector<std::string> cells, F fill_json) {
    nlohmann::json j;
    fill_json(&j);
    rows_.push_back(std::move(cells));
    json_.push_back(std::move(j));
  }
  void Print(OutputFormat format) const {
    if (format == OutputFormat::kJson) {
      for (const auto& j : json_) PrintLine(j);
      return;
    }
    if (format == OutputFormat::kCsv) {
      auto quote = [](const std::string& c) {
        if (c.find_first_of(",\"\r\n") == std::string::npos) return c;
        std::string out = "\"";
        for (char ch : c) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        return out + "\"";
      };
      for (const auto* row : AllRows()) {
        std::string line;
        for (size_t i = 0; i < row->size(); ++i) line += (i ? "," : "") + quote((*row)[i]);
        std::printf("%s\r\n", line.c_str());
      }
      return;
    }
    std::vector<size_t> width(header_.size(), 0);
    for (const auto* row : AllRows()) {
      for (size_t i = 0; i < row->size(); ++i) width[i] = std::max(width[i], (*row)[i].size());
    }
    for (const auto* row : AllRows()) {
      std::string line;
      for (size_t i = 0; i < row->size(); ++i) {
        std::string cell = (*row)[i];
        if (i + 1 < row->size()) cell.resize(width[i] + 2, ' ');
        line += cell;
      }
      std::printf("%s\n", line.c_str());
    }
  }

 private:
  std::vector<const std::vector<std::string>*> AllRows() const {
    std::vector<const std::vector<std::string>*> all = {&header_};
    for (const auto& r : rows_) all.push_back(&r);
    return all;
  }
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<nlohmann::json> json_;
};

// Each origin's completeness watermark by its name ("gateway/epoch"), as
// this store knows it (a read view's from the feeds, a hub's beside its
// marks; PostgreSQL hubs through the hub store).
Status WatermarksByOrigin(Store* store, HubStore* hub, std::map<std::string, int64_t>* out) {
  std::vector<OriginWatermark> all;
  ES_RETURN_IF_ERROR(hub != nullptr ? hub->FeedWatermarks(&all) : store->ListWatermarks(&all));
  for (const OriginWatermark& w : all) (*out)[w.origin.ToString()] = w.complete_through_ms;
  return Status::Ok();
}

// "complete through <time>" of an origin that answered, and whether the
// window asked reaches past it (the answer may still grow). A gateway's own
// readings are all in its store: complete as of now.
struct Completeness {
  std::string origin;
  bool local = false;
  int64_t through_ms = 0;  // 0 = unknown
  bool may_grow = true;
};

std::string CompletenessText(const Completeness& c) {
  std::string text = "origin " + c.origin + ": ";
  text += c.through_ms > 0 ? "complete through " + Rfc3339(c.through_ms) : "completeness unknown";
  if (c.may_grow) text += " (the window reaches past it: the answer may still grow)";
  return text;
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
  if (options.limit < 1 || options.limit >= QueryRequest::kMaxRows) {
    return Fail("query", Status::InvalidArgument("--limit must be 1.." + std::to_string(QueryRequest::kMaxRows - 1)));
  }
  int64_t now = SystemClock()->WallMillis();
  QueryRequest q;
  Status st;
  if (!options.from.empty()) st = ParseTimeArg(options.from, now, &q.from_ms);
  if (st.ok() && !options.to.empty()) st = ParseTimeArg(options.to, now, &q.to_ms);
  if (!st.ok()) return Fail("query", st);
  q.device_id = options.device_id;
  q.metric = options.metric;
  // One row more than shown tells whether the limit cut the answer.
  q.limit = options.limit + 1;
  q.newest_first = !options.oldest_first;
  std::vector<QueryRow> rows;
  std::map<std::string, int64_t> watermarks;
  std::vector<ClockPeriod> periods;
  {
    std::unique_ptr<Store> store;
    HubStoreHandle hub;
    st = HubStoreIsRemote(config) ? OpenHubStoreForReading(config, &hub) : OpenStoreForReading(config, &store);
    if (!st.ok()) return Fail("query", st);
    st = hub ? QueryRegionFeed(hub.get(), q, &rows) : store->Query(q, &rows);
    if (!st.ok()) return Fail("query", st);
    // This store's own periods tell an untrusted reading that will still
    // be corrected from one whose boot ended untrusted.
    if (store) st = store->ListClockPeriods(&periods);
    if (!st.ok()) return Fail("query", st);
    st = WatermarksByOrigin(store.get(), hub ? hub.get() : nullptr, &watermarks);
    if (!st.ok()) return Fail("query", st);
  }
  const std::string boot = SystemClock()->BootId();
  bool cut = static_cast<int64_t>(rows.size()) > options.limit;
  if (cut) rows.resize(static_cast<size_t>(options.limit));
  // Per origin that answered, in order of first appearance. The window's
  // end (now when open) past the watermark: readings committed since may
  // still arrive (the watermark is over commit time: docs/GUARANTEES.md).
  const int64_t window_end = q.to_ms < INT64_MAX ? q.to_ms : now;
  std::vector<Completeness> answered;
  std::map<std::string, size_t> answered_at;
  for (const QueryRow& r : rows) {
    const std::string name = r.origin.ToString();
    if (answered_at.count(name)) continue;
    Completeness c;
    c.origin = name;
    c.local = r.local;
    auto w = watermarks.find(name);
    c.through_ms = w == watermarks.end() ? 0 : w->second;
    c.may_grow = !c.local && (c.through_ms <= 0 || window_end > c.through_ms);
    answered_at[name] = answered.size();
    answered.push_back(c);
  }
  Table table({"time", "device", "metric", "value", "unit", "quality", "origin", "lsn", "local", "clock"});
  for (const QueryRow& r : rows) {
    const std::string clock = ClockOfRow(r, periods, boot);
    const Completeness& c = answered[answered_at[r.origin.ToString()]];
    table.Add({Rfc3339(r.reading.ts_ms), r.reading.device_id, r.reading.metric, Value(r.reading.value), r.reading.unit,
               std::to_string(QualityFlags(r.reading.quality)), r.origin.ToString(), std::to_string(r.lsn),
               r.local ? "true" : "false", clock},
              [&r, &clock, &c](nlohmann::json* j) {
                AddReading(r.reading, j);
                (*j)["origin"] = r.origin.ToString();
                (*j)["lsn"] = r.lsn;
                (*j)["local"] = r.local;
                (*j)["clock"] = clock;
                if (!c.local) {
                  (*j)["complete_through_ms"] = c.through_ms;
                  (*j)["may_grow"] = c.may_grow;
                }
              });
  }
  // The table's header lines; CSV keeps its rows clean (stderr); JSON
  // carries it in every row. Local rows need none: this store holds them all.
  for (const Completeness& c : answered) {
    if (c.local) continue;
    if (options.format == OutputFormat::kTable) std::printf("# %s\n", CompletenessText(c).c_str());
    if (options.format == OutputFormat::kCsv) std::fprintf(stderr, "edgesync query: %s\n", CompletenessText(c).c_str());
  }
  table.Print(options.format);
  if (cut) {
    std::fprintf(stderr, "edgesync query: showing the %s %lld rows; more match (raise --limit, or narrow --from/--to)\n",
                 options.oldest_first ? "oldest" : "newest", static_cast<long long>(options.limit));
  }
  return 0;
}

int RunDevices(const Config& config, OutputFormat format) {
  std::vector<DeviceSummary> devices;
  std::map<std::string, int64_t> watermarks;
  {
    std::unique_ptr<Store> store;
    HubStoreHandle hub;
    Status st = HubStoreIsRemote(config) ? OpenHubStoreForReading(config, &hub) : OpenStoreForReading(config, &store);
    if (!st.ok()) return Fail("devices", st);
    st = hub ? ListRegionFeedDevices(hub.get(), &devices) : store->ListDevices(&devices);
    if (!st.ok()) return Fail("devices", st);
    st = WatermarksByOrigin(store.get(), hub ? hub.get() : nullptr, &watermarks);
    if (!st.ok()) return Fail("devices", st);
  }
  const int64_t now = SystemClock()->WallMillis();
  // A device's record (name, location, default unit) as its origin last
  // wrote it; a row with a record and no readings leaves first/last empty.
  // The origin's completeness watermark and its age ("local": all here).
  Table table({"device", "origin", "local", "readings", "first", "last", "name", "location", "unit",
               "complete through"});
  for (const DeviceSummary& d : devices) {
    const bool any = d.readings > 0;
    auto w = watermarks.find(d.origin.ToString());
    const int64_t through = d.local || w == watermarks.end() ? 0 : w->second;
    std::string complete = d.local ? "local" : "unknown";
    if (through > 0) complete = Rfc3339(through) + " (" + std::to_string((now - through) / 1000) + " s ago)";
    table.Add({d.device_id, d.origin.ToString(), d.local ? "true" : "false", std::to_string(d.readings),
               any ? Rfc3339(d.first_ts_ms) : "", any ? Rfc3339(d.last_ts_ms) : "",
               d.has_record ? d.record.name : "", d.has_record ? d.record.location : "",
               d.has_record ? d.record.default_unit : "", complete},
              [&d, any, through, now](nlohmann::json* j) {
                if (!d.local) {
                  (*j)["complete_through_ms"] = through;
                  (*j)["complete_age_ms"] = through > 0 ? now - through : 0;
                }
                (*j)["device"] = d.device_id;
                (*j)["origin"] = d.origin.ToString();
                (*j)["local"] = d.local;
                (*j)["readings"] = d.readings;
                if (any) {
                  (*j)["first_ts"] = d.first_ts_ms;
                  (*j)["last_ts"] = d.last_ts_ms;
                }
                if (d.has_record) {
                  (*j)["name"] = d.record.name;
                  (*j)["location"] = d.record.location;
                  (*j)["unit"] = d.record.default_unit;
                }
              });
  }
  table.Print(format);
  return 0;
}

namespace {

// `feed` of a region hub: its region feed, one stream for the whole region
// (no ranges), each entry with its origin and its place in the feed (shard,
// sequence: numbers the backend draws, so they differ between a SQLite and
// a PostgreSQL store holding the same entries).
int RunRegionFeed(const Config& config, const FeedOptions& options) {
  if (!options.lease_owner.empty()) {
    return Fail("feed", Status::InvalidArgument("--lease shares a gateway's ranges; a region feed is read whole "
                                                "(resume it from its continuation)"));
  }
  if (options.range_id != -1) {
    return Fail("feed", Status::InvalidArgument("a region feed has no ranges: leave out --range"));
  }
  if (options.max_entries < 1) return Fail("feed", Status::InvalidArgument("--max must be at least 1"));
  HubStoreHandle hub;
  Status st = OpenHubStoreForReading(config, &hub);
  if (!st.ok()) return Fail("feed", st);
  const std::string epoch = hub->epoch();
  if (options.list_ranges) {
    FeedBoundsInfo bounds;
    st = hub->FeedBounds(&bounds);
    if (!st.ok()) return Fail("feed", st);
    PrintLine({{"region_feed", hub->backend()},
               {"epoch", epoch},
               {"entries", bounds.numbered},
               {"beginning", RegionFeedToken(epoch, bounds.pruned)},
               {"head", RegionFeedToken(epoch, bounds.head)}});
    return 0;
  }
  ShardPositions after{};
  if (options.from == "now") {
    FeedBoundsInfo bounds;
    st = hub->FeedBounds(&bounds);
    after = bounds.head;
  } else if (options.from != "beginning") {
    st = ParseRegionFeedToken(options.from, epoch, &after);
  }
  if (!st.ok()) return Fail("feed", st);
  if (options.follow) Signals::Install();
  for (;;) {
    FeedRead page;
    st = hub->ReadFeed(after, static_cast<size_t>(options.max_entries), &page);
    if (!st.ok()) return Fail("feed", st);
    // A SQLite store is closed while printing and waiting, as a gateway's
    // is: a hub that starts meanwhile must not wait for a follower.
    if (hub.sqlite() != nullptr) hub.reset();
    for (const RegionFeedEntry& e : page.entries) {
      nlohmann::json j = FeedEntryJson(e.remote.entry);
      j["origin"] = e.remote.origin.ToString();
      j["shard"] = e.shard;
      j["seq"] = e.seq;
      PrintLine(j);
    }
    if (page.reset) {
      PrintLine({{"reset", true}, {"continuation", RegionFeedToken(epoch, page.next)}});
    }
    const bool moved = page.next != after;
    after = page.next;
    if (!options.follow) {
      PrintLine({{"continuation", RegionFeedToken(epoch, after)}, {"entries", page.entries.size()}});
      return 0;
    }
    if (!page.entries.empty()) {
      PrintLine({{"continuation", RegionFeedToken(epoch, after)}, {"entries", page.entries.size()}});
      std::fflush(stdout);
    }
    if (!moved) Signals::WaitForSignal(options.poll_ms);
    if (Signals::StopRequested()) {
      std::fflush(stdout);
      return 0;
    }
    if (!hub) {
      st = OpenHubStoreForReading(config, &hub);
      if (!st.ok()) return Fail("feed", st);
    }
  }
}

}  // namespace

int RunFeed(const Config& config, const FeedOptions& options) {
  if (!config.hub_region.empty()) return RunRegionFeed(config, options);
  if (!options.lease_owner.empty()) return RunLeasedFeed(config, options);
  std::unique_ptr<Store> store;
  Status st = OpenStoreForReading(config, &store);
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
  if (options.follow) Signals::Install();
  for (;;) {
    FeedPage page;
    st = store->ReadFeed(static_cast<uint32_t>(options.range_id), start, static_cast<size_t>(options.max_entries),
                         &page);
    if (!st.ok()) return Fail("feed", st);
    // Closed while printing and waiting: a gateway that starts meanwhile
    // must not wait for a follower (store/store_lock.h).
    store.reset();
    for (const ChangeEntry& e : page.entries) PrintLine(FeedEntryJson(e));
    if (!options.follow) {
      PrintLine({{"continuation", page.continuation}, {"entries", page.entries.size()}});
      return 0;
    }
    // Following: a continuation after each page, so a reader can resume
    // where it stopped; then wait for the store to grow.
    if (!page.entries.empty()) {
      PrintLine({{"continuation", page.continuation}, {"entries", page.entries.size()}});
      std::fflush(stdout);
    }
    start.kind = FeedStart::Kind::kToken;
    start.token = page.continuation;
    if (page.entries.size() < static_cast<size_t>(options.max_entries)) {
      Signals::WaitForSignal(options.poll_ms);
    }
    if (Signals::StopRequested()) {
      std::fflush(stdout);
      return 0;
    }
    st = OpenStoreForReading(config, &store);
    if (!st.ok()) return Fail("feed", st);
  }
}

int RunReidentify(const Config& config) {
  std::unique_ptr<Store> store;
  Status st = OpenStoreForReading(config, &store);
  if (!st.ok()) return Fail("reidentify", st);
  const Origin before = store->origin();
  store.reset();
  if (before.gateway_id == config.gateway_id) {
    std::printf("%s: already gateway '%s' (origin %s): nothing to do\n", config.StorePath().c_str(),
                config.gateway_id.c_str(), before.ToString().c_str());
    return 0;
  }
  StoreOptions o = StoreOptionsFromConfig(config);
  o.create_if_missing = false;
  o.reidentify = true;
  st = Store::Open(o, &store);
  if (!st.ok()) return Fail("reidentify", st);
  std::printf("%s: gateway '%s' (origin %s), was '%s' (origin %s); every reading kept\n",
              config.StorePath().c_str(), store->origin().gateway_id.c_str(), store->origin().ToString().c_str(),
              before.gateway_id.c_str(), before.ToString().c_str());
  return 0;
}

}  // namespace edgesync

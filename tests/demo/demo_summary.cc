// demo_summary: the demo's closing check. Compares what the sensors had
// acknowledged by the broker, what the gateway stored, and what the regions
// hold, by reading the stores themselves (not the processes' counters):
//   readings published = readings ingested = distinct readings in the regions,
//   and no (origin, LSN) held twice, in one region or across regions.
//
//   demo_summary --published N --gateway GW_STORE --region R1_STORE [--region R2_STORE ...]
// Exit 0 when nothing is lost or duplicated.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/support/sqlite_hub.h"

namespace {

edgesync::StoreOptions ReadOnly(const std::string& path) {
  edgesync::StoreOptions o;
  o.path = path;
  o.gateway_id = "";  // whatever the store says: these stores are only read
  o.create_if_missing = false;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  long long published = -1;
  std::string gateway_path;
  std::vector<std::string> regions;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--published") published = std::atoll(argv[i + 1]);
    else if (k == "--gateway") gateway_path = argv[i + 1];
    else if (k == "--region") regions.push_back(argv[i + 1]);
  }
  if (gateway_path.empty() || regions.empty()) {
    std::fprintf(stderr, "usage: demo_summary --published N --gateway STORE --region STORE...\n");
    return 2;
  }
  std::unique_ptr<edgesync::Store> gateway;
  edgesync::Status s = edgesync::Store::Open(ReadOnly(gateway_path), &gateway);
  if (!s.ok()) {
    std::fprintf(stderr, "gateway store: %s\n", s.ToString().c_str());
    return 1;
  }
  edgesync::Origin origin = gateway->origin();
  uint64_t ingested = gateway->LastLsn();

  std::set<uint64_t> held;  // LSNs of this gateway's origin found in any region
  uint64_t duplicates = 0;  // held twice by one region: must never happen
  uint64_t overlap = 0;     // held by two regions: sent again after a failover whose answer was lost
  std::map<std::string, uint64_t> per_region;
  for (const auto& path : regions) {
    std::unique_ptr<edgesync::SqliteHubStore> region;
    s = edgesync::OpenSqliteHubStore(ReadOnly(path), &region);
    if (!s.ok()) {
      std::fprintf(stderr, "region store %s: %s\n", path.c_str(), s.ToString().c_str());
      return 1;
    }
    uint64_t after = 0;
    std::set<uint64_t> in_region;
    while (true) {
      std::vector<edgesync::RegionFeedEntry> page;
      uint64_t head = 0;
      bool reset = false;
      s = edgesync::test::ReadRegionFeed(region.get(), after, 10000, &page, &head, &reset);
      if (!s.ok() || reset) {
        std::fprintf(stderr, "region store %s: cannot read its feed: %s\n", path.c_str(), s.ToString().c_str());
        return 1;
      }
      if (page.empty()) break;
      for (const auto& e : page) {
        after = e.seq;
        if (e.remote.origin != origin || e.remote.entry.kind != edgesync::ChangeEntry::Kind::kReading) continue;
        ++per_region[path];
        if (!in_region.insert(e.remote.origin_lsn).second) ++duplicates;
        if (!held.insert(e.remote.origin_lsn).second) ++overlap;
      }
    }
  }
  uint64_t missing = 0;
  for (uint64_t lsn = 1; lsn <= ingested; ++lsn) missing += held.count(lsn) == 0;

  std::printf("\n== demo summary ==\n");
  if (published >= 0) std::printf("readings published by the sensors (PUBACKed): %lld\n", published);
  std::printf("readings ingested by the gateway (LSNs):      %llu\n", static_cast<unsigned long long>(ingested));
  for (const auto& [path, n] : per_region) {
    std::printf("  held by region %-30s %llu\n", path.c_str(), static_cast<unsigned long long>(n));
  }
  std::printf("distinct readings in the regions:             %zu\n", held.size());
  std::printf("lost (ingested, in no region):                %llu\n", static_cast<unsigned long long>(missing));
  std::printf("duplicated (held twice by one region):        %llu\n", static_cast<unsigned long long>(duplicates));
  std::printf("held by both regions (resent after failover): %llu  (a query dedups them by origin and LSN)\n",
              static_cast<unsigned long long>(overlap));
  bool ok = missing == 0 && duplicates == 0 && (published < 0 || static_cast<uint64_t>(published) == ingested);
  std::printf("%s\n", ok ? "OK: none lost, none duplicated" : "NOT OK");
  return ok ? 0 : 1;
}

#include "tests/soak/schedule.h"

#include <map>
#include <random>

namespace edgesync::test {
namespace {

// Uniform in [lo, hi] from integer draws only (portable across libraries:
// std::uniform_int_distribution's algorithm is not fixed by the standard).
int64_t Draw(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// Relative weights: kills and link faults are the field's everyday faults.
struct Weighted {
  FaultKind kind;
  int weight;
};
constexpr Weighted kMix[] = {
    {FaultKind::kKillGateway, 4},   {FaultKind::kKillHub, 3},     {FaultKind::kKillLocalBroker, 2},
    {FaultKind::kKillRegionBroker, 2}, {FaultKind::kLinkCut, 5},  {FaultKind::kLinkStall, 3},
    {FaultKind::kLinkThrottle, 3},  {FaultKind::kClockGateway, 2}, {FaultKind::kClockHub, 2},
    {FaultKind::kDiskFull, 1},      {FaultKind::kKillDatabase, 2},
};

const char* kClockSteps[] = {"+3h", "-2h", "+1d", "-90m", "+6h", "-1d"};

}  // namespace

const char* FaultName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kKillGateway: return "kill_gateway";
    case FaultKind::kKillHub: return "kill_hub";
    case FaultKind::kKillLocalBroker: return "kill_local_broker";
    case FaultKind::kKillRegionBroker: return "kill_region_broker";
    case FaultKind::kLinkCut: return "link_cut";
    case FaultKind::kLinkStall: return "link_stall";
    case FaultKind::kLinkThrottle: return "link_throttle";
    case FaultKind::kClockGateway: return "clock_jump_gateway";
    case FaultKind::kClockHub: return "clock_jump_hub";
    case FaultKind::kDiskFull: return "disk_full";
    case FaultKind::kWipeHubStore: return "wipe_hub_store";
    case FaultKind::kKillDatabase: return "kill_database";
  }
  return "?";
}

std::string Fault::ToString() const {
  std::string s = std::to_string(at_ms / 1000.0).substr(0, 7) + " s  " + FaultName(kind);
  if (gateway >= 0) s += " gw" + std::to_string(gateway);
  if (region >= 0) s += " region" + std::to_string(region);
  if (!clock.empty()) s += " clock " + clock;
  s += "  for " + std::to_string(length_ms) + " ms";
  return s;
}

std::vector<Fault> MakeSchedule(const ScheduleParams& p) {
  std::mt19937_64 rng(p.seed);
  // A kind with no target in this world (no region on PostgreSQL) is left
  // out of the draw.
  auto weight = [&](const Weighted& w) {
    return w.kind == FaultKind::kKillDatabase && p.database_regions == 0 ? 0 : w.weight;
  };
  int total_weight = 0;
  for (const Weighted& w : kMix) total_weight += weight(w);
  const int64_t first = p.duration_ms / 20, last = p.duration_ms * 3 / 4;
  // When each target is free again: "g3", "r1", "link3.1", "disk", "clock-gw".
  std::map<std::string, int64_t> busy_until;
  auto free_at = [&](const std::string& target, int64_t at) { return busy_until[target] <= at; };
  std::vector<Fault> out;
  size_t clock_step = 0;
  bool wiped = false;
  // About one fault every 4 s: 6 gateways, 3 regions and 18 links each see
  // several per 10-minute run.
  for (int64_t at = first; at < last; at += Draw(rng, 1500, 6500)) {
    Fault f;
    f.at_ms = at;
    // Once, from the middle of the run on: a hub loses its store (on
    // PostgreSQL, its database; the server must be up to drop it). A region
    // still busy with another fault is tried again at the next step.
    if (!wiped && at >= p.duration_ms / 2) {
      f.kind = FaultKind::kWipeHubStore;
      f.region = static_cast<int>(Draw(rng, 0, p.regions - 1));
      f.length_ms = 0;
      const std::string r = std::to_string(f.region);
      if (free_at("r" + r, at) && free_at("db" + r, at)) {
        wiped = true;
        busy_until["r" + r] = at + 5000;
        busy_until["db" + r] = at + 5000;
        out.push_back(f);
        continue;
      }
    }
    int pick = static_cast<int>(Draw(rng, 0, total_weight - 1));
    for (const Weighted& w : kMix) {
      if (pick < weight(w)) {
        f.kind = w.kind;
        break;
      }
      pick -= weight(w);
    }
    f.gateway = static_cast<int>(Draw(rng, 0, p.gateways - 1));
    f.region = static_cast<int>(Draw(rng, 0, p.regions - 1));
    f.length_ms = Draw(rng, 1000, 15000);
    std::string target;
    switch (f.kind) {
      case FaultKind::kKillGateway:
        f.region = -1;
        f.length_ms = Draw(rng, 200, 8000);
        target = "g" + std::to_string(f.gateway);
        break;
      case FaultKind::kKillLocalBroker:
        f.region = -1;
        f.length_ms = Draw(rng, 200, 5000);
        target = "l" + std::to_string(f.gateway);
        break;
      case FaultKind::kKillHub:
      case FaultKind::kKillRegionBroker:
        f.gateway = -1;
        f.length_ms = Draw(rng, 200, 8000);
        target = (f.kind == FaultKind::kKillHub ? "r" : "b") + std::to_string(f.region);
        break;
      case FaultKind::kLinkCut:
      case FaultKind::kLinkStall:
      case FaultKind::kLinkThrottle:
        target = "link" + std::to_string(f.gateway) + "." + std::to_string(f.region);
        break;
      case FaultKind::kClockGateway:
        f.gateway = p.clock_gateway;
        f.region = -1;
        f.clock = kClockSteps[clock_step++ % (sizeof kClockSteps / sizeof kClockSteps[0])];
        target = "g" + std::to_string(f.gateway);
        break;
      case FaultKind::kClockHub:
        f.region = p.clock_hub;
        f.gateway = -1;
        f.clock = kClockSteps[clock_step++ % (sizeof kClockSteps / sizeof kClockSteps[0])];
        target = "r" + std::to_string(f.region);
        break;
      case FaultKind::kDiskFull:
        f.gateway = p.disk_gateway;
        f.region = -1;
        f.length_ms = Draw(rng, 5000, 20000);
        target = "disk";
        break;
      case FaultKind::kKillDatabase:
        f.gateway = -1;
        f.region = static_cast<int>(Draw(rng, 0, p.database_regions - 1));
        f.length_ms = Draw(rng, 200, 8000);
        target = "db" + std::to_string(f.region);
        break;
      case FaultKind::kWipeHubStore:
        break;
    }
    if (!free_at(target, at)) continue;
    busy_until[target] = at + f.length_ms + 500;
    out.push_back(f);
  }
  return out;
}

}  // namespace edgesync::test

// tests/soak/schedule.h: the soak's fault schedule, drawn from a seed. The
// same seed and duration give the same schedule (a fixed PRNG, std::mt19937_64,
// and only integer draws, whose results the standard fixes), so a failing
// run is replayed by its seed.
//
// A fault has a start, a length and a target; the schedule never starts a
// fault on a target that an earlier fault still holds (a process already
// down, a link already cut), so every fault it lists is carried out.
//
// Thread safety: plain values.
#ifndef EDGESYNC_TESTS_SOAK_SCHEDULE_H_
#define EDGESYNC_TESTS_SOAK_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace edgesync::test {

enum class FaultKind {
  kKillGateway,        // SIGKILL, restarted after the fault's length
  kKillHub,
  kKillLocalBroker,
  kKillRegionBroker,
  kLinkCut,            // the proxy closes the connections and refuses new ones
  kLinkStall,          // the proxy keeps the connections and drops every byte
  kLinkThrottle,       // the proxy passes 2 KB/s
  kClockGateway,       // libfaketime offset of the clock gateway; restarted under it
  kClockHub,           // the same for the clock hub
  kDiskFull,           // the tmpfs gateway's filesystem filled, freed after the length
  kWipeHubStore,       // SIGKILL, store deleted, restarted (a new epoch); once
  kKillDatabase,       // SIGKILL of a region's PostgreSQL server, restarted after the length
};

const char* FaultName(FaultKind kind);

struct Fault {
  int64_t at_ms = 0;       // from the start of the run
  int64_t length_ms = 0;   // until the heal
  FaultKind kind = FaultKind::kLinkCut;
  int gateway = -1;        // target gateway (kills, links, ...)
  int region = -1;         // target region (hubs, region brokers, links)
  std::string clock;       // kClock*: the new offset ("+3h", "-2h", "+0" at the end)
  std::string ToString() const;
};

struct ScheduleParams {
  uint64_t seed = 1;
  int64_t duration_ms = 600000;
  int regions = 3;
  int gateways = 6;
  int clock_gateway = 0;
  int clock_hub = 0;
  int disk_gateway = 1;
  // Regions 0..database_regions-1 keep their hub store on a PostgreSQL
  // server; only those can lose their database server.
  int database_regions = 0;
};

// Faults in start order, from 5% to 75% of the run (the rest is for the
// system to show it recovers while the sensors still publish).
std::vector<Fault> MakeSchedule(const ScheduleParams& params);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SOAK_SCHEDULE_H_

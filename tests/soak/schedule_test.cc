// The soak's fault schedule (tests/soak/schedule.h): a seed replays the
// same faults; the database server is only killed where a region has one;
// every run wipes one hub store; no fault starts on a target still held.
#include "tests/soak/schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace edgesync::test {
namespace {

std::vector<std::string> Lines(const std::vector<Fault>& faults) {
  std::vector<std::string> out;
  for (const Fault& f : faults) out.push_back(f.ToString());
  return out;
}

ScheduleParams ThreeMinutes(uint64_t seed, int database_regions) {
  ScheduleParams p;
  p.seed = seed;
  p.duration_ms = 180000;
  p.database_regions = database_regions;
  return p;
}

TEST(SoakScheduleTest, TheSameSeedReplaysTheSameFaults) {
  EXPECT_EQ(Lines(MakeSchedule(ThreeMinutes(2, 1))), Lines(MakeSchedule(ThreeMinutes(2, 1))));
  EXPECT_NE(Lines(MakeSchedule(ThreeMinutes(2, 1))), Lines(MakeSchedule(ThreeMinutes(7, 1))));
}

TEST(SoakScheduleTest, OnlyARegionWithADatabaseHasItsServerKilled) {
  int kills = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    for (const Fault& f : MakeSchedule(ThreeMinutes(seed, 0))) EXPECT_NE(f.kind, FaultKind::kKillDatabase) << seed;
    for (const Fault& f : MakeSchedule(ThreeMinutes(seed, 1))) {
      if (f.kind != FaultKind::kKillDatabase) continue;
      ++kills;
      EXPECT_EQ(f.region, 0) << seed;
      EXPECT_EQ(f.gateway, -1) << seed;
      EXPECT_GT(f.length_ms, 0) << seed;
    }
  }
  EXPECT_GT(kills, 50) << "50 three-minute runs with one database kill its server about twice each";
}

TEST(SoakScheduleTest, EveryRunWipesOneHubStoreWhileItsDatabaseIsUp) {
  for (int databases : {0, 1, 3}) {
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      std::vector<Fault> faults = MakeSchedule(ThreeMinutes(seed, databases));
      int wipes = 0;
      // When each region's database server is back (the kill's heal).
      std::map<int, int64_t> database_down_until;
      for (const Fault& f : faults) {
        if (f.kind == FaultKind::kKillDatabase) {
          EXPECT_GE(f.at_ms, database_down_until[f.region]) << "seed " << seed << ": " << f.ToString();
          database_down_until[f.region] = f.at_ms + f.length_ms;
        }
        if (f.kind == FaultKind::kWipeHubStore) {
          ++wipes;
          EXPECT_GE(f.at_ms, 90000) << seed;
          EXPECT_GE(f.at_ms, database_down_until[f.region]) << "seed " << seed << ": the wipe needs the server up";
        }
      }
      EXPECT_EQ(wipes, 1) << "seed " << seed << ", " << databases << " databases";
    }
  }
}

}  // namespace
}  // namespace edgesync::test

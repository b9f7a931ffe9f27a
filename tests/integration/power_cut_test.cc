// Power cuts under the gateway's ingest and store, simulated below SQLite and
// the intake journal by the power-cut layer (tests/powercut/power_cut_fs.cc,
// LD_PRELOAD): at a seeded random file operation, everything not yet synced
// is dropped ("drop"), or dropped but for a torn prefix of the last write
// ("torn"), and the process is SIGKILLed. The writer (tests/tools/
// power_cut_writer.cc) runs the gateway's own Ingest and Store, wired from a
// Config as the gateway wires them, and is started again on the same files
// after every cut, continuing the message stream where the acknowledgements
// stopped (the unacknowledged message redelivered with DUP, as the broker
// does). After the last cut the store is opened once more and read whole.
//
// Checked, over POWER_CUT_CUTS cuts per case (default 200; the seed is
// printed and POWER_CUT_SEED replays it):
// - every start opens the store clean (Store::Open's check and a full
//   PRAGMA integrity_check), the intake journal included;
// - store.sync = "full": every message acknowledged (OnMessage returned,
//   when Paho sends the PUBACK) is in the store;
// - store.sync = "commit": every reading a change-log reader saw committed
//   is in the store (a commit is synced before a reader can see it); what
//   was acknowledged but not yet committed may be lost, and is counted;
// - store.sync = "normal": every reading committed before the store's last
//   sync (a WAL checkpoint) survives; what is lost is counted and printed
//   (the window docs/GUARANTEES.md states);
// - no reading is stored twice;
// - an LSN is never given to two readings: every LSN a change-log reader saw
//   (what the uplink could have sent upstream) keeps its reading, across
//   every cut.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace edgesync {
namespace {

using test::Process;
using test::TempDir;

struct Case {
  const char* sync;  // store.sync
  const char* mode;  // drop | torn
};

// What one store went through: its cuts, what was acknowledged, what a
// reader saw.
struct Generation {
  std::set<int64_t> acked;
  std::set<int64_t> durable;           // must survive: acked (full), committed (commit) or committed before a
                                       // sync (normal)
  std::map<uint64_t, int64_t> lsn_of;  // LSN -> message, as readers saw it
  std::map<int64_t, int> acked_in;     // message -> the run that acknowledged it
};

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void PrintTo(const Case& c, std::ostream* os) { *os << "sync=" << c.sync << " mode=" << c.mode; }

class PowerCutTest : public ::testing::TestWithParam<Case> {};

TEST_P(PowerCutTest, AcknowledgedReadingsSurviveAndLsnsNeverRepeat) {
  const Case c = GetParam();
  const bool full = std::string(c.sync) == "full";
  const bool commit = std::string(c.sync) == "commit";
  const int target = EnvInt("POWER_CUT_CUTS", 200);
  // A fresh store every kCutsPerStore cuts, so that creating the store and
  // the journal (a first boot) is cut too.
  constexpr int kCutsPerStore = 25;
  const uint64_t seed = static_cast<uint64_t>(EnvInt("POWER_CUT_SEED", static_cast<int>(std::random_device{}() >> 1)));
  std::printf("power cut: sync=%s mode=%s cuts=%d seed=%llu (POWER_CUT_SEED and POWER_CUT_CUTS replay it)\n", c.sync,
              c.mode, target, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  TempDir tmp;
  // Readings a day old, one a second per device: inside the devices' rate.
  const int64_t t0_ms =
      (std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() -
       86400) *
      1000;
  const int64_t per_run = 300;
  int boot = 0;

  auto run = [&](const std::string& data, const std::vector<std::string>& args, const std::vector<std::string>& env,
                 const std::string& report) {
    Process p;
    // Every start is a new boot of the machine (a power cut is a reboot).
    std::vector<std::string> argv = {EDGESYNC_POWER_CUT_WRITER, data, report, c.sync, "boot-" + std::to_string(++boot)};
    argv.insert(argv.end(), args.begin(), args.end());
    EXPECT_TRUE(p.Start(argv, tmp.File("writer.log"), env));
    return p.Wait(120000);
  };
  auto layer_env = [&](const std::string& data, uint64_t at, const std::string& report) {
    return std::vector<std::string>{std::string("LD_PRELOAD=") + EDGESYNC_POWER_CUT_LIB, "POWER_CUT_DIR=" + data,
                                    "POWER_CUT_AT=" + std::to_string(at), std::string("POWER_CUT_MODE=") + c.mode,
                                    "POWER_CUT_SEED=" + std::to_string(rng()), "POWER_CUT_REPORT=" + report};
  };

  // How many file operations a whole run does (from a fresh store), so cut
  // points spread over all of a run: recovery, store and journal creation,
  // ingest, commits, checkpoints, the clean stop.
  int64_t ops_per_run = 0;
  {
    const std::string data = tmp.File("calibrate");
    ASSERT_EQ(::mkdir(data.c_str(), 0700), 0);
    const std::string report = tmp.File("report-calibrate");
    ASSERT_EQ(run(data, {"0", std::to_string(per_run), std::to_string(t0_ms)}, layer_env(data, 0, report), report), 0);
    for (const std::string& line : ReadLines(report)) {
      if (line.rfind("ops ", 0) == 0) ops_per_run = std::atoll(line.c_str() + 4);
    }
    ASSERT_GT(ops_per_run, 0) << "the power-cut layer counted nothing: is it preloaded?";
  }

  int cuts = 0, runs = 0, stores = 0;
  int64_t acked_total = 0, stored_total = 0, lost_total = 0, lost_max_per_cut = 0, twice_total = 0;
  int64_t lsn_repeats = 0, lost_durable_total = 0, seen_lsns = 0;
  while (cuts < target) {
    const std::string data = tmp.File("data-" + std::to_string(stores++));
    ASSERT_EQ(::mkdir(data.c_str(), 0700), 0);
    Generation g;
    int64_t next_id = 0;
    std::vector<int64_t> lost_in_run;
    for (int here = 0; here < kCutsPerStore && cuts < target;) {
      const int r = runs++;
      const std::string report = tmp.File("report-" + std::to_string(r));
      const uint64_t at = 1 + rng() % static_cast<uint64_t>(ops_per_run + ops_per_run / 10);
      const int rc = run(data, {std::to_string(next_id), std::to_string(per_run), std::to_string(t0_ms)},
                         layer_env(data, at, report), report);
      bool cut = false, done = false;
      std::vector<int64_t> committed_since_sync;
      for (const std::string& line : ReadLines(report)) {
        std::istringstream in(line);
        std::string kind;
        in >> kind;
        if (kind == "A") {
          int64_t k;
          in >> k;
          g.acked.insert(k);
          g.acked_in[k] = r;
          next_id = k + 1;
        } else if (kind == "C") {
          uint64_t lsn;
          int64_t k;
          in >> lsn >> k;
          auto [it, inserted] = g.lsn_of.emplace(lsn, k);
          if (!inserted && it->second != k) {
            ++lsn_repeats;
            ADD_FAILURE() << "run " << r << ": LSN " << lsn << " was message " << it->second << ", now message " << k;
          }
          if (commit) {
            g.durable.insert(k);
          } else {
            committed_since_sync.push_back(k);
          }
        } else if (line == "sync store.db-wal" || line == "sync store.db") {
          g.durable.insert(committed_since_sync.begin(), committed_since_sync.end());
          committed_since_sync.clear();
        } else if (kind == "cut") {
          cut = true;
        } else if (kind == "done") {
          done = true;
        } else if (kind == "open") {
          EXPECT_EQ(line, "open ok") << "run " << r << " (store " << data << ")";
        }
      }
      ASSERT_TRUE(cut ? rc == -9 : (done && rc == 0))
          << "run " << r << ": exit " << rc << (cut ? " after a cut" : " without a cut") << "; see writer.log";
      if (cut) {
        ++cuts;
        ++here;
      }
    }
    if (full) g.durable.insert(g.acked.begin(), g.acked.end());

    // Open once more without the layer and read the whole log.
    const std::string report = tmp.File("report-final-" + std::to_string(stores));
    ASSERT_EQ(run(data, {"dump"}, {}, report), 0);
    std::map<int64_t, int> stored;
    for (const std::string& line : ReadLines(report)) {
      std::istringstream in(line);
      std::string kind;
      in >> kind;
      if (kind == "open") {
        ASSERT_EQ(line, "open ok");
      }
      if (kind != "R") continue;
      uint64_t lsn;
      int64_t k;
      in >> lsn >> k;
      ++stored[k];
      auto it = g.lsn_of.find(lsn);
      if (it != g.lsn_of.end() && it->second != k) {
        ++lsn_repeats;
        ADD_FAILURE() << "LSN " << lsn << " was seen as message " << it->second << ", the store holds message " << k;
      }
    }
    std::map<int, int64_t> lost_by_run;
    for (int64_t k : g.acked) {
      if (!stored.count(k)) ++lost_by_run[g.acked_in[k]];
    }
    for (const auto& [run_id, n] : lost_by_run) {
      lost_total += n;
      lost_max_per_cut = std::max(lost_max_per_cut, n);
    }
    for (int64_t k : g.durable) {
      if (!stored.count(k)) {
        ++lost_durable_total;
        ADD_FAILURE() << "message " << k << " lost: "
                      << (full     ? "acknowledged with store.sync = full"
                          : commit ? "committed with store.sync = commit"
                                   : "committed before the store's last sync");
      }
    }
    for (const auto& [k, n] : stored) {
      if (n > 1) {
        ++twice_total;
        ADD_FAILURE() << "message " << k << " stored " << n << " times";
      }
    }
    acked_total += static_cast<int64_t>(g.acked.size());
    stored_total += static_cast<int64_t>(stored.size());
    seen_lsns += static_cast<int64_t>(g.lsn_of.size());
    if (HasFailure()) break;
  }
  std::printf("power cut: sync=%s mode=%s: %d cuts over %d runs and %d stores; %lld messages acknowledged, %lld "
              "readings stored, %lld acknowledged readings lost (at most %lld in one cut; committed before a sync: "
              "%lld), %lld stored twice, %lld LSNs seen by a reader, %lld given twice\n",
              c.sync, c.mode, cuts, runs, stores, static_cast<long long>(acked_total),
              static_cast<long long>(stored_total), static_cast<long long>(lost_total),
              static_cast<long long>(lost_max_per_cut), static_cast<long long>(lost_durable_total),
              static_cast<long long>(twice_total), static_cast<long long>(seen_lsns),
              static_cast<long long>(lsn_repeats));
  EXPECT_GE(cuts, target);
  if (full) {
    EXPECT_EQ(lost_total, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, PowerCutTest,
                         ::testing::Values(Case{"full", "drop"}, Case{"full", "torn"}, Case{"commit", "drop"},
                                           Case{"commit", "torn"}, Case{"normal", "drop"}, Case{"normal", "torn"}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.sync) + "_" + info.param.mode;
                         });

}  // namespace
}  // namespace edgesync

// A backlog is not a flood: readings the local broker queued while the
// gateway was stopped (SIGTERM or SIGKILL, 30 s; 10 minutes) or while its
// store was stalled arrive all at once, and none within its device's rate is
// refused, whether the sensors stamp their readings with their own clock or
// send bare numbers that the gateway stamps on arrival; a runaway device
// beside them still is, visibly. Real parts: Mosquitto, the edgesync
// program, separate publishing processes (es_publisher), a region (broker +
// hub process), a second process holding the store's write lock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/ingest/presence_mark.h"
#include "platform/clock.h"
#include "tests/support/reading_tally.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

constexpr const char* kGatewayId = "gw-backlog";

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The edgesync gateway program with the default ingest settings (rate 100/s,
// burst 200 per device), its local broker, and optionally a region.
class Gateway {
 public:
  Gateway(const TempDir& dir, Broker* local, RegionSite* region, const std::string& ingest_extra = "")
      : dir_(dir.File("gw")) {
    RegionSite::MakeDir(dir_);
    std::ofstream c(config());
    c << "[gateway]\nid = " << Q(kGatewayId) << "\ndata_dir = " << Q(dir_) << "\n\n"
      << "[ingest]\nbroker_uri = " << Q(local->uri()) << "\n" << ingest_extra << "\n";
    if (region != nullptr) {
      c << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\nbackoff_max_ms = 500\n"
        << "probe_interval_ms = 200\n\n[[region]]\nname = " << Q(region->name()) << "\nuri = "
        << Q(region->broker().uri()) << "\n";
    }
  }
  ~Gateway() { process_.Stop(5000); }

  // Started and subscribed (the status file says the link is up).
  bool Start(const std::vector<std::string>& env = {}) {
    // A killed gateway's last status file still says "connected".
    std::remove((dir_ + "/status.json").c_str());
    if (!process_.Start({EDGESYNC_BINARY, "gateway", "--config", config()}, dir_ + "/gateway.log", env)) return false;
    return WaitFor([&] { return StatusField(Status(), metrics::kIngestMqttConnected) == 1 && process_.running(); },
                   20000);
  }
  int Stop() { return process_.Stop(10000); }
  void Kill9() { process_.Kill9(); }
  bool running() { return process_.running(); }
  std::string config() const { return dir_ + "/gateway.toml"; }
  std::string store_path() const { return dir_ + "/store.db"; }
  std::string log() const { return ReadAll(dir_ + "/gateway.log"); }
  nlohmann::json Status() const { return ReadStatusFile(dir_ + "/status.json"); }

 private:
  std::string dir_;
  Process process_;
};

// Sensors: `devices` devices, one reading every step_ms each in real time,
// stamped with the time it is published (format "json": a synchronised
// clock) or sent as a bare number that the gateway stamps on arrival
// ("bare": no clock).
struct Sensors {
  Sensors(int devices_, int readings_, int64_t step_ms_, std::string prefix_, std::string format_ = "json")
      : devices(devices_), readings(readings_), step_ms(step_ms_), prefix(std::move(prefix_)),
        format(std::move(format_)) {}
  int devices;
  int readings;
  int64_t step_ms;
  std::string prefix;
  std::string format;
  int64_t base_ms = 0;
  Process process;

  bool Start(const Broker& broker, const std::string& log) {
    base_ms = WallMs();
    double rate = devices * 1000.0 / static_cast<double>(step_ms);
    return process.Start({EDGESYNC_PUBLISHER, broker.uri(), "sensors-" + prefix, std::to_string(devices),
                          std::to_string(readings), prefix, std::to_string(base_ms), std::to_string(rate), format,
                          std::to_string(step_ms)},
                         log);
  }
};

// Reads the gateway's store (after it stopped).
ReadingTally Count(const std::string& store_path, const std::string& prefix, int devices, int readings,
                   int64_t base_ms, int64_t step_ms) {
  std::unique_ptr<Store> store = OpenGatewayStore(store_path, kGatewayId);
  if (!store) return ReadingTally{};
  return TallyReadings(store.get(), prefix, devices, readings, base_ms, step_ms);
}

// Every LSN 1..n of the gateway's origin held by the region exactly once.
void ExpectRegionHoldsEachOnce(RegionSite* region, uint64_t n) {
  std::map<uint64_t, int> held;
  for (const auto& [key, count] : region->Contents()) {
    if (key.first.rfind(std::string(kGatewayId) + "/", 0) != 0) continue;
    held[key.second] += count;
  }
  EXPECT_EQ(held.size(), n);
  int64_t twice = 0;
  for (const auto& [lsn, count] : held) {
    if (count != 1 || lsn < 1 || lsn > n) ++twice;
  }
  EXPECT_EQ(twice, 0) << "LSNs held more than once or outside 1.." << n;
}

// The scenario of the issue: 10 devices x 20 readings/s at QoS 1 (a fifth
// of the default 100/s), the gateway away for 30 s while the broker queues
// ~600 readings per device, then back: the broker delivers the queue at
// once. Every reading is stored once and reaches the region once.
void OutageOf30s(bool kill9) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  Gateway gw(dir, &local, &eu);
  ASSERT_TRUE(gw.Start()) << gw.log();
  // 40 s of readings: 3 s live, 30 s away, the rest live after the restart.
  Sensors sensors{10, 800, 50, "bk"};
  ASSERT_TRUE(sensors.Start(local, dir.File("sensors.log")));
  SleepMs(3000);
  if (kill9) {
    gw.Kill9();
  } else {
    ASSERT_EQ(gw.Stop(), 0) << "graceful stop on SIGTERM";
  }
  SleepMs(30000);
  ASSERT_TRUE(gw.Start()) << gw.log();
  ASSERT_EQ(sensors.process.Wait(120000), 0) << ReadAll(dir.File("sensors.log"));
  const int64_t total = 10 * 800;
  nlohmann::json status;
  EXPECT_TRUE(WaitFor([&] {
    status = gw.Status();
    return StatusField(status, metrics::kStoreLastLsn) >= total && StatusField(status, metrics::kUplinkCheckpoint) >= total;
  }, 90000)) << status.dump() << gw.log();
  EXPECT_EQ(status["ingest"].value("readings_rate_limited", int64_t{-1}), 0) << status.dump();
  EXPECT_EQ(status["ingest"]["rejected"].value("rate_limited", int64_t{-1}), 0) << status.dump();
  EXPECT_EQ(gw.Stop(), 0);
  ReadingTally t = Count(gw.store_path(), "bk", 10, 800, sensors.base_ms, 50);
  std::printf("%s, 30 s away: %lld stored, missing %lld, duplicates %lld\n", kill9 ? "SIGKILL" : "SIGTERM",
              (long long)t.total, (long long)t.missing, (long long)t.duplicates);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.duplicates, 0);
  EXPECT_EQ(t.wrong_time, 0);
  ExpectRegionHoldsEachOnce(&eu, static_cast<uint64_t>(total));
}

TEST(IngestBacklogTest, ThirtySecondsStoppedBySigtermLoseNothingWithinTheRate) { OutageOf30s(false); }

TEST(IngestBacklogTest, ThirtySecondsKilledBySigkillLoseNothingWithinTheRate) { OutageOf30s(true); }

// The store stalls under load (another process holds its write lock): the
// ingest queue fills, back-pressure stops reading from the broker, the
// broker queues; when the store is free the queue arrives at once. 10
// devices at 80 readings/s (within 100/s), a small batch_max so that
// back-pressure starts within a second, 10 s of stall.
TEST(IngestBacklogTest, AStalledStoreUnderLoadLosesNothingWithinTheRate) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  Gateway gw(dir, &local, nullptr, "batch_max = 100\n");
  ASSERT_TRUE(gw.Start()) << gw.log();
  Sensors sensors{10, 1600, 12, "st"};  // ~83 readings/s per device for ~19 s
  ASSERT_TRUE(sensors.Start(local, dir.File("sensors.log")));
  SleepMs(3000);
  Process locker;
  ASSERT_TRUE(locker.Start(
      {"sqlite3", "-cmd", ".timeout 10000", gw.store_path(), "BEGIN IMMEDIATE;", ".shell sleep 10", "ROLLBACK;"},
      dir.File("locker.log")));
  // The stall is real: commits fail while the lock is held, and
  // back-pressure stops reading from the broker (which queues).
  EXPECT_TRUE(WaitFor([&] { return StatusField(gw.Status(), metrics::kIngestCommitFailures) > 0; }, 15000))
      << gw.Status().dump() << ReadAll(dir.File("locker.log"));
  // Messages already on their way when intake closed are taken; once the
  // link to the local broker is down nothing more may be read.
  EXPECT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = gw.Status();
        return StatusField(s, metrics::kIngestPaused) == 1 && StatusField(s, metrics::kIngestMqttConnected) == 0;
      },
      15000))
      << gw.Status().dump();
  nlohmann::json before = gw.Status();
  SleepMs(2500);
  nlohmann::json after = gw.Status();
  EXPECT_GT(after.at("time_ms").get<int64_t>(), before.at("time_ms").get<int64_t>())
      << "the status file was not rewritten";
  EXPECT_EQ(StatusField(after, metrics::kIngestMqttReceived), StatusField(before, metrics::kIngestMqttReceived))
      << "messages were read while the store was stalled";
  EXPECT_EQ(locker.Wait(30000), 0) << ReadAll(dir.File("locker.log"));
  ASSERT_EQ(sensors.process.Wait(120000), 0) << ReadAll(dir.File("sensors.log"));
  const int64_t total = 10 * 1600;
  nlohmann::json status;
  EXPECT_TRUE(WaitFor([&] {
    status = gw.Status();
    return StatusField(status, metrics::kStoreLastLsn) >= total;
  }, 90000)) << status.dump();
  EXPECT_EQ(status["ingest"].value("readings_rate_limited", int64_t{-1}), 0) << status.dump();
  EXPECT_EQ(gw.Stop(), 0);
  ReadingTally t = Count(gw.store_path(), "st", 10, 1600, sensors.base_ms, 12);
  std::printf("store stalled 10 s: %lld stored, missing %lld, duplicates %lld\n", (long long)t.total,
              (long long)t.missing, (long long)t.duplicates);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.duplicates, 0);
  EXPECT_EQ(t.wrong_time, 0);
}

// A runaway sensor (1,000 readings/s by its own clock, ten times the rate)
// beside 50 normal ones (10/s): the normal ones lose nothing; what the
// runaway loses is counted (per device, to the reading), named in the
// status file and logged, at most one line per device per 10 s.
TEST(IngestBacklogTest, ARunawayDeviceLosesVisiblyAndCostsFiftyOthersNothing) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  Gateway gw(dir, &local, nullptr);
  ASSERT_TRUE(gw.Start()) << gw.log();
  Sensors runaway{1, 8000, 1, "hot"};
  Sensors normal{50, 60, 100, "cool"};
  const int64_t started = NowMs();
  ASSERT_TRUE(runaway.Start(local, dir.File("runaway.log")));
  ASSERT_TRUE(normal.Start(local, dir.File("normal.log")));
  ASSERT_EQ(runaway.process.Wait(120000), 0) << ReadAll(dir.File("runaway.log"));
  ASSERT_EQ(normal.process.Wait(120000), 0) << ReadAll(dir.File("normal.log"));
  nlohmann::json status;
  ASSERT_TRUE(WaitFor([&] {
    status = gw.Status();
    return StatusField(status, metrics::kIngestMessages) >= 8000 + 50 * 60;
  }, 60000)) << status.dump();
  SleepMs(1500);  // the committed count settles, the status file is rewritten
  status = gw.Status();
  EXPECT_EQ(gw.Stop(), 0);
  ReadingTally cool = Count(gw.store_path(), "cool", 50, 60, normal.base_ms, 100);
  EXPECT_EQ(cool.missing, 0);
  EXPECT_EQ(cool.duplicates, 0);
  ReadingTally hot = Count(gw.store_path(), "hot", 1, 8000, runaway.base_ms, 1);
  EXPECT_EQ(hot.duplicates, 0);
  EXPECT_GT(hot.missing, 0) << "the runaway was not limited";
  // Its losses are exactly what the counters say.
  const int64_t limited = status["ingest"].value("readings_rate_limited", int64_t{-1});
  EXPECT_EQ(limited, hot.missing) << status.dump();
  ASSERT_EQ(status["ingest"]["rate_limited_devices"].size(), 1u) << status.dump();
  EXPECT_EQ(status["ingest"]["rate_limited_devices"][0].value("device", ""), "hot0");
  EXPECT_EQ(status["ingest"]["rate_limited_devices"][0].value("rejected", int64_t{-1}), hot.missing);
  // Logged: a line naming the device at its first refusal, at most one per
  // 10 s after that, none for the others.
  std::string log = gw.log();
  size_t lines = 0;
  for (size_t at = log.find("device hot0 over its rate"); at != std::string::npos;
       at = log.find("device hot0 over its rate", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, static_cast<size_t>(1 + (NowMs() - started) / 10000)) << log;
  EXPECT_EQ(log.find("device cool"), std::string::npos) << log;
  std::printf("runaway: %lld of 8000 stored, %lld refused and counted, %zu log line(s)\n", (long long)hot.total,
              (long long)limited, lines);
}

// Readings without a time of their own: the gateway stamps them on arrival,
// so only the time it measured away from the broker (docs/INGEST.md, "the
// time edgesync was away") tells a backlog from a flood.

size_t CountLines(const std::string& log, const std::string& what) {
  size_t lines = 0;
  for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++lines;
  return lines;
}

// The longest absence the gateway's log reports ("... ms away"), -1 if none.
int64_t LongestAwayLogged(const std::string& log) {
  int64_t longest = -1;
  const std::string key = "kept our session; ";
  for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
    longest = std::max<int64_t>(longest, std::atoll(log.c_str() + at + key.size()));
  }
  return longest;
}

// The scenario with bare numbers: 10 devices x 20 readings/s (a
// fifth of the default 100/s), the gateway away 30 s while the broker queues
// ~600 readings per device. With `runaway`, a device publishing bare
// numbers at 1,000/s beside them from the start until the restart (33,000
// readings, all acknowledged by the broker).
void BareOutageOf30s(bool kill9, bool runaway) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  Gateway gw(dir, &local, &eu);
  ASSERT_TRUE(gw.Start()) << gw.log();
  Sensors sensors{10, 800, 50, "bare", "bare"};
  Sensors hot{1, 33000, 1, "hot", "bare"};
  const int64_t started = NowMs();
  ASSERT_TRUE(sensors.Start(local, dir.File("sensors.log")));
  if (runaway) {
    ASSERT_TRUE(hot.Start(local, dir.File("hot.log")));
  }
  SleepMs(3000);
  int64_t first_received = 0, first_limited = 0;
  if (kill9) {
    gw.Kill9();
  } else {
    ASSERT_EQ(gw.Stop(), 0) << "graceful stop on SIGTERM";
    // Its last status, written after the link closed, is exact.
    nlohmann::json last = gw.Status();
    first_received = StatusField(last, metrics::kIngestMqttReceived);
    first_limited = last["ingest"].value("readings_rate_limited", int64_t{-1});
  }
  SleepMs(30000);
  if (runaway) {
    ASSERT_EQ(hot.process.Wait(60000), 0) << ReadAll(dir.File("hot.log"));
  }
  ASSERT_TRUE(gw.Start()) << gw.log();
  ASSERT_EQ(sensors.process.Wait(120000), 0) << ReadAll(dir.File("sensors.log"));
  const int64_t cool_total = 10 * 800;
  nlohmann::json status;
  // Everything the broker holds is taken (the runaway's messages too), and
  // what was committed has reached the region.
  EXPECT_TRUE(WaitFor([&] {
    status = gw.Status();
    const int64_t received = StatusField(status, metrics::kIngestMqttReceived);
    const int64_t lsn = StatusField(status, metrics::kStoreLastLsn);
    // (Committed includes what a killed run left in the intake journal.)
    const int64_t committed =
        StatusField(status, metrics::kIngestReadingsCommitted) - StatusField(status, metrics::kIngestReplayed);
    return (!runaway || first_received + received >= cool_total + hot.readings) && lsn >= cool_total &&
           committed == StatusField(status, metrics::kIngestReadingsAccepted) &&
           StatusField(status, metrics::kUplinkCheckpoint) >= lsn;
  }, 120000)) << status.dump() << gw.log();
  EXPECT_EQ(gw.Stop(), 0);
  status = gw.Status();
  const int64_t lsn = StatusField(status, metrics::kStoreLastLsn);
  ReadingTally t = Count(gw.store_path(), "bare", 10, 800, sensors.base_ms, 50);
  std::printf("bare numbers, %s, 30 s away: %lld stored, missing %lld, duplicates %lld, %lld redelivered reading(s) "
              "recognised\n", kill9 ? "SIGKILL" : "SIGTERM", (long long)t.total, (long long)t.missing,
              (long long)t.duplicates, (long long)StatusField(status, metrics::kIngestDuplicatesSkipped));
  EXPECT_EQ(t.missing, 0);
  // The message whose callback ran when the stop closed the link loses its
  // PUBACK and comes again with DUP set; the intake journal names it, so
  // the restarted gateway knows it without a time of its own
  // (docs/INGEST.md "Redeliveries").
  EXPECT_EQ(t.duplicates, 0);
  ExpectRegionHoldsEachOnce(&eu, static_cast<uint64_t>(lsn));
  const int64_t limited = status["ingest"].value("readings_rate_limited", int64_t{-1});
  if (!runaway) {
    EXPECT_EQ(lsn, cool_total + t.duplicates);
    EXPECT_EQ(limited, 0) << status.dump();
    EXPECT_EQ(status["ingest"]["rejected"].value("rate_limited", int64_t{-1}), 0) << status.dump();
    return;
  }
  // The runaway lost what exceeds its rate over the whole run, absence
  // included: at most its burst plus 100/s of the time from its first
  // reading to the end; every loss is counted, to the reading, and named.
  ReadingTally h = Count(gw.store_path(), "hot", 1, hot.readings, hot.base_ms, 1);
  const double elapsed_s = static_cast<double>(NowMs() - started) / 1000.0;
  const int64_t seconds = static_cast<int64_t>(elapsed_s) + 1;
  std::printf("runaway at 1,000/s: %lld of %d stored, %lld refused and counted, in %lld s\n", (long long)h.total,
              hot.readings, (long long)(first_limited + limited), (long long)seconds);
  EXPECT_EQ(t.duplicates + h.duplicates, 0);
  EXPECT_EQ(lsn, cool_total + t.duplicates + h.total + h.duplicates);
  // (A restart starts every bucket full: a burst per run.) Plus three
  // seconds of its rate: the gateway grants on its own monotonic clock, from
  // its presence mark, and the window here is the test's, around the
  // processes it starts; a sanitizer build's gateway, slowed down, was seen
  // granting up to ~2 s past it (4,910 readings in a window of 43-44 s). It
  // was sent 33,000: a limiter that does not hold stores far more.
  EXPECT_LE(static_cast<double>(h.total), 2 * 200 + 100 * (elapsed_s + 3))
      << "the runaway was not limited to its rate";
  EXPECT_EQ(first_limited + limited, h.missing) << status.dump();
  ASSERT_EQ(status["ingest"]["rate_limited_devices"].size(), 1u) << status.dump();
  EXPECT_EQ(status["ingest"]["rate_limited_devices"][0].value("device", ""), "hot0");
  // Logged: at most a line per run at its first refusal and one per 10 s
  // after that; none for the others.
  const std::string log = gw.log();
  EXPECT_GE(CountLines(log, "device hot0 over its rate"), 1u) << log;
  EXPECT_LE(CountLines(log, "device hot0 over its rate"), static_cast<size_t>(2 + seconds / 10)) << log;
  EXPECT_EQ(log.find("device bare"), std::string::npos) << log;
}

TEST(IngestBacklogTest, BareNumbersThirtySecondsStoppedBySigtermLoseNothingAndARunawayBesideThemIsLimited) {
  BareOutageOf30s(false, true);
}

TEST(IngestBacklogTest, BareNumbersThirtySecondsKilledBySigkillLoseNothingWithinTheRate) {
  BareOutageOf30s(true, false);
}

// Ten minutes away, in 30 s of CI time: after the gateway's graceful stop
// the test moves its presence mark 570 s back on the monotonic clock (as if
// it had stopped 9.5 minutes earlier), so the restarted gateway measures
// about 10 minutes away through the same path as after a real 10-minute
// stop: the mark of this boot, then the broker's session present. Its wall
// clock meanwhile runs a day ahead (libfaketime, monotonic clock untouched)
// and counts for nothing. The rate is scaled down to match: 1 reading/s per
// device, burst 20; the sensors publish only while it is away, 300 bare
// readings per device at 10/s: within 1/s over 10 minutes, six times what
// the 30 s really spent away would allow.
TEST(IngestBacklogTest, BareNumbersTenMinutesAwayLoseNothingWithinTheRate) {
  const std::string lib = FakeTimeLibrary();
  ASSERT_FALSE(lib.empty()) << "libfaketime not found: install the faketime package (firmware-config/deps.sh test)";
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  Gateway gw(dir, &local, &eu, "device_rate = 1.0\ndevice_burst = 20\n");
  ASSERT_TRUE(gw.Start()) << gw.log();
  SleepMs(1000);
  ASSERT_EQ(gw.Stop(), 0) << "graceful stop on SIGTERM";
  {
    PresenceMark mark(dir.File("gw"), SystemClock());
    int64_t at = 0;
    ASSERT_EQ(mark.Read(&at), PresenceMark::Found::kThisBoot) << "the stop left no presence mark of this boot";
    ASSERT_OK(mark.Write(at - 570000));
  }
  Sensors sensors{10, 300, 100, "ten", "bare"};
  ASSERT_TRUE(sensors.Start(local, dir.File("sensors.log")));
  ASSERT_EQ(sensors.process.Wait(120000), 0) << ReadAll(dir.File("sensors.log"));
  const std::string clock = dir.File("faketime");
  WriteAll(clock, "+1d\n");
  ASSERT_TRUE(gw.Start(FakeTimeEnv(clock)))
      << gw.log();
  const int64_t total = 10 * 300;
  nlohmann::json status;
  EXPECT_TRUE(WaitFor([&] {
    status = gw.Status();
    return StatusField(status, metrics::kIngestMessages) >= total &&
           StatusField(status, metrics::kStoreLastLsn) >= total &&
           StatusField(status, metrics::kUplinkCheckpoint) >= total;
  }, 90000)) << status.dump() << gw.log();
  EXPECT_EQ(status["ingest"].value("readings_rate_limited", int64_t{-1}), 0) << status.dump();
  EXPECT_EQ(gw.Stop(), 0);
  const int64_t away = LongestAwayLogged(gw.log());
  EXPECT_GE(away, 600000) << gw.log();
  EXPECT_LT(away, 86400000) << "the wall clock's day ahead was counted as time away";
  ReadingTally t = Count(gw.store_path(), "ten", 10, 300, sensors.base_ms, 100);
  std::printf("bare numbers, 10 min away (%lld ms measured): %lld stored, missing %lld, duplicates %lld\n",
              (long long)away, (long long)t.total, (long long)t.missing, (long long)t.duplicates);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.duplicates, 0);
  ExpectRegionHoldsEachOnce(&eu, static_cast<uint64_t>(total));
}

// The store stalls 10 s under load (another process holds its write lock):
// ingest pauses its link, the broker queues ~500 bare readings per device,
// then delivers them at once. 10 devices at 50 readings/s, half their
// 100/s: a publisher that an instrumented (sanitizer) build slows down
// catches up in bursts, and a device publishing near its limit then really
// exceeds it while the queue drains.
TEST(IngestBacklogTest, BareNumbersAStalledStoreUnderLoadLosesNothingWithinTheRate) {
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  Gateway gw(dir, &local, &eu, "batch_max = 100\n");
  ASSERT_TRUE(gw.Start()) << gw.log();
  Sensors sensors{10, 1600, 20, "stb", "bare"};
  ASSERT_TRUE(sensors.Start(local, dir.File("sensors.log")));
  SleepMs(3000);
  Process locker;
  ASSERT_TRUE(locker.Start(
      {"sqlite3", "-cmd", ".timeout 10000", gw.store_path(), "BEGIN IMMEDIATE;", ".shell sleep 10", "ROLLBACK;"},
      dir.File("locker.log")));
  // The stall is real: the link to the local broker goes down.
  EXPECT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = gw.Status();
        return StatusField(s, metrics::kIngestPaused) == 1 && StatusField(s, metrics::kIngestMqttConnected) == 0;
      },
      15000))
      << gw.Status().dump();
  EXPECT_EQ(locker.Wait(30000), 0) << ReadAll(dir.File("locker.log"));
  ASSERT_EQ(sensors.process.Wait(120000), 0) << ReadAll(dir.File("sensors.log"));
  const int64_t total = 10 * 1600;
  nlohmann::json status;
  EXPECT_TRUE(WaitFor([&] {
    status = gw.Status();
    return StatusField(status, metrics::kStoreLastLsn) >= total &&
           StatusField(status, metrics::kUplinkCheckpoint) >= StatusField(status, metrics::kStoreLastLsn);
  }, 90000)) << status.dump();
  const int64_t pauses = StatusField(status, metrics::kIngestPauses);
  EXPECT_GE(pauses, 1) << status.dump();
  EXPECT_EQ(status["ingest"].value("readings_rate_limited", int64_t{-1}), 0) << status.dump();
  EXPECT_EQ(gw.Stop(), 0);
  status = gw.Status();
  ReadingTally t = Count(gw.store_path(), "stb", 10, 1600, sensors.base_ms, 20);
  const int64_t skipped = StatusField(status, metrics::kIngestDuplicatesSkipped);
  std::printf("bare numbers, store stalled 10 s: %lld stored, missing %lld, duplicates %lld, %lld pause(s), "
              "%lld redelivered reading(s) recognised\n",
              (long long)t.total, (long long)t.missing, (long long)t.duplicates, (long long)pauses,
              (long long)skipped);
  EXPECT_EQ(t.missing, 0);
  // The messages whose PUBACK the pause cut off come again with DUP set and
  // their packet ids; within one run ingest knows them (redelivery_filter.h).
  EXPECT_EQ(t.duplicates, 0);
  EXPECT_EQ(StatusField(status, metrics::kStoreLastLsn), total + t.duplicates);
  ExpectRegionHoldsEachOnce(&eu, static_cast<uint64_t>(total + t.duplicates));
}

}  // namespace
}  // namespace edgesync::test

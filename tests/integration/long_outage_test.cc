// An outage of days, in simulated time: the real `edgesync gateway` runs
// under libfaketime (its wall clock stepped a day at a time; its monotonic
// clock left alone) while the link to its only region is cut at the TCP
// proxy. Sensors keep publishing through the local Mosquitto. The gateway
// keeps ingesting until its store reaches store.max_bytes under
// disk_policy = "reject-new" (then the broker queues), `status` shows the
// backlog's age in days and its bytes, and retention, which runs every
// second with a one-hour age, never drops an unacknowledged reading. When the
// region returns the backlog drains, retention frees acknowledged readings,
// the broker's queue flows in (ingest resumes by itself, no restart), and
// the region holds every reading once.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/reading_tally.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

// `edgesync status --json` of the gateway, as a person would ask.
nlohmann::json StatusJson(const std::string& config) {
  std::string cmd = std::string(EDGESYNC_BINARY) + " status --json --config " + config + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  auto j = nlohmann::json::parse(out, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

TEST(LongOutageTest, DaysWithoutTheRegionLoseNothingUnderRejectNewAndDrainCountExact) {
  const std::string lib = FakeTimeLibrary();
  ASSERT_FALSE(lib.empty()) << "libfaketime not found: install the faketime package (firmware-config/deps.sh test)";
  TempDir dir;
  Broker local(dir.File("local"));
  ASSERT_TRUE(local.Start()) << local.log();
  RegionSite eu(dir.path(), "eu");
  ASSERT_TRUE(eu.Start());
  TcpProxy link(eu.broker().port());

  const std::string data = dir.File("gw");
  RegionSite::MakeDir(data);
  const std::string config = dir.File("gw.toml");
  auto write_config = [&](int64_t max_bytes) {
    std::ofstream(config) << "[gateway]\nid = \"gw-away\"\ndata_dir = " << Q(data) << "\n\n"
                        << "[metrics]\nlisten = \"\"\n\n"
                        << "[store]\ndisk_policy = \"reject-new\"\nmax_bytes = " << max_bytes
                        << "\nmin_free_bytes = 0\n"
                        << "retention_age_s = 3600\nretention_interval_s = 1\n\n"
                        << "[ingest]\nbroker_uri = " << Q(local.uri())
                        << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
                        << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\n"
                        << "backoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
                        << "[[region]]\nname = \"eu\"\nuri = " << Q(link.uri()) << "\n";
  };
  write_config(16 << 20);
  const std::string clock = dir.File("faketime");
  WriteAll(clock, "+0\n");
  Process gw;
  ASSERT_TRUE(gw.Start({EDGESYNC_BINARY, "gateway", "--config", config}, dir.File("gw.log"),
                       FakeTimeEnv(clock)));
  // Connected to the local broker, and a moment for the first run's
  // subscription (the broker keeps nothing for a session that has none).
  ASSERT_TRUE(WaitFor(
      [&] { return StatusField(ReadStatusFile(data + "/status.json"), metrics::kIngestMqttConnected) == 1; },
                      60000))
      << ReadAll(dir.File("gw.log"));
  SleepMs(1000);
  link.Cut();

  // Sensors with synchronised clocks: each reading carries its own time.
  const int64_t base = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  int published = 0;
  auto publish = [&](int devices, int readings, const std::string& prefix) {
    Process p;
    ASSERT_TRUE(p.Start({EDGESYNC_PUBLISHER, local.uri(), "sensors-" + prefix, std::to_string(devices),
                         std::to_string(readings), prefix, std::to_string(base), "0", "json", "1000"}));
    ASSERT_EQ(p.Wait(180000), 0);
    published += devices * readings;
  };
  auto committed = [&] {
    return StatusField(ReadStatusFile(data + "/status.json"), metrics::kIngestReadingsCommitted);
  };

  // Three simulated days, a batch of readings each day.
  for (int day = 1; day <= 3; ++day) {
    publish(10, 300, "day" + std::to_string(day) + "-");
    ASSERT_TRUE(WaitFor([&] { return committed() == published; }, 120000)) << committed() << " of " << published;
    WriteAll(clock, "+" + std::to_string(day) + "d\n");
    SleepMs(2500);  // retention runs every second, with readings a day past its age
  }
  nlohmann::json s = StatusJson(config);
  EXPECT_GE(StatusField(s, metrics::kBacklogOldestAgeS), 3 * 86400 - 600) << s.dump(2);
  EXPECT_EQ(StatusField(s, metrics::kBacklogReadings), published) << s.dump(2);
  EXPECT_GT(StatusField(s, metrics::kBacklogBytes), published * 10) << s.dump(2);
  EXPECT_EQ(StoreStatsOf(data + "/store.db").entries, published) << "retention dropped unacknowledged readings";

  // Past max_bytes: reject-new refuses to commit, the broker keeps the rest.
  // The limit is lowered to just above what the store holds now (the test's
  // readings compress to a fraction of a byte each, so no fixed limit fills
  // in reasonable time whatever the layout), and the gateway restarted with
  // it, as an operator would; then batches until the store says it is full.
  const int64_t held_bytes = StatusField(ReadStatusFile(data + "/status.json"), metrics::kStoreFileBytes);
  ASSERT_GT(held_bytes, 0);
  EXPECT_EQ(gw.Stop(30000), 0);
  write_config(held_bytes + 16384);
  ASSERT_TRUE(gw.Start({EDGESYNC_BINARY, "gateway", "--config", config}, dir.File("gw.log"),
                       FakeTimeEnv(clock)));
  ASSERT_TRUE(WaitFor(
      [&] { return StatusField(ReadStatusFile(data + "/status.json"), metrics::kIngestMqttConnected) == 1; },
                      60000))
      << ReadAll(dir.File("gw.log"));
  auto rejected = [&] { return StatusField(ReadStatusFile(data + "/status.json"), metrics::kStoreRejectedFull); };
  for (int batch = 0; batch < 8 && rejected() == 0; ++batch) {
    publish(10, 2000, "full" + std::to_string(batch) + "-");
    WaitFor([&] { return rejected() > 0 || committed() == published; }, 60000);
  }
  ASSERT_GT(rejected(), 0) << "the store never filled\n" << StatusJson(config).dump(2);
  SleepMs(3000);  // retention runs on the full store
  s = StatusJson(config);
  StoreStats full = StoreStatsOf(data + "/store.db");
  EXPECT_LT(full.entries, published) << "the store took everything: it never was full";
  EXPECT_EQ(full.entries, static_cast<int64_t>(full.last_lsn)) << "retention dropped unacknowledged readings";
  EXPECT_EQ(full.acked_lsn, 0u);
  EXPECT_EQ(StatusField(s, metrics::kStoreDroppedOldest), 0);
  EXPECT_GE(StatusField(s, metrics::kBacklogOldestAgeS), 3 * 86400 - 600) << s.dump(2);

  // Ingest stopped taking messages from the local broker (its link is
  // paused, not held on Paho's receive thread, which the uplink shares).
  EXPECT_EQ(StatusField(s, metrics::kIngestPaused), 1) << s.dump(2);
  EXPECT_GE(StatusField(s, metrics::kIngestPauses), 1) << s.dump(2);
  const int64_t pid = s.at("pid").get<int64_t>();

  // The region returns, and the same gateway process drains the backlog:
  // acknowledged readings make room, ingest resumes by itself, the broker's
  // queue comes in, and everything reaches the region.
  link.Restore();
  EXPECT_TRUE(WaitFor(
      [&] {
        nlohmann::json st = ReadStatusFile(data + "/status.json");
        return StatusField(st, metrics::kStoreLastLsn) == published && StatusField(st, metrics::kBacklogReadings) == 0;
      },
      300000))
      << StatusJson(config).dump(2) << ReadAll(dir.File("gw.log")).substr(0, 4000);
  s = StatusJson(config);
  EXPECT_EQ(StatusField(s, metrics::kStoreLastLsn), published);
  EXPECT_EQ(StatusField(s, metrics::kStoreDroppedOldest), 0);
  EXPECT_EQ(s.at("pid").get<int64_t>(), pid) << "the gateway was restarted";
  EXPECT_EQ(StatusField(s, metrics::kIngestPaused), 0) << s.dump(2);
  EXPECT_EQ(gw.Stop(30000), 0);
  std::set<uint64_t> lsns;
  int64_t twice = 0;
  for (const auto& [key, count] : eu.Contents()) {
    if (key.first.rfind("gw-away/", 0) != 0) continue;
    lsns.insert(key.second);
    if (count > 1) ++twice;
  }
  EXPECT_EQ(twice, 0);
  EXPECT_EQ(static_cast<int64_t>(lsns.size()), published);
  if (!lsns.empty()) {
    EXPECT_EQ(*lsns.rbegin(), static_cast<uint64_t>(published));
  }
}

}  // namespace
}  // namespace edgesync::test

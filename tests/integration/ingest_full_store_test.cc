// A store full under reject-new, with real parts: the `edgesync gateway`
// program, its local Mosquitto, sensors that log exactly which readings the
// broker acknowledged (es_acked_sensor), and a region (Mosquitto + `edgesync
// region`) behind a TCP proxy. The region is cut; the store reaches a small
// store.max_bytes and refuses commits; ingest stops taking messages from the
// local broker (status: paused, reason, a pause counted) while the sensors
// keep publishing into the broker's queue for the gateway's session.
//
// - Without a restart: the region comes back, the uplink (whose MQTT client
//   shares Paho's receive thread with ingest) drains the backlog, the store
//   frees the acknowledged readings, ingest resumes by itself.
// - SIGTERM while full: a clean stop (exit 0); the next start keeps the
//   link to the local broker down until the journal's readings are in.
// Either way every reading a sensor saw acknowledged reaches the region
// exactly once.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>

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

constexpr char kGateway[] = "gw-full";
constexpr char kPrefix[] = "full-d";
constexpr int kDevices = 4;

struct FullStoreSetup {
  explicit FullStoreSetup(const TempDir& dir)
      : local(dir.File("local")), eu(dir.path(), "eu"), data(dir.File("gw")), config(dir.File("gw.toml")),
        log(dir.File("gw.log")), acks(dir.File("acks.log")) {}

  // Brokers, region, the proxy to it, and the gateway, connected to its
  // local broker. ADD_FAILURE says which part did not start.
  bool StartAll() {
    if (!local.Start()) {
      ADD_FAILURE() << local.log();
      return false;
    }
    if (!eu.Start()) return false;
    proxy = std::make_unique<TcpProxy>(eu.broker().port());
    if (!WriteConfigAndStart()) {
      ADD_FAILURE() << ReadAll(log);
      return false;
    }
    if (!WaitFor([&] { return Field(metrics::kIngestMqttConnected) == 1; }, 60000)) {
      ADD_FAILURE() << ReadAll(log);
      return false;
    }
    return true;
  }
  // The store file is made first, so that max_bytes can sit a fixed margin
  // above what an empty store takes (readings of these sensors compress to
  // about a chunk row per commit group: tens of bytes each).
  bool WriteConfigAndStart() {
    RegionSite::MakeDir(data);
    int64_t empty_bytes = 0;
    {
      std::unique_ptr<Store> store = OpenGatewayStore(data + "/store.db", kGateway);
      if (!store) return false;
      StoreStats st;
      if (!store->Stats(&st).ok()) return false;
      empty_bytes = st.file_bytes;
    }
    std::ofstream(config) << "[gateway]\nid = \"" << kGateway << "\"\ndata_dir = " << Q(data) << "\n\n"
                          << "[metrics]\nlisten = \"\"\n\n"
                          << "[store]\ndisk_policy = \"reject-new\"\nmax_bytes = " << empty_bytes + (256 << 10)
                          << "\nmin_free_bytes = 0\nretention_age_s = 3600\nretention_interval_s = 1\n\n"
                          << "[ingest]\nbroker_uri = " << Q(local.uri())
                          << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
                          << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\n"
                          << "backoff_max_ms = 500\nprobe_interval_ms = 200\n\n"
                          << "[[region]]\nname = \"eu\"\nuri = " << Q(proxy->uri()) << "\n";
    return StartGateway();
  }
  bool StartGateway() { return gw.Start({EDGESYNC_BINARY, "gateway", "--config", config}, log); }
  nlohmann::json Status() const { return ReadStatusFile(data + "/status.json"); }
  int64_t Field(const StatusKey& figure) const { return StatusField(Status(), figure); }
  bool StartSensor() {
    return sensor.Start({EDGESYNC_ACKED_SENSOR, local.uri(), "full-sensor", kPrefix, std::to_string(kDevices), "1000",
                         acks},
                        log + ".sensor");
  }
  // Waits until ingest has stopped taking messages because the store is full.
  bool WaitFull() {
    return WaitFor(
        [&] {
          nlohmann::json s = Status();
          return StatusField(s, metrics::kIngestPaused) == 1 &&
                 s["ingest"].value("pause_reason", "") == "store full";
        },
        240000);
  }
  // Backlog empty, ingest open and connected, nothing committed for 3 s.
  bool WaitDrained() {
    int64_t last = -1, since = NowMs();
    return WaitFor(
        [&] {
          nlohmann::json s = Status();
          const int64_t committed = StatusField(s, metrics::kIngestReadingsCommitted);
          if (committed != last) {
            last = committed;
            since = NowMs();
          }
          return StatusField(s, metrics::kBacklogReadings) == 0 && StatusField(s, metrics::kIngestPaused) == 0 &&
                 StatusField(s, metrics::kIngestMqttConnected) == 1 && NowMs() - since > 3000;
        },
        300000);
  }

  Broker local;
  RegionSite eu;
  std::unique_ptr<TcpProxy> proxy;  // between the gateway and the region
  std::string data, config, log, acks;
  Process gw, sensor;
};

// What the sensors saw acknowledged and what the region holds of them.
struct Audit {
  int64_t acked = 0;
  int64_t missing = 0;         // acknowledged, not in the region
  int64_t twice = 0;           // acknowledged readings the region holds more than once
  int64_t lsn_twice = 0;       // (origin, LSN) held more than once
  int64_t region_readings = 0;
};

Audit AuditRegion(const std::string& ack_log, RegionSite* region) {
  Audit a;
  std::map<std::pair<std::string, int64_t>, int> held;
  std::map<std::pair<std::string, uint64_t>, int> lsns;
  std::unique_ptr<HubStore> hub = region->OpenHubStore();
  if (hub) {
    ForEachFeedEntry(hub.get(), [&](const RegionFeedEntry& e) {
      if (e.remote.origin.gateway_id != kGateway) return;
      ++lsns[{e.remote.origin.ToString(), e.remote.origin_lsn}];
      if (e.remote.entry.kind != ChangeEntry::Kind::kReading) return;
      ++held[{e.remote.entry.reading.device_id, static_cast<int64_t>(e.remote.entry.reading.value)}];
      ++a.region_readings;
    });
  }
  for (const auto& [key, n] : lsns) a.lsn_twice += n > 1 ? 1 : 0;
  std::ifstream in(ack_log);
  int device = 0;
  long long value = 0, at = 0;
  std::set<std::pair<std::string, int64_t>> seen;
  while (in >> device >> value >> at) {
    std::pair<std::string, int64_t> key{kPrefix + std::to_string(device), value};
    if (!seen.insert(key).second) continue;
    ++a.acked;
    auto it = held.find(key);
    if (it == held.end()) {
      ++a.missing;
    } else if (it->second > 1) {
      ++a.twice;
    }
  }
  return a;
}

TEST(IngestFullStoreTest, AFullStoreStopsIngestAndResumesByItselfOnceTheRegionFreesRoom) {
  TempDir dir;
  FullStoreSetup w(dir);
  ASSERT_TRUE(w.StartAll());
  TcpProxy& proxy = *w.proxy;
  const int64_t pid = w.Status().at("pid").get<int64_t>();
  ASSERT_TRUE(w.StartSensor());
  // The region takes readings, then goes away.
  ASSERT_TRUE(WaitFor([&] { return w.Field(metrics::kUplinkAcks) > 0; }, 60000)) << w.Status().dump(2);
  proxy.Cut();

  ASSERT_TRUE(w.WaitFull()) << w.Status().dump(2) << ReadAll(w.log).substr(0, 4000);
  nlohmann::json s = w.Status();
  EXPECT_GE(StatusField(s, metrics::kIngestPauses), 1);
  EXPECT_TRUE(WaitFor([&] { return w.Field(metrics::kStoreRejectedFull) > 0; }, 30000)) << w.Status().dump(2);
  // The link to the local broker is down, not held: the broker keeps what
  // the sensors publish meanwhile.
  EXPECT_TRUE(WaitFor(
      [&] { return w.Field(metrics::kIngestMqttPaused) == 1 && w.Field(metrics::kIngestMqttConnected) == 0; },
                      30000))
      << w.Status().dump(2);
  const int64_t committed_full = w.Field(metrics::kIngestReadingsCommitted);
  SleepMs(3000);  // the sensors go on; with the region away the store stays full
  EXPECT_EQ(w.Field(metrics::kIngestPaused), 1) << w.Status().dump(2);

  // The region returns; the same gateway process drains, frees and resumes.
  proxy.Restore();
  ASSERT_TRUE(WaitFor([&] { return w.Field(metrics::kIngestReadingsCommitted) > committed_full + 3000; }, 240000))
      << "ingest did not resume by itself\n"
      << w.Status().dump(2) << ReadAll(w.log).substr(0, 6000);
  EXPECT_GT(w.Field(metrics::kUplinkCheckpoint), 0);
  EXPECT_EQ(w.sensor.Stop(30000), 0);
  ASSERT_TRUE(w.WaitDrained()) << w.Status().dump(2);
  s = w.Status();
  EXPECT_EQ(s.at("pid").get<int64_t>(), pid) << "the gateway was restarted";
  EXPECT_TRUE(w.gw.running());
  EXPECT_EQ(StatusField(s, metrics::kIngestOverruns), 0) << s.dump(2);
  EXPECT_GT(StatusField(s, metrics::kIngestPausedMs), 0);
  EXPECT_EQ(StatusField(s, metrics::kStoreDroppedOldest), 0);
  EXPECT_EQ(w.gw.Stop(30000), 0);

  Audit a = AuditRegion(w.acks, &w.eu);
  std::printf("acknowledged to the sensors %lld, in the region %lld, missing %lld, twice %lld; pauses %lld\n",
              (long long)a.acked, (long long)a.region_readings, (long long)a.missing, (long long)a.twice,
              (long long)StatusField(s, metrics::kIngestPauses));
  EXPECT_GT(a.acked, 0);
  EXPECT_EQ(a.missing, 0) << a.acked << " acknowledged to the sensors";
  EXPECT_EQ(a.twice, 0);
  EXPECT_EQ(a.lsn_twice, 0);
  // The gateway's log says why it stopped taking readings and when it
  // took them again.
  const std::string log = ReadAll(w.log);
  EXPECT_NE(log.find("not taking messages from the local broker (store full)"), std::string::npos);
  EXPECT_NE(log.find("taking messages from the local broker again"), std::string::npos);
}

TEST(IngestFullStoreTest, ASigtermWhileTheStoreIsFullLosesNothing) {
  TempDir dir;
  FullStoreSetup w(dir);
  ASSERT_TRUE(w.StartAll());
  TcpProxy& proxy = *w.proxy;
  proxy.Cut();
  ASSERT_TRUE(w.StartSensor());
  ASSERT_TRUE(w.WaitFull()) << w.Status().dump(2) << ReadAll(w.log).substr(0, 4000);

  // A clean stop in that state, with the sensors still publishing.
  EXPECT_EQ(w.gw.Stop(30000), 0) << ReadAll(w.log).substr(0, 6000);
  ASSERT_TRUE(w.StartGateway());
  // Still full and the region still away: up, but not taking messages.
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = w.Status();
        return s.value("running", false) && StatusField(s, metrics::kIngestPaused) == 1;
      },
      60000))
      << w.Status().dump(2);
  EXPECT_EQ(w.Field(metrics::kIngestMqttConnected), 0);
  proxy.Restore();
  SleepMs(5000);  // the sensors keep publishing after the region returns
  EXPECT_EQ(w.sensor.Stop(30000), 0);
  ASSERT_TRUE(w.WaitDrained()) << w.Status().dump(2) << ReadAll(w.log).substr(0, 6000);
  EXPECT_EQ(w.Field(metrics::kStoreDroppedOldest), 0);
  EXPECT_EQ(w.gw.Stop(30000), 0);

  Audit a = AuditRegion(w.acks, &w.eu);
  std::printf("acknowledged to the sensors %lld, in the region %lld, missing %lld, twice %lld\n",
              (long long)a.acked, (long long)a.region_readings, (long long)a.missing, (long long)a.twice);
  EXPECT_GT(a.acked, 0);
  EXPECT_EQ(a.missing, 0) << a.acked << " acknowledged to the sensors";
  EXPECT_EQ(a.twice, 0);
  EXPECT_EQ(a.lsn_twice, 0);
}

}  // namespace
}  // namespace edgesync::test

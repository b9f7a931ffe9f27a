// The gateway's ingest end to end: a real Mosquitto, the real edgesync
// program, a separate publishing process (es_publisher) and the real SQLite
// store, read back after edgesync stopped.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/gateway.h"
#include "agent/options.h"
#include "firmware-config/config.h"
#include "store/store.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/reading_tally.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

using test::Broker;
using test::Process;
using test::TempDir;
using test::WaitFor;

struct Env {
  TempDir dir;
  Broker broker{dir.File("broker")};
  std::string config_path = dir.File("edgesync.toml");
  Process gateway;

  void WriteConfig(const std::string& ack, const std::string& extra = "") {
    test::WriteAll(config_path, "[gateway]\nid = \"gw1\"\ndata_dir = \"" + dir.File("data") +
                                    "\"\n[ingest]\nbroker_uri = \"" + broker.uri() + "\"\nack = \"" + ack +
                                    "\"\nepoch_floor = \"2020-01-01T00:00:00Z\"\n" + extra);
  }
  bool StartGateway() {
    // A killed gateway's last status file still says "connected": only the
    // new process's file may end the wait (and be read right after it).
    std::remove(dir.File("data/status.json").c_str());
    if (!gateway.Start({EDGESYNC_BINARY, "gateway", "--config", config_path}, dir.File("gateway.log"))) return false;
    // Ready once connected: the status file says so.
    return WaitFor([&] { return test::StatusField(Status(), metrics::kIngestMqttConnected) == 1; }, 10000);
  }
  nlohmann::json Status() { return test::ReadStatusFile(dir.File("data/status.json")); }
  int64_t Committed() { return test::StatusField(Status(), metrics::kIngestReadingsCommitted); }
  std::string Log() { return test::ReadAll(dir.File("gateway.log")); }
};

// Publishes with es_publisher in its own process and waits for it.
bool Publish(Env& env, const std::string& id, int devices, int readings, const std::string& prefix,
             double rate = 0, const std::string& format = "json", Process* async = nullptr) {
  std::vector<std::string> argv = {EDGESYNC_PUBLISHER, env.broker.uri(), id, std::to_string(devices),
                                   std::to_string(readings), prefix, "1800000000000", std::to_string(rate),
                                   format};
  Process local;
  Process* p = async ? async : &local;
  if (!p->Start(argv, env.dir.File(id + ".log"))) return false;
  if (async) return true;
  return p->Wait(120000) == 0;
}

// Every device prefix<d> must hold values 0..readings-1 exactly once, at
// the publisher's times (1800000000000 + value ms).
using Tally = test::ReadingTally;

Tally Count(Env& env, const std::string& prefix, int devices, int readings) {
  Config config;
  std::vector<ConfigError> errors;
  EXPECT_OK(LoadConfig(env.config_path, ConfigRole::kGateway, &config, &errors));
  std::unique_ptr<Store> store;
  Status s = Store::Open(StoreOptionsFromConfig(config), &store);
  EXPECT_OK(s);
  if (!s.ok()) return Tally{};
  Tally t = test::TallyReadings(store.get(), prefix, devices, readings, 1800000000000, 1);
  EXPECT_EQ(t.wrong_time, 0) << prefix;
  return t;
}

TEST(IngestGateway, EveryReadingOfEveryDeviceLandsExactlyOnce) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  env.WriteConfig("after-journal");
  ASSERT_TRUE(env.StartGateway()) << env.Log();
  const int kDevices = 20, kReadings = 150;
  ASSERT_TRUE(Publish(env, "pub-json", kDevices, kReadings, "dev"));
  ASSERT_TRUE(Publish(env, "pub-senml", kDevices, kReadings, "sml", 0, "senml"));
  ASSERT_TRUE(WaitFor([&] { return env.Committed() >= 2 * kDevices * kReadings; }, 60000)) << env.Status().dump();
  EXPECT_EQ(env.gateway.Stop(), 0);
  for (const char* prefix : {"dev", "sml"}) {
    Tally t = Count(env, prefix, kDevices, kReadings);
    EXPECT_EQ(t.missing, 0) << prefix;
    EXPECT_EQ(t.duplicates, 0) << prefix;
  }
}

TEST(IngestGateway, ReadingsPublishedWhileDownArriveThroughThePersistentSession) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  env.WriteConfig("after-journal");
  ASSERT_TRUE(env.StartGateway()) << env.Log();
  EXPECT_EQ(env.gateway.Stop(), 0);
  ASSERT_TRUE(Publish(env, "pub-away", 10, 100, "away"));
  ASSERT_TRUE(env.StartGateway()) << env.Log();
  ASSERT_TRUE(WaitFor([&] { return env.Committed() >= 1000; }, 30000)) << env.Status().dump();
  EXPECT_EQ(env.gateway.Stop(), 0);
  Tally t = Count(env, "away", 10, 100);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.duplicates, 0);
}

// SIGKILL edgesync twice while a publisher streams; restart it each time.
// replayed: readings the restarts committed from the intake journal.
Tally KillMidStream(Env& env, const std::string& ack, int devices, int readings, const std::string& extra = "",
                    int64_t* replayed = nullptr) {
  // 4,000 msg/s over 20 devices is 200 readings/s each, above the default
  // per-device rate: this is about kills, not the limit, so it is lifted.
  env.WriteConfig(ack, "device_rate = 100000.0\ndevice_burst = 100000\n" + extra);
  EXPECT_TRUE(env.StartGateway()) << env.Log();
  Process pub;
  EXPECT_TRUE(Publish(env, "pub-kill", devices, readings, "k", 4000, "json", &pub));
  // Two kills; more (up to five) while none has yet found a reading in the
  // journal only, where the caller counts them.
  for (int round = 0; round < 2 || (replayed != nullptr && *replayed == 0 && round < 5); ++round) {
    int64_t before = env.Committed();
    WaitFor([&] { return env.Committed() > before + 1000; }, 10000);
    env.gateway.Kill9();
    test::SleepMs(300);
    EXPECT_TRUE(env.StartGateway()) << env.Log();
    // The journal is committed before the link starts: the first status
    // file already counts it.
    if (replayed != nullptr) *replayed += test::StatusField(env.Status(), metrics::kIngestReplayed);
  }
  EXPECT_EQ(pub.Wait(120000), 0);
  int64_t total = static_cast<int64_t>(devices) * readings;
  // Wait until the store holds every reading, or its count has not moved for
  // 10 s (what is lost never arrives) while the gateway is connected (a
  // gateway still starting has not been offered the broker's queue yet).
  // The status file is rewritten once a second, so a shorter quiet period
  // would mistake its cadence for the end. The quiet period, not the
  // deadline, is what ends the wait on a loss; the deadline only bounds a
  // gateway that never settles. It is generous: with ack after commit each
  // message is one commit on the receive thread, and under ThreadSanitizer
  // on a loaded 2-core machine the restarted gateway takes the broker's
  // queue at only tens of messages a second (the rest still queued at the
  // broker, not lost).
  int64_t last = -1;
  int64_t last_change_ms = test::NowMs();
  WaitFor([&] {
    nlohmann::json status = env.Status();
    int64_t now = test::StatusField(status, metrics::kStoreLastLsn);
    if (now != last || test::StatusField(status, metrics::kIngestMqttConnected) != 1) {
      last = now;
      last_change_ms = test::NowMs();
    }
    return now >= total || test::NowMs() - last_change_ms > 10000;
  }, 600000);
  EXPECT_EQ(env.gateway.Stop(), 0);
  return Count(env, "k", devices, readings);
}

TEST(IngestGateway, KillNineMidStreamLosesNothingWithTheIntakeJournal) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  // Synced commits gather the largest groups (192 readings within the
  // 200 ms cap, agent/ingest/commit_pacer.h; the journal is written as with
  // the default sync): at each kill up to that many acknowledged readings
  // are in the journal only.
  int64_t replayed = 0;
  Tally t = KillMidStream(env, "after-journal", 20, 1000, "batch_delay_ms = 200\n[store]\nsync = \"commit\"\n",
                          &replayed);
  std::printf("after-journal, SIGKILLs: missing %lld, duplicates %lld of %d; %lld committed from the journal\n",
              (long long)t.missing, (long long)t.duplicates, 20 * 1000, (long long)replayed);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.duplicates, 0);
  EXPECT_GT(replayed, 0);
}

TEST(IngestGateway, KillNineMidStreamLosesNothingWhenAckingAfterCommit) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  Tally t = KillMidStream(env, "after-commit", 20, 500);
  std::printf("after-commit, 2 x SIGKILL: missing %lld, duplicates %lld of %d\n", (long long)t.missing,
              (long long)t.duplicates, 20 * 500);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.duplicates, 0);
}

TEST(IngestGateway, KillNineMidStreamLosesAtMostOneBatchPerKillWhenAckingOnReceipt) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  const int kBatchMax = 200;
  Tally t = KillMidStream(env, "on-receipt", 20, 500, "batch_max = " + std::to_string(kBatchMax) + "\n");
  std::printf("on-receipt, 2 x SIGKILL: missing %lld, duplicates %lld of %d\n", (long long)t.missing,
              (long long)t.duplicates, 20 * 500);
  // The loss window: what was acknowledged on receipt and not yet
  // committed, at most one batch (plus the queue bound) per kill.
  EXPECT_LE(t.missing, 2 * 4 * kBatchMax);
  EXPECT_EQ(t.duplicates, 0);
}

TEST(IngestGateway, AFloodingDeviceDoesNotCostTheOthersAReading) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  env.WriteConfig("after-commit", "device_rate = 100.0\ndevice_burst = 200\n");
  ASSERT_TRUE(env.StartGateway()) << env.Log();
  Process flood;
  ASSERT_TRUE(Publish(env, "pub-flood", 1, 20000, "hot", 0, "json", &flood));
  // 50 normal devices, 20 readings each, ~10 readings/s per device.
  ASSERT_TRUE(Publish(env, "pub-normal", 50, 20, "cool", 500));
  EXPECT_EQ(flood.Wait(120000), 0);
  ASSERT_TRUE(WaitFor([&] {
    auto s = env.Status();
    return test::StatusField(s, metrics::kIngestMqttReceived) >= 20000 + 50 * 20 &&
           test::StatusField(s, metrics::kIngestMessages) >= 21000;
  }, 60000)) << env.Status().dump();
  auto status = env.Status();
  EXPECT_EQ(env.gateway.Stop(), 0);
  Tally normal = Count(env, "cool", 50, 20);
  EXPECT_EQ(normal.missing, 0);
  EXPECT_EQ(normal.duplicates, 0);
  int64_t limited = status["ingest"]["rejected"].value("rate_limited", int64_t{0});
  EXPECT_GT(limited, 0);
  ASSERT_FALSE(status["ingest"]["rate_limited_devices"].empty());
  EXPECT_EQ(status["ingest"]["rate_limited_devices"][0].value("device", ""), "hot0");
}

TEST(IngestGateway, BadInputIsCountedAndDeadLetteredNeverACrash) {
  Env env;
  ASSERT_TRUE(env.broker.Start());
  env.WriteConfig("after-commit", "max_payload_bytes = 1000\n");
  ASSERT_TRUE(env.StartGateway()) << env.Log();
  std::string port = std::to_string(env.broker.port());
  auto pub = [&](const std::string& topic, const std::string& payload) {
    std::string f = env.dir.File("payload");
    test::WriteAll(f, payload);
    std::string cmd = "mosquitto_pub -p " + port + " -q 1 -t '" + topic + "' -f '" + f + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  };
  pub("sensors/d1/temp", std::string(5000, '7'));
  pub("sensors/d1/temp", "\xff\xfe\xfd");
  pub("sensors/d1/temp", "NaN");
  pub("sensors/d1", "<xml/>");
  pub("sensors/d1", "{\"a\": [1, 2");
  pub("sensors/d1", "[{\"n\": \"x\", \"vs\": \"str\"}]");
  pub("sensors/d1", "[{\"n\": \"bad+name\", \"v\": 1}]");
  pub("sensors/d1", std::string("\x10\x00\x00\x00" "ESRD" "\xff\xff\xff\xff\x00\x00", 14));
  pub("sensors/d1/temp", "42");
  ASSERT_TRUE(WaitFor(
      [&] { return env.Committed() >= 1 && test::StatusField(env.Status(), metrics::kIngestDeadLetters) >= 8; }, 10000))
      << env.Status().dump();
  EXPECT_TRUE(env.gateway.running());
  auto rejected = env.Status()["ingest"]["rejected"];
  for (const char* reason : {"too_large", "invalid_utf8", "unknown_format", "malformed_json", "malformed_senml",
                             "invalid_key", "flatbuffers_invalid"}) {
    EXPECT_GE(rejected.value(reason, 0), 1) << reason;
  }
  EXPECT_EQ(rejected.value("not_finite", 0), 1);  // NaN
  EXPECT_EQ(env.gateway.Stop(), 0);
  // `edgesync status` of the stopped gateway reads its store: the dead letters are counted there.
  std::string out = env.dir.File("status.out");
  ASSERT_EQ(std::system((std::string(EDGESYNC_BINARY) + " status --json --config " + env.config_path + " > " + out)
                            .c_str()),
            0);
  EXPECT_NE(test::ReadAll(out).find("\"dead_letters\": 8"), std::string::npos) << test::ReadAll(out);
  Config config;
  std::vector<ConfigError> errors;
  ASSERT_OK(LoadConfig(env.config_path, ConfigRole::kGateway, &config, &errors));
  std::unique_ptr<Store> store;
  ASSERT_OK(Store::Open(StoreOptionsFromConfig(config), &store));
  std::vector<DeadLetter> letters;
  ASSERT_OK(store->ListDeadLetters(100, &letters));
  ASSERT_EQ(letters.size(), 8u);
  for (const auto& l : letters) {
    EXPECT_FALSE(l.reason.empty());
    EXPECT_LE(l.head.size(), 64u * 4);
    EXPECT_GT(l.at_ms, 0);
  }
}

}  // namespace
}  // namespace edgesync

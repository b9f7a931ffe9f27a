// Priority by topic with real parts (sync/PROTOCOL.md, "Priority by topic"):
// an `edgesync gateway` process with uplink.priority_topics =
// ["sensors/+/alarm"] whose region link passes a TCP proxy shaped to 256
// kbit/s (32,000 bytes/s each way) to a real Mosquitto and an `edgesync
// region` hub, the uplink capped a little below the link (28,000 bytes/s), as
// in the lanes test. While the link is cut a backlog builds in the gateway's
// store: five runs of vibration samples with four rounds of alarms between
// them, each alarm a bare number a sensor publishes to the gateway's broker
// on sensors/door-<k>/alarm (ingest stamps it with level 1 as it commits it).
//
// The first test restores the link and watches the region's answers on the
// gateway's reply topic: every alarm is held by the region (its priority mark
// for level 1, its contiguous mark or a held span covers the alarm's LSN)
// while the region's contiguous mark, which the gateway's checkpoint follows,
// is still at least a tenth of the backlog below the alarm; at the end the
// region holds every LSN exactly once. Without priority the alarms would
// wait for the backlog's mark to reach them.
//
// The second kills the gateway and then the hub with SIGKILL mid-drain and
// restarts each: every entry, alarms included, is held by the region exactly
// once at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/broker.h"
#include "tests/support/gateway_program.h"
#include "tests/support/lane_rig.h"
#include "tests/support/lane_traffic.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {
namespace {

constexpr int64_t kLinkBytesPerSec = 32000;  // 256 kbit/s each way
constexpr int64_t kCap = 28000;              // uplink.max_bytes_per_s
constexpr int kRounds = 4;                   // rounds of alarms inside the backlog
constexpr int kAlarmsPerRound = 5;
const char kGatewayId[] = "gw-prio";
const char kAlarmFilter[] = "sensors/+/alarm";

// An alarm in the gateway's log, and what the region answered about it.
struct Alarm {
  uint64_t lsn = 0;
  uint32_t level = 0;          // as the store holds it
  bool held = false;           // an answer covered it
  uint64_t mark_when_held = 0;  // the region's contiguous mark by then (the highest answered)
  bool by_priority = false;    // that answer covered it by the level's mark, not the contiguous one
};

// The backlog (backlog_) is of vibration samples; the alarms come on top.
class PriorityRig : public ShapedLinkRig {
 public:
  using ShapedLinkRig::ShapedLinkRig;

  void SetUp() {
    GatewayProgramOptions o;
    o.uplink.max_bytes_per_s = kCap;
    o.uplink.ack_timeout_ms = 10000;  // a window of batches is ~3 s of the link
    o.uplink.priority_topics = {kAlarmFilter};
    ASSERT_NO_FATAL_FAILURE(StartShapedLink(kGatewayId, kLinkBytesPerSec, o));

    // The backlog: a run of samples written to the store while the gateway
    // is stopped, then a round of alarms through its broker, kRounds times,
    // and a last run.
    const size_t run = backlog_ / (kRounds + 1);
    size_t samples = 0;
    for (int round = 0; round <= kRounds; ++round) {
      {
        std::unique_ptr<Store> store = OpenGatewayStore(gateway_->store_path(), kGatewayId);
        ASSERT_TRUE(store);
        const size_t n = round == kRounds ? backlog_ - samples : run;
        for (size_t done = 0; done < n;) {
          const size_t k = std::min<size_t>(n - done, 5000);
          AppendResult appended;
          ASSERT_OK(store->AppendReadings(VibrationSamples(samples + done, k), &appended));
          done += k;
        }
        samples += n;
        origin_ = store->origin();
        last_lsn_ = store->LastLsn();
      }
      if (round == kRounds) break;
      ASSERT_TRUE(gateway_->StartWithIngest()) << gateway_->log();
      TestMqttClient sensor(local_->uri(), "prio-alarm-sensor-" + std::to_string(round), true);
      ASSERT_TRUE(sensor.Connect());
      for (int a = 0; a < kAlarmsPerRound; ++a) {
        const int k = round * kAlarmsPerRound + a;
        ASSERT_TRUE(sensor.Publish("sensors/door-" + std::to_string(k) + "/alarm", std::to_string(k) + ".25", 1));
      }
      sensor.Disconnect();
      last_lsn_ += kAlarmsPerRound;
      ASSERT_TRUE(WaitFor([&] { return static_cast<uint64_t>(gateway_->Field(metrics::kStoreLastLsn)) == last_lsn_; },
                          30000))
          << "the gateway did not store the round's alarms:\n" << gateway_->StatusDump();
      ASSERT_EQ(gateway_->Stop(10000), 0) << gateway_->log();
    }
    ReadAlarms();
    ASSERT_EQ(alarms_.size(), static_cast<size_t>(kRounds * kAlarmsPerRound));
    ASSERT_TRUE(gateway_->StartWithIngest()) << gateway_->log();
  }

  // The alarms' LSNs and levels, from the gateway's store (stopped).
  void ReadAlarms() {
    alarms_.clear();
    std::unique_ptr<Store> store = OpenGatewayStore(gateway_->store_path(), kGatewayId);
    ASSERT_TRUE(store);
    for (uint64_t at = 0;;) {
      std::vector<ChangeEntry> entries;
      ASSERT_OK(store->ReadLog(at, 10000, &entries));
      if (entries.empty()) break;
      for (const ChangeEntry& e : entries) {
        at = e.lsn;
        if (e.kind == ChangeEntry::Kind::kReading && e.reading.metric == "alarm") {
          alarms_.push_back(Alarm{e.lsn, QualityPriority(e.reading.quality)});
        }
      }
    }
  }

  ::testing::AssertionResult WaitForDrain(int64_t timeout_ms) { return WaitForMark(last_lsn_, timeout_ms); }

  // Once the gateway's checkpoint has followed the region's mark to the end:
  // stops the gateway and checks the region holds every entry exactly once.
  void StopWhenAcknowledged() {
    ASSERT_TRUE(WaitFor([&] { return gateway_->Field(metrics::kUplinkCheckpoint) >= static_cast<int64_t>(last_lsn_); },
                        60000))
        << gateway_->StatusDump();
    EXPECT_EQ(gateway_->Stop(10000), 0) << gateway_->log();
    ExpectExactlyOnce({eu_.get()}, origin_, last_lsn_);
  }

  // For each alarm, the first answer of the region that holds it, and the
  // region's contiguous mark by then.
  void MatchAnswers() {
    uint64_t mark = 0;
    for (const SeenAck& a : watch_->acks()) {
      mark = std::max(mark, a.high_water);
      for (Alarm& alarm : alarms_) {
        if (alarm.held) continue;
        const bool by_priority = !a.priority_held.empty() && alarm.lsn <= a.priority_held[0];
        if (!by_priority && !a.Covers(alarm.lsn)) continue;
        alarm.held = true;
        alarm.mark_when_held = mark;
        alarm.by_priority = by_priority && !a.Covers(alarm.lsn);
        held_ms_ = std::max(held_ms_, a.ms);
      }
    }
  }

  Origin origin_;
  uint64_t last_lsn_ = 0;
  std::vector<Alarm> alarms_;
  int64_t held_ms_ = 0;
};

// A backlog the capped link takes about `seconds` to drain.
size_t BacklogFor(double seconds) {
  const double per = BacklogWireBytesPerReading(kCap, kGatewayId);
  EXPECT_GT(per, 0);
  return static_cast<size_t>(static_cast<double>(kCap) * seconds / per);
}

TEST(SyncPriorityTest, AlarmsAreHeldByTheRegionLongBeforeTheBacklogReachesThem) {
  const size_t backlog = BacklogFor(30);
  PriorityRig rig(backlog);
  ASSERT_NO_FATAL_FAILURE(rig.SetUp());
  for (const Alarm& a : rig.alarms_) EXPECT_EQ(a.level, 1u) << "alarm at LSN " << a.lsn << " was stored without its level";
  ASSERT_NO_FATAL_FAILURE(rig.RestoreLink());
  ASSERT_TRUE(rig.WaitForDrain(180000));
  const int64_t sent = rig.gateway_->Field(metrics::kUplinkPriorityReadingsSent);
  const int64_t batches = rig.gateway_->Field(metrics::kUplinkPriorityBatchesSent);
  ASSERT_NO_FATAL_FAILURE(rig.StopWhenAcknowledged());

  rig.MatchAnswers();
  uint64_t least_lead = UINT64_MAX;
  for (const Alarm& a : rig.alarms_) {
    ASSERT_TRUE(a.held) << "the region never answered that it holds the alarm at LSN " << a.lsn;
    // Held while the backlog's mark (the gateway's checkpoint follows it)
    // was still at least a tenth of the backlog below the alarm.
    EXPECT_TRUE(a.by_priority) << "the alarm at LSN " << a.lsn << " came with the backlog (mark "
                               << a.mark_when_held << ")";
    EXPECT_LT(a.mark_when_held + backlog / 10, a.lsn)
        << "the alarm at LSN " << a.lsn << " was held only when the backlog's mark was at " << a.mark_when_held;
    least_lead = std::min(least_lead, a.lsn > a.mark_when_held ? a.lsn - a.mark_when_held : 0);
  }
  EXPECT_GE(sent, static_cast<int64_t>(rig.alarms_.size())) << "priority readings sent";
  const double drain_s = static_cast<double>(rig.drained_ms_ - rig.restored_ms_) / 1000.0;
  const double held_s = static_cast<double>(rig.held_ms_ - rig.restored_ms_) / 1000.0;
  std::printf("priority: backlog %zu readings + %zu alarms in %d rounds, drained in %.1f s after the link came "
              "back; every alarm held %.1f s after it, each while the region's mark was at least %llu readings "
              "(%.0f%% of the backlog) below it; %lld priority batches, %lld priority readings sent\n",
              backlog, rig.alarms_.size(), kRounds, drain_s, held_s, static_cast<unsigned long long>(least_lead),
              100.0 * static_cast<double>(least_lead) / static_cast<double>(backlog), static_cast<long long>(batches),
              static_cast<long long>(sent));
  EXPECT_LT(held_s, drain_s / 2) << "the alarms were not held well before the drain ended";
}

TEST(SyncPriorityTest, KillingTheGatewayAndTheHubMidDrainHoldsEveryEntryExactlyOnce) {
  const size_t backlog = BacklogFor(35);
  PriorityRig rig(backlog);
  ASSERT_NO_FATAL_FAILURE(rig.SetUp());
  ASSERT_NO_FATAL_FAILURE(rig.RestoreLink());

  // The gateway a quarter into the backlog, the hub at 60% of it.
  uint64_t at_gateway_kill = 0, at_hub_kill = 0;
  ASSERT_NO_FATAL_FAILURE(
      rig.KillGatewayThenHub(backlog / 4, backlog * 6 / 10, 120000, &at_gateway_kill, &at_hub_kill));

  ASSERT_TRUE(rig.WaitForDrain(180000));
  EXPECT_LT(at_gateway_kill, rig.last_lsn_);
  EXPECT_LT(at_hub_kill, rig.last_lsn_);
  ASSERT_NO_FATAL_FAILURE(rig.StopWhenAcknowledged());
  rig.MatchAnswers();
  size_t ahead = 0;
  for (const Alarm& a : rig.alarms_) {
    EXPECT_TRUE(a.held) << "the region never answered that it holds the alarm at LSN " << a.lsn;
    ahead += a.by_priority;
  }
  std::printf("priority with kills: backlog %zu readings + %zu alarms, gateway killed at mark %llu, hub at %llu; "
              "%zu alarms held ahead of the backlog; drained %.1f s after the link came back\n",
              backlog, rig.alarms_.size(), static_cast<unsigned long long>(at_gateway_kill),
              static_cast<unsigned long long>(at_hub_kill), ahead,
              static_cast<double>(rig.drained_ms_ - rig.restored_ms_) / 1000.0);
}

}  // namespace
}  // namespace edgesync::test

// Priority by topic at a real region hub (`edgesync region`, its store
// SQLite or PostgreSQL as the suite runs) over a real broker, from a
// gateway that speaks the wire by hand (sync/PROTOCOL.md, "Priority by
// topic"): the hub answers protocol 8; a priority batch's alarms are in
// the region's feed at once, the mark stays and the answer names the
// level's mark; the hub SIGKILLed and started again keeps it (a resend is
// already held); the backlog over the alarms then brings everything else,
// and the feed holds every entry exactly once; the hub's status counts the
// priority batches.
#include <gtest/gtest.h>

#include <map>

#include "agent/metrics_table.h"
#include "sync/wire.h"
#include "tests/support/hand_gateway.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};
constexpr int64_t kT0 = 1780000000000;

// Every 6th LSN is an alarm (level 1), the rest telemetry.
uint32_t LevelOf(uint64_t lsn) { return lsn % 6 == 0 ? 1 : 0; }

std::vector<ChangeEntry> Log(uint64_t first, uint64_t last, bool alarms_only) {
  std::vector<ChangeEntry> out;
  for (uint64_t lsn = first; lsn <= last; ++lsn) {
    if (alarms_only && LevelOf(lsn) != 1) continue;
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = {LevelOf(lsn) ? "alarm-dev" : "plain-dev", "temperature", kT0 + static_cast<int64_t>(lsn) * 1000,
                 20.0 + lsn, "Cel", WithPriority(0, LevelOf(lsn))};
    out.push_back(e);
  }
  return out;
}

TEST(SyncPriorityHubTest, AlarmsRunAheadOfTheBacklogAndEveryEntryIsHeldOnceAcrossAHubKill) {
  HandGatewayRig rig;
  ASSERT_NO_FATAL_FAILURE(rig.Start());
  EXPECT_GE(rig.Answers()[1].version, kPriorityVersion);

  uint64_t correlation = 100;
  // Sends a batch and waits for its answer (resending while the hub is away).
  auto send = [&](uint64_t first, uint64_t last, uint8_t priority) -> WireMessage {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = first;
    b.last_lsn = last;
    b.priority = priority;
    b.entries = Log(first, last, priority != 0);
    const uint64_t id = ++correlation;
    std::string payload;
    EXPECT_OK(EncodeBatch(rig.up, id, b, {}, &payload));
    EXPECT_TRUE(WaitFor(
        [&] {
          if (rig.Answers().count(id) > 0) return true;
          rig.gw->Publish(rig.inbox, payload, 1);
          SleepMs(500);
          return false;
        },
        120000))
        << rig.eu->hub_log();
    return rig.Answers()[id];
  };

  WireMessage m = send(1, 10, 0);
  EXPECT_EQ(m.ack.code, AckCode::kOk) << m.ack.message;
  EXPECT_EQ(m.ack.high_water, 10u);
  EXPECT_TRUE(m.ack.priority_held.empty());
  // The alarms of 11..300, ahead of their backlog.
  m = send(11, 300, 1);
  EXPECT_EQ(m.ack.code, AckCode::kOk) << m.ack.message;
  EXPECT_EQ(m.version, kPriorityVersion);
  EXPECT_EQ(m.ack.high_water, 10u) << "the mark stays contiguous";
  EXPECT_EQ(m.ack.priority_held, (std::vector<uint64_t>{300, 0, 0}));
  auto contents = rig.eu->Contents();
  for (uint64_t lsn = 12; lsn <= 300; lsn += 6) {
    EXPECT_EQ((contents[{kOrigin.ToString(), lsn}]), 1) << "alarm " << lsn << " in the feed before the backlog";
  }
  EXPECT_EQ(contents.size(), 10u + 49u);
  // Past the level's mark + 1: a gap naming it.
  m = send(400, 450, 1);
  EXPECT_EQ(m.ack.code, AckCode::kGap);
  EXPECT_EQ(m.ack.priority_held, (std::vector<uint64_t>{300, 0, 0}));

  // The hub dies and comes back: its store kept the mark of the level.
  rig.eu->KillHub();
  ASSERT_TRUE(rig.eu->StartHub()) << rig.eu->hub_log();
  m = send(11, 300, 1);
  EXPECT_EQ(m.ack.code, AckCode::kOk) << m.ack.message;
  EXPECT_EQ(m.ack.priority_held, (std::vector<uint64_t>{300, 0, 0}));
  m = send(301, 360, 1);
  EXPECT_EQ(m.ack.code, AckCode::kOk) << m.ack.message;
  EXPECT_EQ(m.ack.priority_held, (std::vector<uint64_t>{360, 0, 0}));

  // The backlog, every entry, oldest first.
  for (uint64_t f = 11; f <= 400; f += 30) {
    const uint64_t l = std::min<uint64_t>(400, f + 29);
    m = send(f, l, 0);
    EXPECT_EQ(m.ack.code, AckCode::kOk) << m.ack.message;
    EXPECT_EQ(m.ack.high_water, l);
    EXPECT_EQ(m.ack.priority_held, (std::vector<uint64_t>{360, 0, 0}));
  }
  contents = rig.eu->Contents();
  EXPECT_EQ(contents.size(), 400u);
  for (uint64_t lsn = 1; lsn <= 400; ++lsn) {
    auto it = contents.find({kOrigin.ToString(), lsn});
    EXPECT_TRUE(it != contents.end() && it->second == 1) << "LSN " << lsn;
  }
  // The restarted hub counted the priority batches it answered (two, more
  // if a resend crossed an answer) and the ten alarms of 301..360 the
  // second one brought, once.
  ASSERT_TRUE(WaitFor(
      [&] {
        nlohmann::json s = rig.eu->StatusJson();
        return s.contains("hub") && s["hub"].value(metrics::kHubPriorityBatchesApplied.key, 0) >= 2;
      },
      30000))
      << rig.eu->StatusJson().dump(2);
  EXPECT_EQ(rig.eu->StatusJson()["hub"].value(metrics::kHubPriorityEntriesApplied.key, 0), 10);
  EXPECT_EQ(rig.eu->StopHub(), 0);
}

}  // namespace
}  // namespace edgesync::test

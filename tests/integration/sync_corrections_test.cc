// Time corrections through a real region hub (`edgesync region`, its store
// SQLite or PostgreSQL as the suite runs) over a real broker: batches
// holding them, or made of one only, are applied and move the origin's mark;
// a feed reader of protocol 6 gets them, one of protocol 5 gets the same
// pages without them and the same continuation.
#include <gtest/gtest.h>

#include <map>

#include "sync/wire.h"
#include "tests/support/hand_gateway.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"
#include "tests/support/wire_peer.h"

namespace edgesync::test {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};

ChangeEntry ReadingEntry(uint64_t lsn) {
  ChangeEntry e;
  e.lsn = lsn;
  e.reading = {"dev-1", "temperature", 1780000000000 + static_cast<int64_t>(lsn) * 1000, 21.5, "Cel", 0};
  return e;
}

ChangeEntry CorrectionEntry(uint64_t lsn, uint32_t period) {
  ChangeEntry e;
  e.lsn = lsn;
  e.kind = ChangeEntry::Kind::kTimeCorrection;
  e.correction = TimeCorrection{period, 259200000, 1779740800000, 1779740900000};
  return e;
}

std::vector<uint64_t> Lsns(const WireFeedPage& page) {
  std::vector<uint64_t> out;
  for (const RegionFeedEntry& e : page.entries) out.push_back(e.remote.origin_lsn);
  return out;
}

TEST(SyncCorrectionsTest, AHubKeepsCorrectionsAndServesThemOnlyToReadersOfProtocol6) {
  HandGatewayRig rig;
  ASSERT_NO_FATAL_FAILURE(rig.Start());
  EXPECT_EQ(rig.Answers()[1].version, kWireVersion) << "the hub's answers say its protocol";

  auto send = [&](uint64_t correlation, uint64_t first_lsn, std::vector<ChangeEntry> entries) {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = first_lsn;
    b.entries = std::move(entries);
    b.last_lsn = b.entries.back().lsn;
    std::string payload;
    ASSERT_OK(EncodeBatch(rig.up, correlation, b, {}, &payload));
    ASSERT_TRUE(rig.gw->Publish(rig.inbox, payload, 1));
    ASSERT_TRUE(WaitFor([&] { return rig.Answers().count(correlation) > 0; }, 60000)) << rig.eu->hub_log();
  };
  send(11, 1, {ReadingEntry(1), ReadingEntry(2), CorrectionEntry(3, 1), ReadingEntry(4)});
  send(12, 5, {CorrectionEntry(5, 2)});  // a correction alone
  auto acks = rig.Answers();
  EXPECT_EQ(acks[11].ack.code, AckCode::kOk) << acks[11].ack.message;
  EXPECT_EQ(acks[11].ack.high_water, 4u);
  EXPECT_EQ(acks[12].ack.code, AckCode::kOk) << acks[12].ack.message;
  EXPECT_EQ(acks[12].ack.high_water, 5u);

  TestMqttClient reader(rig.eu->broker().uri(), "gw-9-test", true);
  ASSERT_TRUE(reader.Connect());
  const std::string feed = ReplyTopic("edgesync", "gw-9", "feed");
  ASSERT_TRUE(reader.Subscribe(feed, 1));
  auto pull = [&](uint64_t correlation, uint16_t version) {
    std::string request = EncodeFeedRequest(feed, correlation, ShardPositions{}, 100, "");
    if (version != kWireVersion) request = AsProtocol(std::move(request), version);
    EXPECT_TRUE(reader.Publish(HubInboxTopic("edgesync", "eu", "gw-9"), request, 1));
    EXPECT_TRUE(WaitFor([&] { return WireAnswers(&reader, feed).count(correlation) > 0; }, 60000)) << rig.eu->hub_log();
    return WireAnswers(&reader, feed)[correlation].feed_page;
  };
  WireFeedPage v6 = pull(21, kWireVersion);
  WireFeedPage v5 = pull(22, 5);
  EXPECT_EQ(Lsns(v6), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  ASSERT_EQ(v6.entries.size(), 5u);
  EXPECT_EQ(v6.entries[2].remote.entry.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_EQ(v6.entries[2].remote.entry.correction.period, 1u);
  EXPECT_EQ(v6.entries[2].remote.entry.correction.delta_ms, 259200000);
  EXPECT_EQ(v6.entries[4].remote.entry.correction.period, 2u);
  EXPECT_EQ(Lsns(v5), (std::vector<uint64_t>{1, 2, 4}));
  EXPECT_EQ(v5.next, v6.next);
  EXPECT_EQ(v5.head, v6.head);
  EXPECT_EQ(rig.eu->StopHub(), 0);
}

}  // namespace
}  // namespace edgesync::test

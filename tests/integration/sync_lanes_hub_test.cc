// Two uplink lanes at a real region hub (`edgesync region`, its store
// SQLite or PostgreSQL as the suite runs) over a real broker, from a
// gateway that speaks the wire by hand (sync/PROTOCOL.md, "Two lanes"): a
// live batch above the mark is answered Ok with the mark unchanged and the
// span it holds; live batches grow the span; the backlog reaching it moves
// the mark past it; a resend of the live lane is already held; a batch of
// the backlog above the mark is a gap as before. The region's feed and
// another gateway's read view, pulling while the lanes interleave, hold
// every reading exactly once.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sync/feed_puller.h"
#include "sync/wire.h"
#include "tests/support/hand_gateway.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};
constexpr int64_t kT0 = 1780000000000;

std::vector<ChangeEntry> Readings(uint64_t first, uint64_t last) {
  std::vector<ChangeEntry> out;
  for (uint64_t lsn = first; lsn <= last; ++lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = {"lane-dev", "temperature", kT0 + static_cast<int64_t>(lsn) * 1000, 20.0 + lsn, "Cel", 0};
    out.push_back(e);
  }
  return out;
}

using Spans = std::vector<LsnSpan>;

TEST(SyncLanesTest, AHubHoldsALiveLaneAboveItsMarkUntilTheBacklogJoinsIt) {
  HandGatewayRig rig;
  ASSERT_NO_FATAL_FAILURE(rig.Start());
  ASSERT_GE(rig.Answers()[1].version, kLiveLaneVersion);

  // Another gateway's read view follows the region's feed all along, so its
  // pages interleave with the lanes.
  std::unique_ptr<Store> reader = OpenGatewayStore(rig.tmp.File("b.db"), "gw-b");
  ASSERT_NE(reader, nullptr);
  FeedPullerOptions po;
  po.gateway_id = "gw-b";
  po.page_max_entries = 7;
  po.poll_interval_ms = 200;
  po.answer_timeout_ms = 2000;
  po.backoff_base_ms = 50;
  po.backoff_max_ms = 500;
  po.regions.push_back(RegionAt("eu", rig.eu->broker().uri()));
  FeedPuller puller(reader.get(), po);
  ASSERT_OK(puller.Start());

  uint64_t correlation = 100;
  // Sends a batch and waits for its answer.
  auto send = [&](std::vector<ChangeEntry> entries, bool live) -> WireAck {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = entries.front().lsn;
    b.last_lsn = entries.back().lsn;
    b.entries = std::move(entries);
    b.live = live;
    const uint64_t id = ++correlation;
    std::string payload;
    EXPECT_OK(EncodeBatch(rig.up, id, b, {}, &payload));
    EXPECT_TRUE(rig.gw->Publish(rig.inbox, payload, 1));
    EXPECT_TRUE(WaitFor([&] { return rig.Answers().count(id) > 0; }, 60000)) << rig.eu->hub_log();
    WireAck ack = rig.Answers()[id].ack;
    return ack;
  };

  WireAck a = send(Readings(1, 10), false);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 10u);
  EXPECT_TRUE(a.held.empty());
  // The live lane, above the mark.
  a = send(Readings(50, 59), true);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 10u) << "the mark stays contiguous";
  EXPECT_EQ(a.held, (Spans{{50, 59}}));
  a = send(Readings(60, 64), true);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 10u);
  EXPECT_EQ(a.held, (Spans{{50, 64}}));
  // The read view takes the live span before the older readings.
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(reader.get(), "feed:eu") >= 25; }, 60000));
  // A backlog batch above the mark is a gap, as before; it names the spans.
  a = send(Readings(70, 72), false);
  EXPECT_EQ(a.code, AckCode::kGap);
  EXPECT_EQ(a.high_water, 10u);
  EXPECT_EQ(a.held, (Spans{{50, 64}}));
  // The backlog, oldest first, up to the span: the mark jumps past it.
  a = send(Readings(11, 30), false);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 30u);
  EXPECT_EQ(a.held, (Spans{{50, 64}}));
  a = send(Readings(31, 49), false);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 64u);
  EXPECT_TRUE(a.held.empty());
  // The live lane resent from its start (a reconnect): already held.
  a = send(Readings(50, 64), true);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 64u);
  EXPECT_TRUE(a.held.empty());
  // Live again, past the mark: it follows the mark.
  a = send(Readings(65, 66), true);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 66u);
  // And a backlog batch above the mark is still a gap.
  a = send(Readings(80, 82), false);
  EXPECT_EQ(a.code, AckCode::kGap);
  EXPECT_EQ(a.high_water, 66u);
  EXPECT_TRUE(a.held.empty());

  // The region's feed: each (origin, LSN) once, 1..66, nothing else.
  auto contents = rig.eu->Contents();
  EXPECT_EQ(contents.size(), 66u);
  for (uint64_t lsn = 1; lsn <= 66; ++lsn) {
    auto it = contents.find({kOrigin.ToString(), lsn});
    EXPECT_TRUE(it != contents.end() && it->second == 1) << "LSN " << lsn;
  }

  // The read view of the other gateway: every reading once.
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(reader.get(), "feed:eu") >= 66; }, 60000));
  puller.Stop();
  QueryRequest q;
  q.device_id = "lane-dev";
  q.limit = 100000;
  std::vector<QueryRow> rows;
  ASSERT_OK(reader->Query(q, &rows));
  std::map<uint64_t, int> seen;
  for (const QueryRow& r : rows) {
    EXPECT_FALSE(r.local);
    EXPECT_EQ(r.origin, kOrigin);
    EXPECT_EQ(r.reading.ts_ms, kT0 + static_cast<int64_t>(r.lsn) * 1000);
    ++seen[r.lsn];
  }
  EXPECT_EQ(seen.size(), 66u);
  for (uint64_t lsn = 1; lsn <= 66; ++lsn) EXPECT_EQ(seen[lsn], 1) << "LSN " << lsn;
  EXPECT_EQ(rows.size(), 66u);
  EXPECT_EQ(rig.eu->StopHub(), 0);
}

}  // namespace
}  // namespace edgesync::test

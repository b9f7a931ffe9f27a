// Read view, region hub high-water marks and feed, union query.
#include <map>

#include "tests/support/store_test_util.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreRemoteTest : public StoreTest {};

const Origin kOther{"gw2", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};

ChangeEntry Entry(uint64_t lsn, const std::string& device, int64_t ts, double v) {
  ChangeEntry e;
  e.lsn = lsn;
  e.reading = MakeReading(device, "temp", ts, v, "C");
  return e;
}

TEST_F(StoreRemoteTest, ApplyRemoteIsIdempotent) {
  auto s = OpenStore();
  std::vector<RemoteEntry> in;
  for (uint64_t i = 1; i <= 10; ++i) in.push_back(RemoteEntry{kOther, i, Entry(i, "r1", 100 + i, 1.0 * i)});
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(in, &applied));
  EXPECT_EQ(applied, 10);
  ASSERT_OK(s->ApplyRemote(in, &applied));
  EXPECT_EQ(applied, 0);
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.remote_entries, 10);
  in[0].origin.epoch = "nope";
  EXPECT_EQ(s->ApplyRemote(in, &applied).code(), Status::Code::kInvalidArgument);
}

// The watermarks a read view keeps from its feeds: per origin, only ever
// raised, durable, never one for this store's own origin; a bad origin is
// refused and nothing of the call kept.
TEST_F(StoreRemoteTest, AReadViewKeepsEachOriginsHighestWatermark) {
  const Origin kThird{"gw3", "cccccccccccccccccccccccccccccccc"};
  {
    auto s = OpenStore();
    ASSERT_OK(s->KeepWatermarks({OriginWatermark{kOther, 5'000, 0}, OriginWatermark{s->origin(), 9'000, 0}}));
    ASSERT_OK(s->KeepWatermarks({OriginWatermark{kOther, 4'000, 0}, OriginWatermark{kThird, 7'000, 0}}));
    EXPECT_EQ(s->KeepWatermarks({OriginWatermark{kThird, 8'000, 0}, OriginWatermark{Origin{"x/y", "e"}, 1, 0}}).code(),
              Status::Code::kInvalidArgument);
  }
  auto s = OpenStore();
  std::vector<OriginWatermark> all;
  ASSERT_OK(s->ListWatermarks(&all));
  std::map<std::string, int64_t> got;
  for (const auto& w : all) got[w.origin.ToString()] = w.complete_through_ms;
  EXPECT_EQ(got, (std::map<std::string, int64_t>{{kOther.ToString(), 5'000}, {kThird.ToString(), 7'000}}));
}

TEST_F(StoreRemoteTest, QueryUnionsLocalAndRemoteDeduplicated) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings({MakeReading("d1", "temp", 10, 1, "C"), MakeReading("d1", "hum", 11, 50),
                                 MakeReading("d2", "temp", 12, 3, "C")},
                                &r));
  std::vector<RemoteEntry> in = {RemoteEntry{kOther, 5, Entry(5, "d1", 15, 7)},
                                 // Our own entry coming back through a region feed.
                                 RemoteEntry{s->origin(), 1, Entry(1, "d1", 10, 1)}};
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(in, &applied));
  std::vector<QueryRow> rows;
  QueryRequest q;
  q.device_id = "d1";
  ASSERT_OK(s->Query(q, &rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].reading.ts_ms, 10);
  EXPECT_TRUE(rows[0].local);
  EXPECT_EQ(rows[0].origin, s->origin());
  EXPECT_EQ(rows[0].lsn, 1u);
  EXPECT_EQ(rows[1].reading.metric, "hum");
  EXPECT_EQ(rows[2].reading.ts_ms, 15);
  EXPECT_FALSE(rows[2].local);
  EXPECT_EQ(rows[2].origin, kOther);
  EXPECT_EQ(rows[2].lsn, 5u);
  q.metric = "temp";
  q.from_ms = 11;
  ASSERT_OK(s->Query(q, &rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].reading.ts_ms, 15);
  q.from_ms = INT64_MIN;
  q.limit = 1;
  ASSERT_OK(s->Query(q, &rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].reading.ts_ms, 10);
  q.device_id = "a#b";
  EXPECT_EQ(s->Query(q, &rows).code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreRemoteTest, OriginBatchesKeepADurableHighWater) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  uint64_t hw = 0;
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(1, "a", 1, 1), Entry(2, "a", 2, 2)}, &hw));
  EXPECT_EQ(hw, 2u);
  // A resent suffix is ignored; the new tail is applied.
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(2, "a", 2, 2), Entry(3, "a", 3, 3)}, &hw));
  EXPECT_EQ(hw, 3u);
  // A gap is refused.
  Status st = test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(5, "a", 5, 5)}, &hw);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  // ...unless the sender declares everything up to 4 held elsewhere.
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 4, {Entry(5, "a", 5, 5)}, &hw));
  EXPECT_EQ(hw, 5u);
  EXPECT_EQ(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(7, "a", 7, 7), Entry(6, "a", 6, 6)}, &hw).code(),
            Status::Code::kInvalidArgument);
  uint64_t got = 0;
  ASSERT_OK(test::GetHighWater(hub.get(), kOther, &got));
  EXPECT_EQ(got, 5u);
  // Holes inside a batch are the origin's compacted entries: accepted.
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(6, "a", 6, 6), Entry(9, "a", 9, 9)}, &hw));
  EXPECT_EQ(hw, 9u);
  // A declaration alone moves the mark.
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 12, {}, &hw));
  EXPECT_EQ(hw, 12u);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 3, {}, &hw));  // an old declaration changes nothing
  EXPECT_EQ(hw, 12u);
  ASSERT_OK(test::GetHighWater(hub.get(), Origin{"gw9", kOther.epoch}, &got));
  EXPECT_EQ(got, 0u);
  std::vector<RegionFeedEntry> feed;
  uint64_t head = 0;
  bool reset = true;
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 0, 100, &feed, &head, &reset));
  EXPECT_FALSE(reset);
  EXPECT_EQ(head, 6u);
  ASSERT_EQ(feed.size(), 6u);
  EXPECT_EQ(feed[0].seq, 1u);
  EXPECT_EQ(feed[3].remote.origin_lsn, 5u);
  EXPECT_EQ(feed[3].remote.origin, kOther);
  EXPECT_EQ(feed[3].remote.entry.reading.device_id, "a");
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 2, 1, &feed, &head, &reset));
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].seq, 3u);
}

TEST_F(StoreRemoteTest, HighWaterSurvivesPruneAndRegionFeedResetsExplicitly) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  uint64_t hw = 0;
  ChangeEntry dev;
  dev.lsn = 3;
  dev.kind = ChangeEntry::Kind::kDeviceUpsert;
  dev.device = DeviceRecord{"a", "Pump", "roof", "", false};
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(1, "a", 1, 1), Entry(2, "a", 2, 2), dev}, &hw));
  clock_.Advance(8LL * 86400 * 1000);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(4, "a", 4, 4)}, &hw));
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.remote, 3);
  ASSERT_OK(test::GetHighWater(hub.get(), kOther, &hw));
  EXPECT_EQ(hw, 4u);
  // Resending pruned entries is still recognised as duplicate.
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {Entry(1, "a", 1, 1)}, &hw));
  EXPECT_EQ(hw, 4u);
  std::vector<RegionFeedEntry> feed;
  uint64_t head = 0;
  bool reset = false;
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 1, 100, &feed, &head, &reset));
  EXPECT_TRUE(reset);
  EXPECT_TRUE(feed.empty());
  uint64_t oldest = 0;
  ASSERT_OK(test::RegionFeedBounds(hub.get(), &oldest, &head));
  EXPECT_EQ(oldest, 4u);
  EXPECT_EQ(head, 4u);
  ASSERT_OK(test::ReadRegionFeed(hub.get(), oldest - 1, 100, &feed, &head, &reset));
  EXPECT_FALSE(reset);
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].remote.origin_lsn, 4u);
}

TEST_F(StoreRemoteTest, RegionFeedCarriesDeviceRecords) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  ChangeEntry dev;
  dev.lsn = 1;
  dev.kind = ChangeEntry::Kind::kDeviceDelete;
  dev.device = DeviceRecord{"a", "Pump", "roof", "bar", true};
  uint64_t hw = 0;
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kOther, 0, {dev}, &hw));
  std::vector<RegionFeedEntry> feed;
  uint64_t head = 0;
  bool reset = false;
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 0, 10, &feed, &head, &reset));
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].remote.entry.kind, ChangeEntry::Kind::kDeviceDelete);
  EXPECT_EQ(feed[0].remote.entry.device.name, "Pump");
  EXPECT_EQ(feed[0].remote.entry.device.default_unit, "bar");
  EXPECT_TRUE(feed[0].remote.entry.device.deleted);
}

TEST_F(StoreRemoteTest, AFeedPositionMovesForwardWithinAnEpochAndIsReplacedByAReset) {
  const std::string e1(32, 'a'), e2(32, 'b');
  // One sequence per shard: the position of shard s is the last of that
  // shard read.
  auto at = [](std::initializer_list<std::pair<int, uint64_t>> shards) {
    ShardPositions p{};
    for (auto [s, n] : shards) p[s] = n;
    return p;
  };
  {
    auto s = OpenStore();
    FeedPosition p;
    ASSERT_OK(s->GetFeedPosition("eu", &p));
    EXPECT_EQ(p.epoch, "");
    EXPECT_EQ(p.shards, ShardPositions{});
    EXPECT_EQ(p.single_seq, 0u);
    ASSERT_OK(s->SetFeedPosition("eu", {e1, at({{1, 50}, {8, 3}})}, false));
    // No shard moves back within an epoch, whatever the others do.
    EXPECT_EQ(s->SetFeedPosition("eu", {e1, at({{1, 49}, {8, 90}})}, false).code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(s->SetFeedPosition("eu", {e1, at({{1, 50}})}, false).code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(s->SetFeedPosition("eu", {"not an epoch", at({{1, 60}})}, false).code(), Status::Code::kInvalidArgument);
    ASSERT_OK(s->SetFeedPosition("eu", {e1, at({{1, 50}, {8, 4}, {31, 1}})}, false));
    // The hub's store was re-created: its sequences start again.
    ASSERT_OK(s->SetFeedPosition("eu", {e2, at({{2, 3}})}, false));
    ASSERT_OK(s->SetFeedPosition("us", {e1, at({{0, 7}})}, false));
  }
  auto s = OpenStore();
  FeedPosition p;
  ASSERT_OK(s->GetFeedPosition("eu", &p));
  EXPECT_EQ(p.epoch, e2);
  EXPECT_EQ(p.shards, at({{2, 3}}));
  uint64_t v = 0;
  ASSERT_OK(s->GetCheckpoint("feed:eu", &v));
  EXPECT_EQ(v, 3u);  // the highest shard's, for status
  // An explicit reset may move back within the epoch (a restored hub store).
  ASSERT_OK(s->SetFeedPosition("eu", {e2, at({{2, 1}})}, true));
  ASSERT_OK(s->GetFeedPosition("eu", &p));
  EXPECT_EQ(p.shards, at({{2, 1}}));
  ASSERT_OK(s->GetFeedPosition("us", &p));
  EXPECT_EQ(p.epoch, e1);
  EXPECT_EQ(p.shards, at({{0, 7}}));
}

TEST_F(StoreRemoteTest, APositionOfTheSingleSequenceFeedStartsOverExplicitly) {
  auto s = OpenStore();
  // What a store of the single-sequence feed holds: the checkpoint and an epoch.
  ASSERT_OK(s->SetCheckpoint("feed:eu", 40));
  FeedPosition p;
  ASSERT_OK(s->GetFeedPosition("eu", &p));
  EXPECT_EQ(p.single_seq, 40u);  // the puller says so and counts a reset
  EXPECT_EQ(p.epoch, "");
  EXPECT_EQ(p.shards, ShardPositions{});
  // The first per-shard position replaces it.
  ShardPositions next{};
  next[4] = 12;
  ASSERT_OK(s->SetFeedPosition("eu", {std::string(32, 'c'), next}, false));
  ASSERT_OK(s->GetFeedPosition("eu", &p));
  EXPECT_EQ(p.single_seq, 0u);
  EXPECT_EQ(p.shards, next);
}

}  // namespace
}  // namespace edgesync::test

// The read view's batched apply path: batches longer than one insert chunk,
// with entries the read view already holds and device records among them.
#include "tests/support/store_test_util.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreRemoteChunkTest : public StoreTest {};

const Origin kGw{"gw2", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"};
const Origin kGw3{"gw3", "cccccccccccccccccccccccccccccccc"};

ChangeEntry At(uint64_t lsn) {
  ChangeEntry e;
  e.lsn = lsn;
  if (lsn % 50 == 0) {
    e.kind = lsn % 100 == 0 ? ChangeEntry::Kind::kDeviceDelete : ChangeEntry::Kind::kDeviceUpsert;
    e.device = DeviceRecord{"d" + std::to_string(lsn % 7), "name" + std::to_string(lsn), "loc", "C",
                            e.kind == ChangeEntry::Kind::kDeviceDelete};
  } else {
    e.reading = MakeReading("d" + std::to_string(lsn % 7), "m" + std::to_string(lsn % 3), static_cast<int64_t>(lsn),
                            0.5 * static_cast<double>(lsn), "C");
  }
  return e;
}

std::vector<RegionFeedEntry> WholeFeed(SqliteHubStore* hub) {
  std::vector<RegionFeedEntry> all, page;
  uint64_t after = 0, head = 0;
  bool reset = false;
  do {
    EXPECT_OK(test::ReadRegionFeed(hub, after, 97, &page, &head, &reset));
    EXPECT_FALSE(reset);
    for (auto& e : page) all.push_back(e);
    if (!page.empty()) after = page.back().seq;
  } while (!page.empty());
  return all;
}

TEST_F(StoreRemoteChunkTest, LongOriginBatchesJoinTheFeedInOrderOnce) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  // Some entries reach the read view first (a feed pull), out of order.
  std::vector<RemoteEntry> early;
  for (uint64_t lsn : {70u, 5u, 130u, 131u, 250u}) early.push_back(RemoteEntry{kGw, lsn, At(lsn)});
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(early, &applied));
  EXPECT_EQ(applied, 5);
  uint64_t hw = 0;
  std::vector<ChangeEntry> b1, b2;
  for (uint64_t lsn = 1; lsn <= 200; ++lsn) b1.push_back(At(lsn));
  for (uint64_t lsn = 150; lsn <= 300; ++lsn) b2.push_back(At(lsn));  // overlaps the mark
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kGw, 0, b1, &hw));
  EXPECT_EQ(hw, 200u);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kGw, 0, b2, &hw));
  EXPECT_EQ(hw, 300u);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kGw, 0, b1, &hw));  // a resend changes nothing
  EXPECT_EQ(hw, 300u);

  std::vector<RegionFeedEntry> feed = WholeFeed(hub.get());
  ASSERT_EQ(feed.size(), 300u);
  for (size_t i = 0; i < feed.size(); ++i) {
    const RemoteEntry& r = feed[i].remote;
    ChangeEntry want = At(i + 1);
    ASSERT_EQ(r.origin, kGw);
    ASSERT_EQ(r.origin_lsn, i + 1);
    ASSERT_EQ(r.entry.kind, want.kind) << i;
    if (want.kind == ChangeEntry::Kind::kReading) {
      EXPECT_EQ(r.entry.reading.device_id, want.reading.device_id);
      EXPECT_EQ(r.entry.reading.metric, want.reading.metric);
      EXPECT_EQ(r.entry.reading.ts_ms, want.reading.ts_ms);
      EXPECT_EQ(r.entry.reading.value, want.reading.value);
    } else {
      EXPECT_EQ(r.entry.device.device_id, want.device.device_id);
      EXPECT_EQ(r.entry.device.name, want.device.name);
      EXPECT_EQ(r.entry.device.deleted, want.device.deleted);
    }
  }
  // A store in both roles keeps both: the read view's 5 and the feed's 300
  // (only a gateway pulls feeds, only a hub applies batches); a query still
  // answers each (origin, LSN) once.
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.remote_entries, 305);
  QueryRequest q;
  q.device_id = "d0";  // LSNs divisible by 7
  q.limit = 100000;
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  size_t want = 0;
  for (uint64_t lsn = 1; lsn <= 300; ++lsn) want += (lsn % 50 != 0 && lsn % 7 == 0);
  EXPECT_EQ(rows.size(), want);
}

TEST_F(StoreRemoteChunkTest, LongApplyRemoteCountsOnlyNewEntriesAcrossOrigins) {
  auto s = OpenStore();
  std::vector<RemoteEntry> first;
  for (uint64_t lsn = 1; lsn <= 150; lsn += 2) first.push_back(RemoteEntry{kGw, lsn, At(lsn)});
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(first, &applied));
  EXPECT_EQ(applied, 75);
  std::vector<RemoteEntry> all;
  for (uint64_t lsn = 1; lsn <= 150; ++lsn) all.push_back(RemoteEntry{kGw, lsn, At(lsn)});
  for (uint64_t lsn = 1; lsn <= 100; ++lsn) all.push_back(RemoteEntry{kGw3, lsn, At(lsn)});
  ASSERT_OK(s->ApplyRemote(all, &applied));
  EXPECT_EQ(applied, 75 + 100);
  ASSERT_OK(s->ApplyRemote(all, &applied));
  EXPECT_EQ(applied, 0);
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.remote_entries, 250);
  // Every reading of both origins is queryable once.
  QueryRequest q;
  q.device_id = "d1";
  q.limit = 100000;
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  size_t want = 0;
  for (uint64_t lsn = 1; lsn <= 150; ++lsn) want += (lsn % 50 != 0 && lsn % 7 == 1);
  for (uint64_t lsn = 1; lsn <= 100; ++lsn) want += (lsn % 50 != 0 && lsn % 7 == 1);
  EXPECT_EQ(rows.size(), want);
  // A bad entry deep in a long batch fails the whole call and applies nothing.
  std::vector<RemoteEntry> bad;
  for (uint64_t lsn = 151; lsn <= 300; ++lsn) bad.push_back(RemoteEntry{kGw, lsn, At(lsn)});
  bad[120].entry.reading.metric = "a/b";
  EXPECT_EQ(s->ApplyRemote(bad, &applied).code(), Status::Code::kInvalidArgument);
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.remote_entries, 250);
}

}  // namespace
}  // namespace edgesync::test

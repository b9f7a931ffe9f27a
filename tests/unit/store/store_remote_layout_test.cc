// The compressed layout of other gateways' entries (schema version 5):
// exact dedupe of resent and overlapping pages and batches without a
// per-entry index, feed pages across chunks, retention of whole chunks,
// damaged chunks refused and counted, and version 4 stores migrated.
#include <map>

#include "store/schema.h"
#include "store/sqlite_util.h"
#include "tests/support/store_test_util.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreRemoteLayoutTest : public StoreTest {
 protected:
  // Every entry of the feed from after, in pages of `page`.
  std::vector<RegionFeedEntry> FeedFrom(SqliteHubStore* hub, uint64_t after, size_t page) {
    std::vector<RegionFeedEntry> all, got;
    uint64_t head = 0;
    bool reset = false;
    for (;;) {
      Status st = test::ReadRegionFeed(hub, after, page, &got, &head, &reset);
      EXPECT_OK(st);
      EXPECT_FALSE(reset);
      if (!st.ok() || got.empty()) return all;
      EXPECT_LE(got.size(), page);
      for (auto& e : got) all.push_back(e);
      after = got.back().seq;
    }
  }
  int64_t RemoteEntries(Store* s) {
    StoreStats stats;
    EXPECT_OK(s->Stats(&stats));
    return stats.remote_entries;
  }
  int64_t CorruptChunks(Store* s) {
    StoreStats stats;
    EXPECT_OK(s->Stats(&stats));
    return stats.corrupt_chunks;
  }
};

const Origin kA{"gwa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
const Origin kB{"gwb", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"};

ChangeEntry At(uint64_t lsn) {
  ChangeEntry e;
  e.lsn = lsn;
  e.reading = MakeReading("d" + std::to_string(lsn % 3), "temp", 1000 * static_cast<int64_t>(lsn),
                          0.25 * static_cast<double>(lsn), "C");
  return e;
}

std::vector<RemoteEntry> Page(const Origin& o, std::initializer_list<std::pair<uint64_t, uint64_t>> spans) {
  std::vector<RemoteEntry> v;
  for (auto [from, to] : spans) {
    for (uint64_t lsn = from; lsn <= to; ++lsn) v.push_back(RemoteEntry{o, lsn, At(lsn)});
  }
  return v;
}

// Every (origin, LSN) the union query answers, counted.
std::map<std::pair<std::string, uint64_t>, int> Held(Store* s) {
  std::map<std::pair<std::string, uint64_t>, int> held;
  for (const char* device : {"d0", "d1", "d2"}) {
    QueryRequest q;
    q.device_id = device;
    q.limit = 100000;
    std::vector<QueryRow> rows;
    Status st = s->Query(q, &rows);
    EXPECT_OK(st);
    for (const QueryRow& r : rows) ++held[{r.origin.gateway_id, r.lsn}];
  }
  return held;
}

TEST_F(StoreRemoteLayoutTest, ReadViewTakesExactlyWhatItLacksFromOverlappingAndHoledPages) {
  auto s = OpenStore();
  int64_t applied = 0;
  // Region 1's page holds A's 1-100 except 40-44 (not yet there).
  ASSERT_OK(s->ApplyRemote(Page(kA, {{1, 39}, {45, 100}}), &applied));
  EXPECT_EQ(applied, 95);
  // A resend overlapping the end, and region 2's page filling the hole and
  // going on, interleaved with B's entries and a repeat within the page.
  std::vector<RemoteEntry> mixed = Page(kA, {{90, 120}});
  for (auto& e : Page(kB, {{1, 10}})) mixed.push_back(e);
  for (auto& e : Page(kA, {{38, 46}, {46, 46}})) mixed.push_back(e);
  ASSERT_OK(s->ApplyRemote(mixed, &applied));
  EXPECT_EQ(applied, 20 + 10 + 5);
  ASSERT_OK(s->ApplyRemote(mixed, &applied));
  EXPECT_EQ(applied, 0);
  EXPECT_EQ(RemoteEntries(s.get()), 130);
  auto held = Held(s.get());
  EXPECT_EQ(held.size(), 130u);
  for (const auto& [key, n] : held) EXPECT_EQ(n, 1) << key.first << " " << key.second;
  for (uint64_t lsn = 1; lsn <= 120; ++lsn) EXPECT_EQ(held.count({"gwa", lsn}), 1u) << lsn;
}

// Two uplink lanes: a region feeds an origin's live readings before its
// backlog, so a read view gets LSNs 100..200 before 1..99 (in pages, with
// a resend and overlaps on the way). It holds each once, nothing missing:
// dedupe is by (origin, LSN), not by a per-origin maximum.
TEST_F(StoreRemoteLayoutTest, ReadViewTakesAnOriginsOlderLsnsAfterItsNewerOnes) {
  auto s = OpenStore();
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(Page(kA, {{100, 150}}), &applied));
  EXPECT_EQ(applied, 51);
  ASSERT_OK(s->ApplyRemote(Page(kA, {{151, 200}}), &applied));
  EXPECT_EQ(applied, 50);
  ASSERT_OK(s->ApplyRemote(Page(kA, {{1, 40}}), &applied));
  EXPECT_EQ(applied, 40);
  ASSERT_OK(s->ApplyRemote(Page(kA, {{120, 130}}), &applied));  // a live span again
  EXPECT_EQ(applied, 0);
  ASSERT_OK(s->ApplyRemote(Page(kA, {{35, 110}}), &applied));   // the backlog running into it
  EXPECT_EQ(applied, 59);
  EXPECT_EQ(RemoteEntries(s.get()), 200);
  auto held = Held(s.get());
  EXPECT_EQ(held.size(), 200u);
  for (const auto& [key, n] : held) EXPECT_EQ(n, 1) << key.first << " " << key.second;
  for (uint64_t lsn = 1; lsn <= 200; ++lsn) EXPECT_EQ(held.count({"gwa", lsn}), 1u) << lsn;
}

TEST_F(StoreRemoteLayoutTest, HubTakesOnlyWhatIsAboveItsMarkAndPagesAcrossBatches) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  uint64_t hw = 0;
  auto batch = [](uint64_t from, uint64_t to) {
    std::vector<ChangeEntry> v;
    for (uint64_t lsn = from; lsn <= to; ++lsn) v.push_back(At(lsn));
    return v;
  };
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, batch(1, 10), &hw));
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kB, 0, batch(1, 7), &hw));
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, batch(5, 15), &hw));  // partial overlap: 11-15 are new
  EXPECT_EQ(hw, 15u);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, batch(1, 15), &hw));  // all held
  EXPECT_EQ(hw, 15u);
  EXPECT_EQ(test::ApplyOriginBatch(hub.get(), kA, 0, batch(17, 20), &hw).code(), Status::Code::kInvalidArgument);  // a gap
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kB, 0, batch(8, 8), &hw));
  // Feed: A 1-10 (seq 1-10), B 1-7 (11-17), A 11-15 (18-22), B 8 (23).
  for (size_t page : {1u, 3u, 7u, 100u}) {
    std::vector<RegionFeedEntry> feed = FeedFrom(hub.get(), 0, page);
    ASSERT_EQ(feed.size(), 23u) << page;
    for (size_t i = 0; i < feed.size(); ++i) EXPECT_EQ(feed[i].seq, i + 1);
    EXPECT_EQ(feed[9].remote.origin_lsn, 10u);
    EXPECT_EQ(feed[10].remote.origin, kB);
    EXPECT_EQ(feed[17].remote.origin, kA);
    EXPECT_EQ(feed[17].remote.origin_lsn, 11u);
    EXPECT_EQ(feed[17].remote.entry.reading.value, 2.75);
    EXPECT_EQ(feed[22].remote.origin, kB);
    EXPECT_EQ(feed[22].remote.origin_lsn, 8u);
  }
  // From the middle of a chunk.
  std::vector<RegionFeedEntry> tail = FeedFrom(hub.get(), 13, 4);
  ASSERT_EQ(tail.size(), 10u);
  EXPECT_EQ(tail[0].seq, 14u);
  EXPECT_EQ(tail[0].remote.origin_lsn, 4u);
  uint64_t oldest = 0, head = 0;
  ASSERT_OK(test::RegionFeedBounds(hub.get(), &oldest, &head));
  EXPECT_EQ(oldest, 1u);
  EXPECT_EQ(head, 23u);
  EXPECT_EQ(RemoteEntries(s), 23);
}

TEST_F(StoreRemoteLayoutTest, RetentionPrunesWholeChunksAndTheFeedKeepsItsHeadAndResets) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  uint64_t hw = 0;
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, {At(1), At(2), At(3)}, &hw));
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(Page(kB, {{1, 4}}), &applied));
  clock_.Advance(8LL * 86400 * 1000);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, {At(4), At(5)}, &hw));
  ASSERT_OK(s->ApplyRemote(Page(kB, {{5, 6}}), &applied));
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.remote, 3 + 4);
  EXPECT_EQ(RemoteEntries(s), 4);
  std::vector<RegionFeedEntry> feed;
  uint64_t head = 0;
  bool reset = false;
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 2, 10, &feed, &head, &reset));
  EXPECT_TRUE(reset);
  EXPECT_EQ(head, 5u);
  feed = FeedFrom(hub.get(), 3, 10);
  ASSERT_EQ(feed.size(), 2u);
  EXPECT_EQ(feed[0].seq, 4u);
  // Everything pruned: the head stays, and the next batch continues after it.
  clock_.Advance(8LL * 86400 * 1000);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.remote, 4);
  uint64_t oldest = 0;
  ASSERT_OK(test::RegionFeedBounds(hub.get(), &oldest, &head));
  EXPECT_EQ(oldest, 0u);
  EXPECT_EQ(head, 5u);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, {At(6)}, &hw));
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 5, 10, &feed, &head, &reset));
  EXPECT_FALSE(reset);
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].seq, 6u);
  EXPECT_EQ(feed[0].remote.origin_lsn, 6u);
  // A pruned read view entry resent is taken again (retention chose to
  // forget it; the read view keeps no mark per origin).
  ASSERT_OK(s->ApplyRemote(Page(kB, {{1, 1}}), &applied));
  EXPECT_EQ(applied, 1);
}

TEST_F(StoreRemoteLayoutTest, PruneStepsStayNearTheirBoundInWholeChunks) {
  auto s = OpenStore();
  int64_t applied = 0;
  for (uint64_t from = 1; from <= 100; from += 10) {
    ASSERT_OK(s->ApplyRemote(Page(kA, {{from, from + 9}}), &applied));
  }
  clock_.Advance(8LL * 86400 * 1000);
  PruneResult p;
  ASSERT_OK(s->PruneStep(25, &p));
  EXPECT_EQ(p.remote, 30);  // three chunks of 10: the step's bound reached inside the third
  EXPECT_TRUE(p.more);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.remote, 70);
  EXPECT_EQ(RemoteEntries(s.get()), 0);
}

TEST_F(StoreRemoteLayoutTest, ADamagedChunkIsRefusedNamedAndCountedNeverACrash) {
  {
    std::unique_ptr<SqliteHubStore> hub;
    ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
    Store* s = hub->store();
    uint64_t hw = 0;
    ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, {At(1), At(2), At(3)}, &hw));
    ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, {At(4)}, &hw));
    int64_t applied = 0;
    ASSERT_OK(s->ApplyRemote(Page(kB, {{1, 5}}), &applied));
  }
  // The region block's content checksum zeroed (its header still fits),
  // the read view's block cut short.
  Sql("UPDATE region_chunks SET data = substr(data, 1, length(data) - 4) || x'00000000' WHERE seq = 1;"
      "UPDATE view_chunks SET data = x'01ff' WHERE id = 1;");
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  std::vector<RegionFeedEntry> feed;
  uint64_t head = 0;
  bool reset = false;
  Status st = test::ReadRegionFeed(hub.get(), 0, 10, &feed, &head, &reset);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("region chunk at sequence 1: remote chunk:"), std::string::npos) << st.ToString();
  EXPECT_EQ(CorruptChunks(s), 1);
  // Past the damaged chunk the feed still serves.
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 3, 10, &feed, &head, &reset));
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].remote.origin_lsn, 4u);
  // A page overlapping the damaged read view chunk cannot be deduplicated
  // against it: refused whole, nothing written.
  int64_t applied = 0;
  st = s->ApplyRemote(Page(kB, {{5, 6}}), &applied);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("read view chunk 1"), std::string::npos) << st.ToString();
  EXPECT_EQ(CorruptChunks(s), 2);
  ASSERT_OK(s->ApplyRemote(Page(kB, {{6, 7}}), &applied));  // past it: fine
  EXPECT_EQ(applied, 2);
  QueryRequest q;
  q.device_id = "d1";
  q.limit = 10;
  std::vector<QueryRow> rows;
  EXPECT_EQ(s->Query(q, &rows).code(), Status::Code::kCorruption);
  std::vector<DeviceSummary> devices;
  EXPECT_EQ(s->ListDevices(&devices).code(), Status::Code::kCorruption);
  EXPECT_GE(CorruptChunks(s), 4);
}

// A version 4 store (a row per entry in `remote`, the feed in region_feed,
// device records in remote_devices) moves them into chunks on open: the same
// feed at the same sequences, the same head, the read view deduplicating
// against what it held.
TEST_F(StoreRemoteLayoutTest, MigratesVersion4RowsIntoChunks) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 4));
    std::string sql =
        "INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
        "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"
        "INSERT INTO series VALUES(1, 'dev-a', 'temp', 'Cel', 1), (2, 'dev-a', '', '', 1);"
        "INSERT INTO origins VALUES(1, 'gwa', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'),"
        "(2, 'gwb', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb');"
        "INSERT INTO high_water VALUES(1, 6);";
    // Hub rows: A's 3-6 (LSN 4 a device record) at seq 3-6 (A's 1-2 were
    // fed as seq 1-2 and pruned with their rows); read view rows: B's 1-3
    // and 7 (not in the feed).
    for (int lsn = 3; lsn <= 6; ++lsn) {
      sql += "INSERT INTO remote VALUES(" + std::to_string(lsn) + ", 1, " + std::to_string(lsn) + ", " +
             (lsn == 4 ? "1, 2, 0, 0, 0" : "0, 1, " + std::to_string(1000 * lsn) + ", " + std::to_string(lsn) + ".5, 0") +
             ", 5000);";
    }
    sql += "INSERT INTO remote_devices VALUES(4, 'Pump', 'roof', 'Cel', 0);";
    sql += "INSERT INTO region_feed VALUES(3, 3), (4, 4), (5, 5), (6, 6);";
    sql += "INSERT INTO meta VALUES('region_pruned_seq', 2);";
    for (int lsn : {1, 2, 3, 7}) {
      sql += "INSERT INTO remote VALUES(" + std::to_string(100 + lsn) + ", 2, " + std::to_string(lsn) + ", 0, 1, " +
             std::to_string(2000 * lsn) + ", " + std::to_string(lsn) + ", 0, 5000);";
    }
    ASSERT_OK(db.Exec(sql));
  }
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  EXPECT_EQ(RemoteEntries(s), 4 + 4);
  uint64_t oldest = 0, head = 0;
  ASSERT_OK(test::RegionFeedBounds(hub.get(), &oldest, &head));
  EXPECT_EQ(oldest, 3u);
  EXPECT_EQ(head, 6u);
  std::vector<RegionFeedEntry> feed = FeedFrom(hub.get(), 2, 100);
  ASSERT_EQ(feed.size(), 4u);
  for (size_t i = 0; i < feed.size(); ++i) {
    EXPECT_EQ(feed[i].seq, i + 3);
    EXPECT_EQ(feed[i].remote.origin_lsn, i + 3);
  }
  EXPECT_EQ(feed[1].remote.entry.kind, ChangeEntry::Kind::kDeviceUpsert);
  EXPECT_EQ(feed[1].remote.entry.device.name, "Pump");
  EXPECT_EQ(feed[2].remote.entry.reading.value, 5.5);
  bool reset = false;
  ASSERT_OK(test::ReadRegionFeed(hub.get(), 1, 10, &feed, &head, &reset));
  EXPECT_TRUE(reset);
  uint64_t hw = 0;
  ASSERT_OK(test::GetHighWater(hub.get(), kA, &hw));
  EXPECT_EQ(hw, 6u);
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kA, 0, {At(5), At(6), At(7)}, &hw));
  EXPECT_EQ(hw, 7u);
  EXPECT_EQ(FeedFrom(hub.get(), 6, 10).size(), 1u);
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(Page(kB, {{1, 8}}), &applied));
  EXPECT_EQ(applied, 4);  // 4, 5, 6, 8
  QueryRequest q;
  q.device_id = "dev-a";
  q.limit = 100;
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  EXPECT_EQ(rows.size(), 3u + 4u);  // A's readings 3, 5, 6; B's 1-3, 7
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READONLY));
    int64_t tables = 0;
    ASSERT_OK(db.QueryInt("SELECT count(*) FROM sqlite_master WHERE name IN ('remote', 'region_feed', "
                            "'remote_devices', 'remote_query')",
                            &tables));
    EXPECT_EQ(tables, 0);
  }
}

}  // namespace
}  // namespace edgesync::test

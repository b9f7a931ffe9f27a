// A SQLite hub store's region feed compaction through the store: the feed
// read from every position before, inside and after merged rows gives
// every entry exactly once, as before compaction; queries and the device
// list agree; retention prunes a merged row whole, once all of it is due,
// and readers behind it get an explicit reset; a store of schema 10 opens,
// reads and compacts; the hub's retention pass runs compaction; a damaged
// merged row is refused by name and counted.
#include <map>
#include <tuple>

#include "store/retention.h"
#include "store/schema.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"
#include "tests/support/store_test_util.h"

namespace edgesync::test {
namespace {

Origin GatewayOrigin(int k) { return Origin{"gw-" + std::to_string(k), std::string(32, static_cast<char>('a' + k))}; }

// (seq, origin, origin LSN, value): what a reader of the feed sees.
using Seen = std::tuple<uint64_t, std::string, uint64_t, double>;

class StoreRegionCompactionTest : public StoreTest {
 protected:
  StoreOptions HubOptions() {
    StoreOptions o = Options();
    o.gateway_id = "hub";
    o.compact_after_ms = 60000;
    return o;
  }
  std::unique_ptr<SqliteHubStore> OpenHub(const StoreOptions& o) {
    std::unique_ptr<SqliteHubStore> hub;
    EXPECT_OK(OpenSqliteHubStore(o, &hub));
    return hub;
  }

  // A batch of gateway k (20 entries, what 100 readings/s make): readings
  // whose value names (k, LSN), with a device record now and then.
  void SendBatch(SqliteHubStore* s, int k, int n = 20) {
    std::vector<ChangeEntry> batch;
    for (int i = 0; i < n; ++i) {
      ChangeEntry e;
      e.lsn = ++lsn_[k];
      const std::string device = "g" + std::to_string(k) + "-d" + std::to_string(e.lsn % 3);
      if (e.lsn % 37 == 0) {
        e.kind = ChangeEntry::Kind::kDeviceUpsert;
        e.device = DeviceRecord{device, "name " + std::to_string(e.lsn), "roof", "C", false};
      } else {
        e.reading = MakeReading(device, "temp", 1'790'000'000'000 + static_cast<int64_t>(e.lsn) * 1000,
                                k * 1e6 + static_cast<double>(e.lsn), "C");
      }
      batch.push_back(std::move(e));
    }
    uint64_t hw = 0;
    ASSERT_OK(ApplyOriginBatch(s, GatewayOrigin(k), 0, batch, &hw));
  }

  // Everything after `after`, in pages of `page` entries.
  std::vector<Seen> ReadAll(SqliteHubStore* s, uint64_t after, size_t page, bool* reset = nullptr) {
    std::vector<Seen> all;
    std::vector<RegionFeedEntry> entries;
    uint64_t head = 0;
    bool r = false;
    for (;;) {
      Status st = ReadRegionFeed(s, after, page, &entries, &head, &r);
      EXPECT_OK(st);
      if (!st.ok() || r || entries.empty()) break;
      for (const RegionFeedEntry& e : entries) {
        EXPECT_GT(e.seq, after);
        all.emplace_back(e.seq, e.remote.origin.ToString(), e.remote.origin_lsn,
                         e.remote.entry.kind == ChangeEntry::Kind::kReading ? e.remote.entry.reading.value : -1.0);
      }
      after = entries.back().seq;
    }
    if (reset) *reset = r;
    return all;
  }

  int64_t CountRows(const std::string& where) {
    Db db;
    EXPECT_OK(db.Open(Options().path, SQLITE_OPEN_READONLY));
    int64_t n = -1;
    EXPECT_OK(db.QueryInt("SELECT count(*) FROM region_chunks WHERE " + where, &n));
    return n;
  }

  CompactResult CompactAll(SqliteHubStore* s) {
    CompactResult all;
    for (int i = 0; i < 1000; ++i) {
      CompactResult r;
      EXPECT_OK(s->CompactFeedStep(&r));
      all.Add(r);
      if (!r.more) break;
    }
    return all;
  }

  std::map<int, uint64_t> lsn_;
};

TEST_F(StoreRegionCompactionTest, EveryPositionBeforeInsideAndAfterMergedRowsReadsEachEntryOnce) {
  auto s = OpenHub(HubOptions());
  for (int b = 0; b < 60; ++b) SendBatch(s.get(), b % 4);  // old: merged
  SendBatch(s.get(), 2, 600);  // a large batch (a backlog drained): left, and it closes the run before it
  for (int b = 0; b < 30; ++b) SendBatch(s.get(), b % 4);  // old: merged
  clock_.Advance(120000);
  for (int b = 0; b < 6; ++b) SendBatch(s.get(), b % 3);  // young: left as they are
  const std::vector<Seen> before = ReadAll(s.get(), 0, 1000);
  ASSERT_EQ(before.size(), 96u * 20 + 600);
  QueryRequest q;
  q.device_id = "g1-d1";
  std::vector<QueryRow> rows_before, rows_after;
  ASSERT_OK(s->store()->Query(q, &rows_before));
  std::vector<DeviceSummary> devices_before, devices_after;
  ASSERT_OK(s->store()->ListDevices(&devices_before));

  const CompactResult c = CompactAll(s.get());
  EXPECT_EQ(c.spans, 1) << "the 30 batches after the large one wait: the young rows may still join them";
  EXPECT_EQ(c.readings, 1200);
  EXPECT_LT(c.bytes_after * 2, c.bytes_before);
  EXPECT_EQ(CountRows("origin = 0"), 1);
  EXPECT_EQ(CountRows("origin != 0"), 1 + 30 + 6);
  // Once they are old too, the rest is one run up to the feed's head.
  clock_.Advance(120000);
  EXPECT_EQ(CompactAll(s.get()).readings, 720);
  EXPECT_EQ(CountRows("origin = 0"), 2);
  EXPECT_EQ(CountRows("origin != 0"), 1);

  // Every position, in pages that end inside merged rows and between them.
  for (uint64_t after = 0; after <= before.size(); ++after) {
    const size_t page = after % 7 == 0 || after % 1200 < 3 || after % 1800 < 3 ? 37 : 1000;
    const std::vector<Seen> got = ReadAll(s.get(), after, page);
    ASSERT_EQ(got.size(), before.size() - after) << "from position " << after;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], before[after + i]) << "from position " << after << ", entry " << i;
    }
  }
  // The sharded feed a hub serves: from nothing, and from positions inside.
  HubStore* hub = s.get();
  for (uint64_t start : {uint64_t{0}, uint64_t{333}, uint64_t{1199}, uint64_t{1200}, uint64_t{1900}, uint64_t{2520}}) {
    ShardPositions at{};
    at.fill(start);
    std::map<uint64_t, std::string> seen;
    for (int pages = 0; pages < 1000; ++pages) {
      FeedRead page;
      ASSERT_OK(hub->ReadFeed(at, 50, &page));
      ASSERT_FALSE(page.reset);
      for (const RegionFeedEntry& e : page.entries) {
        ASSERT_TRUE(seen.emplace(e.seq, e.remote.origin.ToString()).second) << "sequence " << e.seq << " twice";
      }
      if (page.next == at) break;
      at = page.next;
    }
    ASSERT_EQ(seen.size(), before.size() - start) << "from " << start;
    for (const auto& [seq, origin] : seen) EXPECT_EQ(origin, std::get<1>(before[seq - 1]));
  }
  ASSERT_OK(s->store()->Query(q, &rows_after));
  ASSERT_EQ(rows_after.size(), rows_before.size());
  ASSERT_GT(rows_after.size(), 10u);
  for (size_t i = 0; i < rows_after.size(); ++i) {
    EXPECT_EQ(rows_after[i].origin, rows_before[i].origin);
    EXPECT_EQ(rows_after[i].lsn, rows_before[i].lsn);
    EXPECT_EQ(rows_after[i].reading.value, rows_before[i].reading.value);
  }
  ASSERT_OK(s->store()->ListDevices(&devices_after));
  ASSERT_EQ(devices_after.size(), devices_before.size());
  for (size_t i = 0; i < devices_after.size(); ++i) {
    EXPECT_EQ(devices_after[i].device_id, devices_before[i].device_id);
    EXPECT_EQ(devices_after[i].origin, devices_before[i].origin);
    EXPECT_EQ(devices_after[i].readings, devices_before[i].readings);
    EXPECT_EQ(devices_after[i].has_record, devices_before[i].has_record);
    EXPECT_EQ(devices_after[i].record.name, devices_before[i].record.name);
  }
  // And after a reopen.
  s.reset();
  s = OpenHub(HubOptions());
  EXPECT_EQ(ReadAll(s.get(), 0, 500), before);
}

TEST_F(StoreRegionCompactionTest, RetentionPrunesAMergedRowWholeOnceAllOfItIsDue) {
  StoreOptions o = HubOptions();
  o.remote_retention_ms = 3'600'000;
  auto s = OpenHub(o);
  for (int b = 0; b < 10; ++b) SendBatch(s.get(), b % 2);
  clock_.Advance(1'800'000);
  for (int b = 0; b < 10; ++b) SendBatch(s.get(), b % 2);
  clock_.Advance(120'000);
  const CompactResult c = CompactAll(s.get());
  ASSERT_EQ(c.spans, 1);
  ASSERT_EQ(c.readings, 400);
  SendBatch(s.get(), 3);  // after the merged row
  const std::vector<Seen> before = ReadAll(s.get(), 0, 1000);
  // The first half is past retention, the second not: the merged row stays.
  clock_.Advance(1'800'000);
  PruneResult p;
  ASSERT_OK(s->store()->Prune(&p));
  EXPECT_EQ(p.remote, 0);
  EXPECT_EQ(ReadAll(s.get(), 0, 1000), before);
  // Now all of it is due (the batch after it not yet): pruned whole, and a
  // reader anywhere inside it is reset.
  clock_.Advance(1'750'000);
  ASSERT_OK(s->store()->Prune(&p));
  EXPECT_EQ(p.remote, 400);
  uint64_t oldest = 0, head = 0;
  ASSERT_OK(RegionFeedBounds(s.get(), &oldest, &head));
  EXPECT_EQ(oldest, 401u);
  EXPECT_EQ(head, 420u);
  for (uint64_t inside : {uint64_t{0}, uint64_t{1}, uint64_t{250}, uint64_t{399}}) {
    bool reset = false;
    EXPECT_TRUE(ReadAll(s.get(), inside, 100, &reset).empty());
    EXPECT_TRUE(reset) << "a reader at " << inside << " must be told it lost entries";
  }
  bool reset = true;
  const std::vector<Seen> rest = ReadAll(s.get(), 400, 100, &reset);
  EXPECT_FALSE(reset);
  ASSERT_EQ(rest.size(), 20u);
  EXPECT_EQ(rest.front(), before[400]);
}

TEST_F(StoreRegionCompactionTest, AStoreOfSchema10OpensReadsAndCompacts) {
  {
    auto s = OpenHub(HubOptions());
    for (int b = 0; b < 12; ++b) SendBatch(s.get(), b % 3);
  }
  // Schema 11 changes no table: a store of 10 is this layout without what
  // 12 and 13 added, with its version, as the build of 10 left it.
  Sql("ALTER TABLE high_water DROP COLUMN priority_1; ALTER TABLE high_water DROP COLUMN priority_2; "
      "ALTER TABLE high_water DROP COLUMN priority_3; DROP TABLE held_spans; PRAGMA user_version=10");
  auto s = OpenHub(HubOptions());
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->store()->schema_version(), kSchemaVersion);
  const std::vector<Seen> before = ReadAll(s.get(), 0, 1000);
  ASSERT_EQ(before.size(), 240u);
  clock_.Advance(120000);
  EXPECT_EQ(CompactAll(s.get()).spans, 1);
  EXPECT_EQ(CountRows("1"), 1);
  EXPECT_EQ(ReadAll(s.get(), 0, 7), before);
}

TEST_F(StoreRegionCompactionTest, TheHubsRetentionPassCompactsTheFeed) {
  auto s = OpenHub(HubOptions());
  for (int b = 0; b < 30; ++b) SendBatch(s.get(), b % 5);
  clock_.Advance(120000);
  const std::vector<Seen> before = ReadAll(s.get(), 0, 1000);
  RetentionOptions ro;
  ro.pause_ms = 0;
  Retention retention(s.get(), ro, &clock_);
  PruneResult pruned;
  CompactResult compacted;
  ASSERT_OK(retention.RunPass(&pruned, &compacted));
  EXPECT_EQ(compacted.spans, 1);
  EXPECT_EQ(compacted.readings, 600);
  EXPECT_EQ(retention.stats().compacted.spans, 1);
  EXPECT_EQ(CountRows("origin != 0"), 0);
  EXPECT_EQ(ReadAll(s.get(), 0, 1000), before);
}

TEST_F(StoreRegionCompactionTest, ADamagedMergedRowIsRefusedByNameAndCounted) {
  auto s = OpenHub(HubOptions());
  for (int b = 0; b < 10; ++b) SendBatch(s.get(), b % 2);
  clock_.Advance(120000);
  ASSERT_EQ(CompactAll(s.get()).spans, 1);
  s.reset();
  Sql("UPDATE region_chunks SET data = substr(data, 1, length(data) - 4) || x'00000000' WHERE seq = 1");
  s = OpenHub(HubOptions());
  std::vector<RegionFeedEntry> entries;
  uint64_t head = 0;
  bool reset = false;
  Status st = ReadRegionFeed(s.get(), 5, 100, &entries, &head, &reset);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("region chunk at sequence 1"), std::string::npos) << st.message();
  StoreStats stats;
  ASSERT_OK(s->store()->Stats(&stats));
  EXPECT_EQ(stats.corrupt_chunks, 1);
  // A merged row's mark and its block must agree.
  s.reset();
  Sql("UPDATE region_chunks SET origin = 1 WHERE seq = 1");
  s = OpenHub(HubOptions());
  st = ReadRegionFeed(s.get(), 0, 100, &entries, &head, &reset);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("a merged block under origin 1"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace edgesync::test

// Opening: creation, identity, refusal of damaged, foreign and newer files
// (without modifying them), forward migration.
#include <sqlite3.h>

#include <algorithm>

#include "platform/files.h"
#include "store/schema.h"
#include "store/sqlite_util.h"
#include "tests/support/store_test_util.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreOpenTest : public StoreTest {
 protected:
  std::string Content(const std::string& path) {
    std::string s;
    EXPECT_OK(ReadFile(path, &s));
    return s;
  }
  Status TryOpen() {
    std::unique_ptr<Store> s;
    return Store::Open(Options(), &s);
  }
  void MakeStoreWithData(int n) {
    auto s = OpenStore();
    AppendResult r;
    for (int i = 0; i < n / 1000; ++i) ASSERT_OK(s->AppendReadings(Batch(1000, 50, i * 1000), &r));
  }
};

TEST_F(StoreOpenTest, CreatesWithEpochAndKeepsItAcrossReopen) {
  std::string epoch;
  {
    auto s = OpenStore();
    ASSERT_TRUE(s);
    epoch = s->origin().epoch;
    EXPECT_EQ(s->origin().gateway_id, "gw1");
    EXPECT_EQ(epoch.size(), 32u);
    EXPECT_EQ(s->schema_version(), kSchemaVersion);
    EXPECT_EQ(s->LastLsn(), 0u);
  }
  auto s = OpenStore();
  EXPECT_EQ(s->origin().epoch, epoch);
}

TEST_F(StoreOpenTest, RecreatedStoreIsANewOrigin) {
  std::string epoch = OpenStore()->origin().epoch;
  ASSERT_EQ(::unlink(Options().path.c_str()), 0);
  EXPECT_NE(OpenStore()->origin().epoch, epoch);
}

TEST_F(StoreOpenTest, MissingFileWithoutCreateIsNotFound) {
  StoreOptions o = Options();
  o.create_if_missing = false;
  std::unique_ptr<Store> s;
  EXPECT_EQ(Store::Open(o, &s).code(), Status::Code::kNotFound);
  EXPECT_FALSE(FileExists(o.path));
}

TEST_F(StoreOpenTest, RefusesGarbageWithoutTouchingIt) {
  std::string garbage(8192, 'x');
  WriteAll(Options().path, garbage);
  Status st = TryOpen();
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("not a SQLite database"), std::string::npos);
  EXPECT_EQ(Content(Options().path), garbage);
}

TEST_F(StoreOpenTest, RefusesEmptyFile) {
  WriteAll(Options().path, "");
  EXPECT_EQ(TryOpen().code(), Status::Code::kCorruption);
  EXPECT_EQ(Content(Options().path), "");
}

TEST_F(StoreOpenTest, RefusesTruncatedFile) {
  MakeStoreWithData(5000);
  std::string full = Content(Options().path);
  ASSERT_GT(full.size(), 8192u);
  std::string cut = full.substr(0, full.size() / 2 + 100);
  WriteAll(Options().path, cut);
  Status st = TryOpen();
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_EQ(Content(Options().path), cut);
  // Cut on a page boundary: the header still says more pages.
  std::string cut2 = full.substr(0, 4096 * 3);
  WriteAll(Options().path, cut2);
  EXPECT_EQ(TryOpen().code(), Status::Code::kCorruption);
  EXPECT_EQ(Content(Options().path), cut2);
}

TEST_F(StoreOpenTest, RefusesCorruptedPage) {
  MakeStoreWithData(400000);  // readings take about a byte each in chunks
  std::string data = Content(Options().path);
  ASSERT_GT(data.size(), 4096u * 20);
  // Damage a b-tree page in the middle of the file (not the header page).
  size_t page = data.size() / 4096 / 2;
  for (size_t i = 0; i < 4096; ++i) data[page * 4096 + i] = static_cast<char>((i * 131 + 7) & 0xff);
  WriteAll(Options().path, data);
  Status st = TryOpen();
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("integrity"), std::string::npos) << st.message();
  EXPECT_EQ(Content(Options().path), data);
}

TEST_F(StoreOpenTest, RefusesNewerSchemaVersionUnchanged) {
  { OpenStore(); }
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE));
    ASSERT_OK(db.Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 5)));
  }
  std::string before = Content(Options().path);
  Status st = TryOpen();
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("newer"), std::string::npos);
  EXPECT_EQ(Content(Options().path), before);
}

TEST_F(StoreOpenTest, RefusesForeignSqliteDatabase) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("CREATE TABLE t(x)"));
  }
  std::string before = Content(Options().path);
  EXPECT_EQ(TryOpen().code(), Status::Code::kCorruption);
  EXPECT_EQ(Content(Options().path), before);
}

TEST_F(StoreOpenTest, RefusesOtherGatewayId) {
  { OpenStore(); }
  StoreOptions o = Options();
  o.gateway_id = "gw2";
  std::unique_ptr<Store> s;
  EXPECT_EQ(Store::Open(o, &s).code(), Status::Code::kInvalidArgument);
  o.gateway_id = "";  // tools that do not know the id get the stored one
  ASSERT_OK(Store::Open(o, &s));
  EXPECT_EQ(s->origin().gateway_id, "gw1");
}

TEST_F(StoreOpenTest, MigratesVersion1Forward) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 1));
    ASSERT_OK(db.Exec("INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
                        "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"));
    int64_t v = 0;
    ASSERT_OK(db.QueryInt("PRAGMA user_version", &v));
    ASSERT_EQ(v, 1);
  }
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  EXPECT_EQ(s->origin().epoch, "00112233445566778899aabbccddeeff");
  // The migrated layout works: a region hub table from version 2.
  Origin o{"gwx", "ffeeddccbbaa99887766554433221100"};
  ChangeEntry e;
  e.lsn = 1;
  e.reading = MakeReading("d", "m", 1, 2);
  uint64_t hw = 0;
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), o, 0, {e}, &hw));
  EXPECT_EQ(hw, 1u);
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10), &r));
  EXPECT_EQ(r.first_lsn, 1u);
  // And leases from version 3 (renewals on the monotonic clock).
  Lease lease;
  ASSERT_OK(s->AcquireLease(1, "consumer", &lease));
  ASSERT_OK(s->RenewLease(lease, &lease));
}

// A version 11 hub store (marks, no held spans) opens: its marks and
// watermarks stay, and from then on it holds a live lane's spans above them.
TEST_F(StoreOpenTest, MigratesAVersion11HubToHeldSpans) {
  const Origin o{"gwx", "ffeeddccbbaa99887766554433221100"};
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 11));
    ASSERT_OK(db.Exec("INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
                      "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"
                      "INSERT INTO origins VALUES(1, 'gwx', 'ffeeddccbbaa99887766554433221100');"
                      "INSERT INTO high_water VALUES(1, 10, 5000, 0);"));
  }
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  ASSERT_NE(hub, nullptr);
  uint64_t hw = 0;
  ASSERT_OK(hub->HighWater(o, &hw));
  EXPECT_EQ(hw, 10u);
  std::vector<ChangeEntry> live(3), backlog(9);
  for (size_t i = 0; i < live.size(); ++i) {
    live[i].lsn = 20 + i;
    live[i].reading = MakeReading("d", "m", static_cast<int64_t>(20 + i), 1);
  }
  for (size_t i = 0; i < backlog.size(); ++i) {
    backlog[i].lsn = 11 + i;
    backlog[i].reading = MakeReading("d", "m", static_cast<int64_t>(11 + i), 1);
  }
  OriginBatch b;
  b.origin = o;
  b.entries = &live;
  b.live = true;
  ApplyResult r;
  ASSERT_OK(hub->Apply(b, &r));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied);
  EXPECT_EQ(r.high_water, 10u);
  EXPECT_EQ(r.held, (std::vector<LsnSpan>{{20, 22}}));
  b.entries = &backlog;
  b.live = false;
  ASSERT_OK(hub->Apply(b, &r));
  EXPECT_EQ(r.high_water, 22u);
  EXPECT_TRUE(r.held.empty());
  EXPECT_EQ(r.complete_through_ms, 5000) << "the watermark kept beside the mark";
}

// A version 12 hub store (marks and held spans, no priority marks) opens:
// its mark, spans and watermark stay, every priority mark starts at 0, and
// from then on it keeps them (a priority batch, then the backlog over it:
// each entry once) and they survive a reopen.
TEST_F(StoreOpenTest, MigratesAVersion12HubToPriorityMarks) {
  const Origin o{"gwx", "ffeeddccbbaa99887766554433221100"};
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 12));
    ASSERT_OK(db.Exec("INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
                      "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"
                      "INSERT INTO origins VALUES(1, 'gwx', 'ffeeddccbbaa99887766554433221100');"
                      "INSERT INTO high_water VALUES(1, 10, 5000, 0);"
                      "INSERT INTO held_spans VALUES(1, 30, 32);"));
  }
  auto entries = [](uint64_t from, uint64_t to, uint32_t only_level, bool every) {
    std::vector<ChangeEntry> v;
    for (uint64_t lsn = from; lsn <= to; ++lsn) {
      const uint32_t level = lsn % 5 == 0 ? 1 : 0;  // 15, 20, 25, ... are alarms
      if (!every && level != only_level) continue;
      ChangeEntry e;
      e.lsn = lsn;
      e.reading = MakeReading("d", "m", static_cast<int64_t>(lsn), 1);
      e.reading.quality = WithPriority(0, level);
      v.push_back(e);
    }
    return v;
  };
  {
    std::unique_ptr<SqliteHubStore> hub;
    ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
    Store* s = hub->store();
    ASSERT_TRUE(s);
    EXPECT_EQ(s->schema_version(), kSchemaVersion);
    ASSERT_NE(hub, nullptr);
    const auto alarms = entries(11, 45, 1, false);  // 15, 20, 25, 35, 40, 45 new; 30 is in the span
    OriginBatch b;
    b.origin = o;
    b.first_lsn = 11;
    b.last_lsn = 45;
    b.entries = &alarms;
    b.priority = 1;
    ApplyResult r;
    ASSERT_OK(hub->Apply(b, &r));
    EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
    EXPECT_EQ(r.applied, 6u);
    EXPECT_EQ(r.high_water, 10u) << "the mark stays";
    EXPECT_EQ(r.held, (std::vector<LsnSpan>{{30, 32}}));
    EXPECT_EQ(r.priority_held, (PriorityMarks{45, 0, 0}));
    EXPECT_EQ(r.complete_through_ms, 5000);
  }
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(Options(), &hub));
  Store* s = hub->store();
  ASSERT_TRUE(s);
  const auto backlog = entries(11, 50, 0, true);
  OriginBatch b;
  b.origin = o;
  b.entries = &backlog;
  ApplyResult r;
  ASSERT_OK(hub->Apply(b, &r));
  EXPECT_EQ(r.outcome, ApplyOutcome::kApplied) << r.detail;
  EXPECT_EQ(r.high_water, 50u);
  EXPECT_TRUE(r.held.empty());
  EXPECT_EQ(r.priority_held, (PriorityMarks{45, 0, 0})) << "kept over the reopen";
  // 40 entries: 3 in the span, 6 alarms at or below 45 held already (50 is new).
  EXPECT_EQ(r.applied, 40u - 3u - 6u);
  FeedRead page;
  ASSERT_OK(hub->ReadFeed(ShardPositions{}, 1000, &page));
  std::vector<uint64_t> lsns;
  for (const RegionFeedEntry& e : page.entries) {
    if (e.remote.origin == o) lsns.push_back(e.remote.origin_lsn);
  }
  std::sort(lsns.begin(), lsns.end());
  std::vector<uint64_t> want;
  for (uint64_t lsn = 11; lsn <= 50; ++lsn) {
    if (lsn < 30 || lsn > 32) want.push_back(lsn);  // the span's entries were never in this feed
  }
  EXPECT_EQ(lsns, want) << "each entry once";
}

// A version 3 store (a row per reading in `log`) moves its readings into
// chunks on open: the same entries at the same LSNs, device records kept,
// write times kept for retention, and the LSN head never goes back.
TEST_F(StoreOpenTest, MigratesVersion3ReadingsIntoChunks) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 3));
    int64_t v = 0;
    ASSERT_OK(db.QueryInt("PRAGMA user_version", &v));
    ASSERT_EQ(v, 3);
    std::string sql =
        "INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
        "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"
        "INSERT INTO series VALUES(1, 'dev-a', 'temp', 'Cel', 1), (2, 'dev-b', 'rh', '', 2), (3, 'dev-a', '', '', 1);"
        "INSERT INTO devices VALUES('dev-a', 'A', 'roof', 'Cel', 0, 6, 5000);"
        "INSERT INTO batches VALUES(1, 1000), (4, 2000), (6, 5000), (7, 7000);"
        "INSERT INTO log VALUES(6, 1, 3, 5000, 0, 0);";
    // LSNs 1-5 and 7-9 are readings (two batches before the device record, one after).
    for (int lsn : {1, 2, 3, 4, 5, 7, 8, 9}) {
      sql += "INSERT INTO log VALUES(" + std::to_string(lsn) + ", 0, " + std::to_string(lsn % 2 + 1) + ", " +
             std::to_string(1780000000000 + lsn * 1000) + ", " + std::to_string(lsn) + ".5, " + std::to_string(lsn % 3) +
             ");";
    }
    sql += "INSERT INTO meta VALUES('high_lsn', 10);";  // LSN 10 was given out and pruned
    ASSERT_OK(db.Exec(sql));
  }
  auto s = OpenStore();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  EXPECT_EQ(s->LastLsn(), 10u);
  std::vector<ChangeEntry> log;
  ASSERT_OK(s->ReadLog(0, 100, &log));
  ASSERT_EQ(log.size(), 9u);
  for (size_t i = 0; i < log.size(); ++i) {
    const ChangeEntry& e = log[i];
    EXPECT_EQ(e.lsn, i + 1);
    if (e.lsn == 6) {
      EXPECT_EQ(e.kind, ChangeEntry::Kind::kDeviceUpsert);
      EXPECT_EQ(e.device.location, "roof");
      continue;
    }
    EXPECT_EQ(e.kind, ChangeEntry::Kind::kReading);
    EXPECT_EQ(e.reading.device_id, e.lsn % 2 ? "dev-b" : "dev-a");
    EXPECT_EQ(e.reading.ts_ms, 1780000000000 + static_cast<int64_t>(e.lsn) * 1000);
    EXPECT_EQ(e.reading.value, static_cast<double>(e.lsn) + 0.5);
    EXPECT_EQ(e.reading.quality, e.lsn % 3);
  }
  // Write times survived: a feed from a time starts at the right batch.
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  FeedStart from;
  from.kind = FeedStart::Kind::kTime;
  from.wall_ms = 1500;
  FeedPage page;
  ASSERT_OK(s->ReadFeed(ranges[0].id, from, 100, &page));
  ASSERT_FALSE(page.entries.empty());
  EXPECT_EQ(page.entries.front().lsn, 4u);
  // New appends continue after the old head.
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(3), &r));
  EXPECT_EQ(r.first_lsn, 11u);
  QueryRequest q;
  q.device_id = "dev-a";
  q.metric = "temp";
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  ASSERT_EQ(rows.size(), 3u);  // LSNs 2, 4 and 8 (the odd ones are dev-b's)
  EXPECT_EQ(rows[2].lsn, 8u);
}

TEST_F(StoreOpenTest, RejectsBadOptions) {
  StoreOptions o = Options();
  o.initial_ranges = 0;
  std::unique_ptr<Store> s;
  EXPECT_EQ(Store::Open(o, &s).code(), Status::Code::kInvalidArgument);
  o = Options();
  o.gateway_id = "a/b";
  EXPECT_EQ(Store::Open(o, &s).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace edgesync::test

// Compaction: series blocks round trip, and everything that reads by LSN,
// by time or prunes sees the same readings before and after a span is
// compacted (store/chunk_compactor.h).
#include <sqlite3.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "platform/files.h"
#include "store/chunk_codec.h"
#include "store/schema.h"
#include "store/sqlite_util.h"
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

constexpr int64_t kDay = 86400LL * 1000;

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(SeriesBlockTest, RoundTripsLsnsTimesAndValuesBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<SeriesPoint> in = {{1, 1780000000000, 21.4, 0},     {9, 1780000001000, 21.5, 0},
                                 {17, 1780000002000, nan, 3},     {18, 1780000002000, 0.1 + 0.2, 0},
                                 {25, 1779999990000, -1013.25, 1}, {INT64_MAX - 1, INT64_MIN, 1e300, UINT32_MAX},
                                 {INT64_MAX, INT64_MAX, -0.0, 0}};
  std::string block;
  EncodeSeriesBlock(in, &block);
  std::vector<SeriesPoint> out;
  Status st = DecodeSeriesBlock(block, 100, &out);
  ASSERT_OK(st);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].lsn, in[i].lsn) << i;
    EXPECT_EQ(out[i].ts_ms, in[i].ts_ms) << i;
    EXPECT_TRUE(SameBits(out[i].value, in[i].value)) << i << ": " << in[i].value << " came back " << out[i].value;
    EXPECT_EQ(out[i].quality, in[i].quality) << i;
  }
}

TEST(SeriesBlockTest, ASensorAtAFixedPeriodTakesUnderTwoBytesAReading) {
  std::vector<SeriesPoint> in;
  for (int i = 0; i < 3600; ++i) {
    in.push_back({1 + i * 8000LL, 1780000000000 + i * 1000LL, 20 + 0.1 * std::round(10 * std::sin(i / 300.0)), 0});
  }
  std::string block;
  EncodeSeriesBlock(in, &block);
  EXPECT_LT(static_cast<double>(block.size()) / in.size(), 2.0) << block.size();
  std::vector<SeriesPoint> out;
  ASSERT_OK(DecodeSeriesBlock(block, in.size(), &out));
  EXPECT_EQ(out.back().lsn, in.back().lsn);
}

TEST(SeriesBlockTest, RefusesDamageWithAClearError) {
  std::vector<SeriesPoint> in = {{5, 1000, 1.5, 0}, {7, 2000, 2.5, 0}};
  std::string block;
  EncodeSeriesBlock(in, &block);
  std::vector<SeriesPoint> out;
  // Too many points for the caller's bound.
  Status st = DecodeSeriesBlock(block, 1, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  // A commit chunk is not a series block.
  std::string chunk;
  EncodeChunk({{1, 1, 1, 0}}, &chunk);
  st = DecodeSeriesBlock(chunk, 100, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("series block: unknown format"), std::string::npos) << st.message();
  // Every truncation and flipped byte: an error, never a crash.
  for (size_t cut = 0; cut < block.size(); ++cut) {
    EXPECT_FALSE(DecodeSeriesBlock(block.substr(0, cut), 100, &out).ok()) << cut;
  }
  for (size_t i = 0; i < block.size(); ++i) {
    std::string bad = block;
    bad[i] ^= 0x5a;
    (void)DecodeSeriesBlock(bad, 100, &out);
  }
  // LSNs that do not grow are damage.
  std::vector<SeriesPoint> same = {{5, 1000, 1.5, 0}, {5, 2000, 2.5, 0}};
  EncodeSeriesBlock(same, &block);
  st = DecodeSeriesBlock(block, 100, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("LSNs not increasing"), std::string::npos) << st.message();
}

// The fuzz target's seeds are what they say they are.
TEST(SeriesBlockTest, FuzzSeedsDecode) {
  const std::string dir = std::string(EDGESYNC_SOURCE_DIR) + "/tests/fuzz/corpus/series_block_fuzz/";
  for (const char* name : {"plain-2-points", "zstd-2-points"}) {
    std::string bytes;
    ASSERT_OK(ReadFile(dir + name, &bytes)) << name;
    std::vector<SeriesPoint> points;
    Status st = DecodeSeriesBlock(bytes, 100, &points);
    ASSERT_OK(st) << name << ": " << st.ToString();
    ASSERT_EQ(points.size(), 2u);
    EXPECT_EQ(points[1].lsn, 7);
    EXPECT_EQ(points[1].ts_ms, 2000);
    EXPECT_EQ(points[1].value, 2.5);
  }
  std::string bytes;
  ASSERT_OK(ReadFile(dir + "wrong-format", &bytes));
  std::vector<SeriesPoint> points;
  EXPECT_EQ(DecodeSeriesBlock(bytes, 100, &points).code(), Status::Code::kCorruption);
  ASSERT_OK(ReadFile(dir + "span-marker", &bytes));
  SpanMarker m;
  ASSERT_OK(DecodeSpanMarker(bytes, &m));
  EXPECT_EQ(m.first_block, 42);
}

TEST(SeriesBlockTest, SpanMarkerRoundTripsAndRefusesDamage) {
  std::string m;
  EncodeSpanMarker(SpanMarker{42, 7}, &m);
  ASSERT_TRUE(IsSpanMarker(m));
  SpanMarker got;
  ASSERT_OK(DecodeSpanMarker(m, &got));
  EXPECT_EQ(got.first_block, 42);
  EXPECT_EQ(got.blocks, 7);
  EXPECT_EQ(DecodeSpanMarker(m.substr(0, 2), &got).code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeSpanMarker(m + "x", &got).code(), Status::Code::kCorruption);
}

class StoreCompactTest : public StoreTest {
 protected:
  StoreOptions CompactOptions() { return CompactingOptions(1000); }
  // Steps until none is due; the spans written.
  int64_t CompactAll(Store* s, CompactResult* total = nullptr) {
    CompactResult sum;
    for (int i = 0; i < 10000; ++i) {
      CompactResult r;
      Status st = s->CompactStep(&r);
      EXPECT_OK(st);
      sum.Add(r);
      if (!st.ok() || r.spans + r.kept == 0) break;
    }
    if (total) *total = sum;
    return sum.spans;
  }
  std::vector<ChangeEntry> Log(Store* s, uint64_t after = 0) {
    std::vector<ChangeEntry> all, page;
    for (;;) {
      EXPECT_OK(s->ReadLog(after, 777, &page));
      if (page.empty()) return all;
      after = page.back().lsn;
      all.insert(all.end(), page.begin(), page.end());
    }
  }
  static void ExpectSame(const std::vector<ChangeEntry>& a, const std::vector<ChangeEntry>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].lsn, b[i].lsn) << i;
      ASSERT_EQ(a[i].kind, b[i].kind) << i;
      ASSERT_EQ(a[i].reading.device_id, b[i].reading.device_id) << i;
      ASSERT_EQ(a[i].reading.metric, b[i].reading.metric) << i;
      ASSERT_EQ(a[i].reading.ts_ms, b[i].reading.ts_ms) << i;
      ASSERT_TRUE(SameBits(a[i].reading.value, b[i].reading.value)) << i;
      ASSERT_EQ(a[i].reading.quality, b[i].reading.quality) << i;
    }
  }
  // 30 commits of 250 readings over 25 devices x 2 metrics, a device record
  // after the 17th (a gap in the readings' LSNs).
  void Fill(Store* s) {
    AppendResult r;
    for (int c = 0; c < 30; ++c) {
      std::vector<Reading> batch;
      for (int i = 0; i < 250; ++i) {
        const int n = c * 250 + i;
        batch.push_back(MakeReading("dev" + std::to_string(n % 25), n % 2 ? "rh" : "temp", 1000 * (n / 50),
                                    n % 7 == 0 ? 0.1 + n : n * 0.25, "C"));
      }
      ASSERT_OK(s->AppendReadings(batch, &r));
      if (c == 16) {
        uint64_t lsn = 0;
        ASSERT_OK(s->UpsertDevice(DeviceRecord{"dev3", "three", "roof", "C", false}, &lsn));
      }
    }
  }
  int64_t Rows(const std::string& table) {
    Db db;
    EXPECT_OK(db.Open(Options().path, SQLITE_OPEN_READONLY));
    int64_t n = -1;
    EXPECT_OK(db.QueryInt("SELECT count(*) FROM " + table, &n));
    return n;
  }
};

TEST_F(StoreCompactTest, CompactsOnlyAcknowledgedOldReadings) {
  auto s = OpenStore(CompactOptions());
  Fill(s.get());
  EXPECT_EQ(CompactAll(s.get()), 0);  // nothing acknowledged
  ASSERT_OK(s->AckUpstream("eu", s->LastLsn()));
  EXPECT_EQ(CompactAll(s.get()), 0);  // acknowledged but young
  clock_.Advance(120000);
  s.reset();
  {
    Db db;  // as if the region had acknowledged only the first 3,000
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE));
    ASSERT_OK(db.Exec("UPDATE acks SET lsn = 3000"));
  }
  s = OpenStore(CompactOptions());
  CompactResult part;
  EXPECT_EQ(CompactAll(s.get(), &part), 3);
  EXPECT_EQ(part.readings, 3000);
  ASSERT_OK(s->AckUpstream("eu", s->LastLsn()));
  CompactResult total;
  // 1 more up to 4,000, one cut by the device record, 3 after it; 250 wait for more.
  EXPECT_EQ(CompactAll(s.get(), &total), 5);
  EXPECT_EQ(total.readings, 4250);
  std::vector<ChangeEntry> log = Log(s.get());
  ASSERT_EQ(log.size(), 7501u);
}

TEST_F(StoreCompactTest, ReadersByLsnSeeTheSameEntriesAfterCompaction) {
  auto s = OpenStore(CompactOptions());
  Fill(s.get());
  const std::vector<ChangeEntry> before = Log(s.get());
  ASSERT_EQ(before.size(), 7501u);
  ASSERT_OK(s->AckUpstream("eu", 6000));
  clock_.Advance(120000);
  CompactResult total;
  const int64_t spans = CompactAll(s.get(), &total);
  // Spans end at the device record (LSN 4251) and at 1000 readings; the
  // readings past the acknowledgement stay in commit chunks.
  EXPECT_GE(spans, 6);
  EXPECT_GE(total.readings, 5000);
  EXPECT_LE(total.readings, 6000);
  EXPECT_GT(total.bytes_after, 0);  // (these 17-reading blocks of odd values are no smaller: bench_storage measures real ones)
  EXPECT_GT(Rows("series_chunks"), 0);
  ExpectSame(Log(s.get()), before);
  // From inside a span, from the device record, from past every span.
  for (uint64_t after : {1u, 999u, 1500u, 4250u, 4251u, 5999u, 6200u}) {
    std::vector<ChangeEntry> tail(before.begin() + static_cast<long>(after), before.end());
    ExpectSame(Log(s.get(), after), tail);
  }
  // The range feed (what leases and `feed --follow` read) sees every reading
  // once across its ranges.
  std::vector<RangeInfo> ranges;
  ASSERT_OK(s->ListRanges(&ranges));
  size_t fed = 0;
  for (const RangeInfo& range : ranges) {
    FeedPage page;
    FeedStart from;
    from.kind = FeedStart::Kind::kBeginning;
    for (;;) {
      ASSERT_OK(s->ReadFeed(range.id, from, 333, &page));
      if (page.entries.empty()) break;
      fed += page.entries.size();
      from.kind = FeedStart::Kind::kToken;
      from.token = page.continuation;
    }
  }
  EXPECT_EQ(fed, before.size());
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.entries, 7501);
  // Reopened (another connection, nothing cached): the same.
  s.reset();
  s = OpenStore(CompactOptions());
  ExpectSame(Log(s.get()), before);
}

TEST_F(StoreCompactTest, QueriesAndDeviceListsAreTheSameAfterCompaction) {
  auto s = OpenStore(CompactOptions());
  Fill(s.get());
  auto query = [&](const std::string& device, const std::string& metric, int64_t from, int64_t to) {
    QueryRequest q;
    q.device_id = device;
    q.metric = metric;
    q.from_ms = from;
    q.to_ms = to;
    q.limit = 100000;
    std::vector<QueryRow> rows;
    EXPECT_OK(s->Query(q, &rows));
    return rows;
  };
  auto before = query("dev4", "temp", 0, INT64_MAX);
  auto window_before = query("dev7", "", 20000, 90000);
  std::vector<DeviceSummary> devices_before;
  ASSERT_OK(s->ListDevices(&devices_before));
  ASSERT_OK(s->AckUpstream("eu", 5000));
  clock_.Advance(120000);
  ASSERT_GT(CompactAll(s.get()), 0);
  auto after = query("dev4", "temp", 0, INT64_MAX);
  ASSERT_EQ(after.size(), before.size());
  ASSERT_GT(after.size(), 100u);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].lsn, before[i].lsn) << i;
    EXPECT_EQ(after[i].reading.ts_ms, before[i].reading.ts_ms) << i;
    EXPECT_TRUE(SameBits(after[i].reading.value, before[i].reading.value)) << i;
    EXPECT_TRUE(after[i].local);
  }
  auto window_after = query("dev7", "", 20000, 90000);
  ASSERT_EQ(window_after.size(), window_before.size());
  for (size_t i = 0; i < window_after.size(); ++i) EXPECT_EQ(window_after[i].lsn, window_before[i].lsn) << i;
  std::vector<DeviceSummary> devices_after;
  ASSERT_OK(s->ListDevices(&devices_after));
  ASSERT_EQ(devices_after.size(), devices_before.size());
  for (size_t i = 0; i < devices_after.size(); ++i) {
    EXPECT_EQ(devices_after[i].readings, devices_before[i].readings) << devices_after[i].device_id;
    EXPECT_EQ(devices_after[i].first_ts_ms, devices_before[i].first_ts_ms);
    EXPECT_EQ(devices_after[i].last_ts_ms, devices_before[i].last_ts_ms);
  }
  // Our own readings coming back through a region feed stay one row each.
  ChangeEntry echo;
  echo.lsn = before[3].lsn;
  echo.reading = before[3].reading;
  int64_t applied = 0;
  RemoteEntry re;
  re.origin = s->origin();
  re.origin_lsn = echo.lsn;
  re.entry = echo;
  ASSERT_OK(s->ApplyRemote({re}, &applied));
  EXPECT_EQ(query("dev4", "temp", 0, INT64_MAX).size(), before.size());
}

TEST_F(StoreCompactTest, RetentionPrunesWholeSpansAndTheirBlocks) {
  auto s = OpenStore(CompactOptions());
  Fill(s.get());
  ASSERT_OK(s->AckUpstream("eu", s->LastLsn()));
  clock_.Advance(120000);
  ASSERT_GT(CompactAll(s.get()), 0);
  const int64_t blocks = Rows("series_chunks");
  ASSERT_GT(blocks, 0);
  // A step smaller than a span still takes one whole span.
  clock_.Advance(8 * kDay);
  PruneResult p;
  ASSERT_OK(s->PruneStep(10, &p));
  EXPECT_EQ(p.readings, 1000);
  EXPECT_TRUE(p.more);
  EXPECT_LT(Rows("series_chunks"), blocks);
  std::vector<ChangeEntry> log = Log(s.get());
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front().lsn, 1001u);
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(Rows("series_chunks"), 0);
  log = Log(s.get());
  ASSERT_EQ(log.size(), 1u);  // the device record
  EXPECT_EQ(log[0].kind, ChangeEntry::Kind::kDeviceUpsert);
  // New readings go on at the next LSN and compact again.
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(1500), &r));
  EXPECT_EQ(r.first_lsn, 7502u);
  ASSERT_OK(s->AckUpstream("eu", r.last_lsn));
  clock_.Advance(120000);
  EXPECT_EQ(CompactAll(s.get()), 1);  // one commit above the span size: a span of its own
  ASSERT_OK(s->AppendReadings(Batch(10), &r));
  ASSERT_OK(s->AckUpstream("eu", r.last_lsn));
  clock_.Advance(120000);
  EXPECT_EQ(CompactAll(s.get()), 0);  // 10 readings: the span waits to fill
  EXPECT_EQ(Log(s.get()).size(), 1511u);
}

TEST_F(StoreCompactTest, AppendsAtTheSizeLimitPruneAWholeAcknowledgedSpan) {
  StoreOptions o = CompactOptions();
  auto s = OpenStore(o);
  Fill(s.get());
  ASSERT_OK(s->AckUpstream("eu", 5000));
  clock_.Advance(120000);
  ASSERT_GT(CompactAll(s.get()), 0);
  s.reset();
  int64_t pages = 0, free_pages = 0, page_size = 0;
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READONLY));
    ASSERT_OK(db.QueryInt("PRAGMA page_count", &pages));
    ASSERT_OK(db.QueryInt("PRAGMA freelist_count", &free_pages));
    ASSERT_OK(db.QueryInt("PRAGMA page_size", &page_size));
  }
  o.max_bytes = (pages - free_pages) * page_size - 1024;  // a few hundred readings must go first
  o.min_free_bytes = 0;
  s = OpenStore(o);
  AppendResult r;
  Status st = s->AppendReadings(Batch(10), &r);
  ASSERT_OK(st);
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.dropped_oldest, 0);  // only acknowledged readings went
  std::vector<ChangeEntry> log = Log(s.get());
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.front().lsn, 1001u);  // the first span, whole
  EXPECT_EQ(log.back().lsn, r.last_lsn);
}

TEST_F(StoreCompactTest, ASpanOfManySeriesStaysInCommitChunksAndStaysReadable) {
  StoreOptions o = CompactOptions();
  o.compact_only_smaller = true;
  auto s = OpenStore(o);
  // 2 commits of 500 readings, each reading its own series: as blocks of
  // one reading each the span would take more room, not less.
  AppendResult r;
  for (int c = 0; c < 2; ++c) {
    std::vector<Reading> batch;
    for (int i = 0; i < 500; ++i) {
      batch.push_back(MakeReading("dev" + std::to_string(c * 500 + i), "temp", 1000, 20.5 + i, "C"));
    }
    ASSERT_OK(s->AppendReadings(batch, &r));
  }
  ASSERT_OK(s->AckUpstream("eu", s->LastLsn()));
  clock_.Advance(120000);
  const std::vector<ChangeEntry> before = Log(s.get());
  CompactResult total;
  EXPECT_EQ(CompactAll(s.get(), &total), 0);
  EXPECT_EQ(total.kept, 1);
  EXPECT_EQ(total.kept_readings, 1000);
  EXPECT_EQ(Rows("series_chunks"), 0);
  EXPECT_EQ(Rows("chunks"), 2);
  // Moved past: the next step does not look at it again.
  CompactResult again;
  ASSERT_OK(s->CompactStep(&again));
  EXPECT_EQ(again.kept + again.spans, 0);
  ExpectSame(before, Log(s.get()));
  QueryRequest q;
  q.device_id = "dev777";
  q.metric = "temp";
  q.from_ms = 0;
  q.to_ms = 10000;
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].reading.value, 20.5 + 277);
  // Retention takes the kept chunks as chunks.
  clock_.Advance(8 * kDay);
  PruneResult p;
  ASSERT_OK(s->Prune(&p));
  EXPECT_EQ(p.readings, 1000);
  EXPECT_TRUE(Log(s.get()).empty());
}

TEST_F(StoreCompactTest, DamagedSeriesBlockIsRefusedWithAClearError) {
  auto s = OpenStore(CompactOptions());
  Fill(s.get());
  ASSERT_OK(s->AckUpstream("eu", 2000));
  clock_.Advance(120000);
  ASSERT_GT(CompactAll(s.get()), 0);
  s.reset();
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE));
    ASSERT_OK(db.Exec("UPDATE series_chunks SET data = x'03ff01' WHERE id = (SELECT min(id) FROM series_chunks)"));
  }
  s = OpenStore(CompactOptions());
  std::vector<ChangeEntry> page;
  Status st = s->ReadLog(0, 10, &page);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("span at LSN 1"), std::string::npos) << st.message();
  // Past the damaged span the log still reads.
  ASSERT_OK(s->ReadLog(2000, 10, &page));
  ASSERT_EQ(page.size(), 10u);
  EXPECT_EQ(page[0].lsn, 2001u);
}

TEST_F(StoreCompactTest, MigratesVersion4AndCompactsItsChunks) {
  {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db.Exec("PRAGMA journal_mode=WAL"));
    ASSERT_OK(CreateSchema(&db, 4));
    ASSERT_OK(db.Exec("INSERT INTO meta VALUES('epoch','00112233445566778899aabbccddeeff'),('gateway_id','gw1');"
                        "INSERT INTO ranges VALUES(1, -9223372036854775808, 9223372036854775807, 0, 1, 0, 0);"
                        "INSERT INTO series VALUES(1, 'dev-a', 'temp', 'Cel', 1), (2, 'dev-b', 'rh', '', 2);"));
    Stmt ins;
    ASSERT_OK(ins.Prepare(&db, kInsertChunkSql));
    std::string block;
    for (int c = 0; c < 3; ++c) {
      std::vector<ChunkReading> readings;
      for (int i = 0; i < 500; ++i) readings.push_back({i % 2 + 1, 1780000000000 + (c * 500 + i) * 500, i * 0.5, 0});
      ASSERT_OK(InsertChunkRow(&ins, readings, 1 + c * 500, 1'700'000'000'000, &block));
    }
  }
  auto s = OpenStore(CompactOptions());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  const std::vector<ChangeEntry> before = Log(s.get());
  ASSERT_EQ(before.size(), 1500u);
  ASSERT_OK(s->AckUpstream("eu", 1500));
  EXPECT_EQ(CompactAll(s.get()), 1);  // 1,000 readings; the last 500 wait for more
  ExpectSame(Log(s.get()), before);
}

}  // namespace
}  // namespace edgesync::test

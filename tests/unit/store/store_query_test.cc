// The union query against a reference: local readings in compacted spans
// and commit chunks, the read view, a hub's region chunks and our own
// entries coming back, every window, limit and direction; the read view
// read by the origins that wrote a device (schema 7), and version 6 stores
// migrated to it.
#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "store/schema.h"
#include "tests/support/store_test_util.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

struct Expected {
  Origin origin;
  uint64_t lsn = 0;
  bool local = false;
  Reading reading;
};

class StoreQueryTest : public StoreTest {
 protected:
  StoreOptions QueryOptions() { return CompactingOptions(500); }

  // Everything the store holds, one entry per (origin, LSN): local rows
  // first, so an entry coming back through a feed stays the local row.
  void Hold(const Expected& e) {
    held_.emplace(std::make_pair(e.origin.ToString(), e.lsn), e);
  }

  // The reference answer: filter, order by (time, gateway id, epoch, LSN),
  // newest first reversed, cut at the limit.
  std::vector<Expected> Reference(const QueryRequest& q) const {
    std::vector<Expected> out;
    for (const auto& [key, e] : held_) {
      if (e.reading.device_id != q.device_id || (!q.metric.empty() && e.reading.metric != q.metric)) continue;
      if (e.reading.ts_ms < q.from_ms || e.reading.ts_ms >= q.to_ms) continue;
      out.push_back(e);
    }
    auto key = [](const Expected& e) {
      return std::tie(e.reading.ts_ms, e.origin.gateway_id, e.origin.epoch, e.lsn);
    };
    std::sort(out.begin(), out.end(), [&](const Expected& a, const Expected& b) { return key(a) < key(b); });
    if (q.newest_first) std::reverse(out.begin(), out.end());
    if (static_cast<int64_t>(out.size()) > q.limit) out.resize(static_cast<size_t>(q.limit));
    return out;
  }

  // A read-view page of one origin: `devices` devices named prefix0.., one
  // reading each per second over [0, seconds).
  static std::vector<RemoteEntry> ViewPage(const Origin& o, const std::string& prefix, int devices, int seconds) {
    std::vector<RemoteEntry> v;
    uint64_t lsn = 0;
    for (int t = 0; t < seconds; ++t) {
      for (int d = 0; d < devices; ++d) {
        ChangeEntry e;
        e.lsn = ++lsn;
        e.reading = MakeReading(prefix + std::to_string(d), "temp", 1000 * t, t + 0.5 * d, "C");
        v.push_back(RemoteEntry{o, lsn, e});
      }
    }
    return v;
  }

  std::vector<QueryRow> QueryAll(Store* s, const std::string& device, Status* st) {
    QueryRequest q;
    q.device_id = device;
    q.limit = 100000;
    std::vector<QueryRow> rows;
    *st = s->Query(q, &rows);
    return rows;
  }

  std::map<std::pair<std::string, uint64_t>, Expected> held_;
};

const Origin kGwB{"gw-b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"};
const Origin kGwBOld{"gw-b", "0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};  // the same gateway, an older store
const Origin kGwA{"gw-a", "cccccccccccccccccccccccccccccccc"};    // sorts before gw1 and gw-b on time ties

TEST_F(StoreQueryTest, AnswersAsTheReferenceUnionForEveryWindowLimitAndDirection) {
  std::unique_ptr<SqliteHubStore> hub;
  ASSERT_OK(OpenSqliteHubStore(QueryOptions(), &hub));
  Store* s = hub->store();
  std::mt19937 rng(7);
  const std::vector<std::string> devices = {"d0", "d1", "d2"};
  const std::vector<std::string> metrics = {"temp", "rh"};
  // Timestamps on a coarse grid so rows of different origins tie in time;
  // every reading a distinct value, to tell rows apart.
  auto ts = [&] { return int64_t{1000} * static_cast<int64_t>(rng() % 400); };
  double value = 0.5;
  AppendResult r;
  for (int c = 0; c < 12; ++c) {
    std::vector<Reading> batch;
    for (int i = 0; i < 200; ++i) {
      Reading x = MakeReading(devices[rng() % 3], metrics[rng() % 2], ts(), value += 1.25, "C");
      x.quality = rng() % 4;
      batch.push_back(x);
    }
    ASSERT_OK(s->AppendReadings(batch, &r));
    for (size_t i = 0; i < batch.size(); ++i) Hold(Expected{s->origin(), r.first_lsn + i, true, batch[i]});
  }
  // The older half compacted into spans, the rest left in commit chunks.
  ASSERT_OK(s->AckUpstream("eu", 1200));
  clock_.Advance(120000);
  int64_t spans = 0;
  for (int i = 0; i < 100; ++i) {
    CompactResult cr;
    ASSERT_OK(s->CompactStep(&cr));
    spans += cr.spans;
    if (cr.spans + cr.kept == 0) break;
  }
  ASSERT_GE(spans, 2);
  // The read view: two other gateways (one in two epochs), and our own
  // entries coming back through a feed: some the store holds (one row
  // each), one it no longer holds locally (a row of our origin, not local).
  std::vector<RemoteEntry> view;
  auto remote = [&](const Origin& o, uint64_t lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = MakeReading(devices[rng() % 3], metrics[rng() % 2], ts(), value += 1.25, "C");
    e.reading.quality = rng() % 4;
    view.push_back(RemoteEntry{o, lsn, e});
  };
  for (uint64_t lsn = 1; lsn <= 300; ++lsn) {
    remote(kGwB, lsn);
    remote(kGwA, lsn * 2);
  }
  for (uint64_t lsn = 5; lsn <= 80; ++lsn) remote(kGwBOld, lsn);
  for (uint64_t lsn : {3u, 700u, 1900u}) {
    const Expected& mine = held_.at({s->origin().ToString(), lsn});
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = mine.reading;
    view.push_back(RemoteEntry{s->origin(), lsn, e});
  }
  ChangeEntry gone;
  gone.lsn = 50000;
  gone.reading = MakeReading("d1", "temp", 77000, -3.5, "C");
  view.push_back(RemoteEntry{s->origin(), gone.lsn, gone});
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(view, &applied));
  for (const RemoteEntry& e : view) Hold(Expected{e.origin, e.origin_lsn, false, e.entry.reading});
  // The same store as a hub: gw-b's first batch again (one row each) and
  // more of gw-b in region chunks only.
  std::vector<ChangeEntry> batch;
  for (const RemoteEntry& e : view) {
    if (e.origin == kGwB) batch.push_back(e.entry);
  }
  for (uint64_t lsn = 301; lsn <= 340; ++lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = MakeReading(devices[rng() % 3], "temp", ts(), value += 1.25, "C");
    batch.push_back(e);
    Hold(Expected{kGwB, lsn, false, e.reading});
  }
  uint64_t high_water = 0;
  ASSERT_OK(test::ApplyOriginBatch(hub.get(), kGwB, 0, batch, &high_water));
  ASSERT_EQ(high_water, 340u);

  int checked = 0;
  for (const std::string& device : devices) {
    for (const std::string metric : {"", "temp", "rh"}) {
      for (auto [from, to] : {std::pair<int64_t, int64_t>{INT64_MIN, INT64_MAX}, {50000, 250000}, {77000, 78000}}) {
        for (int64_t limit : {1, 7, 40, 100000}) {
          for (bool newest_first : {false, true}) {
            QueryRequest q;
            q.device_id = device;
            q.metric = metric;
            q.from_ms = from;
            q.to_ms = to;
            q.limit = limit;
            q.newest_first = newest_first;
            std::vector<QueryRow> rows;
            ASSERT_OK(s->Query(q, &rows));
            const std::vector<Expected> want = Reference(q);
            const std::string what = device + "/" + metric + " [" + std::to_string(from) + ", " +
                                     std::to_string(to) + ") limit " + std::to_string(limit) +
                                     (newest_first ? " newest first" : "");
            ASSERT_EQ(rows.size(), want.size()) << what;
            for (size_t i = 0; i < rows.size(); ++i) {
              ASSERT_EQ(rows[i].origin, want[i].origin) << what << " row " << i;
              ASSERT_EQ(rows[i].lsn, want[i].lsn) << what << " row " << i;
              ASSERT_EQ(rows[i].local, want[i].local) << what << " row " << i;
              ASSERT_EQ(rows[i].reading.device_id, device) << what << " row " << i;
              ASSERT_EQ(rows[i].reading.metric, want[i].reading.metric) << what << " row " << i;
              ASSERT_EQ(rows[i].reading.unit, "C") << what << " row " << i;
              ASSERT_EQ(rows[i].reading.ts_ms, want[i].reading.ts_ms) << what << " row " << i;
              ASSERT_EQ(rows[i].reading.value, want[i].reading.value) << what << " row " << i;
              ASSERT_EQ(rows[i].reading.quality, want[i].reading.quality) << what << " row " << i;
            }
            checked += static_cast<int>(rows.size());
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
  // The own entry the store no longer holds is a row of its origin, not local.
  QueryRequest q;
  q.device_id = "d1";
  q.metric = "temp";
  q.from_ms = 77000;
  q.to_ms = 77001;
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  auto it = std::find_if(rows.begin(), rows.end(), [](const QueryRow& x) { return x.lsn == 50000; });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->origin, s->origin());
  EXPECT_FALSE(it->local);
}

// A device's query decodes the read-view chunks of the origins that wrote
// it, not every chunk of its window: another origin's chunks, however
// damaged, are never read for it.
TEST_F(StoreQueryTest, ReadsOnlyTheReadViewChunksOfTheOriginsThatWroteTheDevice) {
  {
    auto s = OpenStore();
    int64_t applied = 0;
    ASSERT_OK(s->ApplyRemote(ViewPage(kGwA, "a", 3, 100), &applied));
    ASSERT_OK(s->ApplyRemote(ViewPage(kGwB, "b", 3, 100), &applied));
    ASSERT_OK(s->ApplyRemote(ViewPage(kGwBOld, "a", 1, 10), &applied));  // a0 moved between gateways
  }
  Sql("UPDATE view_chunks SET data = x'01ff' WHERE origin = (SELECT id FROM origins WHERE gateway_id = 'gw-b' AND "
      "epoch LIKE 'b%')");
  auto s = OpenStore();
  Status st;
  std::vector<QueryRow> rows = QueryAll(s.get(), "a1", &st);
  ASSERT_OK(st);
  ASSERT_EQ(rows.size(), 100u);
  EXPECT_EQ(rows[0].origin, kGwA);
  EXPECT_EQ(rows[99].reading.ts_ms, 99000);
  rows = QueryAll(s.get(), "a0", &st);
  ASSERT_OK(st);
  ASSERT_EQ(rows.size(), 110u);  // both origins that wrote it
  EXPECT_EQ(rows[0].origin, kGwA);  // time ties: gw-a before gw-b
  EXPECT_EQ(rows[1].origin, kGwBOld);
  QueryAll(s.get(), "b1", &st);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("read view chunk"), std::string::npos) << st.ToString();
}

// A version 6 store learns which origins wrote which series from the
// chunks it holds; queries answer the same after the migration.
TEST_F(StoreQueryTest, MigratesVersion6ReadViewsToSeriesByOrigin) {
  {
    auto s = OpenStore();
    int64_t applied = 0;
    ASSERT_OK(s->ApplyRemote(ViewPage(kGwA, "a", 3, 50), &applied));
    ASSERT_OK(s->ApplyRemote(ViewPage(kGwB, "b", 2, 50), &applied));
    AppendResult r;
    ASSERT_OK(s->AppendReadings({MakeReading("a1", "temp", 500, 1, "C")}, &r));
  }
  // Back to the version 6 layout: without what versions 7 to 13 added.
  Sql("ALTER TABLE high_water DROP COLUMN priority_1; ALTER TABLE high_water DROP COLUMN priority_2; "
      "ALTER TABLE high_water DROP COLUMN priority_3; DROP TABLE held_spans; DROP TABLE origin_time_corrections; DROP TABLE clock_periods; DROP TABLE view_series; DROP INDEX view_chunks_origin_time; "
      "CREATE INDEX view_chunks_time ON view_chunks(max_ts, min_ts); ALTER TABLE high_water DROP COLUMN complete_ms; "
      "ALTER TABLE high_water DROP COLUMN complete_seq; DROP TABLE view_watermarks; PRAGMA user_version=6;");
  auto s = OpenStore();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->schema_version(), kSchemaVersion);
  Status st;
  std::vector<QueryRow> rows = QueryAll(s.get(), "a1", &st);
  ASSERT_OK(st);
  ASSERT_EQ(rows.size(), 51u);
  EXPECT_EQ(std::count_if(rows.begin(), rows.end(), [](const QueryRow& x) { return x.local; }), 1);
  rows = QueryAll(s.get(), "b1", &st);
  ASSERT_OK(st);
  ASSERT_EQ(rows.size(), 50u);
  EXPECT_EQ(rows[0].origin, kGwB);
  // New pages after the migration join the same way.
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote(ViewPage(kGwBOld, "b", 2, 60), &applied));
  EXPECT_EQ(applied, 120);
  rows = QueryAll(s.get(), "b1", &st);
  ASSERT_OK(st);
  EXPECT_EQ(rows.size(), 110u);
}

TEST_F(StoreQueryTest, AnUnknownDeviceOrAnEmptyWindowAnswersNothing) {
  auto s = OpenStore(QueryOptions());
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(50, 5), &r));
  QueryRequest q;
  q.device_id = "nobody";
  std::vector<QueryRow> rows{QueryRow{}};
  ASSERT_OK(s->Query(q, &rows));
  EXPECT_TRUE(rows.empty());
  q.device_id = "dev1";
  q.from_ms = 2000;
  q.to_ms = 2000;
  ASSERT_OK(s->Query(q, &rows));
  EXPECT_TRUE(rows.empty());
  q.from_ms = INT64_MIN;
  q.to_ms = INT64_MAX;
  ASSERT_OK(s->Query(q, &rows));
  EXPECT_EQ(rows.size(), 10u);
}

}  // namespace
}  // namespace edgesync::test

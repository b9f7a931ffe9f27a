// A gateway's read view tables (store/read_view_tables.h) on a real SQLite
// file of the store's schema, driven directly: each origin's entries of a
// page become chunks of that origin, an entry already held (a page read
// again, an overlapping page, a repeat within one) is skipped, long runs
// split at the chunk bound, the series each origin wrote are recorded also
// after a rolled-back attempt, watermarks only rise, and a damaged chunk in
// the way fails the apply with Corruption.
#include "store/read_view_tables.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "store/origin_catalog.h"
#include "store/remote_chunk_codec.h"
#include "store/remote_rows.h"
#include "store/schema.h"
#include "store/series_catalog.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

const Origin kA{"gw-a", "0123456789abcdef0123456789abcdef"};
const Origin kB{"gw-b", "fedcba9876543210fedcba9876543210"};
const Origin kSelf{"gw-self", "00000000000000000000000000000001"};
constexpr int64_t kNow = 1780000000000;

RemoteEntry Entry(const Origin& o, uint64_t lsn, const std::string& device = "dev-1",
                    const std::string& metric = "temp") {
  RemoteEntry r;
  r.origin = o;
  r.origin_lsn = lsn;
  r.entry.lsn = lsn;
  r.entry.reading = edgesync::Reading{device, metric, 1000 + static_cast<int64_t>(lsn), lsn * 0.5, "C", 0};
  return r;
}

class ReadViewTablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK(db_.Open(dir_.File("view.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(CreateSchema(&db_, kSchemaVersion));
    ASSERT_OK(series_.Open(&db_, &index_));
    ASSERT_OK(origin_stmts_.Prepare(&db_, true));
    ASSERT_OK(view_.Open(&db_, &series_, &origins_, &origin_stmts_, &rows_));
  }

  // One page applied in its own transaction, as the store's writer does.
  int64_t Apply(const std::vector<RemoteEntry>& page) {
    Txn txn(&db_);
    EXPECT_OK(txn.Begin());
    int64_t added = 0;
    Status st = view_.Apply(page, kNow, &added);
    EXPECT_OK(st);
    if (!st.ok()) {
      Abandon(&txn);
      return -1;
    }
    EXPECT_OK(txn.Commit());
    series_.Commit();
    view_.Committed();
    return added;
  }
  void Abandon(Txn* txn) {
    txn->Rollback();
    series_.Rollback();
    origins_.Forget();
    view_.RolledBack();
  }

  int64_t Count(const std::string& sql) {
    int64_t n = -1;
    EXPECT_OK(db_.QueryInt(sql, &n));
    return n;
  }
  int64_t OriginId(const Origin& o) {
    int64_t id = 0;
    EXPECT_OK(origins_.Find(o, &origin_stmts_, false, &id));
    return id;
  }
  // The origin LSNs of each of the origin's chunks, in row order.
  std::vector<std::vector<uint64_t>> Chunks(const Origin& o) {
    std::vector<std::vector<uint64_t>> out;
    Stmt q;
    EXPECT_OK(q.Prepare(&db_, "SELECT data, n, first_olsn, last_olsn FROM view_chunks WHERE origin = ? ORDER BY id"));
    q.Bind(1, OriginId(o));
    Status st;
    while (q.Step(&st)) {
      std::vector<RemoteChunkEntry> entries;
      EXPECT_OK(DecodeRemoteChunk(q.Blob(0), kMaxRemoteChunkEntries, &entries));
      EXPECT_EQ(q.Int(1), static_cast<int64_t>(entries.size()));
      std::vector<uint64_t> lsns;
      for (const auto& e : entries) lsns.push_back(e.olsn);
      if (!lsns.empty()) {
        EXPECT_EQ(q.Int(2), static_cast<int64_t>(lsns.front()));
        EXPECT_EQ(q.Int(3), static_cast<int64_t>(lsns.back()));
      }
      out.push_back(lsns);
    }
    EXPECT_OK(st);
    return out;
  }

  TempDir dir_;
  Db db_;
  SeriesIndex index_;
  SeriesWriter series_;
  OriginCatalog origins_;
  OriginCatalog::Statements origin_stmts_;
  RemoteRows rows_;
  ReadViewTables view_;
};

TEST_F(ReadViewTablesTest, EachOriginsEntriesOfAPageBecomeOneChunkOfIt) {
  EXPECT_EQ(Apply({Entry(kA, 1), Entry(kB, 1), Entry(kA, 2), Entry(kB, 2), Entry(kA, 3)}), 5);
  EXPECT_EQ(Chunks(kA), (std::vector<std::vector<uint64_t>>{{1, 2, 3}}));
  EXPECT_EQ(Chunks(kB), (std::vector<std::vector<uint64_t>>{{1, 2}}));
  EXPECT_EQ(Count("SELECT count(*) FROM view_chunks"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM view_chunks WHERE at = " + std::to_string(kNow)), 2);
  // Out of order within a page: the chunk holds them ascending.
  EXPECT_EQ(Apply({Entry(kA, 6), Entry(kA, 4), Entry(kA, 5)}), 3);
  EXPECT_EQ(Chunks(kA), (std::vector<std::vector<uint64_t>>{{1, 2, 3}, {4, 5, 6}}));
}

TEST_F(ReadViewTablesTest, WhatTheViewHoldsIsSkippedWhateverTheFeedRepeats) {
  ASSERT_EQ(Apply({Entry(kA, 1), Entry(kA, 2), Entry(kA, 3)}), 3);
  EXPECT_EQ(Apply({Entry(kA, 1), Entry(kA, 2), Entry(kA, 3)}), 0) << "a page read again";
  EXPECT_EQ(Count("SELECT count(*) FROM view_chunks"), 1);
  EXPECT_EQ(Apply({Entry(kA, 2), Entry(kA, 3), Entry(kA, 4), Entry(kA, 5)}), 2) << "an overlapping page";
  EXPECT_EQ(Apply({Entry(kA, 7), Entry(kA, 7), Entry(kA, 6)}), 2) << "a repeat within a page";
  EXPECT_EQ(Chunks(kA), (std::vector<std::vector<uint64_t>>{{1, 2, 3}, {4, 5}, {6, 7}}));
  // Another origin's LSNs are its own.
  EXPECT_EQ(Apply({Entry(kB, 1), Entry(kB, 2)}), 2);
}

TEST_F(ReadViewTablesTest, ALongRunIsSplitAtTheChunkBound) {
  std::vector<RemoteEntry> page;
  const uint64_t n = kMaxRemoteChunkEntries + 10;
  for (uint64_t lsn = 1; lsn <= n; ++lsn) page.push_back(Entry(kA, lsn));
  EXPECT_EQ(Apply(page), static_cast<int64_t>(n));
  auto chunks = Chunks(kA);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].size(), kMaxRemoteChunkEntries);
  EXPECT_EQ(chunks[0].front(), 1u);
  EXPECT_EQ(chunks[1].size(), 10u);
  EXPECT_EQ(chunks[1].back(), n);
}

TEST_F(ReadViewTablesTest, TheSeriesEachOriginWroteAreRecordedOnce) {
  RemoteEntry device;
  device.origin = kA;
  device.origin_lsn = device.entry.lsn = 10;
  device.entry.kind = ChangeEntry::Kind::kDeviceUpsert;
  device.entry.device = DeviceRecord{"dev-9", "pump", "roof", "bar", false};
  ASSERT_EQ(Apply({Entry(kA, 1), Entry(kA, 2), Entry(kA, 3, "dev-1", "hum"), Entry(kB, 1), device}), 5);
  // (temp, A), (hum, A), (temp, B); a device record is no series of readings.
  EXPECT_EQ(Count("SELECT count(*) FROM view_series"), 3);
  ASSERT_EQ(Apply({Entry(kA, 4), Entry(kB, 2)}), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM view_series"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM view_series WHERE origin = " + std::to_string(OriginId(kB))), 1);
}

// A page whose transaction rolls back leaves nothing remembered: applied
// again, its series pairs are written (a pair remembered from the rolled
// back attempt would be skipped and the query would never read its chunks).
TEST_F(ReadViewTablesTest, ARolledBackPageIsAppliedWholeTheNextTime) {
  ASSERT_EQ(Apply({Entry(kA, 1)}), 1);
  const std::vector<RemoteEntry> page = {Entry(kA, 2, "dev-2"), Entry(kB, 1, "dev-1")};
  {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    int64_t added = 0;
    ASSERT_OK(view_.Apply(page, kNow, &added));
    EXPECT_EQ(added, 2);
    Abandon(&txn);
  }
  EXPECT_EQ(Count("SELECT count(*) FROM view_series"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM view_chunks"), 1);
  EXPECT_EQ(Apply(page), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM view_series"), 3);
  EXPECT_EQ(Chunks(kB), (std::vector<std::vector<uint64_t>>{{1}}));
}

TEST_F(ReadViewTablesTest, AnOriginsTimeCorrectionIsKeptBesideItsReadings) {
  RemoteEntry c;
  c.origin = kA;
  c.origin_lsn = c.entry.lsn = 2;
  c.entry.kind = ChangeEntry::Kind::kTimeCorrection;
  c.entry.correction = TimeCorrection{1, 3600000, 1000, 5000};
  ASSERT_EQ(Apply({Entry(kA, 1), c, Entry(kA, 3)}), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM origin_time_corrections WHERE origin = " + std::to_string(OriginId(kA)) +
                  " AND period = 1 AND delta_ms = 3600000"),
            1);
  EXPECT_EQ(Chunks(kA), (std::vector<std::vector<uint64_t>>{{1, 2, 3}}));
}

TEST_F(ReadViewTablesTest, WatermarksOnlyRiseAndTheStoresOwnIsSkipped) {
  auto keep = [&](const std::vector<OriginWatermark>& w) {
    Txn txn(&db_);
    ASSERT_OK(txn.Begin());
    ASSERT_OK(view_.KeepWatermarks(w, kSelf));
    ASSERT_OK(txn.Commit());
  };
  keep({{kA, 5000, 0}, {kB, 7000, 0}, {kSelf, 9000, 0}});
  auto mark = [&](const Origin& o) {
    return Count("SELECT coalesce(max(complete_ms), -1) FROM view_watermarks WHERE origin = " +
                 std::to_string(OriginId(o)));
  };
  EXPECT_EQ(mark(kA), 5000);
  EXPECT_EQ(mark(kB), 7000);
  EXPECT_EQ(OriginId(kSelf), 0) << "the store's own origin was catalogued";
  keep({{kA, 4000, 0}, {kB, 8000, 0}});
  EXPECT_EQ(mark(kA), 5000) << "a watermark went back";
  EXPECT_EQ(mark(kB), 8000);
  keep({{kA, 0, 0}, {kA, -5, 0}});
  EXPECT_EQ(mark(kA), 5000);
  EXPECT_EQ(Count("SELECT count(*) FROM view_watermarks"), 2);
}

TEST_F(ReadViewTablesTest, ADamagedChunkInTheWayFailsTheApplyAndIsCounted) {
  ASSERT_EQ(Apply({Entry(kA, 1), Entry(kA, 2), Entry(kA, 3)}), 3);
  ASSERT_OK(db_.Exec("UPDATE view_chunks SET data = x'0102ff'"));
  Txn txn(&db_);
  ASSERT_OK(txn.Begin());
  int64_t added = 0;
  Status st = view_.Apply({Entry(kA, 3), Entry(kA, 4)}, kNow, &added);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("read view chunk"), std::string::npos) << st.message();
  EXPECT_EQ(rows_.corrupt(), 1);
  Abandon(&txn);
  // A page past the damaged chunk's span does not meet it.
  EXPECT_EQ(Apply({Entry(kA, 4)}), 1);
  EXPECT_EQ(rows_.corrupt(), 1);
}

}  // namespace
}  // namespace edgesync::test

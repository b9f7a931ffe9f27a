// What people and consumers are shown: newest-first queries under a limit,
// the device list, the backlog's age, and taking a lease over (rebalancing).
#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreSummaryTest : public StoreTest {};

TEST_F(StoreSummaryTest, QueryNewestFirstKeepsTheNewestUnderTheLimit) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(100, 1), &r));  // dev0, ts 1000..1099
  QueryRequest q;
  q.device_id = "dev0";
  q.limit = 3;
  q.newest_first = true;
  std::vector<QueryRow> rows;
  ASSERT_OK(s->Query(q, &rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].reading.ts_ms, 1099);
  EXPECT_EQ(rows[2].reading.ts_ms, 1097);
  q.newest_first = false;
  ASSERT_OK(s->Query(q, &rows));
  EXPECT_EQ(rows[0].reading.ts_ms, 1000);
  q.limit = QueryRequest::kMaxRows + 1;
  EXPECT_EQ(s->Query(q, &rows).code(), Status::Code::kInvalidArgument);
}

TEST_F(StoreSummaryTest, ListDevicesCountsLocalAndReadViewPerOrigin) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(30, 3), &r));
  ChangeEntry e;
  e.lsn = 4;
  e.reading = MakeReading("dev1", "temp", 5, 1, "C");
  int64_t applied = 0;
  // dev1 from another gateway, and our own entry come back through a feed.
  ASSERT_OK(s->ApplyRemote({RemoteEntry{Origin{"gw2", std::string(32, 'b')}, 4, e},
                              RemoteEntry{s->origin(), 2, [&] { ChangeEntry o = e; o.lsn = 2; return o; }()}},
                             &applied));
  std::vector<DeviceSummary> devices;
  ASSERT_OK(s->ListDevices(&devices));
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].device_id, "dev0");
  EXPECT_EQ(devices[0].readings, 10);
  EXPECT_EQ(devices[0].first_ts_ms, 1000);
  EXPECT_EQ(devices[0].last_ts_ms, 1027);
  EXPECT_TRUE(devices[1].local);
  EXPECT_EQ(devices[1].device_id, "dev1");
  EXPECT_FALSE(devices[2].local);
  EXPECT_EQ(devices[2].origin.gateway_id, "gw2");
  EXPECT_EQ(devices[2].readings, 1);
  EXPECT_EQ(devices[3].device_id, "dev2");
}

TEST_F(StoreSummaryTest, ListDevicesShowsTheLatestRecordLocalAndFromTheReadView) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(3, 1), &r));  // dev0
  uint64_t lsn = 0;
  ASSERT_OK(s->UpsertDevice(DeviceRecord{"dev0", "Boiler", "cellar", "C", false}, &lsn));
  ASSERT_OK(s->UpsertDevice(DeviceRecord{"only-record", "Gate", "", "", false}, &lsn));
  ASSERT_OK(s->UpsertDevice(DeviceRecord{"gone", "Old", "", "", false}, &lsn));
  ASSERT_OK(s->DeleteDevice("gone", &lsn));
  // Another gateway's records, every version its feed sent: far-1 described
  // twice (the read view keeps both; the higher LSN is the latest, whatever
  // order the pages came in), far-2 described then deleted, with a reading.
  const Origin other{"gw2", std::string(32, 'b')};
  auto device = [&](uint64_t olsn, ChangeEntry::Kind kind, DeviceRecord rec) {
    ChangeEntry e;
    e.lsn = olsn;
    e.kind = kind;
    rec.deleted = kind == ChangeEntry::Kind::kDeviceDelete;
    e.device = rec;
    return RemoteEntry{other, olsn, e};
  };
  ChangeEntry reading;
  reading.lsn = 5;
  reading.reading = MakeReading("far-2", "temp", 5, 1, "C");
  int64_t applied = 0;
  ASSERT_OK(s->ApplyRemote({device(9, ChangeEntry::Kind::kDeviceUpsert, {"far-1", "Pump 2", "yard", "bar", false}),
                            device(3, ChangeEntry::Kind::kDeviceUpsert, {"far-2", "Fan", "roof", "", false}),
                            RemoteEntry{other, 5, reading}},
                           &applied));
  ASSERT_OK(s->ApplyRemote({device(2, ChangeEntry::Kind::kDeviceUpsert, {"far-1", "Pump", "shed", "bar", false}),
                            device(7, ChangeEntry::Kind::kDeviceDelete, {"far-2", "Fan", "roof", "", false})},
                           &applied));
  ASSERT_EQ(applied, 2);
  std::vector<DeviceSummary> devices;
  ASSERT_OK(s->ListDevices(&devices));
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[0].device_id, "dev0");
  EXPECT_EQ(devices[0].readings, 3);
  ASSERT_TRUE(devices[0].has_record);
  EXPECT_EQ(devices[0].record.name, "Boiler");
  EXPECT_EQ(devices[0].record.location, "cellar");
  EXPECT_EQ(devices[0].record.default_unit, "C");
  EXPECT_EQ(devices[1].device_id, "far-1");
  EXPECT_FALSE(devices[1].local);
  EXPECT_EQ(devices[1].origin, other);
  EXPECT_EQ(devices[1].readings, 0);
  EXPECT_EQ(devices[1].first_ts_ms, 0);
  ASSERT_TRUE(devices[1].has_record);
  EXPECT_EQ(devices[1].record.name, "Pump 2");
  EXPECT_EQ(devices[1].record.location, "yard");
  EXPECT_EQ(devices[2].device_id, "far-2");
  EXPECT_EQ(devices[2].readings, 1);
  EXPECT_FALSE(devices[2].has_record) << "deleted at its origin";
  EXPECT_EQ(devices[2].record.name, "");
  EXPECT_EQ(devices[3].device_id, "only-record");
  EXPECT_TRUE(devices[3].local);
  EXPECT_EQ(devices[3].readings, 0);
  ASSERT_TRUE(devices[3].has_record);
  EXPECT_EQ(devices[3].record.name, "Gate");
}

TEST_F(StoreSummaryTest, BacklogAgeIsTheOldestUnacknowledgedWrite) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10), &r));  // LSN 1..10 at t0
  int64_t t0 = clock_.WallMillis();
  clock_.Advance(60000);
  ASSERT_OK(s->AppendReadings(Batch(10), &r));  // 11..20 at t0 + 60 s
  BacklogInfo b;
  ASSERT_OK(s->Backlog(0, &b));
  EXPECT_EQ(b.oldest_written_ms, t0);
  EXPECT_GT(b.avg_entry_bytes, 0);
  ASSERT_OK(s->Backlog(10, &b));
  EXPECT_EQ(b.oldest_written_ms, t0 + 60000);
  ASSERT_OK(s->Backlog(20, &b));
  EXPECT_EQ(b.oldest_written_ms, 0) << "nothing unacknowledged";
}

TEST_F(StoreSummaryTest, TakeLeaseIsACompareAndSetThatKeepsTheCheckpoint) {
  auto s = OpenStore();
  AppendResult r;
  ASSERT_OK(s->AppendReadings(Batch(10), &r));
  Lease a;
  ASSERT_OK(s->AcquireLease(1, "a", &a));
  FeedPage page;
  ASSERT_OK(s->ReadFeed(1, FeedStart{}, 100, &page));
  Lease a2;
  ASSERT_OK(s->CheckpointLease(a, page.continuation, &a2));
  Lease b;
  EXPECT_EQ(s->TakeLease(a, "b", &b).code(), Status::Code::kConflict) << "a stale version";
  ASSERT_OK(s->TakeLease(a2, "b", &b));
  EXPECT_EQ(b.owner, "b");
  EXPECT_EQ(b.continuation, page.continuation);
  Lease a3;
  EXPECT_EQ(s->RenewLease(a2, &a3).code(), Status::Code::kConflict) << "the former owner learns it lost the range";
}

}  // namespace
}  // namespace edgesync::test

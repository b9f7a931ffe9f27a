// One Store used from several threads at once, as the gateway does: ingest
// appends while the uplink follows the log and queries and stats run.
#include <atomic>
#include <thread>

#include "tests/support/store_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class StoreThreadsTest : public StoreTest {};

TEST_F(StoreThreadsTest, IngestUplinkAndQueriesConcurrently) {
  auto s = OpenStore();
  constexpr int kBatches = 200;
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::thread ingest([&] {
    for (int b = 0; b < kBatches; ++b) {
      AppendResult r;
      if (!s->AppendReadings(Batch(100, 30, b * 100), &r).ok()) errors++;
      if (b % 50 == 0) {
        uint64_t lsn = 0;
        if (!s->UpsertDevice(DeviceRecord{"dev1", "n" + std::to_string(b), "", "", false}, &lsn).ok()) errors++;
      }
    }
    done = true;
  });
  uint64_t followed = 0;
  std::thread uplink([&] {
    for (;;) {
      bool finished = done.load();
      std::vector<ChangeEntry> page;
      if (!s->ReadLog(followed, 500, &page).ok()) errors++;
      for (const auto& e : page) {
        if (e.lsn <= followed) errors++;  // LSN order, no repeats
        followed = e.lsn;
      }
      if (finished && page.empty()) break;
    }
  });
  std::thread reader([&] {
    while (!done) {
      std::vector<QueryRow> rows;
      QueryRequest q;
      q.device_id = "dev7";
      if (!s->Query(q, &rows).ok()) errors++;
      StoreStats stats;
      if (!s->Stats(&stats).ok()) errors++;
      FeedPage page;
      if (!s->ReadFeed(1, FeedStart{}, 50, &page).ok()) errors++;
    }
  });
  ingest.join();
  uplink.join();
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(followed, s->LastLsn());
  StoreStats stats;
  ASSERT_OK(s->Stats(&stats));
  EXPECT_EQ(stats.entries, kBatches * 100 + 1);  // one device record (latest version only)
}

}  // namespace
}  // namespace edgesync::test

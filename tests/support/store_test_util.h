// tests/support/store_test_util.h: small helpers shared by the store's
// unit tests (a store in a temp dir on a manual clock, reading factories).
#ifndef EDGESYNC_TESTS_SUPPORT_STORE_TEST_UTIL_H_
#define EDGESYNC_TESTS_SUPPORT_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "platform/clock.h"
#include "store/sqlite_util.h"
#include "store/store.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {

inline Reading MakeReading(const std::string& device, const std::string& metric, int64_t ts, double value,
                           const std::string& unit = "") {
  Reading r;
  r.device_id = device;
  r.metric = metric;
  r.ts_ms = ts;
  r.value = value;
  r.unit = unit;
  return r;
}

class StoreTest : public ::testing::Test {
 protected:
  StoreOptions Options() {
    StoreOptions o;
    o.path = dir_.File("store.db");
    o.gateway_id = "gw1";
    o.clock = &clock_;
    // Acknowledged readings may be pruned at once; the tests of the grace
    // (store_retention_test.cc) set theirs.
    o.ack_grace_ms = 0;
    return o;
  }
  std::unique_ptr<Store> OpenStore(const StoreOptions& o) {
    std::unique_ptr<Store> s;
    Status st = Store::Open(o, &s);
    EXPECT_OK(st);
    return s;
  }
  std::unique_ptr<Store> OpenStore() { return OpenStore(Options()); }
  // Compaction after a minute on the manual clock, in small spans written
  // whatever their size (the default keeps spans that would grow).
  StoreOptions CompactingOptions(int64_t span_readings) {
    StoreOptions o = Options();
    o.compact_span_readings = span_readings;
    o.compact_after_ms = 60000;
    o.compact_only_smaller = false;
    return o;
  }
  // Runs sql on the store's file through a connection of its own (to
  // damage or downgrade it between opens).
  void Sql(const std::string& sql) {
    Db db;
    ASSERT_OK(db.Open(Options().path, SQLITE_OPEN_READWRITE));
    Status st = db.Exec(sql);
    ASSERT_OK(st);
  }
  std::vector<Reading> Batch(int n, int devices = 10, int64_t ts0 = 1000) {
    std::vector<Reading> v;
    for (int i = 0; i < n; ++i) {
      v.push_back(MakeReading("dev" + std::to_string(i % devices), "temp", ts0 + i, i * 0.5, "C"));
    }
    return v;
  }

  TempDir dir_;
  ManualClock clock_{1'800'000'000'000, 0};
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_STORE_TEST_UTIL_H_

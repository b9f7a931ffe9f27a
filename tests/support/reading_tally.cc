#include "tests/support/reading_tally.h"
#include "tests/support/status_assert.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

namespace edgesync::test {

ReadingTally TallyReadings(Store* store, const std::string& prefix, int devices, int readings, int64_t base_ms,
                           int64_t step_ms) {
  ReadingTally t;
  for (int d = 0; d < devices; ++d) {
    QueryRequest q;
    q.device_id = prefix + std::to_string(d);
    q.limit = 10 * readings + 10;
    std::vector<QueryRow> rows;
    Status s = store->Query(q, &rows);
    EXPECT_OK(s);
    std::map<int, int> seen;
    for (const auto& r : rows) {
      if (!r.local) continue;
      int v = static_cast<int>(r.reading.value);
      seen[v]++;
      if (r.reading.ts_ms != base_ms + v * step_ms) t.wrong_time++;
      t.total++;
    }
    for (int i = 0; i < readings; ++i) {
      auto it = seen.find(i);
      if (it == seen.end()) t.missing++;
      if (it != seen.end() && it->second > 1) t.duplicates += it->second - 1;
    }
  }
  return t;
}

StoreStats StoreStatsOf(const std::string& path) {
  StoreOptions o;
  o.path = path;
  o.create_if_missing = false;
  o.open_check = StoreOptions::OpenCheck::kNone;
  std::unique_ptr<Store> store;
  StoreStats s;
  Status st = Store::Open(o, &store);
  EXPECT_OK(st);
  if (st.ok()) {
    EXPECT_OK(store->Stats(&s));
  }
  return s;
}

}  // namespace edgesync::test

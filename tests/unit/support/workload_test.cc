#include "tests/support/workload.h"
#include "tests/support/status_assert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace edgesync::test {
namespace {

TEST(WorkloadTest, EveryDeviceAndMetricPerTickInTimeOrder) {
  SensorWorkload w(3, 1000000, 1000, 7);
  auto readings = w.Take(3 * 8 * 2);
  std::set<std::pair<std::string, std::string>> first_tick;
  for (size_t i = 0; i < 24; ++i) first_tick.insert({readings[i].device_id, readings[i].metric});
  EXPECT_EQ(first_tick.size(), 24u);
  EXPECT_LT(readings[0].ts_ms, readings[24].ts_ms);
  EXPECT_EQ(readings[24].device_id, "dev-00000");
}

TEST(WorkloadTest, ValuesAreQuantisedValidAndDrift) {
  SensorWorkload w(10, 0, 1000, 3);
  double first = 0, last = 0;
  for (int i = 0; i < 8000; ++i) {
    Reading r = w.Next();
    ASSERT_OK(ValidateReading(r));
    if (r.metric == std::string("co2")) {
      EXPECT_EQ(r.value, std::round(r.value));  // 1 ppm resolution
      if (r.device_id == "dev-00000") {
        if (first == 0) first = r.value;
        last = r.value;
      }
    }
  }
  EXPECT_NE(first, last);
}

}  // namespace
}  // namespace edgesync::test

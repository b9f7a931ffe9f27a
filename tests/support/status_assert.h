// tests/support/status_assert.h: ASSERT_OK / EXPECT_OK for a Status or a
// Result, which print the status (code and message) when it is not ok, where
// ASSERT_TRUE(s.ok()) prints only "false".
//
// Thread safety: as GoogleTest's assertions.
#ifndef EDGESYNC_TESTS_SUPPORT_STATUS_ASSERT_H_
#define EDGESYNC_TESTS_SUPPORT_STATUS_ASSERT_H_

#include <gtest/gtest.h>

#include "platform/status.h"

namespace edgesync {
namespace test_support {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}

template <typename T>
::testing::AssertionResult IsOk(const char* expression, const T& value) {
  const Status& s = StatusOf(value);
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expression << " is not ok: " << s.ToString();
}

}  // namespace test_support
}  // namespace edgesync

#define ASSERT_OK(expr) ASSERT_PRED_FORMAT1(::edgesync::test_support::IsOk, expr)
#define EXPECT_OK(expr) EXPECT_PRED_FORMAT1(::edgesync::test_support::IsOk, expr)

#endif  // EDGESYNC_TESTS_SUPPORT_STATUS_ASSERT_H_

#include "platform/status.h"
#include "tests/support/status_assert.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

TEST(StatusTest, OkAndErrorsCarryCodeAndMessage) {
  EXPECT_OK(Status::Ok());
  Status s = Status::NoSpace("database or disk is full");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Status::Code::kNoSpace);
  EXPECT_EQ(s.ToString(), "NoSpace: database or disk is full");
  EXPECT_EQ(s.Annotate("append").ToString(), "NoSpace: append: database or disk is full");
}

TEST(StatusTest, ResultHoldsValueOrStatus) {
  Result<int> good(42);
  ASSERT_OK(good);
  EXPECT_EQ(*good, 42);
  Result<int> bad(Status::NotFound("x"));
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kNotFound);
}

}  // namespace
}  // namespace edgesync

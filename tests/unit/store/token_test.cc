#include "store/token.h"
#include "tests/support/status_assert.h"

#include <gtest/gtest.h>

namespace edgesync {
namespace {

const char kEpoch[] = "0123456789abcdef0123456789abcdef";

TEST(FeedTokenTest, RoundTrips) {
  FeedToken t{7, kEpoch, 123456789};
  FeedToken back;
  ASSERT_OK(DecodeFeedToken(EncodeFeedToken(t), &back));
  EXPECT_EQ(back.range_id, 7u);
  EXPECT_EQ(back.epoch, kEpoch);
  EXPECT_EQ(back.lsn, 123456789u);
}

TEST(FeedTokenTest, RefusesHostileInput) {
  const std::string e = kEpoch;
  const std::string bad[] = {
      "", "v1", "v1.", "v1...", "v2.1." + e + ".5", "v1.0." + e + ".5", "v1.-1." + e + ".5", "v1.+1." + e + ".5",
      "v1.1." + e + ".5.6", "v1.1." + e + ".", "v1.1." + e.substr(1) + ".5", "v1.1." + e + "0.5",
      "v1.1.0123456789ABCDEF0123456789abcdef.5", "v1.4294967296." + e + ".5", "v1.1." + e + ".99999999999999999999",
      "v1.1." + e + ".9223372036854775808", "v1.1." + e + ". 5", "v1.1." + e + ".5 ", std::string("v1.1\0.", 6),
      "v1.1." + e + "." + std::string(100, '9')};
  for (const auto& s : bad) {
    FeedToken t;
    Status st = DecodeFeedToken(s, &t);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << s;
  }
}

TEST(FeedTokenTest, ParsesUint64Strictly) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseUint64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseUint64("18446744073709551616", &v));
  EXPECT_FALSE(ParseUint64("", &v));
  EXPECT_FALSE(ParseUint64("1a", &v));
}

}  // namespace
}  // namespace edgesync

// A region feed position (store/feed_cursor.h) through its own functions:
// the shard of a gateway id is FNV-1a's, the encoded form round-trips every
// position and stays within its bound, the decoder refuses each kind of
// damage with Corruption, and the figures over positions (text, sum, order,
// lag) count what they say.
#include "store/feed_cursor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

TEST(FeedCursorTest, TheShardOfAGatewayIdIsFnv1aModuloTheShards) {
  // FNV-1a 32 of "" is its offset basis 0x811c9dc5, of "a" 0xe40c292c, of
  // "foobar" 0xbf9cf968 (the published test vectors): sync/PROTOCOL.md
  // gives the function so that peers in any language agree.
  EXPECT_EQ(RegionShardOf(""), static_cast<int>(0x811c9dc5u % kRegionShards));
  EXPECT_EQ(RegionShardOf("a"), static_cast<int>(0xe40c292cu % kRegionShards));
  EXPECT_EQ(RegionShardOf("foobar"), static_cast<int>(0xbf9cf968u % kRegionShards));
  for (const std::string id : {"gw-1", "gw-2", "a-much-longer-gateway-id-0123456789", "\xff\xfe"}) {
    int s = RegionShardOf(id);
    EXPECT_GE(s, 0) << id;
    EXPECT_LT(s, kRegionShards) << id;
  }
}

TEST(FeedCursorTest, TheBeginningEncodesAsNothing) {
  ShardPositions zero{};
  EXPECT_EQ(EncodeShardPositions(zero), "");
  ShardPositions back;
  back.fill(7);
  ASSERT_OK(DecodeShardPositions("", &back));
  EXPECT_EQ(back, zero) << "decoding starts from every shard at 0";
}

TEST(FeedCursorTest, PositionsRoundTripFromTheFirstToTheLastShard) {
  ShardPositions p{};
  p[0] = 1;
  p[1] = 127;
  p[2] = 128;
  p[17] = 1u << 20;
  p[kRegionShards - 1] = static_cast<uint64_t>(INT64_MAX);
  std::string bytes = EncodeShardPositions(p);
  // Shard deltas: 0, 0, 0, 14, 13; positions as varints.
  EXPECT_EQ(bytes, Varint(0) + Varint(1) + Varint(0) + Varint(127) + Varint(0) + Varint(128) + Varint(14) +
                       Varint(1u << 20) + Varint(13) + Varint(static_cast<uint64_t>(INT64_MAX)));
  ShardPositions back{};
  ASSERT_OK(DecodeShardPositions(bytes, &back));
  EXPECT_EQ(back, p);

  ShardPositions full;
  full.fill(static_cast<uint64_t>(INT64_MAX));
  std::string most = EncodeShardPositions(full);
  EXPECT_LE(most.size(), kMaxShardPositionsBytes);
  ASSERT_OK(DecodeShardPositions(most, &back));
  EXPECT_EQ(back, full);

  std::mt19937_64 rng(42);
  for (int round = 0; round < 500; ++round) {
    ShardPositions r{};
    for (auto& v : r) {
      if (rng() % 3 == 0) v = 1 + rng() % static_cast<uint64_t>(INT64_MAX);
    }
    ShardPositions got{};
    ASSERT_OK(DecodeShardPositions(EncodeShardPositions(r), &got)) << round;
    ASSERT_EQ(got, r) << round;
  }
}

TEST(FeedCursorTest, TheDecoderRefusesDamageWithCorruption) {
  const std::string kMax = Varint(static_cast<uint64_t>(INT64_MAX));
  struct Case {
    const char* what;
    std::string bytes;
  } cases[] = {
      {"a truncated varint", "\x80"},
      {"a shard without its position", Varint(3)},
      {"a position's varint cut short", Varint(3) + "\xff"},
      {"a shard past the last", Varint(kRegionShards) + Varint(1)},
      {"a shard past the last after another", Varint(30) + Varint(1) + Varint(1) + Varint(1)},
      {"a listed zero position", Varint(4) + Varint(0)},
      {"a position over INT64_MAX", Varint(4) + Varint(uint64_t{1} << 63)},
      {"a varint past 64 bits", Varint(0) + std::string(9, '\xff') + "\x02"},
      {"too long", std::string(kMaxShardPositionsBytes + 1, '\0')},
  };
  for (const Case& c : cases) {
    ShardPositions p{};
    Status st = DecodeShardPositions(c.bytes, &p);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << c.what << ": " << st.ToString();
    EXPECT_NE(st.message().find("shard positions"), std::string::npos) << c.what;
  }
  // The last shard itself is fine.
  ShardPositions p{};
  ASSERT_OK(DecodeShardPositions(Varint(kRegionShards - 1) + kMax, &p));
  EXPECT_EQ(p[kRegionShards - 1], static_cast<uint64_t>(INT64_MAX));
}

TEST(FeedCursorTest, TextSumOrderAndLagCountWhatTheySay) {
  ShardPositions a{}, b{};
  EXPECT_EQ(ShardPositionsText(a), "0");
  EXPECT_EQ(ShardPositionsSum(a), 0u);
  a[3] = 5;
  a[17] = 9;
  EXPECT_EQ(ShardPositionsText(a), "3:5 17:9");
  EXPECT_EQ(ShardPositionsSum(a), 14u);

  EXPECT_FALSE(AllAtOrBelow(a, b));
  EXPECT_TRUE(AllAtOrBelow(b, a));
  EXPECT_TRUE(AllAtOrBelow(a, a));
  b = a;
  b[3] = 4;  // one shard below is enough to not be at or below
  b[20] = 100;
  EXPECT_FALSE(AllAtOrBelow(a, b));
  EXPECT_FALSE(AllAtOrBelow(b, a));

  ShardPositions head = a;
  EXPECT_EQ(ShardLag(a, head), 0u);
  head[3] = 12;  // 7 behind
  head[30] = 2;  // 2 behind
  EXPECT_EQ(ShardLag(a, head), 7u) << "the most behind shard's distance";
  // A position past its head (a head read before the page) is no lag, not
  // a wrapped-around huge one.
  ShardPositions ahead = a;
  ahead[3] = 50;
  EXPECT_EQ(ShardLag(ahead, head), 2u);
}

}  // namespace
}  // namespace edgesync

#include "store/chunk_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/support/workload.h"
#include "tests/support/codec_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

void ExpectRoundTrip(const std::vector<ChunkReading>& in) {
  std::string block;
  EncodeChunk(in, &block);
  std::vector<ChunkReading> out;
  Status st = DecodeChunk(block, kMaxChunkReadings, &out);
  ASSERT_OK(st);
  ExpectSameEntries(out, in);
}

TEST(ChunkCodecTest, RoundTripsEveryValueBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ChunkReading> in = {
      {1, 1780000000000, 21.4, 0},
      {2, 1780000000000, -0.0, 1},
      {3, 1779999999000, nan, 7},
      {1, INT64_MIN, inf, 0},
      {INT64_MAX, INT64_MAX, -inf, UINT32_MAX},
      {5, 0, 0.1 + 0.2, 0},  // not an exact decimal: raw bits
      {5, -5, 1e300, 0},
      {6, 3, -1013.25, 0},
      {7, 4, std::numeric_limits<double>::denorm_min(), 0},
  };
  ExpectRoundTrip(in);
  ExpectRoundTrip({});
}

TEST(ChunkCodecTest, ReferenceWorkloadTakesAFewBytesPerReading) {
  test::SensorWorkload w(1000, 1780000000000);
  std::vector<ChunkReading> in;
  for (const Reading& r : w.Take(1000)) {
    in.push_back({static_cast<int64_t>(in.size() % 8000) + 1, r.ts_ms, r.value, r.quality});
  }
  ExpectRoundTrip(in);
  std::string block;
  EncodeChunk(in, &block);
  // Row per reading (schema 3) took ~51 bytes; the chunk must be in the
  // class of the wire format (a few bytes).
  EXPECT_LT(block.size(), 4 * in.size());
}

TEST(ChunkCodecTest, RefusesDamageWithAStatus) {
  std::vector<ChunkReading> in;
  for (int i = 0; i < 200; ++i) in.push_back({i % 17, 1780000000000 + i * 10, i * 0.5, 0});
  std::string block;
  EncodeChunk(in, &block);
  std::vector<ChunkReading> out;
  // Every truncation is refused.
  for (size_t n = 0; n < block.size(); ++n) {
    EXPECT_FALSE(DecodeChunk(std::string_view(block.data(), n), kMaxChunkReadings, &out).ok()) << n;
  }
  // Flipped bytes never crash; the format byte and the length are checked.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = block;
    bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
    (void)DecodeChunk(bad, kMaxChunkReadings, &out);
  }
  std::string other = block;
  other[0] = 9;
  Status st = DecodeChunk(other, kMaxChunkReadings, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("format"), std::string::npos) << st.ToString();
  // More readings than the caller allows: refused before they are decoded.
  st = DecodeChunk(block, 100, &out);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace edgesync::test

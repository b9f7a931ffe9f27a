#include "store/region_feed_chunk_codec.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/support/status_assert.h"
#include "tests/support/codec_test_util.h"

namespace edgesync::test {
namespace {

RemoteChunkEntry Correction(uint64_t olsn, int64_t from_ms, int64_t delta_ms, uint32_t period, int64_t to_ms) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.kind = static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection);
  e.ts_ms = from_ms;
  e.value = static_cast<double>(delta_ms);
  e.quality = period;
  e.to_ms = to_ms;
  return e;
}

void ExpectRoundTrip(const std::vector<RegionFeedRun>& in) {
  std::string block;
  EncodeMergedRegionChunk(in, &block);
  ASSERT_TRUE(IsMergedRegionChunk(block));
  std::vector<RegionFeedRun> out;
  ASSERT_OK(DecodeMergedRegionChunk(block, kMaxRemoteChunkEntries, &out));
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].origin, in[i].origin) << "run " << i;
    ExpectSameEntries(out[i].entries, in[i].entries);
  }
}

TEST(RegionFeedChunkCodecTest, RoundTripsRunsOfOriginsWithEveryKindAndValue) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ExpectRoundTrip({
      {7, {RemoteReading(100, 1, 1780000000000, 21.4), RemoteReading(101, 2, 1780000000000, -0.0, 1)}},
      // Another origin with lower LSNs, then the first origin again.
      {3, {RemoteDevice(5, 9, 1, "Pump"), Correction(6, 1780000000000, -250, 3, 1780000600000)}},
      {7, {RemoteReading(102, INT64_MAX, INT64_MIN, nan, UINT32_MAX), RemoteDevice(200, 9, 2, "")}},
      {INT64_MAX, {RemoteReading(static_cast<uint64_t>(INT64_MAX), 1, 0, -1013.25)}},
      {1, {RemoteReading(1, 1, 0, 0.1 + 0.2)}},
  });
}

TEST(RegionFeedChunkCodecTest, OneRowOfManySmallBatchesIsSmallerThanTheirChunks) {
  // 50 origins' 20-reading batches, the shape a hub fed at 100 readings/s
  // per gateway keeps: the merged block must beat the sum of per-batch
  // blocks (one zstd frame and header each), else compaction buys nothing.
  std::vector<RegionFeedRun> runs;
  size_t separate = 0;
  for (int o = 0; o < 50; ++o) {
    RegionFeedRun run{1000 + o, {}};
    for (int i = 0; i < 20; ++i) {
      run.entries.push_back(RemoteReading(5000 + i, 1 + i % 4, 1780000000000 + i * 10, 20.0 + (i % 7) * 0.1));
    }
    std::string one;
    EncodeRemoteChunk(run.entries, &one);
    separate += one.size();
    runs.push_back(std::move(run));
  }
  std::string merged;
  EncodeMergedRegionChunk(runs, &merged);
  EXPECT_LT(merged.size() * 2, separate);
  ExpectRoundTrip(runs);
}

TEST(RegionFeedChunkCodecTest, OneOriginChunksAndDamageAreRefused) {
  std::vector<RegionFeedRun> runs = {{4, {RemoteReading(1, 1, 1, 1.0), RemoteReading(2, 1, 2, 2.0)}}};
  std::string block;
  EncodeMergedRegionChunk(runs, &block);
  std::vector<RegionFeedRun> out;
  // More entries than the caller allows.
  EXPECT_FALSE(DecodeMergedRegionChunk(block, 1, &out).ok());
  // A flipped byte fails the content checksum or the frame.
  std::string damaged = block;
  damaged[damaged.size() / 2] ^= 0x40;
  EXPECT_FALSE(DecodeMergedRegionChunk(damaged, kMaxRemoteChunkEntries, &out).ok());
  // A one-origin remote chunk is not a merged one, and the other way round.
  std::string single;
  EncodeRemoteChunk(runs[0].entries, &single);
  EXPECT_FALSE(IsMergedRegionChunk(single));
  EXPECT_FALSE(DecodeMergedRegionChunk(single, kMaxRemoteChunkEntries, &out).ok());
  std::vector<RemoteChunkEntry> entries;
  EXPECT_FALSE(DecodeRemoteChunk(block, kMaxRemoteChunkEntries, &entries).ok());
  EXPECT_FALSE(DecodeMergedRegionChunk("", kMaxRemoteChunkEntries, &out).ok());
}

TEST(RegionFeedChunkCodecTest, ARowOfEitherLayoutReadsAsEntriesWithTheirOrigins) {
  const std::vector<RemoteChunkEntry> a = {RemoteReading(10, 1, 100, 1.5), RemoteReading(11, 2, 100, 2.5)};
  const std::vector<RemoteChunkEntry> b = {Correction(3, 100, 40, 2, 900), RemoteDevice(4, 5, 1, "Valve")};
  std::string single, merged;
  EncodeRemoteChunk(a, &single);
  EncodeMergedRegionChunk({{8, a}, {2, b}}, &merged);
  std::vector<RemoteChunkEntry> entries;
  std::vector<int64_t> origins;
  ASSERT_OK(DecodeRegionRow(single, 8, kMaxRemoteChunkEntries, &entries, &origins));
  ExpectSameEntries(entries, a);
  EXPECT_EQ(origins, (std::vector<int64_t>{8, 8}));
  // A merged row's own origin column says nothing of its entries' origins.
  ASSERT_OK(DecodeRegionRow(merged, 0, kMaxRemoteChunkEntries, &entries, &origins));
  std::vector<RemoteChunkEntry> both = a;
  both.insert(both.end(), b.begin(), b.end());
  ExpectSameEntries(entries, both);
  EXPECT_EQ(origins, (std::vector<int64_t>{8, 8, 2, 2}));
  EXPECT_FALSE(DecodeRegionRow(merged, 0, 3, &entries, &origins).ok());
}

}  // namespace
}  // namespace edgesync::test

#include "store/remote_chunk_codec.h"

#include <gtest/gtest.h>

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

void ExpectRoundTrip(const std::vector<RemoteChunkEntry>& in) {
  std::string block;
  EncodeRemoteChunk(in, &block);
  std::vector<RemoteChunkEntry> out;
  Status st = DecodeRemoteChunk(block, kMaxRemoteChunkEntries, &out);
  ASSERT_OK(st);
  ExpectSameEntries(out, in);
}

TEST(RemoteChunkCodecTest, RoundTripsEntriesWithHolesDeviceRecordsAndEveryValue) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ExpectRoundTrip({
      RemoteReading(1, 1, 1780000000000, 21.4),
      RemoteReading(2, 2, 1780000000000, -0.0, 1),
      RemoteDevice(5, 9, 1, "Pump"),  // LSNs 3 and 4 compacted away at the origin
      RemoteReading(6, INT64_MAX, INT64_MIN, nan, UINT32_MAX),
      RemoteDevice(7, 9, 2, ""),
      RemoteReading(1000000, 3, INT64_MAX, 0.1 + 0.2),
      RemoteReading(static_cast<uint64_t>(INT64_MAX), 1, 0, -1013.25),
  });
  ExpectRoundTrip({RemoteDevice(42, 1, 1, std::string(256, 'x'))});
}

// A time correction (store/time_correction.h) keeps its period, delta and
// span; it changes back into the change entry it was.
TEST(RemoteChunkCodecTest, RoundTripsTimeCorrectionsBesideReadings) {
  ChangeEntry c;
  c.lsn = 9;
  c.kind = ChangeEntry::Kind::kTimeCorrection;
  c.correction = TimeCorrection{3, 259'200'123, 1'780'000'000'000, 1'780'000'600'000};
  RemoteChunkEntry ce;
  FromChangeEntry(c, 4, &ce);
  const std::vector<RemoteChunkEntry> in = {RemoteReading(8, 1, 1780000000000, 21.4, 3 | (3u << 8)), ce,
                                            RemoteReading(10, 1, 1780000300000, 21.5)};
  ExpectRoundTrip(in);
  std::string block;
  EncodeRemoteChunk(in, &block);
  std::vector<RemoteChunkEntry> out;
  ASSERT_OK(DecodeRemoteChunk(block, kMaxRemoteChunkEntries, &out));
  ChangeEntry back;
  ToChangeEntry(out[1], "", "", "", &back);
  EXPECT_EQ(back.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_EQ(back.lsn, 9u);
  EXPECT_EQ(back.correction.period, 3u);
  EXPECT_EQ(back.correction.delta_ms, 259'200'123);
  EXPECT_EQ(back.correction.from_ms, 1'780'000'000'000);
  EXPECT_EQ(back.correction.to_ms, 1'780'000'600'000);
  // A negative delta (a clock ahead) too.
  c.correction.delta_ms = -86'400'000;
  FromChangeEntry(c, 4, &ce);
  ExpectRoundTrip({ce});
}

TEST(RemoteChunkCodecTest, RefusesATimeCorrectionNoWriterMakes) {
  ChangeEntry c;
  c.lsn = 1;
  c.kind = ChangeEntry::Kind::kTimeCorrection;
  c.correction = TimeCorrection{1, 1000, 100, 200};
  RemoteChunkEntry good;
  FromChangeEntry(c, 1, &good);
  auto refused = [](const RemoteChunkEntry& e) {
    std::string block;
    EncodeRemoteChunk({e}, &block);
    std::vector<RemoteChunkEntry> out;
    Status st = DecodeRemoteChunk(block, kMaxRemoteChunkEntries, &out);
    return st.code() == Status::Code::kCorruption && st.message().find("time correction") != std::string::npos;
  };
  RemoteChunkEntry e = good;
  e.quality = 0;  // no period
  EXPECT_TRUE(refused(e));
  e = good;
  e.value = 0.5;  // not whole milliseconds
  EXPECT_TRUE(refused(e));
  e = good;
  e.to_ms = 99;  // ends before it begins
  EXPECT_TRUE(refused(e));
  e = good;
  e.value = 1e300;
  EXPECT_TRUE(refused(e));
  EXPECT_FALSE(refused(good));
}

TEST(RemoteChunkCodecTest, AnUplinkBatchOfTheReferenceWorkloadTakesAFewBytesPerReading) {
  test::SensorWorkload w(1000, 1780000000000);
  std::vector<RemoteChunkEntry> in;
  for (const edgesync::Reading& r : w.Take(1600)) {
    in.push_back(
        RemoteReading(in.size() + 1001, static_cast<int64_t>(in.size() % 8000) + 1, r.ts_ms, r.value, r.quality));
  }
  ExpectRoundTrip(in);
  std::string block;
  EncodeRemoteChunk(in, &block);
  EXPECT_LT(static_cast<double>(block.size()) / static_cast<double>(in.size()), 4.0) << block.size();
}

TEST(RemoteChunkCodecTest, RefusesEveryDamagedOrForeignBlockWithAClearError) {
  std::vector<RemoteChunkEntry> in;
  for (uint64_t i = 1; i <= 200; ++i) {
    in.push_back(RemoteReading(i * 2, static_cast<int64_t>(i % 5), 1000 * i, i * 0.5));
  }
  in.push_back(RemoteDevice(500, 3, 1, "Pump"));
  std::string block;
  EncodeRemoteChunk(in, &block);
  std::vector<RemoteChunkEntry> out;
  Status st = DecodeRemoteChunk("", 100, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_NE(st.message().find("remote chunk: empty block"), std::string::npos) << st.ToString();
  std::string foreign = block;
  foreign[0] = 7;
  st = DecodeRemoteChunk(foreign, 1000, &out);
  EXPECT_NE(st.message().find("unknown format 7"), std::string::npos) << st.ToString();
  st = DecodeRemoteChunk(block, 100, &out);  // more entries than the caller allows
  EXPECT_NE(st.message().find("count 201 outside 1..100"), std::string::npos) << st.ToString();
  // Truncations and flipped bytes anywhere: refused (the frame's checksum
  // covers what the header does not), unless the flip fell on bits the
  // decoder never reads and the content came back unchanged.
  int refused = 0;
  for (size_t cut = 0; cut < block.size(); ++cut) {
    refused += !DecodeRemoteChunk(block.substr(0, cut), 1000, &out).ok();
  }
  EXPECT_EQ(refused, static_cast<int>(block.size()));
  std::mt19937 rng(7);
  refused = 0;
  std::vector<RemoteChunkEntry> good;
  ASSERT_OK(DecodeRemoteChunk(block, 1000, &good));
  int unchanged = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bad = block;
    const size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ static_cast<char>(1 + rng() % 255));
    if (!DecodeRemoteChunk(bad, 1000, &out).ok()) {
      ++refused;
      continue;
    }
    bool same = out.size() == good.size();
    for (size_t k = 0; same && k < out.size(); ++k) {
      same = out[k].olsn == good[k].olsn && out[k].series == good[k].series && out[k].ts_ms == good[k].ts_ms &&
             SameBits(out[k].value, good[k].value) && out[k].name == good[k].name;
    }
    unchanged += same;
  }
  EXPECT_EQ(refused + unchanged, 2000);
  EXPECT_GT(refused, 1900);
}

}  // namespace
}  // namespace edgesync::test

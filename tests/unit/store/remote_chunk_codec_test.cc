#include "store/remote_chunk_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/support/workload.h"

namespace edgesync {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

RemoteChunkEntry Reading(uint64_t olsn, int64_t series, int64_t ts, double value, uint32_t quality = 0) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.series = series;
  e.ts_ms = ts;
  e.value = value;
  e.quality = quality;
  return e;
}

RemoteChunkEntry Device(uint64_t olsn, int64_t series, uint8_t kind, std::string name) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.kind = kind;
  e.series = series;
  e.name = std::move(name);
  e.location = "roof";
  e.default_unit = "Cel";
  return e;
}

void ExpectRoundTrip(const std::vector<RemoteChunkEntry>& in) {
  std::string block;
  EncodeRemoteChunk(in, &block);
  std::vector<RemoteChunkEntry> out;
  Status st = DecodeRemoteChunk(block, kMaxRemoteChunkEntries, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].olsn, in[i].olsn) << i;
    EXPECT_EQ(out[i].kind, in[i].kind) << i;
    EXPECT_EQ(out[i].series, in[i].series) << i;
    EXPECT_EQ(out[i].ts_ms, in[i].ts_ms) << i;
    EXPECT_TRUE(SameBits(out[i].value, in[i].value)) << i << ": " << in[i].value << " came back " << out[i].value;
    EXPECT_EQ(out[i].quality, in[i].quality) << i;
    EXPECT_EQ(out[i].name, in[i].name) << i;
    EXPECT_EQ(out[i].location, in[i].location) << i;
    EXPECT_EQ(out[i].default_unit, in[i].default_unit) << i;
  }
}

TEST(RemoteChunkCodecTest, RoundTripsEntriesWithHolesDeviceRecordsAndEveryValue) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ExpectRoundTrip({
      Reading(1, 1, 1780000000000, 21.4),
      Reading(2, 2, 1780000000000, -0.0, 1),
      Device(5, 9, 1, "Pump"),  // LSNs 3 and 4 compacted away at the origin
      Reading(6, INT64_MAX, INT64_MIN, nan, UINT32_MAX),
      Device(7, 9, 2, ""),
      Reading(1000000, 3, INT64_MAX, 0.1 + 0.2),
      Reading(static_cast<uint64_t>(INT64_MAX), 1, 0, -1013.25),
  });
  ExpectRoundTrip({Device(42, 1, 1, std::string(256, 'x'))});
}

TEST(RemoteChunkCodecTest, AnUplinkBatchOfTheReferenceWorkloadTakesAFewBytesPerReading) {
  test::SensorWorkload w(1000, 1780000000000);
  std::vector<RemoteChunkEntry> in;
  for (const edgesync::Reading& r : w.Take(1600)) {
    in.push_back(Reading(in.size() + 1001, static_cast<int64_t>(in.size() % 8000) + 1, r.ts_ms, r.value, r.quality));
  }
  ExpectRoundTrip(in);
  std::string block;
  EncodeRemoteChunk(in, &block);
  EXPECT_LT(static_cast<double>(block.size()) / static_cast<double>(in.size()), 4.0) << block.size();
}

TEST(RemoteChunkCodecTest, RefusesEveryDamagedOrForeignBlockWithAClearError) {
  std::vector<RemoteChunkEntry> in;
  for (uint64_t i = 1; i <= 200; ++i) in.push_back(Reading(i * 2, static_cast<int64_t>(i % 5), 1000 * i, i * 0.5));
  in.push_back(Device(500, 3, 1, "Pump"));
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
  ASSERT_TRUE(DecodeRemoteChunk(block, 1000, &good).ok());
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
}  // namespace edgesync

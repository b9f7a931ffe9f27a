// tests/support/codec_test_util.h: what the store's block codec tests
// share: comparing decoded entries with the inputs (values bit for bit) and
// making remote chunk entries.
#ifndef EDGESYNC_TESTS_SUPPORT_CODEC_TEST_UTIL_H_
#define EDGESYNC_TESTS_SUPPORT_CODEC_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "store/chunk_codec.h"
#include "store/remote_chunk_codec.h"

namespace edgesync::test {

inline bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

inline void ExpectSameEntries(const std::vector<ChunkReading>& got, const std::vector<ChunkReading>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].series, want[i].series) << i;
    EXPECT_EQ(got[i].ts_ms, want[i].ts_ms) << i;
    EXPECT_TRUE(SameBits(got[i].value, want[i].value)) << i << ": " << want[i].value << " came back " << got[i].value;
    EXPECT_EQ(got[i].quality, want[i].quality) << i;
  }
}

inline void ExpectSameEntries(const std::vector<SeriesPoint>& got, const std::vector<SeriesPoint>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].lsn, want[i].lsn) << i;
    EXPECT_EQ(got[i].ts_ms, want[i].ts_ms) << i;
    EXPECT_TRUE(SameBits(got[i].value, want[i].value)) << i << ": " << want[i].value << " came back " << got[i].value;
    EXPECT_EQ(got[i].quality, want[i].quality) << i;
  }
}

inline void ExpectSameEntries(const std::vector<RemoteChunkEntry>& got, const std::vector<RemoteChunkEntry>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].olsn, want[i].olsn) << i;
    EXPECT_EQ(got[i].kind, want[i].kind) << i;
    EXPECT_EQ(got[i].series, want[i].series) << i;
    EXPECT_EQ(got[i].ts_ms, want[i].ts_ms) << i;
    EXPECT_TRUE(SameBits(got[i].value, want[i].value)) << i << ": " << want[i].value << " came back " << got[i].value;
    EXPECT_EQ(got[i].quality, want[i].quality) << i;
    EXPECT_EQ(got[i].name, want[i].name) << i;
    EXPECT_EQ(got[i].location, want[i].location) << i;
    EXPECT_EQ(got[i].default_unit, want[i].default_unit) << i;
    EXPECT_EQ(got[i].to_ms, want[i].to_ms) << i;
  }
}

inline RemoteChunkEntry RemoteReading(uint64_t olsn, int64_t series, int64_t ts, double value, uint32_t quality = 0) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.series = series;
  e.ts_ms = ts;
  e.value = value;
  e.quality = quality;
  return e;
}

// kind: 1 a device record, 2 its deletion (ChangeEntry::Kind).
inline RemoteChunkEntry RemoteDevice(uint64_t olsn, int64_t series, uint8_t kind, std::string name,
                                     std::string location = "roof", std::string unit = "Cel") {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.kind = kind;
  e.series = series;
  e.name = std::move(name);
  e.location = std::move(location);
  e.default_unit = std::move(unit);
  return e;
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_CODEC_TEST_UTIL_H_

// Golden bytes of every stored block format: local commit chunks (format 1),
// span markers (2), series blocks (3 with zstd, 4 plain) and remote chunks
// (region_chunks / view_chunks, format 1 with a zstd checksum). Stores in
// the field hold these bytes, so a change to the coding must leave what it
// writes identical and must keep reading what older builds wrote. Each case
// encodes fixed inputs (edge values included: NaN with and without payload,
// infinities, -0.0, the largest exact mantissa and one past it, decimals at
// the largest scale, doubles that are no decimal, device texts, empty
// blocks) and compares with the pinned hex, then decodes the pinned hex and
// compares with the inputs bit for bit.
//
// The zstd frames inside formats 1 and 3 are what zstd 1.5.4 (Debian 12)
// writes at level 3. A zstd release that compresses differently would fail
// the encode half while the decode half keeps passing: old blocks stay
// readable, new ones differ; pin the new bytes only after checking that.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "store/chunk_codec.h"
#include "store/remote_chunk_codec.h"
#include "tests/support/codec_test_util.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

double FromBits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// Values every codec is pinned on: exact decimals of every kind the coding
// distinguishes, and doubles that must travel as raw bits.
std::vector<double> EdgeValues() {
  const double inf = std::numeric_limits<double>::infinity();
  return {
      21.37,
      -0.0,
      0.0,
      std::numeric_limits<double>::quiet_NaN(),
      FromBits(0xfff0000000000123),  // a negative NaN with a payload
      inf,
      -inf,
      9007199254740991.0,   // 2^53 - 1: the largest mantissa at scale 0
      9007199254740992.0,   // 2^53: raw bits
      -9007199254740991.0,
      1e15,
      1e-15,                // scale 15, mantissa 1
      1.5e-16,              // past the largest scale: raw bits
      0.1 + 0.2,            // no decimal: raw bits
      1e300,
      std::numeric_limits<double>::denorm_min(),
      -1013.25,
      123456.789012345,
      21.38,
      21.36,
  };
}

std::vector<ChunkReading> GoldenChunkReadings() {
  const std::vector<double> values = EdgeValues();
  std::vector<ChunkReading> in;
  for (size_t i = 0; i < values.size(); ++i) {
    in.push_back({static_cast<int64_t>(i % 3) + 1, 1780000000000 + static_cast<int64_t>(i / 3) * 1000, values[i],
                  static_cast<uint32_t>(i % 2)});
  }
  in.push_back({INT64_MAX, INT64_MIN, 1.0, UINT32_MAX});
  in.push_back({1, INT64_MAX, -1.0, 0});
  return in;
}

// A round of the reference shape: 40 series at one tick, values a few
// steps of their resolution apart (what zstd gets to squeeze).
std::vector<ChunkReading> GoldenChunkRounds() {
  std::vector<ChunkReading> in;
  for (int round = 0; round < 5; ++round) {
    for (int s = 1; s <= 40; ++s) {
      in.push_back({s, 1780000000000 + round * 10000, 20.0 + s * 0.25 + round * 0.01, 0});
    }
  }
  return in;
}

std::vector<SeriesPoint> GoldenSeriesPoints() {
  const std::vector<double> values = EdgeValues();
  std::vector<SeriesPoint> in;
  int64_t lsn = 1;
  int64_t ts = 1780000000000;
  for (size_t i = 0; i < values.size(); ++i) {
    in.push_back({lsn, ts, values[i], static_cast<uint32_t>(i % 2)});
    lsn += 1 + static_cast<int64_t>(i % 4) * 40;
    ts += 10000 + (i == 7 ? 3 : 0);  // one late reading in a fixed period
  }
  in.push_back({INT64_MAX - 1, INT64_MIN, 2.5, UINT32_MAX});
  in.push_back({INT64_MAX, INT64_MAX, -2.5, 0});
  return in;
}

// A few points: zstd's frame would outweigh what it squeezes, so the block
// goes plain (format 4). A raw value between decimals leaves the previous
// mantissa where it was.
std::vector<SeriesPoint> GoldenSeriesFew() {
  return {{3, 1780000000000, 21.37, 0},
          {90, 1780000010000, 0.1 + 0.2, 1},
          {91, 1780000020000, 21.5, 0},
          {200, 1780000030001, -0.0, 2}};
}

// One sensor at a fixed period for 300 readings: long enough for zstd to
// pay (format 3 rather than the plain format 4).
std::vector<SeriesPoint> GoldenSeriesRun() {
  std::vector<SeriesPoint> in;
  for (int i = 0; i < 300; ++i) {
    in.push_back({1 + i * 8000, 1780000000000 + i * 10000, 18.5 + (i % 7) * 0.1 - (i % 3) * 0.05, 0});
  }
  return in;
}

std::vector<RemoteChunkEntry> GoldenRemoteEntries() {
  const std::vector<double> values = EdgeValues();
  std::vector<RemoteChunkEntry> in;
  uint64_t olsn = 7;
  for (size_t i = 0; i < values.size(); ++i) {
    in.push_back(RemoteReading(olsn, static_cast<int64_t>(i % 3) + 1, 1780000000000 + static_cast<int64_t>(i) * 500,
                               values[i], static_cast<uint32_t>(i % 2)));
    olsn += 1 + (i % 5 == 4 ? 3 : 0);  // holes where the origin compacted
    if (i == 5) in.push_back(RemoteDevice(olsn++, 9, 1, "Pump \xc3\xa9t\xc3\xa9", "roof/north", "Cel"));
    if (i == 11) in.push_back(RemoteDevice(olsn++, 9, 2, "", "", ""));
  }
  in.push_back(RemoteReading(static_cast<uint64_t>(INT64_MAX) - 1, INT64_MAX, INT64_MIN, 1.0, UINT32_MAX));
  in.push_back(RemoteDevice(static_cast<uint64_t>(INT64_MAX), 1, 1, std::string(256, 'x'), "\xe2\x84\x83", "%RH"));
  return in;
}

// Pinned bytes. Written by the coding as it stood before the value coding
// and the block frame had one home (store/column_coding.h,
// store/column_block.h); every later build must write them again.
const char kGoldenChunkReadings[] =
    "01850228b52ffd600500950500b408162802020203faff01fbff012a80a0a484ce670000d00fa082dbfbb198ffffff01"
    "011a00010f001602100010101010001000000f0209020200002cb22100feffff1ffdffff1f8080b4ccd4dfc6030299af"
    "0cf2fdeee0909238b421b021020150008000f87f2301f0ff0000f07f40434d67e2f1059ea53c3433d33f9c7500883ce4"
    "377e01000000000000001000b890331700232986578c8086c5a14b315294792c2b25586bce53bb9f401eb80c8bb822";
const char kGoldenChunkRounds[] =
    "01c00928b52ffd60c0036d0d00469a623a5065ce01cb69f4760f27f7f50ad371b486d7cf69f49c46f8541fec251a49ee"
    "eb615555b999153b35c35886f151b92949564444445acc3ccc66c75600510051001334215faac01f31ca9045c0db1821"
    "4f19d0398c0c3709d83006653b0280182fa74300b2ca93615a019678aaabf9b6e491aacbd39cc7a1229f1f4ffc501e44"
    "b1e8161d492abacba838503e14c64697606160d1911d190d9872212ec74e589345a8b0ba501dd4816266c40c4d834ff5"
    "699fe14bc28750e36fbee42bddd53b3cc74f5cdcb1fdd90f10058e7aa6453a925739836b988427b775371667496ba9af"
    "eaa90d5ad2cb94051cb32376681b802a5041d3348396e487acc1375cc295ebba1d9bb3272bd658fdd40745d171cea668"
    "46bed5af7dd29f84ad70e3719ef496feea9edee025bf6cd9066d08980213b4841ee983ccca08b00d078a7ffba55f095d"
    "61c7e7fcc98b3dd63ffdc1517cdcb32dda11700566744d93f424b7f206e330892df7753db7614b7ba9b20aaa109aa209"
    "53628ee6c1c7fab6dff0292144c8f113dee4113aac2f740777080b0016a4b0887880dd539e9c820053de6e2a0dc143e2"
    "9eab4ba52078b0126801";
const char kGoldenChunkEmpty[] =
    "010728b52ffd200739000000000000000000";
const char kGoldenSeriesPoints[] =
    "03900228b52ffd6010001d06006409161e0101295179b2f7ff7f013280a0a484ce67df83a384ce6700060500faaac3fb"
    "b198ffffff019bc7c41a00010f001602100010101010001000000f02090202010139b221b121feffff1ffbffff3ffeff"
    "b3ccd4dfc623fd039baf0c8cadfbe0909238bddcee03fd206350008000f87f2301f0ff0000f07f40434d67e2f1059ea5"
    "3c3433d33f9c7500883ce4377e01000000000000001300b890331700232986578c80867158a858b5322925885191b0a2"
    "a410ac9c775bf20735805bb876dc3923";
const char kGoldenSeriesRun[] =
    "038c1228b52ffd600c08f503008405ac02d70401c03eb60280a0a484ce67df83a384ce670000ac02ac02010210011001"
    "0102010102100001010200b903f2028c1a851a0204ec19f71904b01aff1cbc1df11a049e1a9b1a04d41aa71dcce00299"
    "324099d93240cc0c00403b15cc740008013170d790a550eaa3c0a944ca2a101609cb529b12a08228556e0b";
const char kGoldenSeriesFew[] =
    "0404040357016d0e80a0a484ce67df83a384ce6700020400010002040210011004b221831e10343333333333d33f0000"
    "000000000080";
const char kGoldenSeriesEmpty[] =
    "0400000000000000";
const char kGoldenSpanMarker[] =
    "02808080808020c03e";
const char kGoldenRemoteEntries[] =
    "019b0528b52ffd649b018d0800840c180720000300d8ff7f00180001000200012a0202020302020c0f0302fa01fbff01"
    "5480a0a484ce67e80787c7f0cef7f5e0fdc8cbdafbb198ffffff01ff011c00010f001802100010101000000f10020902"
    "0200002eb2210000fe1ffdffff1f8080b4ccd4dfc603020099af0cf2fdeee0909238b421b021020050008000f87f23f0"
    "ff00f07f40434d67e2f1059ea53c3433d33f9c7500883ce4377e000000a7020a50756d7020c3a974c3a90a726f6f662f"
    "6e6f7274680343656c00000080027803e28483032552482220a00274d4c5e5237a9a466ce508406618c860e8460d8fe8"
    "02163b36df076e81a40b640912a12f115603a0e0b23843f0c0703f940f5ba05b87e468c21eae11c6982c1838284413a2"
    "054a";
const char kGoldenRemoteEmpty[] = "010b28b52ffd240b450000100000010005c002aa2ac848";

// Encodes in and compares with the pinned hex, whose first byte must be
// format; decodes the pinned bytes and compares with in.
template <typename Entry, typename Encode, typename Decode>
void ExpectGolden(const std::vector<Entry>& in, const char* golden, uint8_t format, Encode encode, Decode decode) {
  std::string block;
  encode(in, &block);
  EXPECT_EQ(Hex(block), golden);
  const std::string pinned = Unhex(golden);
  ASSERT_FALSE(pinned.empty());
  EXPECT_EQ(static_cast<uint8_t>(pinned[0]), format);
  std::vector<Entry> out;
  Status st = decode(pinned, &out);
  ASSERT_OK(st);
  ExpectSameEntries(out, in);
}

void ExpectChunkGolden(const std::vector<ChunkReading>& in, const char* golden) {
  ExpectGolden(in, golden, 1, EncodeChunk, [](const std::string& b, std::vector<ChunkReading>* out) {
    return DecodeChunk(b, kMaxChunkReadings, out);
  });
}

void ExpectSeriesGolden(const std::vector<SeriesPoint>& in, const char* golden, uint8_t format) {
  ExpectGolden(in, golden, format, EncodeSeriesBlock, [](const std::string& b, std::vector<SeriesPoint>* out) {
    return DecodeSeriesBlock(b, kMaxChunkReadings, out);
  });
}

TEST(CodecGoldenTest, LocalCommitChunksKeepTheirBytes) {
  ExpectChunkGolden(GoldenChunkReadings(), kGoldenChunkReadings);
  ExpectChunkGolden(GoldenChunkRounds(), kGoldenChunkRounds);
  ExpectChunkGolden({}, kGoldenChunkEmpty);
}

TEST(CodecGoldenTest, SeriesBlocksKeepTheirBytesInBothFormats) {
  ExpectSeriesGolden(GoldenSeriesPoints(), kGoldenSeriesPoints, 3);
  ExpectSeriesGolden(GoldenSeriesRun(), kGoldenSeriesRun, 3);
  ExpectSeriesGolden(GoldenSeriesFew(), kGoldenSeriesFew, 4);
  ExpectSeriesGolden({}, kGoldenSeriesEmpty, 4);
}

TEST(CodecGoldenTest, SpanMarkersKeepTheirBytes) {
  const SpanMarker in{int64_t{1} << 40, 8000};
  std::string block;
  EncodeSpanMarker(in, &block);
  EXPECT_EQ(Hex(block), kGoldenSpanMarker);
  SpanMarker out;
  ASSERT_OK(DecodeSpanMarker(Unhex(kGoldenSpanMarker), &out));
  EXPECT_EQ(out.first_block, in.first_block);
  EXPECT_EQ(out.blocks, in.blocks);
}

TEST(CodecGoldenTest, RemoteChunksKeepTheirBytes) {
  ExpectGolden(GoldenRemoteEntries(), kGoldenRemoteEntries, 1, EncodeRemoteChunk,
               [](const std::string& b, std::vector<RemoteChunkEntry>* out) {
                 return DecodeRemoteChunk(b, kMaxRemoteChunkEntries, out);
               });
  // An empty remote chunk is never stored (the decoder refuses a count of
  // 0), but its bytes are what the fuzz target takes the format byte from.
  std::string block;
  EncodeRemoteChunk({}, &block);
  EXPECT_EQ(Hex(block), kGoldenRemoteEmpty);
  std::vector<RemoteChunkEntry> out;
  EXPECT_FALSE(DecodeRemoteChunk(Unhex(kGoldenRemoteEmpty), kMaxRemoteChunkEntries, &out).ok());
}

}  // namespace
}  // namespace edgesync::test

// Protocol 8 on the wire (sync/PROTOCOL.md, "Priority by topic"): a batch
// names its priority level, may carry no entry and declares a span wider
// than its entries; an answer carries the region's priority marks. What no
// sender of this protocol writes is refused and counted, never applied.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/files.h"
#include "sync/batch_generated.h"
#include "sync/columns.h"
#include "sync/wire.h"
#include "tests/support/status_assert.h"
#include "tests/support/wire_peer.h"

namespace edgesync {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};

ChangeEntry ReadingAt(uint64_t lsn, uint32_t level, uint32_t flags = 0) {
  ChangeEntry e;
  e.lsn = lsn;
  e.reading = Reading{"dev-" + std::to_string(lsn % 3), "alarm", 1780000000000 + static_cast<int64_t>(lsn) * 1000,
                      static_cast<double>(lsn) / 4, "", WithPriority(flags, level)};
  return e;
}

WireBatch PriorityBatch(uint8_t level, uint64_t first, uint64_t last, const std::vector<uint64_t>& lsns) {
  WireBatch b;
  b.origin = kOrigin;
  b.first_lsn = first;
  b.last_lsn = last;
  b.base_lsn = 7;
  b.region_epoch = 12345;
  b.region_held = 6;
  b.priority = level;
  for (uint64_t lsn : lsns) b.entries.push_back(ReadingAt(lsn, level, kQualitySensorFlagged));
  return b;
}

Status Decode(const std::string& payload, WireMessage* m, WireCounters* counters) {
  return DecodeMessage(payload, {}, m, counters);
}

// A batch the encoder would not write, built field by field: uncompressed
// entries (codec None), any level, live flag and encoding (Unknown: the one
// a sender writes, ColumnsPriority for a priority batch, else ColumnsV1).
std::string RawBatch(const std::vector<ChangeEntry>& entries, uint64_t first, uint64_t last, uint8_t priority,
                     bool live = false, wire::Encoding encoding = wire::Encoding::Unknown) {
  if (encoding == wire::Encoding::Unknown) {
    encoding = priority != 0 ? wire::Encoding::ColumnsPriority : wire::Encoding::ColumnsV1;
  }
  std::string raw = entries.empty() ? std::string() : EncodeEntries(entries, first - 1, nullptr);
  flatbuffers::FlatBufferBuilder fbb;
  auto origin = wire::CreateWireOrigin(fbb, fbb.CreateString(kOrigin.gateway_id), fbb.CreateString(kOrigin.epoch));
  auto body = fbb.CreateVector(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  auto b = wire::CreateBatch(fbb, origin, first, last, 0, static_cast<uint32_t>(entries.size()), wire::Codec::None,
                             encoding, static_cast<uint32_t>(raw.size()), body,
                             encoding == wire::Encoding::ColumnsContext ? 3 : 0, 0, false, 0, 0, false, false, 0, live,
                             priority);
  auto rt = fbb.CreateString("edgesync/reply/gw-1/up");
  wire::FinishMessageBuffer(fbb, wire::CreateMessage(fbb, kWireVersion, rt, 1, wire::Body::Batch, b.Union()));
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

TEST(WirePriorityTest, APriorityBatchRoundTripsItsLevelItsSpanAndItsEntries) {
  for (uint8_t level = 1; level <= kMaxPriorityLevel; ++level) {
    SCOPED_TRACE(static_cast<int>(level));
    // Entries scattered through a span that runs past the last of them.
    const WireBatch b = PriorityBatch(level, 10, 500, {12, 40, 41, 300});
    std::string payload;
    ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 9, b, {}, &payload));
    WireMessage m;
    WireCounters counters;
    ASSERT_OK(Decode(payload, &m, &counters));
    EXPECT_EQ(m.version, kWireVersion);
    EXPECT_EQ(m.version, kPriorityVersion);
    ASSERT_EQ(m.kind, WireKind::kBatch);
    EXPECT_EQ(m.batch.priority, level);
    EXPECT_EQ(wire::GetMessage(payload.data())->body_as_Batch()->encoding(), wire::Encoding::ColumnsPriority);
    EXPECT_FALSE(m.batch.live);
    EXPECT_EQ(m.batch.first_lsn, 10u);
    EXPECT_EQ(m.batch.last_lsn, 500u);
    EXPECT_EQ(m.batch.base_lsn, 7u);
    EXPECT_EQ(m.batch.region_epoch, 12345u);
    EXPECT_EQ(m.batch.region_held, 6u);
    EXPECT_EQ(m.batch.context_lsn, 0u);
    EXPECT_FALSE(m.batch.keep_context);
    ASSERT_EQ(m.batch.entries.size(), b.entries.size());
    for (size_t i = 0; i < b.entries.size(); ++i) {
      EXPECT_EQ(m.batch.entries[i].lsn, b.entries[i].lsn);
      EXPECT_EQ(m.batch.entries[i].reading.quality, b.entries[i].reading.quality);
      EXPECT_EQ(QualityPriority(m.batch.entries[i].reading.quality), level);
      EXPECT_EQ(QualityFlags(m.batch.entries[i].reading.quality), uint32_t{kQualitySensorFlagged});
      EXPECT_EQ(m.batch.entries[i].reading.device_id, b.entries[i].reading.device_id);
      EXPECT_EQ(m.batch.entries[i].reading.value, b.entries[i].reading.value);
    }
    EXPECT_EQ(counters.decoded, 1u);
    EXPECT_EQ(counters.rejected(), 0u);
  }
}

TEST(WirePriorityTest, APriorityBatchWithoutEntriesDeclaresItsSpanOnly) {
  const WireBatch b = PriorityBatch(2, 1, 4000, {});
  std::string payload;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 9, b, {}, &payload));
  WireMessage m;
  WireCounters counters;
  ASSERT_OK(Decode(payload, &m, &counters));
  EXPECT_EQ(m.batch.priority, 2);
  EXPECT_EQ(m.batch.first_lsn, 1u);
  EXPECT_EQ(m.batch.last_lsn, 4000u);
  EXPECT_TRUE(m.batch.entries.empty());
  EXPECT_EQ(wire::GetMessage(payload.data())->body_as_Batch()->encoding(), wire::Encoding::ColumnsPriority);
  EXPECT_EQ(counters.decoded, 1u);
  // A lane batch still needs an entry.
  WireBatch lane = b;
  lane.priority = 0;
  EXPECT_EQ(EncodeBatch("edgesync/reply/gw-1/up", 9, lane, {}, &payload).code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(Decode(RawBatch({}, 1, 4000, 0), &m, &counters).code(), Status::Code::kCorruption);
  EXPECT_EQ(counters.bad_entries, 1u);
}

// A lane batch keeps its level bits in each entry's quality, and says 0.
TEST(WirePriorityTest, ALaneBatchCarriesEveryLevelAndSaysPriorityZero) {
  WireBatch b;
  b.origin = kOrigin;
  b.first_lsn = 1;
  for (uint32_t i = 0; i < 8; ++i) b.entries.push_back(ReadingAt(i + 1, i % 4));
  b.last_lsn = 8;
  std::string payload;
  SeriesContext context;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 1, b, {}, &payload, &context));
  WireMessage m;
  ASSERT_OK(Decode(payload, &m, nullptr));
  EXPECT_EQ(m.batch.priority, 0);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(QualityPriority(m.batch.entries[i].reading.quality), i % 4);
}

// The encoder leaves a sender's series context alone for a priority batch:
// the backlog's next batch still refers to it.
TEST(WirePriorityTest, APriorityBatchLeavesTheSendersContextAsItIs) {
  WireBatch lane;
  lane.origin = kOrigin;
  lane.first_lsn = 1;
  lane.entries = {ReadingAt(1, 0), ReadingAt(2, 0)};
  lane.last_lsn = 2;
  SeriesContext context;
  std::string payload;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 1, lane, {}, &payload, &context));
  const uint64_t lsn = context.lsn(), hash = context.hash();
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 2, PriorityBatch(1, 3, 9, {5}), {}, &payload, &context));
  EXPECT_EQ(context.lsn(), lsn);
  EXPECT_EQ(context.hash(), hash);
  WireMessage m;
  ASSERT_OK(Decode(payload, &m, nullptr));
  EXPECT_EQ(m.batch.context_lsn, 0u);
  EXPECT_EQ(m.batch.priority, 1);
}

TEST(WirePriorityTest, TheEncoderRefusesWhatTheProtocolDoesNotAllow) {
  std::string payload;
  auto encode = [&payload](const WireBatch& b) { return EncodeBatch("r", 1, b, {}, &payload).code(); };
  WireBatch b = PriorityBatch(4, 1, 10, {});
  EXPECT_EQ(encode(b), Status::Code::kInvalidArgument);
  b = PriorityBatch(1, 1, 10, {3});
  b.live = true;
  EXPECT_EQ(encode(b), Status::Code::kInvalidArgument);
  b = PriorityBatch(1, 1, 10, {3});
  b.entries[0].reading.quality = WithPriority(0, 2);
  EXPECT_EQ(encode(b), Status::Code::kInvalidArgument);
  b = PriorityBatch(1, 5, 10, {3});
  EXPECT_EQ(encode(b), Status::Code::kInvalidArgument);
  b = PriorityBatch(1, 5, 10, {11});
  EXPECT_EQ(encode(b), Status::Code::kInvalidArgument);
  b = PriorityBatch(1, 11, 10, {});
  EXPECT_EQ(encode(b), Status::Code::kInvalidArgument);
}

// Bytes no sender of protocol 8 writes: refused as a bad batch (the hub
// answers BadBatch) and counted.
TEST(WirePriorityTest, TheDecoderRefusesBadPriorityBatchesWithACounter) {
  WireCounters counters;
  WireMessage m;
  size_t refused = 0;
  auto expect_refused = [&](const std::string& payload, const std::string& why) {
    Status st = Decode(payload, &m, &counters);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.ToString();
    EXPECT_EQ(counters.bad_entries, ++refused);
  };
  expect_refused(RawBatch({ReadingAt(3, 0)}, 1, 10, 4), "priority level 4 above 3");
  expect_refused(RawBatch({}, 1, 10, 255), "priority level 255 above 3");
  expect_refused(RawBatch({ReadingAt(3, 1)}, 1, 10, 1, /*live=*/true), "marked live");
  expect_refused(RawBatch({ReadingAt(3, 1)}, 1, 10, 1, false, wire::Encoding::ColumnsContext), "series context");
  // The encoding and the level go together, both ways.
  expect_refused(RawBatch({ReadingAt(3, 1)}, 1, 10, 1, false, wire::Encoding::ColumnsV1), "not ColumnsPriority");
  expect_refused(RawBatch({}, 1, 10, 2, false, wire::Encoding::ColumnsV1), "not ColumnsPriority");
  expect_refused(RawBatch({ReadingAt(3, 0)}, 1, 3, 0, false, wire::Encoding::ColumnsPriority),
                 "without a priority level");
  // An entry of another level, of no level, or no reading at all.
  expect_refused(RawBatch({ReadingAt(3, 1), ReadingAt(4, 2)}, 1, 10, 1), "entry 4 of a priority 1 batch");
  expect_refused(RawBatch({ReadingAt(3, 0)}, 1, 10, 3), "entry 3 of a priority 3 batch");
  ChangeEntry device;
  device.lsn = 5;
  device.kind = ChangeEntry::Kind::kDeviceUpsert;
  device.device = DeviceRecord{"dev-1", "n", "l", "", false};
  expect_refused(RawBatch({ReadingAt(3, 2), device}, 1, 10, 2), "entry 5 of a priority 2 batch");
  // Entries outside the declared span, an inverted or empty span.
  expect_refused(RawBatch({ReadingAt(12, 1)}, 1, 10, 1), "outside");
  expect_refused(RawBatch({}, 11, 10, 1), "inverted");
  expect_refused(RawBatch({}, 0, 10, 1), "inverted");
  EXPECT_EQ(counters.decoded, 0u);
  EXPECT_EQ(counters.rejected(), refused);
  // The same shapes at a valid level decode.
  ASSERT_OK(Decode(RawBatch({ReadingAt(3, 1), ReadingAt(9, 1)}, 1, 10, 1), &m, &counters));
  EXPECT_EQ(m.batch.entries.size(), 2u);
  EXPECT_EQ(m.batch.last_lsn, 10u);
}

// A decoder that does not read Batch.priority (protocol 7; here the field
// zeroed) must not take a priority batch for a lane batch covering its
// span: its encoding is ColumnsPriority, which that decoder refuses
// (CheckEncoding: only ColumnsV1 or a context), and this one refuses
// without a level. With or without entries.
TEST(WirePriorityTest, APriorityBatchReadWithoutItsLevelIsRefused) {
  for (const WireBatch& b : {PriorityBatch(1, 10, 500, {12, 40}), PriorityBatch(2, 10, 500, {})}) {
    std::string payload;
    ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 9, b, {}, &payload));
    const std::string old_read = WithoutPriority(payload);
    ASSERT_FALSE(old_read.empty());
    EXPECT_EQ(wire::GetMessage(old_read.data())->body_as_Batch()->priority(), 0);
    EXPECT_EQ(wire::GetMessage(old_read.data())->body_as_Batch()->encoding(), wire::Encoding::ColumnsPriority);
    WireMessage m;
    WireCounters counters;
    Status st = Decode(old_read, &m, &counters);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
    EXPECT_EQ(counters.decoded, 0u);
    EXPECT_EQ(counters.rejected(), 1u);
  }
}

// A hub's context for the origin is not touched by a priority batch, even
// a refused one: the backlog's next batch still decodes against it.
TEST(WirePriorityTest, AHubsSeriesContextSurvivesPriorityBatches) {
  SeriesContextCache contexts(size_t{1} << 20);
  const std::string sender = "gw-1";
  WireBatch lane;
  lane.origin = kOrigin;
  lane.first_lsn = 1;
  lane.entries = {ReadingAt(1, 0), ReadingAt(2, 1)};
  lane.last_lsn = 2;
  SeriesContext context;
  std::string payload;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 1, lane, {}, &payload, &context));
  WireMessage m;
  ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr, &contexts, &sender));
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 2, PriorityBatch(1, 3, 9, {5}), {}, &payload));
  ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr, &contexts, &sender));
  EXPECT_FALSE(DecodeMessage(RawBatch({ReadingAt(6, 2)}, 3, 9, 1), {}, &m, nullptr, &contexts, &sender).ok());
  lane.first_lsn = 3;
  lane.entries = {ReadingAt(3, 0), ReadingAt(4, 0)};
  lane.last_lsn = 4;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 3, lane, {}, &payload, &context));
  ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr, &contexts, &sender));
  EXPECT_EQ(m.batch.context_lsn, 2u);
  EXPECT_EQ(m.batch.entries.size(), 2u);
}

TEST(WirePriorityTest, AnAnswerCarriesThePriorityMarks) {
  WireAck ack{"eu", kOrigin, 100, AckCode::kOk, "", "0123456789abcdef0123456789abcdef", {{110, 120}}};
  WireMessage m;
  ASSERT_OK(DecodeMessage(EncodeAck(1, ack), {}, &m, nullptr));
  EXPECT_TRUE(m.ack.priority_held.empty());
  // All zero is what an older hub says: nothing on the wire.
  ack.priority_held = {0, 0, 0};
  ASSERT_OK(DecodeMessage(EncodeAck(2, ack), {}, &m, nullptr));
  EXPECT_TRUE(m.ack.priority_held.empty());
  ack.priority_held = {4000, 0, 1ull << 40};
  for (AckCode code : {AckCode::kOk, AckCode::kGap}) {
    ack.code = code;
    ASSERT_OK(DecodeMessage(EncodeAck(3, ack), {}, &m, nullptr));
    EXPECT_EQ(m.ack.code, code);
    EXPECT_EQ(m.ack.priority_held, ack.priority_held);
    EXPECT_EQ(m.ack.high_water, 100u);
    EXPECT_EQ(m.ack.held, ack.held);
  }
  // Fewer than three: the levels named, the others 0.
  ack.priority_held = {17};
  ASSERT_OK(DecodeMessage(EncodeAck(4, ack), {}, &m, nullptr));
  EXPECT_EQ(m.ack.priority_held, std::vector<uint64_t>{17});
}

TEST(WirePriorityTest, AnAnswerWithMoreThanThreeMarksIsRefusedAndCounted) {
  WireAck ack{"eu", kOrigin, 100, AckCode::kOk, "", "", {}};
  ack.priority_held = {1, 2, 3, 4};
  WireCounters counters;
  WireMessage m;
  Status st = DecodeMessage(EncodeAck(1, ack), {}, &m, &counters);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("priority marks"), std::string::npos) << st.ToString();
  EXPECT_EQ(counters.bad_entries, 1u);
  EXPECT_EQ(counters.decoded, 0u);
}

TEST(WirePriorityTest, TheQualityByteKeepsFlagsLevelAndPeriodApart) {
  const uint32_t q = kQualityUntrustedClock | kQualityCorrectedTime | (5u << kQualityPeriodShift);
  for (uint32_t level = 0; level <= kMaxPriorityLevel; ++level) {
    const uint32_t with = WithPriority(q, level);
    EXPECT_EQ(QualityPriority(with), level);
    EXPECT_EQ(QualityFlags(with), QualityFlags(q));
    EXPECT_EQ(QualityPeriod(with), 5u);
    EXPECT_EQ(WithPriority(with, 0), q);
  }
  // A level out of range never spills into the flags or the period.
  EXPECT_EQ(QualityFlags(WithPriority(q, 0xff)), QualityFlags(q));
  EXPECT_EQ(QualityPeriod(WithPriority(q, 0xff)), 5u);
  EXPECT_EQ(kQualityPriorityMask, uint32_t{kMaxPriorityLevel} << kQualityPriorityShift);
  EXPECT_EQ(kQualityFlagMask & kQualityPriorityMask, 0u);
  EXPECT_LT(kQualityPriorityMask, 1u << kQualityPeriodShift);
}

// The fuzz target's protocol 8 seeds are what they say they are.
TEST(WirePriorityTest, FuzzSeedsDecode) {
  const std::string dir = std::string(EDGESYNC_SOURCE_DIR) + "/tests/fuzz/corpus/batch_fuzz/";
  std::string bytes;
  WireMessage m;
  ASSERT_OK(ReadFile(dir + "batch_priority", &bytes));
  ASSERT_OK(Decode(bytes, &m, nullptr));
  EXPECT_EQ(m.batch.priority, 1);
  EXPECT_EQ(m.batch.entries.size(), 4u);
  EXPECT_EQ(m.batch.last_lsn, 500u);
  ASSERT_OK(ReadFile(dir + "batch_priority_empty", &bytes));
  ASSERT_OK(Decode(bytes, &m, nullptr));
  EXPECT_EQ(m.batch.priority, 3);
  EXPECT_TRUE(m.batch.entries.empty());
  // The first as a decoder before protocol 8 reads it (no priority): refused.
  ASSERT_OK(ReadFile(dir + "batch_priority_unleveled", &bytes));
  WireCounters counters;
  EXPECT_EQ(Decode(bytes, &m, &counters).code(), Status::Code::kCorruption);
  EXPECT_EQ(counters.bad_entries, 1u);
  ASSERT_OK(ReadFile(dir + "ack_priority_held", &bytes));
  ASSERT_OK(Decode(bytes, &m, nullptr));
  EXPECT_EQ(m.ack.priority_held, (std::vector<uint64_t>{4000, 0, 300}));
}

}  // namespace
}  // namespace edgesync

// The wire format: exact round trips, compactness on the reference workload,
// and rejection of hostile payloads with a counter.
#include "sync/wire.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "sync/batch_generated.h"
#include "sync/columns.h"
#include "tests/support/workload.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};

WireBatch MakeBatch(const std::vector<Reading>& readings, uint64_t first_lsn) {
  WireBatch b;
  b.origin = kOrigin;
  b.first_lsn = first_lsn;
  b.base_lsn = first_lsn - 1;
  uint64_t lsn = first_lsn;
  for (const Reading& r : readings) {
    ChangeEntry e;
    e.lsn = lsn++;
    e.reading = r;
    b.entries.push_back(e);
  }
  b.last_lsn = lsn - 1;
  return b;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void ExpectSameEntries(const std::vector<ChangeEntry>& want, const std::vector<ChangeEntry>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(want[i].lsn, got[i].lsn);
    ASSERT_EQ(want[i].kind, got[i].kind);
    if (want[i].kind == ChangeEntry::Kind::kReading) {
      EXPECT_EQ(want[i].reading.device_id, got[i].reading.device_id);
      EXPECT_EQ(want[i].reading.metric, got[i].reading.metric);
      EXPECT_EQ(want[i].reading.unit, got[i].reading.unit);
      EXPECT_EQ(want[i].reading.ts_ms, got[i].reading.ts_ms);
      EXPECT_EQ(want[i].reading.quality, got[i].reading.quality);
      EXPECT_TRUE(SameBits(want[i].reading.value, got[i].reading.value))
          << want[i].reading.value << " vs " << got[i].reading.value;
    } else {
      EXPECT_EQ(want[i].device.device_id, got[i].device.device_id);
      EXPECT_EQ(want[i].device.name, got[i].device.name);
      EXPECT_EQ(want[i].device.location, got[i].device.location);
      EXPECT_EQ(want[i].device.default_unit, got[i].device.default_unit);
      EXPECT_EQ(want[i].device.deleted, got[i].device.deleted);
    }
  }
}

WireMessage RoundTrip(const WireBatch& batch, std::string* payload = nullptr) {
  std::string bytes;
  EXPECT_OK(EncodeBatch("edgesync/reply/gw-1", 77, batch, {}, &bytes));
  WireMessage m;
  WireCounters counters;
  Status st = DecodeMessage(bytes, {}, &m, &counters);
  EXPECT_OK(st);
  EXPECT_EQ(counters.decoded, 1u);
  if (payload) *payload = bytes;
  return m;
}

TEST(WireTest, BatchRoundTripsEveryField) {
  std::vector<Reading> readings = {
      {"dev-a", "temperature", 1780000000000, 21.37, "C", 0},
      {"dev-a", "humidity", 1780000000000, 45.5, "%", kQualityReceiveTime},
      {"dev-b", "temperature", 1779999999000, -3.2, "C", 0},  // time goes back
      {"dev-b", "temperature", 1780000001000, -3.25, "C", kQualitySensorFlagged},
      {"dev-c", "odd", 0, 0.1 + 0.2, "", 0},                  // not a short decimal: raw bits
      {"dev-c", "odd", -5, -0.0, "", 0},                      // negative zero keeps its sign
      {"dev-c", "odd", INT64_MAX, 1e300, "", 0},
      {"dev-c", "odd", INT64_MIN, 5e-324, "", 0},
      {"dev-c", "big", 1, 9007199254740993.0, "", 0},
      {"dev-d", "temperature", 1780000002000, 1e15, "C", UINT32_MAX},
  };
  WireBatch batch = MakeBatch(readings, 1000);
  ChangeEntry upsert;
  upsert.lsn = batch.last_lsn + 5;  // LSNs may skip (device record compaction)
  upsert.kind = ChangeEntry::Kind::kDeviceUpsert;
  upsert.device = {"dev-a", "Kitchen", "Floor 1", "C", false};
  ChangeEntry del;
  del.lsn = upsert.lsn + 1;
  del.kind = ChangeEntry::Kind::kDeviceDelete;
  del.device = {"dev-z", "", "", "", true};
  batch.entries.push_back(upsert);
  batch.entries.push_back(del);
  batch.last_lsn = del.lsn;
  WireMessage m = RoundTrip(batch);
  ASSERT_EQ(m.kind, WireKind::kBatch);
  EXPECT_EQ(m.reply_to, "edgesync/reply/gw-1");
  EXPECT_EQ(m.correlation_id, 77u);
  EXPECT_EQ(m.batch.origin, kOrigin);
  EXPECT_EQ(m.batch.first_lsn, 1000u);
  EXPECT_EQ(m.batch.last_lsn, del.lsn);
  EXPECT_EQ(m.batch.base_lsn, 999u);
  ExpectSameEntries(batch.entries, m.batch.entries);
}

// Protocol 4: a batch names the sender's record of the region's store, and
// answers and pongs name the store's epoch; a hub of protocol 3 sends none
// (empty), and a batch without a record decodes with zeros.
TEST(WireTest, TheRegionRecordAndTheHubEpochRoundTrip) {
  WireBatch batch = MakeBatch({{"dev-a", "temperature", 1780000000000, 21.5, "C", 0}}, 10);
  WireMessage m = RoundTrip(batch);
  EXPECT_EQ(m.batch.region_epoch, 0u);
  EXPECT_EQ(m.batch.region_held, 0u);
  EXPECT_FALSE(m.batch.base_lost);
  batch.region_epoch = EpochTag("0123456789abcdef0123456789abcdef");
  batch.region_held = 4000;
  batch.base_lost = true;
  m = RoundTrip(batch);
  EXPECT_EQ(m.batch.region_epoch, EpochTag("0123456789abcdef0123456789abcdef"));
  EXPECT_EQ(m.batch.region_held, 4000u);
  EXPECT_TRUE(m.batch.base_lost);
  // A batch that leaves more of its sender's log behind it says so.
  EXPECT_FALSE(m.batch.more);
  batch.more = true;
  EXPECT_TRUE(RoundTrip(batch).batch.more);
  EXPECT_NE(EpochTag("a"), EpochTag("b"));
  EXPECT_NE(EpochTag(""), 0u);
  // A gateway keeps the tag as a store checkpoint: at most 2^63 - 1.
  for (int i = 0; i < 1000; ++i) {
    EXPECT_LE(EpochTag("epoch-" + std::to_string(i)), static_cast<uint64_t>(INT64_MAX));
  }

  WireAck ack{"eu", kOrigin, 12, AckCode::kRegressed, "lost", "", {}};
  ack.epoch = "fedcba";
  ASSERT_OK(DecodeMessage(EncodeAck(9, ack), {}, &m, nullptr));
  EXPECT_EQ(m.ack.code, AckCode::kRegressed);
  EXPECT_EQ(m.ack.epoch, "fedcba");
  EXPECT_EQ(m.ack.high_water, 12u);
  ASSERT_OK(DecodeMessage(EncodePong(5, "eu", 42, "fedcba"), {}, &m, nullptr));
  EXPECT_EQ(m.pong_epoch, "fedcba");
  ASSERT_OK(DecodeMessage(EncodePong(5, "eu", 42), {}, &m, nullptr));
  EXPECT_EQ(m.pong_epoch, "");
}

TEST(WireTest, TheWatermarkRoundTripsAndAnOlderSendersBatchReadsAsUnknown) {
  WireBatch batch = MakeBatch({{"dev-a", "temperature", 1780000000000, 21.5, "C", 0}}, 10);
  EXPECT_EQ(RoundTrip(batch).batch.complete_through_ms, 0);
  batch.complete_through_ms = 1780000123456;
  EXPECT_EQ(RoundTrip(batch).batch.complete_through_ms, 1780000123456);

  // A sender of protocol 4 writes the Batch table without the field: its
  // batches decode as before, the watermark unknown (0).
  flatbuffers::FlatBufferBuilder fbb;
  std::string raw = EncodeEntries(batch.entries, 9, nullptr);
  std::string body(ZSTD_compressBound(raw.size()), '\0');
  body.resize(ZSTD_compress(body.data(), body.size(), raw.data(), raw.size(), 3));
  auto origin = wire::CreateWireOrigin(fbb, fbb.CreateString(kOrigin.gateway_id), fbb.CreateString(kOrigin.epoch));
  auto old = wire::CreateBatch(fbb, origin, 10, 10, 0, 1, wire::Codec::Zstd, wire::Encoding::ColumnsV1,
                               static_cast<uint32_t>(raw.size()),
                               fbb.CreateVector(reinterpret_cast<const uint8_t*>(body.data()), body.size()), 0, 0,
                               false, 0, 0, false, true);
  wire::FinishMessageBuffer(fbb, wire::CreateMessage(fbb, 1, fbb.CreateString("r"), 1, wire::Body::Batch, old.Union()));
  WireMessage m;
  ASSERT_OK(DecodeMessage(std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize()), {}, &m,
                          nullptr));
  EXPECT_EQ(m.batch.entries.size(), 1u);
  EXPECT_TRUE(m.batch.more);
  EXPECT_EQ(m.batch.complete_through_ms, 0);

  // A negative time means nothing: read as unknown, never as a watermark.
  flatbuffers::FlatBufferBuilder bad;
  auto o2 = wire::CreateWireOrigin(bad, bad.CreateString(kOrigin.gateway_id), bad.CreateString(kOrigin.epoch));
  auto neg = wire::CreateBatch(bad, o2, 10, 10, 0, 1, wire::Codec::Zstd, wire::Encoding::ColumnsV1,
                               static_cast<uint32_t>(raw.size()),
                               bad.CreateVector(reinterpret_cast<const uint8_t*>(body.data()), body.size()), 0, 0,
                               false, 0, 0, false, false, -5);
  wire::FinishMessageBuffer(bad, wire::CreateMessage(bad, 1, bad.CreateString("r"), 1, wire::Body::Batch, neg.Union()));
  ASSERT_OK(DecodeMessage(std::string(reinterpret_cast<const char*>(bad.GetBufferPointer()), bad.GetSize()), {}, &m,
                          nullptr));
  EXPECT_EQ(m.batch.complete_through_ms, 0);
}

TEST(WireTest, AFeedPageCarriesWatermarksAndRefusesBadOnesWithACounter) {
  WireFeedPage page;
  page.region = "eu";
  page.next[3] = 40;
  page.watermarks.push_back(OriginWatermark{kOrigin, 1780000123456, 0});
  page.watermarks.push_back(OriginWatermark{Origin{"gw-2", std::string(32, 'b')}, 1780000999000, 0});
  std::string bytes;
  ASSERT_OK(EncodeFeedPage(9, page, {}, &bytes));
  WireMessage m;
  ASSERT_OK(DecodeMessage(bytes, {}, &m, nullptr));
  ASSERT_EQ(m.feed_page.watermarks.size(), 2u);
  EXPECT_EQ(m.feed_page.watermarks[0].origin, kOrigin);
  EXPECT_EQ(m.feed_page.watermarks[0].complete_through_ms, 1780000123456);
  EXPECT_EQ(m.feed_page.watermarks[1].complete_through_ms, 1780000999000);
  // A page without them (a hub of protocol 4): none.
  page.watermarks.clear();
  ASSERT_OK(EncodeFeedPage(9, page, {}, &bytes));
  ASSERT_OK(DecodeMessage(bytes, {}, &m, nullptr));
  EXPECT_TRUE(m.feed_page.watermarks.empty());
  // A bad origin or a time at or before 1970: refused, counted.
  for (const OriginWatermark& bad : {OriginWatermark{Origin{"gw/1", std::string(32, 'a')}, 5, 0},
                                     OriginWatermark{kOrigin, 0, 0}, OriginWatermark{kOrigin, -7, 0}}) {
    page.watermarks = {bad};
    ASSERT_OK(EncodeFeedPage(9, page, {}, &bytes));
    WireCounters counters;
    Status st = DecodeMessage(bytes, {}, &m, &counters);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
    EXPECT_NE(st.message().find("watermark"), std::string::npos) << st.ToString();
    EXPECT_EQ(counters.bad_entries.load(), 1u);
  }
}

TEST(WireTest, ABatchSpanMayOpenBeforeItsFirstEntry) {
  WireBatch batch = MakeBatch({{"dev-a", "t", 1, 1.5, "C", 0}, {"dev-a", "t", 2, 2.5, "C", 0}}, 20);
  batch.first_lsn = 17;  // 17..19 were compacted away
  WireMessage m = RoundTrip(batch);
  EXPECT_EQ(m.batch.first_lsn, 17u);
  ExpectSameEntries(batch.entries, m.batch.entries);
}

TEST(WireTest, RandomDoublesRoundTripBitForBit) {
  std::mt19937_64 rng(7);
  std::vector<Reading> readings;
  for (int i = 0; i < 5000; ++i) {
    double v;
    switch (i % 4) {
      case 0: {  // arbitrary finite bit patterns
        uint64_t bits = rng();
        std::memcpy(&v, &bits, sizeof v);
        if (!std::isfinite(v)) v = 1.5;
        break;
      }
      case 1: v = static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000) / 1000.0; break;
      case 2: v = std::ldexp(static_cast<double>(rng() % 1000), -static_cast<int>(rng() % 60)); break;
      default: v = static_cast<double>(static_cast<int64_t>(rng() % 100000)) / 10.0; break;
    }
    readings.push_back({"dev-" + std::to_string(i % 17), "m" + std::to_string(i % 3), 1780000000000 + i, v, "", 0});
  }
  WireBatch batch = MakeBatch(readings, 1);
  ExpectSameEntries(batch.entries, RoundTrip(batch).batch.entries);
}

TEST(WireTest, ReferenceWorkloadIsAtMostThreeBytesPerReading) {
  // 1000 devices x 8 metrics at 1 Hz; one batch at the default
  // uplink.batch_max_readings (5000), taken mid-stream.
  test::SensorWorkload workload(1000, 1780000000000);
  workload.Take(12345);
  std::vector<Reading> readings = workload.Take(5000);
  WireBatch batch = MakeBatch(readings, 1);
  std::string payload;
  WireMessage m = RoundTrip(batch, &payload);
  ExpectSameEntries(batch.entries, m.batch.entries);
  double per_reading = static_cast<double>(payload.size()) / readings.size();
  RecordProperty("bytes_per_reading", std::to_string(per_reading));
  EXPECT_LE(per_reading, 3.0);
}

TEST(WireTest, SmallMessagesRoundTrip) {
  WireMessage m;
  ASSERT_OK(DecodeMessage(EncodePing("r/x", 5, 123456789), {}, &m, nullptr));
  EXPECT_EQ(m.kind, WireKind::kPing);
  EXPECT_EQ(m.reply_to, "r/x");
  EXPECT_EQ(m.correlation_id, 5u);
  EXPECT_EQ(m.ping_sent_ns, 123456789);
  ASSERT_OK(DecodeMessage(EncodePong(5, "eu", 42), {}, &m, nullptr));
  EXPECT_EQ(m.kind, WireKind::kPong);
  EXPECT_EQ(m.pong_region, "eu");
  EXPECT_EQ(m.ping_sent_ns, 42);
  WireAck ack{"eu", kOrigin, 991, AckCode::kGap, "gap after 991", "", {}};
  ASSERT_OK(DecodeMessage(EncodeAck(9, ack), {}, &m, nullptr));
  EXPECT_EQ(m.kind, WireKind::kAck);
  EXPECT_EQ(m.ack.region, "eu");
  EXPECT_EQ(m.ack.origin, kOrigin);
  EXPECT_EQ(m.ack.high_water, 991u);
  EXPECT_EQ(m.ack.code, AckCode::kGap);
  EXPECT_EQ(m.ack.message, "gap after 991");
  const std::string epoch = "0123456789abcdef0123456789abcdef";
  ShardPositions after{};
  after[1] = 1000;
  after[31] = 7;
  ASSERT_OK(DecodeMessage(EncodeFeedRequest("r/y", 3, after, 500, epoch), {}, &m, nullptr));
  EXPECT_EQ(m.kind, WireKind::kFeedRequest);
  EXPECT_TRUE(m.feed_per_shard);
  EXPECT_EQ(m.feed_after, after);
  EXPECT_EQ(m.feed_max_entries, 500u);
  EXPECT_EQ(m.feed_epoch, epoch);
  ShardPositions heads{};
  heads.fill(12345);
  ASSERT_OK(DecodeMessage(EncodeFeedHead("us", heads, epoch), {}, &m, nullptr));
  EXPECT_EQ(m.kind, WireKind::kFeedHead);
  EXPECT_EQ(m.head_region, "us");
  EXPECT_TRUE(m.head_per_shard);
  EXPECT_EQ(m.head_shards, heads);
  EXPECT_EQ(m.head_epoch, epoch);
}

// Protocol 7 (two lanes): a batch says it is its sender's live lane's, and
// an answer names the spans the region holds above its mark; a peer of 6
// sends neither (false, none).
TEST(WireTest, TheLiveFlagAndTheHeldSpansRoundTrip) {
  WireBatch batch = MakeBatch({{"dev-a", "temperature", 1780000000000, 21.5, "C", 0}}, 10);
  EXPECT_FALSE(RoundTrip(batch).batch.live);
  batch.live = true;
  EXPECT_TRUE(RoundTrip(batch).batch.live);
  WireAck ack{"eu", kOrigin, 100, AckCode::kOk, "", "0123456789abcdef0123456789abcdef", {}};
  WireMessage m;
  ASSERT_OK(DecodeMessage(EncodeAck(3, ack), {}, &m, nullptr));
  EXPECT_TRUE(m.ack.held.empty());
  ack.held = {{102, 110}, {200, 200}, {202, 1u << 30}};
  ASSERT_OK(DecodeMessage(EncodeAck(4, ack), {}, &m, nullptr));
  EXPECT_EQ(m.ack.high_water, 100u);
  EXPECT_EQ(m.ack.held, ack.held);
  // A Gap answer carries them too.
  ack.code = AckCode::kGap;
  ASSERT_OK(DecodeMessage(EncodeAck(5, ack), {}, &m, nullptr));
  EXPECT_EQ(m.ack.code, AckCode::kGap);
  EXPECT_EQ(m.ack.held, ack.held);
  // As many as a later hub might hold.
  ack.held.clear();
  for (uint64_t i = 0; i < kMaxHeldSpansOnWire; ++i) ack.held.push_back(LsnSpan{200 + 3 * i, 201 + 3 * i});
  ASSERT_OK(DecodeMessage(EncodeAck(6, ack), {}, &m, nullptr));
  EXPECT_EQ(m.ack.held.size(), kMaxHeldSpansOnWire);
}

// Spans that are not ascending, disjoint and apart, or lie at or just above
// the mark, or are too many, are no hub's answer: refused and counted,
// never taken for what a region holds.
TEST(WireTest, AnAnswerWithBadHeldSpansIsRefusedAndCounted) {
  const std::vector<std::vector<LsnSpan>> bad = {
      {{110, 120}, {102, 105}},   // not ascending
      {{102, 110}, {105, 120}},   // overlapping
      {{102, 110}, {111, 120}},   // touching: one span
      {{102, 110}, {102, 110}},   // repeated
      {{120, 110}},               // last before first
      {{101, 110}},               // at the mark + 1: that is the mark's
      {{50, 60}},                 // at or below the mark
  };
  WireCounters counters;
  uint64_t id = 10;
  for (const auto& held : bad) {
    WireAck ack{"eu", kOrigin, 100, AckCode::kOk, "", "", held};
    WireMessage m;
    Status st = DecodeMessage(EncodeAck(++id, ack), {}, &m, &counters);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << held.front().first << " " << st.ToString();
  }
  EXPECT_EQ(counters.bad_entries, bad.size());
  WireAck many{"eu", kOrigin, 100, AckCode::kOk, "", "", {}};
  for (uint64_t i = 0; i <= kMaxHeldSpansOnWire; ++i) many.held.push_back(LsnSpan{200 + 3 * i, 201 + 3 * i});
  WireMessage m;
  Status st = DecodeMessage(EncodeAck(99, many), {}, &m, &counters);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find("too many held spans"), std::string::npos) << st.ToString();
  EXPECT_EQ(counters.bad_entries, bad.size() + 1);
}

TEST(WireTest, FeedPageRoundTripsOriginsAndSequences) {
  WireFeedPage page;
  page.region = "eu";
  page.after[RegionShardOf("gw-1")] = 10;
  page.next[RegionShardOf("gw-1")] = 16;
  page.next[RegionShardOf("gw-2")] = 12;
  page.head.fill(100);
  page.epoch = "00112233445566778899aabbccddeeff";
  Origin other{"gw-2", "fedcba9876543210fedcba9876543210"};
  for (int i = 0; i < 4; ++i) {
    RegionFeedEntry f;
    f.seq = i % 2 ? 3 + i * 3 : 11 + i;  // gw-1 (shard 1): 11, 13; gw-2 (shard 8): 6, 12
    f.remote.origin = i % 2 ? other : kOrigin;
    f.remote.origin_lsn = 500 - i * 7;
    f.remote.entry.lsn = f.remote.origin_lsn;
    f.remote.entry.reading = {"dev-" + std::to_string(i), "t", 1780000000000 + i, 20.5 + i, "C", 0};
    page.entries.push_back(f);
  }
  std::string bytes;
  ASSERT_OK(EncodeFeedPage(8, page, {}, &bytes));
  WireMessage m;
  Status st = DecodeMessage(bytes, {}, &m, nullptr);
  ASSERT_OK(st);
  ASSERT_EQ(m.kind, WireKind::kFeedPage);
  EXPECT_EQ(m.feed_page.region, "eu");
  EXPECT_TRUE(m.feed_page.per_shard);
  EXPECT_EQ(m.feed_page.after, page.after);
  EXPECT_EQ(m.feed_page.next, page.next);
  EXPECT_EQ(m.feed_page.head, page.head);
  EXPECT_FALSE(m.feed_page.reset);
  EXPECT_EQ(m.feed_page.epoch, page.epoch);
  ASSERT_EQ(m.feed_page.entries.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m.feed_page.entries[i].seq, page.entries[i].seq);
    EXPECT_EQ(m.feed_page.entries[i].shard, RegionShardOf(page.entries[i].remote.origin.gateway_id));
    EXPECT_EQ(m.feed_page.entries[i].remote.origin, page.entries[i].remote.origin);
    EXPECT_EQ(m.feed_page.entries[i].remote.origin_lsn, page.entries[i].remote.origin_lsn);
    EXPECT_EQ(m.feed_page.entries[i].remote.entry.reading.value, page.entries[i].remote.entry.reading.value);
  }
  // Out of order inside a shard: refused by the decoder.
  std::swap(page.entries[0].seq, page.entries[2].seq);
  ASSERT_OK(EncodeFeedPage(8, page, {}, &bytes));
  WireCounters counters;
  EXPECT_FALSE(DecodeMessage(bytes, {}, &m, &counters).ok());
  EXPECT_EQ(counters.bad_entries.load(), 1u);
  WireFeedPage reset;
  reset.region = "eu";
  reset.reset = true;
  reset.next[5] = 900;
  ASSERT_OK(EncodeFeedPage(9, reset, {}, &bytes));
  ASSERT_OK(DecodeMessage(bytes, {}, &m, nullptr));
  EXPECT_TRUE(m.feed_page.reset);
  EXPECT_EQ(m.feed_page.next, reset.next);
  EXPECT_TRUE(m.feed_page.entries.empty());
}

// Re-packs a batch with a hand-made body, as a hostile sender would.
std::string HostileBatch(const std::string& body, uint32_t raw_size, uint32_t count, wire::Codec codec,
                         wire::Encoding encoding = wire::Encoding::ColumnsV1) {
  flatbuffers::FlatBufferBuilder fbb;
  auto origin = wire::CreateWireOrigin(fbb, fbb.CreateString("gw-1"), fbb.CreateString("e"));
  auto b = wire::CreateBatch(fbb, origin, 1, count, 0, count, codec, encoding, raw_size,
                             fbb.CreateVector(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  wire::FinishMessageBuffer(fbb, wire::CreateMessage(fbb, 1, fbb.CreateString("r"), 1, wire::Body::Batch, b.Union()));
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

TEST(WireTest, HostileInputIsRejectedWithACounter) {
  WireCounters counters;
  WireMessage m;
  EXPECT_EQ(DecodeMessage("", {}, &m, &counters).code(), Status::Code::kCorruption);
  EXPECT_EQ(DecodeMessage("{\"deviceId\":\"x\"}", {}, &m, &counters).code(), Status::Code::kCorruption);
  EXPECT_EQ(counters.bad_buffer, 2u);

  DecodeLimits small;
  small.max_payload_bytes = 10;
  EXPECT_FALSE(DecodeMessage(EncodePing("r", 1, 1), small, &m, &counters).ok());
  EXPECT_EQ(counters.too_large, 1u);

  // A zstd bomb: 64 MiB of zeros compress to a few KB; the header says so,
  // but the limit is lower.
  std::string zeros(size_t{64} << 20, '\0');
  std::string bomb(ZSTD_compressBound(zeros.size()), '\0');
  bomb.resize(ZSTD_compress(bomb.data(), bomb.size(), zeros.data(), zeros.size(), 1));
  DecodeLimits limits;
  limits.max_raw_bytes = 1 << 20;
  EXPECT_FALSE(DecodeMessage(HostileBatch(bomb, static_cast<uint32_t>(zeros.size()), 1, wire::Codec::Zstd), limits,
                             &m, &counters).ok());
  EXPECT_EQ(counters.too_large, 2u);
  // The header understates the frame's size.
  EXPECT_FALSE(DecodeMessage(HostileBatch(bomb, 1000, 1, wire::Codec::Zstd), limits, &m, &counters).ok());
  EXPECT_EQ(counters.bad_compression, 1u);
  // Garbage instead of a zstd frame, unknown codec and encoding.
  EXPECT_FALSE(DecodeMessage(HostileBatch("garbage!", 8, 1, wire::Codec::Zstd), {}, &m, &counters).ok());
  EXPECT_EQ(counters.bad_compression, 2u);
  EXPECT_EQ(DecodeMessage(HostileBatch("x", 1, 1, static_cast<wire::Codec>(9)), {}, &m, &counters).code(),
            Status::Code::kUnsupported);
  EXPECT_EQ(DecodeMessage(HostileBatch("x", 1, 1, wire::Codec::None, static_cast<wire::Encoding>(7)), {}, &m,
                          &counters).code(),
            Status::Code::kUnsupported);
  EXPECT_EQ(counters.unsupported, 2u);
  // Uncompressed garbage where the Entries buffer should be.
  EXPECT_FALSE(DecodeMessage(HostileBatch(std::string(64, '\x7f'), 64, 1, wire::Codec::None), {}, &m, &counters).ok());
  EXPECT_EQ(counters.bad_entries, 1u);
  EXPECT_EQ(counters.decoded, 0u);
}

TEST(WireTest, InconsistentColumnsAreRejected) {
  std::vector<Reading> readings = {{"dev-a", "t", 1, 1.5, "C", 0}, {"dev-b", "t", 2, 2.5, "C", 0}};
  WireBatch batch = MakeBatch(readings, 10);
  std::string raw = EncodeEntries(batch.entries, 9, nullptr);
  // The header claims more entries than the columns hold.
  WireCounters counters;
  WireMessage m;
  EXPECT_FALSE(DecodeMessage(HostileBatch(raw, static_cast<uint32_t>(raw.size()), 3, wire::Codec::None), {}, &m,
                             &counters).ok());
  // Fewer entries than the columns hold.
  EXPECT_FALSE(DecodeMessage(HostileBatch(raw, static_cast<uint32_t>(raw.size()), 1, wire::Codec::None), {}, &m,
                             &counters).ok());
  EXPECT_EQ(counters.bad_entries, 2u);
  // A device id that would break topics is refused by the decoder too.
  batch.entries[0].reading.device_id = "a/b";
  std::string bytes;
  ASSERT_OK(EncodeBatch("r", 1, batch, {}, &bytes));
  EXPECT_FALSE(DecodeMessage(bytes, {}, &m, &counters).ok());
  EXPECT_EQ(counters.bad_entries, 3u);
  // Every single-byte corruption is either decoded or refused, never a crash.
  ASSERT_OK(EncodeBatch("r", 1, MakeBatch(readings, 10), {}, &bytes));
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    DecodeMessage(bad, {}, &m, &counters);
    DecodeMessage(std::string_view(bytes).substr(0, i), {}, &m, &counters);
  }
}

// An Entries buffer claiming a million entries with one byte per column.
std::string ClaimedMillion() {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<uint8_t> one = {0};
  auto dev = fbb.CreateVectorOfStrings(std::vector<std::string>{"d"});
  auto k = fbb.CreateVector(one), l = fbb.CreateVector(one), d = fbb.CreateVector(one);
  wire::EntriesBuilder e(fbb);
  e.add_count(1000000);
  e.add_devices(dev);
  e.add_kinds(k);
  e.add_lsns(l);
  e.add_device_index(d);
  fbb.Finish(e.Finish());
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

// Memory follows the bytes, not the claims: a ~200-byte batch claiming a
// million entries (within the default limit) once made the column decoder
// reserve ~270 MB. Decoded in a child whose address space is capped.
TEST(WireTest, AClaimedCountReservesNothingBeyondTheBytes) {
  std::string raw = ClaimedMillion();
  std::string message = HostileBatch(raw, static_cast<uint32_t>(raw.size()), 1000000, wire::Codec::None);
  ASSERT_LT(message.size(), 400u);
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit lim = {rlim_t{256} << 20, rlim_t{256} << 20};
    if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(3);
    WireMessage m;
    WireCounters counters;
    Status st = DecodeMessage(message, DecodeLimits{}, &m, &counters);
    _exit(st.code() == Status::Code::kCorruption && counters.bad_entries == 1 ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << " under a 256 MiB limit";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(WireTest, PeekKindNeedsNoDecompression) {
  WireKind kind;
  EXPECT_TRUE(PeekKind(EncodePing("r", 1, 2), {}, &kind));
  EXPECT_EQ(kind, WireKind::kPing);
  std::string batch;
  ASSERT_OK(EncodeBatch("r", 1, MakeBatch({{"d", "m", 1, 1.0, "", 0}}, 1), {}, &batch));
  EXPECT_TRUE(PeekKind(batch, {}, &kind));
  EXPECT_EQ(kind, WireKind::kBatch);
  EXPECT_FALSE(PeekKind("garbage garbage", {}, &kind));
  EXPECT_FALSE(PeekKind(std::string_view(batch).substr(0, batch.size() / 2), {}, &kind));
}

TEST(WireTest, VarintsAndZigZag) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, INT64_MAX, INT64_MIN, int64_t{123456789}}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
  std::string out;
  PutVarint(UINT64_MAX, &out);
  EXPECT_EQ(out.size(), 10u);
}

}  // namespace
}  // namespace edgesync

namespace edgesync {
namespace {

TEST(WireTest, TopicsGiveTheGatewayIdALevelOfItsOwn) {
  EXPECT_EQ(HubInboxTopic("edgesync", "eu", "gw-1"), "edgesync/region/eu/in/1/gw-1");
  EXPECT_EQ(HubInboxFilter("edgesync", "eu", 7), "edgesync/region/eu/in/7/+");
  EXPECT_EQ(HubInboxAllFilter("edgesync", "eu"), "edgesync/region/eu/in/+/+");
  EXPECT_EQ(ReplyTopic("edgesync", "gw-1", "up"), "edgesync/reply/gw-1/up");
  std::string sender;
  int shard = -1;
  ASSERT_TRUE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/1/gw-1", &sender, &shard));
  EXPECT_EQ(sender, "gw-1");
  EXPECT_EQ(shard, 1);
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/us/in/1/gw-1", &sender));
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/1/gw-1/x", &sender));
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/1/", &sender));
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/", &sender));
  // The pre-shard form, a wrong shard and another spelling of the right one.
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/gw-1", &sender));
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/2/gw-1", &sender));
  EXPECT_FALSE(InboxSender("edgesync", "eu", "edgesync/region/eu/in/01/gw-1", &sender));
  EXPECT_TRUE(IsReplyTopic("edgesync", "gw-1", "edgesync/reply/gw-1/up"));
  EXPECT_TRUE(IsReplyTopic("edgesync", "gw-1", "edgesync/reply/gw-1/feed"));
  EXPECT_FALSE(IsReplyTopic("edgesync", "gw-1", "edgesync/reply/gw-2/up"));
  EXPECT_FALSE(IsReplyTopic("edgesync", "gw-1", "edgesync/reply/gw-1"));
  EXPECT_FALSE(IsReplyTopic("edgesync", "gw-1", "edgesync/reply/gw-1/up/more"));
  EXPECT_FALSE(IsReplyTopic("edgesync", "gw-1", "sensors/gw-1/up"));
  EXPECT_FALSE(IsReplyTopic("edgesync", "gw-1", "edgesync/reply/gw-1/#"));
}

TEST(WireTest, ShardsArePinnedByTheProtocolAndSpreadAFleetEvenly) {
  // FNV-1a 32 of the id, mod 32, as PROTOCOL.md gives it: another
  // implementation (or a later build) must put a gateway on the same shard.
  EXPECT_EQ(RegionShardOf("gw-1"), 1);
  EXPECT_EQ(RegionShardOf("gw-2"), 8);
  EXPECT_EQ(RegionShardOf("gw-a"), 17);
  EXPECT_EQ(RegionShardOf("gw-b"), 24);
  std::vector<int> per_shard(kRegionShards);
  for (int i = 0; i < 10000; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "gw-%05d", i);
    int s = RegionShardOf(id);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, kRegionShards);
    ++per_shard[static_cast<size_t>(s)];
  }
  // 10,000 fleet-style ids: every shard within 5 % of its 312.5 share.
  for (int n : per_shard) {
    EXPECT_GT(n, 297);
    EXPECT_LT(n, 328);
  }
}

}  // namespace
}  // namespace edgesync

namespace edgesync {
namespace {

TEST(ShardPositionsTest, RoundTripSparselyAndCompactly) {
  ShardPositions p{};
  EXPECT_EQ(EncodeShardPositions(p), "");  // the beginning costs nothing
  p[0] = 1;
  p[7] = 300;
  p[31] = static_cast<uint64_t>(INT64_MAX);
  std::string bytes = EncodeShardPositions(p);
  EXPECT_EQ(bytes.size(), 2u + 3u + 10u);  // (0,1) (6,300) (23,2^63-1)
  ShardPositions back;
  ASSERT_OK(DecodeShardPositions(bytes, &back));
  EXPECT_EQ(back, p);
  ShardPositions all{};
  all.fill(static_cast<uint64_t>(INT64_MAX));
  bytes = EncodeShardPositions(all);
  EXPECT_LE(bytes.size(), kMaxShardPositionsBytes);
  ASSERT_OK(DecodeShardPositions(bytes, &back));
  EXPECT_EQ(back, all);
  EXPECT_EQ(ShardPositionsText(p), "0:1 7:300 31:9223372036854775807");
  EXPECT_EQ(ShardPositionsText(ShardPositions{}), "0");
}

TEST(ShardPositionsTest, HostileBytesAreRefusedNeverMisread) {
  ShardPositions out;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"truncated pair", std::string("\x00", 1)},
      {"truncated varint", std::string("\x00\x80", 2)},
      {"shard past the last", std::string("\x20\x01", 2)},
      {"second shard past the last", std::string("\x1f\x01\x00\x01", 4)},
      {"a zero position listed", std::string("\x00\x00", 2)},
      {"position over INT64_MAX", std::string("\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11)},
      {"varint past 64 bits", std::string("\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11)},
      {"too long", std::string(kMaxShardPositionsBytes + 1, '\x01')},
  };
  for (const auto& [what, bytes] : bad) {
    out.fill(9);
    EXPECT_FALSE(DecodeShardPositions(bytes, &out).ok()) << what;
  }
}

TEST(ShardPositionsTest, ComparisonsAndLag) {
  ShardPositions a{}, b{};
  a[3] = 5;
  b[3] = 5;
  b[4] = 1;
  EXPECT_TRUE(AllAtOrBelow(a, b));
  EXPECT_FALSE(AllAtOrBelow(b, a));
  ShardPositions head{};
  head[3] = 9;
  head[4] = 2;
  EXPECT_EQ(ShardLag(a, head), 4u);  // the most behind shard
  EXPECT_EQ(ShardLag(head, head), 0u);
  EXPECT_EQ(ShardPositionsSum(head), 11u);
}

TEST(ShardPositionsTest, ARequestOrPageWithBadPositionsIsRefusedAndCounted) {
  // A request naming shard 32, built by hand as a hostile reader would.
  flatbuffers::FlatBufferBuilder fbb;
  const uint8_t hostile[] = {0x20, 0x01};  // shard 32
  auto positions = fbb.CreateVector(hostile, sizeof hostile);
  auto epoch = fbb.CreateString("");
  auto r = wire::CreateFeedRequest(fbb, 0, 10, epoch, positions);
  auto reply = fbb.CreateString("edgesync/reply/gw-1/feed");
  wire::FinishMessageBuffer(fbb, wire::CreateMessage(fbb, 2, reply, 5, wire::Body::FeedRequest, r.Union()));
  WireCounters counters;
  WireMessage m;
  Status st = DecodeMessage(
      std::string_view(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize()), {}, &m, &counters);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(counters.bad_entries.load(), 1u);
}

}  // namespace
}  // namespace edgesync

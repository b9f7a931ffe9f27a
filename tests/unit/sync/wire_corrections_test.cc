// Time correction entries on the wire (protocol 6): they round-trip in both
// column layouts and in feed pages beside readings and device records, take
// no device (a series context never interns one for them, and the context
// chain goes on after them), and a decoder refuses a count that does not
// match the entries of kind 3 or a correction that is not valid.
#include <gtest/gtest.h>

#include "sync/batch_generated.h"
#include "sync/columns.h"
#include "sync/wire.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};
const std::string kSender = "gw-1";

ChangeEntry Correction(uint64_t lsn, uint32_t period, int64_t delta_ms, int64_t from_ms, int64_t to_ms) {
  ChangeEntry e;
  e.lsn = lsn;
  e.kind = ChangeEntry::Kind::kTimeCorrection;
  e.correction = TimeCorrection{period, delta_ms, from_ms, to_ms};
  return e;
}

ChangeEntry ReadingAt(uint64_t lsn, const std::string& device, int64_t ts_ms, double value) {
  ChangeEntry e;
  e.lsn = lsn;
  e.reading = {device, "temperature", ts_ms, value, "Cel", 0};
  return e;
}

ChangeEntry DeviceAt(uint64_t lsn, const std::string& device, bool deleted) {
  ChangeEntry e;
  e.lsn = lsn;
  e.kind = deleted ? ChangeEntry::Kind::kDeviceDelete : ChangeEntry::Kind::kDeviceUpsert;
  e.device.device_id = device;
  e.device.name = deleted ? "" : "Boiler room";
  e.device.location = deleted ? "" : "basement";
  e.device.default_unit = deleted ? "" : "Cel";
  e.device.deleted = deleted;
  return e;
}

void ExpectSame(const std::vector<ChangeEntry>& want, const std::vector<ChangeEntry>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(want[i].lsn, got[i].lsn);
    ASSERT_EQ(want[i].kind, got[i].kind);
    switch (want[i].kind) {
      case ChangeEntry::Kind::kReading:
        EXPECT_EQ(want[i].reading.device_id, got[i].reading.device_id);
        EXPECT_EQ(want[i].reading.metric, got[i].reading.metric);
        EXPECT_EQ(want[i].reading.ts_ms, got[i].reading.ts_ms);
        EXPECT_EQ(want[i].reading.value, got[i].reading.value);
        break;
      case ChangeEntry::Kind::kDeviceUpsert:
      case ChangeEntry::Kind::kDeviceDelete:
        EXPECT_EQ(want[i].device.device_id, got[i].device.device_id);
        EXPECT_EQ(want[i].device.name, got[i].device.name);
        EXPECT_EQ(want[i].device.location, got[i].device.location);
        EXPECT_EQ(want[i].device.deleted, got[i].device.deleted);
        break;
      case ChangeEntry::Kind::kTimeCorrection:
        EXPECT_EQ(want[i].correction.period, got[i].correction.period);
        EXPECT_EQ(want[i].correction.delta_ms, got[i].correction.delta_ms);
        EXPECT_EQ(want[i].correction.from_ms, got[i].correction.from_ms);
        EXPECT_EQ(want[i].correction.to_ms, got[i].correction.to_ms);
        EXPECT_EQ(got[i].device_id(), "");
        break;
    }
  }
}

// Readings, device records and corrections mixed, with LSN holes, a
// correction first and two in a row.
std::vector<ChangeEntry> Mixed(uint64_t first) {
  return {Correction(first, 1, 259200000, 1779740800000, 1779740860000),
          ReadingAt(first + 1, "dev-a", 1780000000000, 21.5),
          DeviceAt(first + 2, "dev-a", false),
          Correction(first + 4, 2, -1500, 1780000000100, 1780000000100),
          Correction(first + 5, kMaxClockPeriod, 0, -5, 7),
          ReadingAt(first + 6, "dev-b", 1780000001000, 0.1 + 0.2),
          DeviceAt(first + 7, "dev-c", true),
          ReadingAt(first + 9, "dev-a", 1780000002000, 21.7)};
}

WireBatch BatchOf(std::vector<ChangeEntry> entries, uint64_t first_lsn) {
  WireBatch b;
  b.origin = kOrigin;
  b.first_lsn = first_lsn;
  b.base_lsn = first_lsn - 1;
  b.entries = std::move(entries);
  b.last_lsn = b.entries.back().lsn;
  return b;
}

TEST(WireCorrectionsTest, SelfContainedBatchRoundTripsCorrectionsBesideReadingsAndDeviceRecords) {
  WireBatch b = BatchOf(Mixed(10), 10);
  std::string payload;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 5, b, {}, &payload));
  WireMessage m;
  WireCounters counters;
  ASSERT_OK(DecodeMessage(payload, {}, &m, &counters));
  EXPECT_EQ(m.version, kWireVersion);
  ExpectSame(b.entries, m.batch.entries);
  // A batch of corrections only is a batch like any other.
  WireBatch only = BatchOf({Correction(40, 3, 60000, 1, 2)}, 38);
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 6, only, {}, &payload));
  ASSERT_OK(DecodeMessage(payload, {}, &m, &counters));
  ExpectSame(only.entries, m.batch.entries);
  EXPECT_EQ(m.batch.first_lsn, 38u);
  EXPECT_EQ(counters.rejected(), 0u);
}

TEST(WireCorrectionsTest, ContextBatchesCarryCorrectionsAndTheChainGoesOnAfterThem) {
  SeriesContext gateway;
  SeriesContextCache hub(size_t{64} << 20);
  // The first batch (self-contained, it starts the context) holds a
  // correction; so do the context batches after it.
  std::vector<std::vector<ChangeEntry>> stream = {
      Mixed(1),
      {ReadingAt(11, "dev-a", 1780000003000, 21.8), Correction(12, 4, 1000, 10, 20),
       ReadingAt(13, "dev-d", 1780000003000, 5)},
      {Correction(14, 5, 2000, 30, 40)},
      {ReadingAt(15, "dev-a", 1780000004000, 21.9), ReadingAt(16, "dev-b", 1780000004000, 0.5)},
  };
  uint64_t first = 1;
  for (size_t i = 0; i < stream.size(); ++i) {
    SCOPED_TRACE(i);
    WireBatch b = BatchOf(stream[i], first);
    std::string payload;
    ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", i + 1, b, {}, &payload, &gateway));
    WireMessage m;
    ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr, &hub, &kSender));
    EXPECT_EQ(m.batch.context_lsn != 0, i > 0);
    ExpectSame(b.entries, m.batch.entries);
    SeriesContext* kept = hub.Find(kSender);
    ASSERT_NE(kept, nullptr);
    // Both sides name the same context after every batch.
    EXPECT_EQ(kept->lsn(), gateway.lsn());
    EXPECT_EQ(kept->hash(), gateway.hash());
    // No device "" was interned for a correction, on either side.
    for (size_t d = 0; d < gateway.devices().size(); ++d) EXPECT_NE(gateway.devices()[d], "");
    EXPECT_EQ(kept->devices().size(), gateway.devices().size());
    EXPECT_EQ(kept->series_count(), gateway.series_count());
    first = b.last_lsn + 1;
  }
  EXPECT_EQ(gateway.devices().size(), 4u);  // dev-a, dev-b, dev-c, dev-d
}

TEST(WireCorrectionsTest, FeedPageCarriesCorrectionsOfSeveralOrigins) {
  WireFeedPage page;
  page.region = "eu";
  page.head.fill(100);
  page.next[RegionShardOf("gw-1")] = 20;
  page.next[RegionShardOf("gw-2")] = 20;
  page.epoch = "00112233445566778899aabbccddeeff";
  const Origin other{"gw-2", "fedcba9876543210fedcba9876543210"};
  std::vector<ChangeEntry> entries = Mixed(1);
  uint64_t seq[kRegionShards] = {};
  for (size_t i = 0; i < entries.size(); ++i) {
    RegionFeedEntry f;
    f.remote.origin = i % 3 == 0 ? other : kOrigin;
    f.seq = ++seq[RegionShardOf(f.remote.origin.gateway_id)];
    f.remote.origin_lsn = entries[i].lsn;
    f.remote.entry = entries[i];
    page.entries.push_back(f);
  }
  std::string bytes;
  ASSERT_OK(EncodeFeedPage(3, page, {}, &bytes));
  WireMessage m;
  ASSERT_OK(DecodeMessage(bytes, {}, &m, nullptr));
  ASSERT_EQ(m.feed_page.entries.size(), entries.size());
  std::vector<ChangeEntry> got;
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(m.feed_page.entries[i].remote.origin, page.entries[i].remote.origin);
    EXPECT_EQ(m.feed_page.entries[i].seq, page.entries[i].seq);
    EXPECT_EQ(m.feed_page.entries[i].remote.origin_lsn, entries[i].lsn);
    got.push_back(m.feed_page.entries[i].remote.entry);
  }
  ExpectSame(entries, got);
}

// An `Entries` body by hand: `kinds` entries at LSNs 1, 2 .. and the given
// corrections (no other column: the entries are corrections, or refused).
std::string HandMadeEntries(const std::vector<uint8_t>& kinds, const std::vector<TimeCorrection>& corrections) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<wire::TimeCorrectionFields>> c;
  for (const TimeCorrection& t : corrections) {
    c.push_back(wire::CreateTimeCorrectionFields(fbb, t.period, t.delta_ms, t.from_ms, t.to_ms));
  }
  auto k = fbb.CreateVector(kinds);
  auto l = fbb.CreateVector(std::vector<uint8_t>(kinds.size(), 0));
  auto cv = fbb.CreateVector(c);
  wire::EntriesBuilder b(fbb);
  b.add_count(static_cast<uint32_t>(kinds.size()));
  b.add_kinds(k);
  b.add_lsns(l);
  b.add_corrections(cv);
  fbb.Finish(b.Finish());
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

// Both layouts decode the body; both must give the same verdict.
void ExpectRefused(const std::string& body, const std::string& why) {
  std::vector<ChangeEntry> out;
  Status st = DecodeEntries(body, 0, 100, &out, nullptr);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find(why), std::string::npos) << st.ToString();
  SeriesContext ctx;
  st = DecodeEntriesWithContext(body, 0, 100, &ctx, &out);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find(why), std::string::npos) << st.ToString();
}

TEST(WireCorrectionsTest, DecodersRefuseACountMismatchAndAnInvalidCorrection) {
  const TimeCorrection good{1, 1000, 10, 20};
  {
    // The same body with the counts right decodes in both layouts.
    std::vector<ChangeEntry> out;
    ASSERT_OK(DecodeEntries(HandMadeEntries({3, 3}, {good, good}), 0, 100, &out, nullptr));
    EXPECT_EQ(out.size(), 2u);
    SeriesContext ctx;
    ASSERT_OK(DecodeEntriesWithContext(HandMadeEntries({3, 3}, {good, good}), 0, 100, &ctx, &out));
    EXPECT_EQ(out.size(), 2u);
    EXPECT_EQ(ctx.devices().size(), 0u);
  }
  ExpectRefused(HandMadeEntries({3, 3}, {good}), "fewer time corrections than entries of kind 3");
  ExpectRefused(HandMadeEntries({3}, {good, good}), "2 time corrections for 1 entries of kind 3");
  ExpectRefused(HandMadeEntries({3}, {{0, 1000, 10, 20}}), "clock period 0");
  ExpectRefused(HandMadeEntries({3}, {{kMaxClockPeriod + 1, 1000, 10, 20}}), "clock period");
  ExpectRefused(HandMadeEntries({3}, {{1, 1000, 20, 10}}), "span ends before it begins");
  ExpectRefused(HandMadeEntries({4}, {}), "unknown entry kind 4");

  // Through a whole message: refused and counted, never applied.
  WireBatch b = BatchOf({ReadingAt(1, "dev-a", 1780000000000, 1), Correction(2, 1, 5, 30, 20)}, 1);
  std::string payload;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 1, b, {}, &payload));
  WireMessage m;
  WireCounters counters;
  Status st = DecodeMessage(payload, {}, &m, &counters);
  EXPECT_EQ(st.code(), Status::Code::kCorruption);
  EXPECT_EQ(counters.bad_entries.load(), 1u);
  // Every single-byte corruption of a batch holding corrections is decoded
  // or refused, never a crash.
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 1, BatchOf(Mixed(1), 1), {}, &payload));
  for (size_t i = 0; i < payload.size(); ++i) {
    std::string bad = payload;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    DecodeMessage(bad, {}, &m, &counters);
  }
}

}  // namespace
}  // namespace edgesync

// Batches that refer to the origin's series context (protocol 3): exact
// round trips across many batches, the bytes they save on the reference
// workload, and a context that does not match refused, never misread.
#include "sync/series_context.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sync/batch_generated.h"
#include "sync/wire.h"
#include "tests/support/workload.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};
const std::string kSender = "gw-1";

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

void ExpectSameEntries(const std::vector<ChangeEntry>& want, const std::vector<ChangeEntry>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(want[i].lsn, got[i].lsn);
    EXPECT_EQ(want[i].kind, got[i].kind);
    EXPECT_EQ(want[i].device_id(), got[i].device_id());
    if (want[i].kind != ChangeEntry::Kind::kReading) {
      EXPECT_EQ(want[i].device.name, got[i].device.name);
      continue;
    }
    EXPECT_EQ(want[i].reading.metric, got[i].reading.metric);
    EXPECT_EQ(want[i].reading.unit, got[i].reading.unit);
    EXPECT_EQ(want[i].reading.ts_ms, got[i].reading.ts_ms);
    EXPECT_EQ(want[i].reading.quality, got[i].reading.quality);
    EXPECT_EQ(0, std::memcmp(&want[i].reading.value, &got[i].reading.value, sizeof(double)));
  }
}

// Encodes `batches` readings at a time through one context and decodes them
// through a hub cache; returns the payload bytes.
size_t StreamThrough(const std::vector<Reading>& readings, size_t per_batch, SeriesContext* gateway,
                     SeriesContextCache* hub) {
  size_t bytes = 0;
  for (size_t at = 0; at < readings.size(); at += per_batch) {
    std::vector<Reading> part(readings.begin() + at, readings.begin() + std::min(readings.size(), at + per_batch));
    WireBatch b = MakeBatch(part, at + 1);
    std::string payload;
    EXPECT_OK(EncodeBatch("edgesync/reply/gw-1/up", at + 1, b, {}, &payload, gateway));
    bytes += payload.size();
    WireMessage m;
    Status st = DecodeMessage(payload, {}, &m, nullptr, hub, &kSender);
    EXPECT_OK(st);
    ExpectSameEntries(b.entries, m.batch.entries);
    EXPECT_EQ(at > 0 && gateway, m.batch.context_lsn != 0);
  }
  return bytes;
}

TEST(SeriesContextTest, ContextBatchesRoundTripBitForBitAndSaveBytes) {
  test::SensorWorkload workload(1000, 1780000000000);
  std::vector<Reading> readings = workload.Take(40000);
  readings[5].value = 0.1 + 0.2;  // not a decimal: raw bits
  readings[9000].value = -0.0;
  readings[20000].unit = "degF";  // a new series of a known device and metric
  readings[20001].quality = 7;
  SeriesContext gateway;
  SeriesContextCache hub(size_t{64} << 20);
  size_t with = StreamThrough(readings, 200, &gateway, &hub);
  EXPECT_EQ(hub.size(), 1u);
  EXPECT_EQ(gateway.series_count(), 8001u);
  // The gateway's peak RSS budget is 20 MiB: its context of 8,000 series
  // (and the hub's copy) is 0.82 MB, measured.
  EXPECT_LT(gateway.bytes(), size_t{1} << 20) << gateway.bytes();
  SeriesContextCache none(size_t{64} << 20);
  size_t without = StreamThrough(readings, 200, nullptr, &none);
  EXPECT_EQ(none.size(), 0u);  // self-contained batches leave nothing kept
  // Measured 129 KB against 184 KB of payload at 200 readings per batch
  // (the first 8,000 readings define every series either way).
  EXPECT_LT(with * 5, without * 4) << with << " vs " << without;
}

TEST(SeriesContextTest, DeviceRecordsTravelAgainstTheContext) {
  test::SensorWorkload workload(3, 1780000000000);
  SeriesContext gateway;
  SeriesContextCache hub(size_t{1} << 20);
  uint64_t lsn = 1;
  for (int round = 0; round < 3; ++round) {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = lsn;
    for (int i = 0; i < 10; ++i) {
      ChangeEntry e;
      e.lsn = lsn++;
      if (i == 4) {
        e.kind = ChangeEntry::Kind::kDeviceUpsert;
        e.device.device_id = round == 2 ? "dev-new" : "dev-1";
        e.device.name = "pump " + std::to_string(round);
      } else {
        e.reading = workload.Next();
      }
      b.entries.push_back(e);
    }
    b.last_lsn = lsn - 1;
    std::string payload;
    ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", lsn, b, {}, &payload, &gateway));
    WireMessage m;
    Status st = DecodeMessage(payload, {}, &m, nullptr, &hub, &kSender);
    ASSERT_OK(st);
    ExpectSameEntries(b.entries, m.batch.entries);
  }
}

// Two batches coded against one context, for the mismatch cases.
struct Chain {
  SeriesContext gateway;
  std::string first, second, third;
  WireBatch second_batch;
  Chain() {
    test::SensorWorkload workload(50, 1780000000000);
    auto one = [&](uint64_t at, WireBatch* out) {
      WireBatch b = MakeBatch(workload.Take(400), at);
      std::string payload;
      EXPECT_OK(EncodeBatch("edgesync/reply/gw-1/up", at, b, {}, &payload, &gateway));
      if (out) *out = b;
      return payload;
    };
    first = one(1, nullptr);
    second = one(401, &second_batch);
    third = one(801, nullptr);
  }
};

TEST(SeriesContextTest, ABatchWhoseContextIsNotHeldIsNotFoundAndCounted) {
  Chain chain;
  WireCounters counters;
  SeriesContextCache hub(size_t{1} << 20);
  WireMessage m;
  // A hub that never saw the first batch (restarted, or another hub).
  Status st = DecodeMessage(chain.second, {}, &m, &counters, &hub, &kSender);
  EXPECT_EQ(st.code(), Status::Code::kNotFound) << st.ToString();
  EXPECT_EQ(counters.no_context, 1u);
  EXPECT_EQ(counters.rejected(), 0u);
  // Enough of the header to answer it: the sender's id (the origin is the
  // context's, not repeated), the LSNs.
  EXPECT_EQ(m.batch.origin.gateway_id, "gw-1");
  EXPECT_EQ(m.batch.first_lsn, 401u);
  EXPECT_EQ(m.batch.last_lsn, 800u);
  EXPECT_EQ(m.batch.context_lsn, 400u);
  EXPECT_TRUE(m.batch.entries.empty());
  // Without a cache (a gateway, a tool) a context batch is not decodable either.
  EXPECT_EQ(DecodeMessage(chain.second, {}, &m, &counters, nullptr, nullptr).code(), Status::Code::kNotFound);
}

TEST(SeriesContextTest, ABatchLostInBetweenMakesTheNextOneMissNotMisread) {
  Chain chain;
  SeriesContextCache hub(size_t{1} << 20);
  WireMessage m;
  ASSERT_OK(DecodeMessage(chain.first, {}, &m, nullptr, &hub, &kSender));
  // The second batch is lost (shed): the third names a context after LSN 800.
  EXPECT_EQ(DecodeMessage(chain.third, {}, &m, nullptr, &hub, &kSender).code(), Status::Code::kNotFound);
}

TEST(SeriesContextTest, AContextOfTheSameLsnButOtherContentIsRefusedByItsHash) {
  Chain chain;
  // A hub holding a context after LSN 400 built from other readings (the
  // gateway's chain started elsewhere): the same LSN, another hash.
  SeriesContext other;
  test::SensorWorkload workload(50, 1780000000000, 1000, 99);
  WireBatch b = MakeBatch(workload.Take(400), 1);
  std::string payload;
  ASSERT_OK(EncodeBatch("edgesync/reply/gw-1/up", 1, b, {}, &payload, &other));
  SeriesContextCache hub(size_t{1} << 20);
  WireMessage m;
  ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr, &hub, &kSender));
  ASSERT_EQ(hub.Find("gw-1")->lsn(), 400u);
  EXPECT_EQ(DecodeMessage(chain.second, {}, &m, nullptr, &hub, &kSender).code(), Status::Code::kNotFound);
}

TEST(SeriesContextTest, ABatchOfAnotherSenderNeitherReadsNorMovesTheOriginsContext) {
  Chain chain;
  SeriesContextCache hub(size_t{1} << 20);
  WireMessage m;
  ASSERT_OK(DecodeMessage(chain.first, {}, &m, nullptr, &hub, &kSender));
  const std::string intruder = "gw-2";
  EXPECT_EQ(DecodeMessage(chain.second, {}, &m, nullptr, &hub, &intruder).code(), Status::Code::kNotFound);
  // Nor does a self-contained batch naming gw-1 sent by gw-2 restart it.
  ASSERT_OK(DecodeMessage(chain.first, {}, &m, nullptr, &hub, &intruder));
  ASSERT_OK(DecodeMessage(chain.second, {}, &m, nullptr, &hub, &kSender));
  ExpectSameEntries(chain.second_batch.entries, m.batch.entries);
}

TEST(SeriesContextTest, ADamagedContextBatchDropsTheContext) {
  Chain chain;
  SeriesContextCache hub(size_t{1} << 20);
  WireMessage m;
  ASSERT_OK(DecodeMessage(chain.first, {}, &m, nullptr, &hub, &kSender));
  std::string damaged = chain.second;
  damaged[damaged.size() / 2] ^= 0x5a;  // inside the zstd body: its checksum fails
  WireCounters counters;
  Status st = DecodeMessage(damaged, {}, &m, &counters, &hub, &kSender);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.code(), Status::Code::kNotFound);
  EXPECT_EQ(hub.Find("gw-1"), nullptr);  // nothing half-moved is kept
  EXPECT_EQ(DecodeMessage(chain.second, {}, &m, nullptr, &hub, &kSender).code(), Status::Code::kNotFound);
}

TEST(SeriesContextTest, TheCacheEvictsTheLeastRecentlyUsedOriginPastItsBound) {
  test::SensorWorkload workload(100, 1780000000000);
  std::vector<Reading> readings = workload.Take(800);
  SeriesContext probe;
  probe.Advance(MakeBatch(readings, 1).entries);
  const size_t one = probe.bytes();
  SeriesContextCache hub(one * 5 / 2);  // room for two
  for (int g = 0; g < 3; ++g) {
    Origin o{"gw-" + std::to_string(g), "e"};
    SeriesContext* c = hub.Start(o, ContextKey(o.gateway_id, false));
    c->Advance(MakeBatch(readings, 1).entries);
    c->Seal(800, "x");
    hub.Trim(o.gateway_id);
  }
  EXPECT_EQ(hub.size(), 2u);
  EXPECT_EQ(hub.evictions(), 1u);
  EXPECT_LE(hub.bytes(), hub.max_bytes());
  EXPECT_EQ(hub.Find("gw-0"), nullptr);
  EXPECT_NE(hub.Find("gw-2"), nullptr);
  // A bound of 0 keeps nothing.
  SeriesContextCache none(0);
  SeriesContext* c = none.Start(kOrigin, ContextKey(kOrigin.gateway_id, false));
  c->Advance(MakeBatch(readings, 1).entries);
  none.Trim("gw-1");
  EXPECT_EQ(none.size(), 0u);
}

TEST(SeriesContextTest, PredictionsUseIntegersAcrossScales) {
  SeriesContext c;
  bool added;
  uint32_t id = c.InternSeries(c.devices().Intern("d"), c.metrics().Intern("m"), c.units().Intern("u"), &added);
  c.ObserveValue(id, 2137, 2);  // 21.37
  EXPECT_EQ(c.PredictMantissa(id, 2), 2137);
  EXPECT_EQ(c.PredictMantissa(id, 3), 21370);
  EXPECT_EQ(c.PredictMantissa(id, 1), 213);  // truncated
  EXPECT_EQ(c.PredictMantissa(id, 15), 0);   // past 2^53
  uint32_t other = c.InternSeries(c.devices().Intern("e"), c.metrics().Intern("m"), c.units().Intern("u"), &added);
  EXPECT_EQ(c.PredictMantissa(other, 2), 2137);  // the metric's last, for a series without one
  EXPECT_EQ(c.PredictTs(other, 42), 42);
  c.ObserveTs(other, 1000);
  c.ObserveTs(other, 2000);
  EXPECT_EQ(c.PredictTs(other, 42), 3000);
}

}  // namespace
}  // namespace edgesync

// Priority batches at a region hub (protocol 8, sync/PROTOCOL.md "Priority
// by topic"): decoded, handed to the store with their level and span,
// answered with the origin's priority marks and the hub's protocol; the
// backlog over them skips what they brought; an older gateway's lane
// batches are answered as before. Fake link, a SQLite hub store, real
// batches through the wire.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/store.h"
#include "sync/batch_generated.h"
#include "sync/columns.h"
#include "sync/region_hub.h"
#include "sync/wire.h"
#include "tests/support/process.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"
#include "tests/support/wire_peer.h"
#include "tests/support/region_hub_fixture.h"

namespace edgesync {
namespace {

const Origin kOrigin{"gw-p", "0123456789abcdef0123456789abcdef"};
constexpr int64_t kT0 = 1780000000000;

// The origin's log: every 5th LSN an alarm (level 1), every 7th (not 5th)
// a warning (level 2), the rest plain telemetry.
uint32_t LevelOf(uint64_t lsn) { return lsn % 5 == 0 ? 1 : lsn % 7 == 0 ? 2 : 0; }

std::vector<ChangeEntry> Log(uint64_t from, uint64_t to, int level = -1) {
  std::vector<ChangeEntry> out;
  for (uint64_t lsn = from; lsn <= to; ++lsn) {
    if (level >= 0 && LevelOf(lsn) != static_cast<uint32_t>(level)) continue;
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = Reading{"dev-1", "temp", kT0 + static_cast<int64_t>(lsn), 20.0 + lsn, "C",
                        WithPriority(0, LevelOf(lsn))};
    out.push_back(e);
  }
  return out;
}

class RegionHubPriorityTest : public RegionHubFixture {
 protected:
  void Published(const WireMessage& m) override {
    if (m.kind == WireKind::kAck) answers_[m.correlation_id] = m;
  }

  // Delivers a payload and waits for its answer.
  WireMessage Exchange(uint64_t id, const std::string& payload) {
    link_->DeliverOn(HubInboxTopic("edgesync", "eu", kOrigin.gateway_id), payload);
    EXPECT_TRUE(test::WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return answers_.count(id) > 0;
        },
        20000));
    std::lock_guard<std::mutex> lock(mu_);
    return answers_[id];
  }
  WireMessage Send(const WireBatch& b) {
    const uint64_t id = ++correlation_;
    std::string payload;
    EXPECT_OK(EncodeBatch(ReplyTopic("edgesync", kOrigin.gateway_id, "up"), id, b, EncodeOptions{}, &payload));
    return Exchange(id, payload);
  }
  WireAck Lane(uint64_t from, uint64_t to, uint64_t base = 0) {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = from;
    b.last_lsn = to;
    b.base_lsn = base;
    b.more = true;
    b.entries = Log(from, to);
    return Send(b).ack;
  }
  WireAck Priority(uint8_t level, uint64_t from, uint64_t to, uint64_t base = 0) {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = from;
    b.last_lsn = to;
    b.base_lsn = base;
    b.priority = level;
    b.entries = Log(from, to, level);
    return Send(b).ack;
  }
  // How often the region's feed holds each LSN of the origin.
  std::map<uint64_t, int> FeedCounts() {
    std::map<uint64_t, int> counts;
    FeedRead page;
    ShardPositions after{};
    do {
      EXPECT_OK(hub_store_->ReadFeed(after, 100, &page));
      for (const RegionFeedEntry& e : page.entries) {
        if (e.remote.origin == kOrigin) ++counts[e.remote.origin_lsn];
      }
      after = page.next;
    } while (!page.entries.empty());
    return counts;
  }

  std::map<uint64_t, WireMessage> answers_;
  uint64_t correlation_ = 0;
};

TEST_F(RegionHubPriorityTest, PriorityBatchesRunAheadAndTheBacklogOverThemHoldsEachEntryOnce) {
  WireAck a = Lane(1, 10);
  ASSERT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_TRUE(a.priority_held.empty()) << "no marks yet: nothing on the wire";
  // Alarms of 11..200 and warnings of 11..100, ahead of the backlog; their
  // base (the sender's checkpoint record) is no jump.
  const uint64_t id = correlation_ + 1;
  a = Priority(1, 11, 200, 10);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.high_water, 10u) << "the mark stays";
  EXPECT_EQ(a.priority_held, (std::vector<uint64_t>{200, 0, 0}));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(answers_[id].version, kPriorityVersion) << "a hub of protocol 8 says so";
  }
  a = Priority(2, 11, 100, 10);
  EXPECT_EQ(a.code, AckCode::kOk) << a.message;
  EXPECT_EQ(a.priority_held, (std::vector<uint64_t>{200, 100, 0}));
  RegionHubStats s = hub_->stats(10);
  EXPECT_EQ(s.priority_batches_applied, 2u);
  EXPECT_EQ(s.priority_entries_applied, Log(11, 200, 1).size() + Log(11, 100, 2).size());
  EXPECT_EQ(s.hole_jumps, 0u);
  ASSERT_EQ(s.origins.size(), 1u);
  EXPECT_EQ(s.origins[0].high_water, 10u);
  // The alarms are in the feed before the backlog reaches them.
  std::map<uint64_t, int> counts = FeedCounts();
  for (const ChangeEntry& e : Log(11, 200, 1)) EXPECT_EQ(counts[e.lsn], 1) << e.lsn;
  // A priority batch past its level's mark is a gap naming the marks.
  a = Priority(1, 260, 300);
  EXPECT_EQ(a.code, AckCode::kGap);
  EXPECT_EQ(a.priority_held, (std::vector<uint64_t>{200, 100, 0}));
  EXPECT_EQ(a.high_water, 10u);
  // The backlog, every entry: answers carry the marks; each entry once.
  for (uint64_t f = 11; f <= 250; f += 40) {
    a = Lane(f, std::min<uint64_t>(250, f + 39));
    EXPECT_EQ(a.code, AckCode::kOk) << a.message;
    EXPECT_EQ(a.high_water, std::min<uint64_t>(250, f + 39));
    EXPECT_EQ(a.priority_held, (std::vector<uint64_t>{200, 100, 0}));
  }
  counts = FeedCounts();
  EXPECT_EQ(counts.size(), 250u);
  for (uint64_t lsn = 1; lsn <= 250; ++lsn) EXPECT_EQ(counts[lsn], 1) << "LSN " << lsn;
  s = hub_->stats(10);
  EXPECT_EQ(s.entries_applied, 250u);
  EXPECT_EQ(s.priority_entries_applied, Log(11, 200, 1).size() + Log(11, 100, 2).size());
}

// A gateway of protocol 7 knows no priority: its lane batches carry level
// bits of 0 and its answers look as they did (no marks).
TEST_F(RegionHubPriorityTest, AnOlderGatewaysLaneBatchesAreAnsweredAsBefore) {
  WireBatch b;
  b.origin = kOrigin;
  b.first_lsn = 1;
  b.last_lsn = 20;
  for (uint64_t lsn = 1; lsn <= 20; ++lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = Reading{"dev-1", "temp", kT0 + static_cast<int64_t>(lsn), 1.5, "C", 0};
    b.entries.push_back(e);
  }
  WireMessage m = Send(b);
  EXPECT_EQ(m.ack.code, AckCode::kOk);
  EXPECT_EQ(m.ack.high_water, 20u);
  EXPECT_TRUE(m.ack.priority_held.empty());
  EXPECT_TRUE(m.ack.held.empty());
  EXPECT_EQ(hub_->stats().priority_batches_applied, 0u);
}

// What no sender of protocol 8 writes is answered BadBatch and counted,
// and writes nothing: a priority batch carrying an entry of another level.
TEST_F(RegionHubPriorityTest, ABadPriorityBatchIsAnsweredBadBatchAndWritesNothing) {
  ASSERT_EQ(Lane(1, 10).code, AckCode::kOk);
  // Built field by field: the encoder would refuse it.
  std::vector<ChangeEntry> entries = Log(11, 20, 1);
  entries.push_back(Log(21, 21)[0]);  // level 0
  const std::string raw = EncodeEntries(entries, 10, nullptr);
  flatbuffers::FlatBufferBuilder fbb;
  auto origin = wire::CreateWireOrigin(fbb, fbb.CreateString(kOrigin.gateway_id), fbb.CreateString(kOrigin.epoch));
  auto body = fbb.CreateVector(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  auto batch = wire::CreateBatch(fbb, origin, 11, 30, 0, static_cast<uint32_t>(entries.size()), wire::Codec::None,
                                 wire::Encoding::ColumnsPriority, static_cast<uint32_t>(raw.size()), body, 0, 0,
                                 false, 0, 0, false, false, 0, false, 1);
  auto rt = fbb.CreateString(ReplyTopic("edgesync", kOrigin.gateway_id, "up"));
  const uint64_t id = ++correlation_;
  wire::FinishMessageBuffer(fbb, wire::CreateMessage(fbb, kWireVersion, rt, id, wire::Body::Batch, batch.Union()));
  WireMessage m = Exchange(id, std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize()));
  EXPECT_EQ(m.ack.code, AckCode::kBadBatch);
  EXPECT_NE(m.ack.message.find("not a reading of that level"), std::string::npos) << m.ack.message;
  EXPECT_EQ(m.ack.high_water, 10u);
  EXPECT_EQ(FeedCounts().size(), 10u);
  RegionHubStats s = hub_->stats();
  EXPECT_EQ(s.bad_messages, 1u);
  EXPECT_EQ(s.priority_batches_applied, 0u);
}

// A priority batch that reaches a hub before protocol 8 (a region's hubs
// share one broker: mid-upgrade, after a rollback) must not be read as a
// lane batch covering its whole span, which would lose every other entry
// of that span at the region. That hub does not read Batch.priority (here:
// zeroed) and finds an entry encoding it does not know: the batch is
// answered BadBatch, nothing of it is applied, and the lane batches still
// bring every entry of the span, each once. Decoders of protocol 7 refused
// any encoding but ColumnsV1 and ColumnsContext (CheckEncoding,
// Unsupported) and a batch without entries as empty; the hub answers
// either refusal BadBatch before its store sees the batch.
TEST_F(RegionHubPriorityTest, APriorityBatchReadWithoutItsLevelIsRefusedAndWritesNothing) {
  ASSERT_EQ(Lane(1, 10).code, AckCode::kOk);
  const std::string reply = ReplyTopic("edgesync", kOrigin.gateway_id, "up");
  size_t refused = 0;
  for (uint64_t last : {uint64_t{40}, uint64_t{14}}) {  // with level 1 entries (15, 20, ...), and with none
    SCOPED_TRACE(last);
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = 11;
    b.last_lsn = last;
    b.priority = 1;
    b.entries = Log(11, last, 1);
    ASSERT_EQ(b.entries.empty(), last == 14);
    std::string payload;
    const uint64_t id = ++correlation_;
    ASSERT_OK(EncodeBatch(reply, id, b, EncodeOptions{}, &payload));
    const std::string old_read = WithoutPriority(payload);
    ASSERT_FALSE(old_read.empty());
    WireMessage m = Exchange(id, old_read);
    ++refused;
    EXPECT_EQ(m.ack.code, AckCode::kBadBatch) << m.ack.message;
    EXPECT_EQ(m.ack.high_water, 10u);
    EXPECT_TRUE(m.ack.priority_held.empty());
    EXPECT_EQ(FeedCounts().size(), 10u) << "a refused batch wrote entries";
    EXPECT_EQ(hub_->stats().bad_messages, refused);
  }
  EXPECT_EQ(hub_->stats().priority_batches_applied, 0u);
  // The backlog over the span: every entry, each once.
  ASSERT_EQ(Lane(11, 40).code, AckCode::kOk);
  const std::map<uint64_t, int> counts = FeedCounts();
  ASSERT_EQ(counts.size(), 40u);
  for (const auto& [lsn, n] : counts) EXPECT_EQ(n, 1) << "LSN " << lsn;
}

}  // namespace
}  // namespace edgesync

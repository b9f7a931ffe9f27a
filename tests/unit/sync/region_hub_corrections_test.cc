// Time corrections through a region hub (protocol 6): a batch holding them
// (or made of one only) is applied like any other; a feed page holds them
// for a reader of protocol 6 and leaves them out for one of protocol 5,
// which refuses an entry kind it does not know (a sequence hole it accepts
// instead; a page left with nothing reads on rather than telling such a
// reader it caught up). Fake link, a SQLite hub store, real messages.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/store.h"
#include "sync/region_hub.h"
#include "sync/wire.h"
#include "tests/support/process.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/status_assert.h"
#include "tests/support/region_hub_fixture.h"
#include "tests/support/wire_peer.h"

namespace edgesync {
namespace {

const Origin kOrigin{"gw-1", "0123456789abcdef0123456789abcdef"};

class RegionHubCorrectionsTest : public RegionHubFixture {
 protected:
  void Published(const WireMessage& m) override {
    if (m.kind == WireKind::kAck) acks_.push_back(m.ack);
    if (m.kind == WireKind::kFeedPage) pages_.push_back(m.feed_page);
  }

  void SendBatch(uint64_t first_lsn, std::vector<ChangeEntry> entries) {
    WireBatch b;
    b.origin = kOrigin;
    b.first_lsn = first_lsn;
    b.base_lsn = first_lsn - 1;
    b.entries = std::move(entries);
    b.last_lsn = b.entries.back().lsn;
    std::string payload;
    ASSERT_OK(EncodeBatch(ReplyTopic("edgesync", "gw-1", "up"), 1, b, EncodeOptions{}, &payload));
    const size_t before = Acks();
    link_->DeliverOn(HubInboxTopic("edgesync", "eu", "gw-1"), payload);
    ASSERT_TRUE(test::WaitFor([&] { return Acks() > before; }, 20000));
  }
  // A feed page for gw-9 from `after`, asked by a reader of `version`.
  WireFeedPage Pull(uint16_t version, const ShardPositions& after, uint32_t max_entries) {
    std::string request = EncodeFeedRequest(ReplyTopic("edgesync", "gw-9", "feed"), ++correlation_, after,
                                            max_entries, "");
    if (version != kWireVersion) request = AsProtocol(std::move(request), version);
    size_t before;
    {
      std::lock_guard<std::mutex> lock(mu_);
      before = pages_.size();
    }
    link_->DeliverOn(HubInboxTopic("edgesync", "eu", "gw-9"), request);
    EXPECT_TRUE(test::WaitFor(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return pages_.size() > before;
        },
        20000));
    std::lock_guard<std::mutex> lock(mu_);
    return pages_.empty() ? WireFeedPage{} : pages_.back();
  }
  size_t Acks() {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_.size();
  }
  static ChangeEntry Reading(uint64_t lsn) {
    ChangeEntry e;
    e.lsn = lsn;
    e.reading = edgesync::Reading{"dev-1", "temp", 1780000000000 + static_cast<int64_t>(lsn) * 1000, 21.5, "C", 0};
    return e;
  }
  static ChangeEntry Correction(uint64_t lsn, uint32_t period) {
    ChangeEntry e;
    e.lsn = lsn;
    e.kind = ChangeEntry::Kind::kTimeCorrection;
    e.correction = TimeCorrection{period, 259200000, 1779740800000, 1779740900000};
    return e;
  }
  static std::vector<uint64_t> Lsns(const WireFeedPage& page) {
    std::vector<uint64_t> out;
    for (const RegionFeedEntry& e : page.entries) out.push_back(e.remote.origin_lsn);
    return out;
  }

  std::vector<WireAck> acks_;
  std::vector<WireFeedPage> pages_;
  uint64_t correlation_ = 0;
};

TEST_F(RegionHubCorrectionsTest, AReaderOfProtocol6GetsCorrectionsAndOneOfProtocol5APageWithoutThem) {
  SendBatch(1, {Reading(1), Reading(2), Correction(3, 1), Reading(4)});
  SendBatch(5, {Correction(5, 2)});  // a batch of a correction only
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(acks_.size(), 2u);
    for (const WireAck& a : acks_) EXPECT_EQ(a.code, AckCode::kOk) << a.message;
    EXPECT_EQ(acks_.back().high_water, 5u) << "the mark passes a batch of a correction only";
  }

  WireFeedPage v6 = Pull(kWireVersion, ShardPositions{}, 100);
  EXPECT_EQ(Lsns(v6), (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  ASSERT_EQ(v6.entries.size(), 5u);
  EXPECT_EQ(v6.entries[2].remote.entry.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_EQ(v6.entries[2].remote.entry.correction.period, 1u);
  EXPECT_EQ(v6.entries[4].remote.entry.correction.period, 2u);
  EXPECT_EQ(hub_->stats().feed_corrections_withheld, 0u);

  WireFeedPage v5 = Pull(5, ShardPositions{}, 100);
  EXPECT_EQ(Lsns(v5), (std::vector<uint64_t>{1, 2, 4}));
  // The same continuation: the reader moves past the corrections, and its
  // sequences have a hole where each was (strictly increasing, as it checks).
  EXPECT_EQ(v5.next, v6.next);
  EXPECT_EQ(v5.head, v6.head);
  ASSERT_EQ(v5.entries.size(), 3u);
  EXPECT_EQ(v5.entries[2].seq, v6.entries[3].seq);
  EXPECT_GT(v5.entries[2].seq, v5.entries[1].seq + 1);
  EXPECT_EQ(hub_->stats().feed_corrections_withheld, 2u);

  // A page that would hold only a correction with more behind reads on:
  // an empty page would tell a reader of protocol 5 it caught up.
  ShardPositions after{};
  after[RegionShardOf("gw-1")] = v6.entries[1].seq;  // after LSN 2
  WireFeedPage one = Pull(5, after, 1);
  EXPECT_EQ(Lsns(one), (std::vector<uint64_t>{4}));
  EXPECT_EQ(one.next[RegionShardOf("gw-1")], v6.entries[3].seq);
  // At the tail, a correction only: an empty page at the head, nothing lost.
  after[RegionShardOf("gw-1")] = v6.entries[3].seq;  // after LSN 4
  WireFeedPage tail = Pull(5, after, 100);
  EXPECT_TRUE(tail.entries.empty());
  EXPECT_EQ(tail.next, v6.next);
  EXPECT_EQ(tail.next, tail.head);
  // The same for a reader of protocol 6 holds the correction.
  EXPECT_EQ(Lsns(Pull(kWireVersion, after, 100)), (std::vector<uint64_t>{5}));
}

}  // namespace
}  // namespace edgesync

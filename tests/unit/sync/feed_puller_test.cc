// FeedPuller against a scripted hub behind a fake MqttLink: follows the
// continuation, skips its own origin, and on an explicit reset restarts at
// the position and epoch the hub names (counted); ignores (and counts) every
// kind of page that does not answer its request within bounds, leaving the
// read view and the position as they were; a page the store refuses is
// counted, shown and asked again later; a head notice cannot make it spin.
#include "sync/feed_puller.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>

#include "tests/support/process.h"
#include "tests/support/fake_link.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

// An in-memory read view: the puller's role (ReadViewWriter), nothing else.
class ViewStore : public ReadViewWriter {
 public:
  // This gateway's origin: the entries the scripted hubs serve back as its own.
  Origin origin() const override { return {"gw-me", "00000000000000000000000000000001"}; }
  Status GetFeedPosition(const std::string& region, FeedPosition* position) override {
    std::lock_guard<std::mutex> lock(mu);
    *position = positions[region];
    return Status::Ok();
  }
  Status SetFeedPosition(const std::string& region, const FeedPosition& position, bool reset) override {
    std::lock_guard<std::mutex> lock(mu);
    FeedPosition& held = positions[region];
    if (!reset && held.epoch == position.epoch && !AllAtOrBelow(held.shards, position.shards)) {
      return Status::InvalidArgument("moves back");
    }
    held = position;
    return Status::Ok();
  }
  FeedPosition Position(const std::string& region) {
    FeedPosition p;
    GetFeedPosition(region, &p);
    return p;
  }
  Status ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) override {
    std::lock_guard<std::mutex> lock(mu);
    if (refuse_apply) return Status::NoSpace("disk full (test)");
    for (const auto& e : entries) remote.push_back(e);
    *applied = static_cast<int64_t>(entries.size());
    return Status::Ok();
  }

  Status KeepWatermarks(const std::vector<OriginWatermark>& w) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& m : w) watermarks[m.origin.ToString()] = std::max(watermarks[m.origin.ToString()], m.complete_through_ms);
    return Status::Ok();
  }

  std::mutex mu;
  std::map<std::string, FeedPosition> positions;
  std::map<std::string, int64_t> watermarks;
  std::vector<RemoteEntry> remote;
  bool refuse_apply = false;
};

const char* const kEpoch = "000000000000000000000000000000e1";
// The scripted hubs number one shard: this gateway's (gw-me's, shard 0),
// which the other origin here (gw-x6) shares.
constexpr int kShard = 0;

ShardPositions At(uint64_t n) {
  ShardPositions p{};
  p[kShard] = n;
  return p;
}

FeedPosition Pos(const std::string& epoch, uint64_t n) { return FeedPosition{epoch, At(n)}; }
const char* const kOtherEpoch = "000000000000000000000000000000e2";

RegionFeedEntry Entry(uint64_t seq, const Origin& origin, uint64_t lsn) {
  RegionFeedEntry f;
  f.seq = seq;
  f.shard = RegionShardOf(origin.gateway_id);
  f.remote.origin = origin;
  f.remote.origin_lsn = lsn;
  f.remote.entry.lsn = lsn;
  f.remote.entry.reading = {"dev-1", "t", 1780000000000 + static_cast<int64_t>(lsn), 20.5, "C", 0};
  return f;
}

TEST(FeedPullerTest, FollowsContinuationSkipsOwnOriginAndHonoursReset) {
  ViewStore store;
  store.positions["eu"] = Pos("", 10);  // this gateway read up to 10 long ago
  const Origin other{"gw-x6", "00000000000000000000000000000002"};
  ASSERT_EQ(RegionShardOf(other.gateway_id), kShard);
  ASSERT_EQ(RegionShardOf(store.origin().gateway_id), kShard);
  std::mutex mu;
  std::vector<uint64_t> asked;
  // The region pruned everything up to 100; it holds 101..104 (103 is ours).
  FakeLink::Responder hub = [&](const std::string&, const std::string& payload, FakeLink* link) {
    WireMessage m;
    ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr));
    ASSERT_EQ(m.kind, WireKind::kFeedRequest);
    {
      std::lock_guard<std::mutex> lock(mu);
      asked.push_back(m.feed_after[kShard]);
    }
    const uint64_t after = m.feed_after[kShard];
    WireFeedPage page;
    page.region = "eu";
    page.after = m.feed_after;
    page.head = At(104);
    page.epoch = kEpoch;
    if (after < 100) {
      page.reset = true;
      page.next = At(100);
    } else {
      for (uint64_t s = after + 1; s <= 104 && page.entries.size() < 2; ++s) {
        page.entries.push_back(Entry(s, s == 103 ? store.origin() : other, s));
      }
      page.next = At(page.entries.empty() ? after : page.entries.back().seq);
    }
    std::string out;
    ASSERT_OK(EncodeFeedPage(m.correlation_id, page, {}, &out));
    link->Deliver(out);
  };
  FeedPullerOptions o;
  o.gateway_id = "gw-me";
  o.poll_interval_ms = 60000;
  UplinkRegion eu;
  eu.name = "eu";
  o.regions.push_back(eu);
  FeedPuller puller(&store, o, nullptr, [&](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
    *link = std::make_unique<FakeLink>(hub);
    return Status::Ok();
  });
  ASSERT_OK(puller.Start());
  ASSERT_TRUE(test::WaitFor(
      [&] {
        return store.Position("eu").shards == At(104);
      },
      5000));
  FeedPullerStats s = puller.stats();
  puller.Stop();
  EXPECT_EQ(s.regions[0].resets, 1u);
  EXPECT_EQ(s.regions[0].skipped_own, 1u);
  EXPECT_EQ(s.regions[0].applied, 3u);
  ASSERT_EQ(store.remote.size(), 3u);
  EXPECT_EQ(store.remote[0].origin_lsn, 101u);
  EXPECT_EQ(store.remote[2].origin_lsn, 104u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(asked.size(), 3u);
  EXPECT_EQ(asked[0], 10u);   // from its checkpoint
  EXPECT_EQ(asked[1], 100u);  // restarted where the hub said, explicitly
  EXPECT_EQ(asked[2], 102u);  // continuation
}

// A hub that answers nothing by itself: the test delivers what it wants on
// the reply topic, matched (or not) to the puller's last request.
class ManualHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.gateway_id = "gw-me";
    options_.poll_interval_ms = 600000;
    options_.answer_timeout_ms = 600000;
    options_.backoff_base_ms = 20;
    options_.backoff_max_ms = 40;
    UplinkRegion eu;
    eu.name = "eu";
    options_.regions.push_back(eu);
  }
  void Start() {
    puller_ = std::make_unique<FeedPuller>(
        &store_, options_, nullptr, [this](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
          auto fake = std::make_unique<FakeLink>([this](const std::string&, const std::string& payload, FakeLink* l) {
            WireMessage m;
            ASSERT_OK(DecodeMessage(payload, {}, &m, nullptr));
            std::lock_guard<std::mutex> lock(mu_);
            link_ = l;
            requests_.push_back(m);
          });
          *link = std::move(fake);
          return Status::Ok();
        });
    ASSERT_OK(puller_->Start());
    ASSERT_TRUE(test::WaitFor([&] { return Requests() >= 1; }, 5000));
  }
  size_t Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  WireMessage LastRequest() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.back();
  }
  // A page that answers the last request correctly: entries after..after+n.
  WireFeedPage GoodPage(const WireMessage& request, uint64_t n, uint64_t head) {
    WireFeedPage page;
    page.region = "eu";
    page.after = request.feed_after;
    page.head = At(head);
    page.epoch = kEpoch;
    const uint64_t after = request.feed_after[kShard];
    for (uint64_t s = after + 1; s <= after + n; ++s) page.entries.push_back(Entry(s, other_, s));
    page.next = At(after + n);
    return page;
  }
  void Deliver(uint64_t correlation_id, const WireFeedPage& page) {
    std::string out;
    ASSERT_OK(EncodeFeedPage(correlation_id, page, {}, &out));
    FakeLink* link;
    {
      std::lock_guard<std::mutex> lock(mu_);
      link = link_;
    }
    link->Deliver(out);
  }
  void Deliver(const std::string& payload) {
    std::lock_guard<std::mutex> lock(mu_);
    link_->Deliver(payload);
  }
  FeedRegionStats RegionStats() { return puller_->stats().regions[0]; }

  const Origin other_{"gw-x6", "00000000000000000000000000000002"};  // shard kShard
  ViewStore store_;
  FeedPullerOptions options_;
  std::mutex mu_;
  FakeLink* link_ = nullptr;
  std::vector<WireMessage> requests_;
  // Last, so it is destroyed first: its thread stops before the members its
  // link callback writes to go away.
  std::unique_ptr<FeedPuller> puller_;
};

TEST_F(ManualHubTest, EveryKindOfBadPageIsCountedAndChangesNothing) {
  store_.positions["eu"] = Pos(kEpoch, 20);
  Start();
  WireMessage req = LastRequest();
  ASSERT_EQ(req.feed_after, At(20));
  ASSERT_EQ(req.feed_epoch, kEpoch);
  ASSERT_NE(req.correlation_id, 0u);
  const uint64_t id = req.correlation_id;
  struct Bad {
    const char* what;
    uint64_t correlation_id;
    std::function<void(WireFeedPage*)> spoil;
  };
  std::vector<Bad> bad = {
      {"no correlation id", 0, [](WireFeedPage*) {}},
      {"another correlation id", id + 1, [](WireFeedPage*) {}},
      {"another region", id, [](WireFeedPage* p) { p->region = "us"; }},
      {"another position", id, [](WireFeedPage* p) { p->after = At(5); }},
      {"another shard's position", id, [](WireFeedPage* p) { p->after[kShard + 1] = 20; }},
      {"no per-shard continuation", id, [](WireFeedPage* p) { p->per_shard = false; }},
      {"no epoch", id, [](WireFeedPage* p) { p->epoch.clear(); }},
      {"another epoch without a reset", id, [](WireFeedPage* p) { p->epoch = kOtherEpoch; }},
      {"a sequence at or before the position", id, [](WireFeedPage* p) { p->entries[0].seq = 20; }},
      {"a sequence past the head", id, [](WireFeedPage* p) { p->entries[2].seq = 31; }},
      {"a sequence past its own shard's head", id,
       [](WireFeedPage* p) {
         // gw-1 is of shard 1, whose head is 0: the page's head is shard 0's.
         p->entries[2].remote.origin.gateway_id = "gw-1";
       }},
      {"a continuation before the last entry", id, [](WireFeedPage* p) { p->next = At(21); }},
      {"a continuation past the head", id, [](WireFeedPage* p) { p->next = At(31); }},
      {"a continuation past another shard's head", id, [](WireFeedPage* p) { p->next[kShard + 1] = 1; }},
      {"a continuation before the position", id,
       [](WireFeedPage* p) {
         p->entries.clear();
         p->next = At(19);
       }},
      {"a reset with entries", id, [](WireFeedPage* p) { p->reset = true; }},
      {"a reset past the head", id,
       [](WireFeedPage* p) {
         p->reset = true;
         p->entries.clear();
         p->next = At(1000);
       }},
  };
  for (const Bad& b : bad) {
    WireFeedPage page = GoodPage(req, 3, 30);
    b.spoil(&page);
    Deliver(b.correlation_id, page);
  }
  ASSERT_TRUE(test::WaitFor([&] { return RegionStats().bad_pages == bad.size(); }, 5000))
      << RegionStats().bad_pages << " of " << bad.size() << " bad pages counted";
  // Only the page to another request of ours is a late one (routine: not
  // warned about); the others are warned about.
  EXPECT_EQ(RegionStats().late_pages, 1u);
  {
    std::lock_guard<std::mutex> lock(store_.mu);
    EXPECT_TRUE(store_.remote.empty()) << "a bad page reached the read view";
  }
  FeedPosition pos = store_.Position("eu");
  EXPECT_EQ(pos.shards, At(20));
  EXPECT_EQ(pos.epoch, kEpoch);
  EXPECT_EQ(Requests(), 1u) << "a bad page made the puller ask again";
  EXPECT_EQ(puller_->stats().pages, 0u);
  // The real answer is still taken.
  Deliver(id, GoodPage(req, 3, 23));
  ASSERT_TRUE(test::WaitFor([&] { return store_.Position("eu").shards[kShard] == 23; }, 5000));
  EXPECT_EQ(RegionStats().applied, 3u);
  // ...and only once: a replay of it answers no outstanding request.
  Deliver(id, GoodPage(req, 3, 23));
  ASSERT_TRUE(test::WaitFor([&] { return RegionStats().bad_pages == bad.size() + 1; }, 5000));
  EXPECT_EQ(RegionStats().late_pages, 2u);
  puller_->Stop();
  std::lock_guard<std::mutex> lock(store_.mu);
  EXPECT_EQ(store_.remote.size(), 3u);
}

TEST_F(ManualHubTest, APositionOfTheSingleSequenceFeedStartsOverCountedAsAReset) {
  FeedPosition old;
  old.single_seq = 40;  // what a store of the single-sequence feed hands out
  store_.positions["eu"] = old;
  Start();
  WireMessage req = LastRequest();
  EXPECT_EQ(req.feed_after, ShardPositions{});
  EXPECT_EQ(req.feed_epoch, "");
  EXPECT_EQ(RegionStats().resets, 1u);
}

TEST_F(ManualHubTest, APageMergingTwoShardsMovesEachShardsPosition) {
  Start();
  WireMessage req = LastRequest();
  const Origin gw1{"gw-1", "00000000000000000000000000000003"};  // shard 1
  WireFeedPage page = GoodPage(req, 2, 2);
  page.entries.insert(page.entries.begin() + 1, Entry(7, gw1, 1));  // shard 1's numbers are its own
  page.head[1] = 9;
  page.next[1] = 7;
  Deliver(req.correlation_id, page);
  ASSERT_TRUE(test::WaitFor([&] { return puller_->stats().pages == 1; }, 5000));
  ShardPositions want = At(2);
  want[1] = 7;
  EXPECT_EQ(store_.Position("eu").shards, want);
  EXPECT_EQ(RegionStats().applied, 3u);
  EXPECT_EQ(RegionStats().lag, 2u);  // shard 1: 7 of 9
  EXPECT_EQ(RegionStats().bad_pages, 0u);
}

// Protocol 6: the request says so, and a page's time corrections go to the
// read view like any entry. A page with a sequence hole (where a hub left
// a correction out for a reader of protocol 5) is taken as it is: the
// check below is the one readers of protocol 5 make.
TEST_F(ManualHubTest, CorrectionsGoToTheReadViewAndASequenceHoleIsAccepted) {
  Start();
  WireMessage req = LastRequest();
  EXPECT_EQ(req.version, kWireVersion);
  WireFeedPage page = GoodPage(req, 4, 6);
  page.entries[1].remote.entry.kind = ChangeEntry::Kind::kTimeCorrection;
  page.entries[1].remote.entry.correction = TimeCorrection{3, 60000, 100, 200};
  page.entries.erase(page.entries.begin() + 2);  // seq 3 left out: a hole
  page.next = At(5);
  Deliver(req.correlation_id, page);
  ASSERT_TRUE(test::WaitFor([&] { return puller_->stats().pages == 1; }, 5000));
  EXPECT_EQ(RegionStats().bad_pages, 0u);
  EXPECT_EQ(store_.Position("eu").shards, At(5));
  std::lock_guard<std::mutex> lock(store_.mu);
  ASSERT_EQ(store_.remote.size(), 3u);
  EXPECT_EQ(store_.remote[1].entry.kind, ChangeEntry::Kind::kTimeCorrection);
  EXPECT_EQ(store_.remote[1].entry.correction.period, 3u);
  EXPECT_EQ(store_.remote[1].entry.correction.delta_ms, 60000);
  EXPECT_EQ(store_.remote[1].origin_lsn, 2u);
}

TEST_F(ManualHubTest, ARefusedPageIsCountedShownAndAskedAgainLater) {
  store_.refuse_apply = true;
  Start();
  WireMessage req = LastRequest();
  Deliver(req.correlation_id, GoodPage(req, 5, 5));
  ASSERT_TRUE(test::WaitFor([&] { return RegionStats().store_errors >= 1; }, 5000));
  EXPECT_NE(RegionStats().last_error.find("disk full"), std::string::npos) << RegionStats().last_error;
  EXPECT_EQ(store_.Position("eu").shards, At(0));
  // Asked again after a delay, still from the old position.
  ASSERT_TRUE(test::WaitFor([&] { return Requests() >= 2; }, 5000));
  req = LastRequest();
  EXPECT_EQ(req.feed_after, At(0));
  {
    std::lock_guard<std::mutex> lock(store_.mu);
    store_.refuse_apply = false;
  }
  Deliver(req.correlation_id, GoodPage(req, 5, 5));
  ASSERT_TRUE(test::WaitFor([&] { return store_.Position("eu").shards[kShard] == 5; }, 5000));
  EXPECT_EQ(RegionStats().last_error, "");
  EXPECT_EQ(RegionStats().store_errors, 1u);
  EXPECT_EQ(store_.Position("eu").epoch, kEpoch);
}

TEST_F(ManualHubTest, AHeadNoticeTriggersOnePullNotASpin) {
  Start();
  WireMessage req = LastRequest();
  Deliver(req.correlation_id, GoodPage(req, 2, 2));
  ASSERT_TRUE(test::WaitFor([&] { return store_.Position("eu").shards[kShard] == 2; }, 5000));
  ASSERT_EQ(Requests(), 1u);
  // A forged notice of a far head: one pull, whose answer says the truth.
  Deliver(EncodeFeedHead("eu", At(1u << 30), kEpoch));
  ASSERT_TRUE(test::WaitFor([&] { return Requests() == 2; }, 5000));
  req = LastRequest();
  Deliver(req.correlation_id, GoodPage(req, 0, 2));
  ASSERT_TRUE(test::WaitFor([&] { return puller_->stats().pages == 2; }, 5000));
  test::SleepMs(500);
  EXPECT_EQ(Requests(), 2u) << "the notice kept the puller pulling";
  // Notices of a head already read ask nothing.
  Deliver(EncodeFeedHead("eu", At(2), kEpoch));
  Deliver(EncodeFeedHead("us", At(1u << 30), kEpoch));
  test::SleepMs(300);
  EXPECT_EQ(Requests(), 2u);
}

TEST_F(ManualHubTest, AResetToAnotherEpochRestartsThereExplicitly) {
  store_.positions["eu"] = Pos(kEpoch, 500);
  Start();
  // The hub's store was re-created: a notice of the new epoch, then the
  // answer to our request is an explicit reset to 0 of that epoch.
  WireMessage req = LastRequest();
  WireFeedPage reset;
  reset.region = "eu";
  reset.after = At(500);
  reset.head = At(3);
  reset.reset = true;
  reset.epoch = kOtherEpoch;
  reset.next = At(0);
  Deliver(req.correlation_id, reset);
  ASSERT_TRUE(test::WaitFor([&] { return Requests() == 2; }, 5000));
  req = LastRequest();
  EXPECT_EQ(req.feed_after, At(0));
  EXPECT_EQ(req.feed_epoch, kOtherEpoch);
  WireFeedPage page = GoodPage(req, 3, 3);
  page.epoch = kOtherEpoch;
  Deliver(req.correlation_id, page);
  ASSERT_TRUE(test::WaitFor([&] { return store_.Position("eu").shards[kShard] == 3; }, 5000));
  EXPECT_EQ(store_.Position("eu").epoch, kOtherEpoch);
  EXPECT_EQ(RegionStats().resets, 1u);
  EXPECT_EQ(RegionStats().applied, 3u);
}

}  // namespace
}  // namespace edgesync

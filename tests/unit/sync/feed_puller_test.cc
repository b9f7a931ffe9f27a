// FeedPuller against a scripted hub behind a fake MqttLink: follows the
// continuation, skips its own origin, and on an explicit reset restarts at
// the position the hub names (counted), never rewinding its checkpoint.
#include "sync/feed_puller.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>

#include "tests/support/process.h"
#include "tests/unit/sync/fake_link.h"

namespace edgesync {
namespace {

// Minimal in-memory store: only what the puller uses.
class ViewStore : public Store {
 public:
  Origin origin() const override { return {"gw-me", "00000000000000000000000000000001"}; }
  int schema_version() const override { return 0; }
  Status AppendReadings(const std::vector<Reading>&, AppendResult*) override { return Status::Unsupported(""); }
  Status AppendReadingsMarked(const std::vector<Reading>&, const CheckpointMark&, AppendResult*) override {
    return Status::Unsupported("");
  }
  uint64_t LastLsn() const override { return 0; }
  Status UpsertDevice(const DeviceRecord&, uint64_t*) override { return Status::Unsupported(""); }
  Status DeleteDevice(const std::string&, uint64_t*) override { return Status::Unsupported(""); }
  Status GetDevice(const std::string&, DeviceRecord*) override { return Status::Unsupported(""); }
  Status ListRanges(std::vector<RangeInfo>*) override { return Status::Unsupported(""); }
  Status ReadFeed(uint32_t, const FeedStart&, size_t, FeedPage*) override { return Status::Unsupported(""); }
  Status ReadLog(uint64_t, size_t, std::vector<ChangeEntry>*) override { return Status::Unsupported(""); }
  Status AcquireLease(uint32_t, const std::string&, Lease*) override { return Status::Unsupported(""); }
  Status RenewLease(const Lease&, Lease*) override { return Status::Unsupported(""); }
  Status CheckpointLease(const Lease&, const std::string&, Lease*) override { return Status::Unsupported(""); }
  Status ReleaseLease(const Lease&) override { return Status::Unsupported(""); }
  Status ListLeases(std::vector<Lease>*) override { return Status::Unsupported(""); }
  Status GetCheckpoint(const std::string& name, uint64_t* value) override {
    std::lock_guard<std::mutex> lock(mu);
    *value = checkpoints[name];
    return Status::Ok();
  }
  Status SetCheckpoint(const std::string& name, uint64_t value) override {
    std::lock_guard<std::mutex> lock(mu);
    if (value < checkpoints[name]) return Status::InvalidArgument("checkpoint moves back");
    checkpoints[name] = value;
    return Status::Ok();
  }
  Status AckUpstream(const std::string&, uint64_t) override { return Status::Unsupported(""); }
  Status ApplyRemote(const std::vector<RemoteEntry>& entries, int64_t* applied) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : entries) remote.push_back(e);
    *applied = static_cast<int64_t>(entries.size());
    return Status::Ok();
  }
  Status ApplyOriginBatch(const Origin&, uint64_t, const std::vector<ChangeEntry>&, uint64_t*) override {
    return Status::Unsupported("");
  }
  Status GetHighWater(const Origin&, uint64_t*) override { return Status::Unsupported(""); }
  Status ReadRegionFeed(uint64_t, size_t, std::vector<RegionFeedEntry>*, uint64_t*, bool*) override {
    return Status::Unsupported("");
  }
  Status Query(const QueryRequest&, std::vector<QueryRow>*) override { return Status::Unsupported(""); }
  Status AddDeadLetters(const std::vector<DeadLetter>&) override { return Status::Unsupported(""); }
  Status ListDeadLetters(size_t, std::vector<DeadLetter>*) override { return Status::Unsupported(""); }
  Status Prune(PruneResult*) override { return Status::Unsupported(""); }
  Status Stats(StoreStats*) override { return Status::Unsupported(""); }

  std::mutex mu;
  std::map<std::string, uint64_t> checkpoints;
  std::vector<RemoteEntry> remote;
};

RegionFeedEntry Entry(uint64_t seq, const Origin& origin, uint64_t lsn) {
  RegionFeedEntry f;
  f.seq = seq;
  f.remote.origin = origin;
  f.remote.origin_lsn = lsn;
  f.remote.entry.lsn = lsn;
  f.remote.entry.reading = {"dev-1", "t", 1780000000000 + static_cast<int64_t>(lsn), 20.5, "C", 0};
  return f;
}

TEST(FeedPullerTest, FollowsContinuationSkipsOwnOriginAndHonoursReset) {
  ViewStore store;
  store.checkpoints["feed:eu"] = 10;  // this gateway read up to 10 long ago
  const Origin other{"gw-x", "00000000000000000000000000000002"};
  std::mutex mu;
  std::vector<uint64_t> asked;
  // The region pruned everything up to 100; it holds 101..104 (103 is ours).
  FakeLink::Responder hub = [&](const std::string&, const std::string& payload, FakeLink* link) {
    WireMessage m;
    ASSERT_TRUE(DecodeMessage(payload, {}, &m, nullptr).ok());
    ASSERT_EQ(m.kind, WireKind::kFeedRequest);
    {
      std::lock_guard<std::mutex> lock(mu);
      asked.push_back(m.feed_after_seq);
    }
    WireFeedPage page;
    page.region = "eu";
    page.after_seq = m.feed_after_seq;
    page.head_seq = 104;
    if (m.feed_after_seq < 100) {
      page.reset = true;
      page.next_seq = 100;
    } else {
      for (uint64_t s = m.feed_after_seq + 1; s <= 104 && page.entries.size() < 2; ++s) {
        page.entries.push_back(Entry(s, s == 103 ? store.origin() : other, s));
      }
      page.next_seq = page.entries.empty() ? m.feed_after_seq : page.entries.back().seq;
    }
    std::string out;
    ASSERT_TRUE(EncodeFeedPage(m.correlation_id, page, {}, &out).ok());
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
  ASSERT_TRUE(puller.Start().ok());
  ASSERT_TRUE(test::WaitFor(
      [&] {
        uint64_t v;
        store.GetCheckpoint("feed:eu", &v);
        return v == 104;
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

}  // namespace
}  // namespace edgesync

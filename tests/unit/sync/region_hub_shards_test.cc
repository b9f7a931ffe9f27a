// The region hub's side of shards (sync/region_hub.h): it subscribes to the
// shards its leases give it and to nothing else, answers only messages of a
// shard it holds (others are dropped and counted), refuses a shard level that
// is not the sender's own, follows its leases as they change, and hands its
// shards over when stopped. Fake link, fake leases, a SQLite hub store.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "store/hub_store_leases.h"
#include "store/store.h"
#include "sync/region_hub.h"
#include "sync/wire.h"
#include "tests/support/sqlite_hub.h"
#include "tests/support/process.h"
#include "tests/support/region_hub_fixture.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

class RecordingLink : public FakeLink {
 public:
  using FakeLink::FakeLink;
  Status Subscribe(const std::string& filter, int) override {
    std::lock_guard<std::mutex> lock(mu_);
    filters_.insert(filter);
    return Status::Ok();
  }
  Status Unsubscribe(const std::string& filter) override {
    std::lock_guard<std::mutex> lock(mu_);
    filters_.erase(filter);
    return Status::Ok();
  }
  std::set<std::string> filters() {
    std::lock_guard<std::mutex> lock(mu_);
    return filters_;
  }

 private:
  std::mutex mu_;
  std::set<std::string> filters_;
};

class FakeLeases : public ShardLeases {
 public:
  Status Join() override { return Status::Ok(); }
  Status Balance(std::vector<int>* owned, ShardLeaseStats* stats) override {
    std::lock_guard<std::mutex> lock(mu);
    *owned = shards;
    *stats = ShardLeaseStats{2, 0, 0};
    return Status::Ok();
  }
  Status Release() override {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    return Status::Ok();
  }
  std::mutex mu;
  std::vector<int> shards;
  bool released = false;
};

class RegionHubShardsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(OpenHubStoreIn(dir_, &hub_store_)); }
  void StartHub(std::vector<int> shards) {
    leases_.shards = std::move(shards);
    RegionHubOptions o;
    o.region = "eu";
    o.hub_id = "h1";
    o.leases = &leases_;
    o.lease_ttl_ms = 300;  // a round every 100 ms
    hub_ = std::make_unique<RegionHub>(hub_store_.get(), o, nullptr,
                                       [this](const MqttLinkOptions& lo, std::unique_ptr<MqttLink>* link) {
                                         client_id_ = lo.client_id;
                                         auto l = std::make_unique<RecordingLink>(
                                             [this](const std::string& topic, const std::string&, FakeLink*) {
                                               std::lock_guard<std::mutex> lock(mu_);
                                               answered_.push_back(topic);
                                             });
                                         link_ = l.get();
                                         *link = std::move(l);
                                         return Status::Ok();
                                       });
    ASSERT_OK(hub_->Start());
  }
  // A probe from `gateway` on `topic`; true if the hub answered it. Only
  // publishes to the gateway's reply topic count: the hub's own head notice
  // may go out at any moment from its worker thread.
  bool Ping(const std::string& gateway, const std::string& topic) {
    const std::string reply_to = ReplyTopic("edgesync", gateway, "up");
    size_t before = Answered(reply_to);
    link_->DeliverOn(topic, EncodePing(reply_to, 7, 1));
    return Answered(reply_to) > before;
  }
  size_t Answered(const std::string& reply_to) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& t : answered_) n += t == reply_to ? 1 : 0;
    return n;
  }

  test::TempDir dir_;
  std::unique_ptr<HubStore> hub_store_;
  FakeLeases leases_;
  std::unique_ptr<RegionHub> hub_;
  RecordingLink* link_ = nullptr;
  std::string client_id_;
  std::mutex mu_;
  std::vector<std::string> answered_;
};

TEST_F(RegionHubShardsTest, AHubListensToAndAnswersOnlyTheShardsItHolds) {
  ASSERT_EQ(RegionShardOf("gw-1"), 1);
  ASSERT_EQ(RegionShardOf("gw-2"), 8);
  StartHub({1});
  EXPECT_EQ(client_id_, "es-hub-eu-h1");
  EXPECT_EQ(link_->filters(), (std::set<std::string>{"edgesync/region/eu/in/1/+"}));
  EXPECT_TRUE(Ping("gw-1", "edgesync/region/eu/in/1/gw-1"));
  EXPECT_FALSE(Ping("gw-2", "edgesync/region/eu/in/8/gw-2")) << "answered a shard it does not hold";
  EXPECT_FALSE(Ping("gw-1", "edgesync/region/eu/in/8/gw-1")) << "answered under another shard level";
  RegionHubStats s = hub_->stats();
  EXPECT_EQ(s.not_owned, 1u);
  EXPECT_EQ(s.bad_messages, 1u);
  EXPECT_EQ(s.shards, (std::vector<int>{1}));

  // The leases move shard 1 away and bring shard 8: the subscriptions follow.
  {
    std::lock_guard<std::mutex> lock(leases_.mu);
    leases_.shards = {8};
  }
  ASSERT_TRUE(test::WaitFor([&] { return hub_->stats().shards == std::vector<int>{8}; }, 10000));
  EXPECT_EQ(link_->filters(), (std::set<std::string>{"edgesync/region/eu/in/8/+"}));
  EXPECT_TRUE(Ping("gw-2", "edgesync/region/eu/in/8/gw-2"));
  EXPECT_FALSE(Ping("gw-1", "edgesync/region/eu/in/1/gw-1"));

  hub_->Stop();
  EXPECT_TRUE(leases_.released);
  EXPECT_TRUE(link_->filters().empty()) << "a stopped hub of a shared region still listens";
}

}  // namespace
}  // namespace edgesync

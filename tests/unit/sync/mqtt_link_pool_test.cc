// MqttLinkPool: links of one (broker, client id) share one connection; each
// view gets the messages of its own filters and the connection's state, a
// view started late hears it is connected, and the connection goes down
// with its last view. IdentityBoundLinks gives a link its identity's client
// id. TopicMatchesFilter follows MQTT's wildcard rules.
#include "sync/mqtt_link_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "platform/files.h"
#include "tests/support/process.h"
#include "tests/support/fake_link.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

TEST(TopicMatchesFilterTest, FollowsMqttWildcards) {
  EXPECT_TRUE(TopicMatchesFilter("a/b/c", "a/b/c"));
  EXPECT_FALSE(TopicMatchesFilter("a/b/c", "a/b"));
  EXPECT_FALSE(TopicMatchesFilter("a/b", "a/b/c"));
  EXPECT_TRUE(TopicMatchesFilter("a/+/c", "a/x/c"));
  EXPECT_FALSE(TopicMatchesFilter("a/+/c", "a/x/d"));
  EXPECT_TRUE(TopicMatchesFilter("a/+", "a/"));
  EXPECT_TRUE(TopicMatchesFilter("a/#", "a/b/c"));
  EXPECT_TRUE(TopicMatchesFilter("a/#", "a"));
  EXPECT_TRUE(TopicMatchesFilter("#", "a/b"));
  EXPECT_FALSE(TopicMatchesFilter("es/reply/gw-b/up", "es/reply/gw-b/feed"));
  EXPECT_TRUE(TopicMatchesFilter("es/region/+/head", "es/region/eu/head"));
}

struct Recorder {
  std::vector<std::string> topics;
  std::vector<bool> states;
  void Attach(MqttLink* link) {
    link->SetMessageHandler([this](MqttMessage&& m) { topics.push_back(m.topic); });
    link->SetStateHandler([this](bool up, bool, const std::string&) { states.push_back(up); });
  }
};

TEST(MqttLinkPoolTest, ViewsShareOneConnectionAndGetTheirOwnMessages) {
  std::vector<FakeLink*> made;
  MqttLinkPool pool([&](const MqttLinkOptions&, std::unique_ptr<MqttLink>* l) {
    auto f = std::make_unique<FakeLink>([](const std::string&, const std::string&, FakeLink*) {});
    made.push_back(f.get());
    *l = std::move(f);
    return Status::Ok();
  });
  MqttLinkOptions o;
  o.uri = "tcp://127.0.0.1:1";
  o.client_id = "gw-b";
  std::unique_ptr<MqttLink> up, feed, other;
  ASSERT_OK(pool.Open(o, &up));
  ASSERT_OK(pool.Open(o, &feed));
  MqttLinkOptions o2 = o;
  o2.client_id = "gw-c";
  ASSERT_OK(pool.Open(o2, &other));
  ASSERT_EQ(made.size(), 2u) << "one connection per (broker, client id)";

  Recorder ru, rf;
  ru.Attach(up.get());
  rf.Attach(feed.get());
  ASSERT_OK(up->Subscribe("es/reply/gw-b/up", 1));
  ASSERT_OK(feed->Subscribe("es/reply/gw-b/feed", 1));
  ASSERT_OK(feed->Subscribe("es/region/+/head", 0));
  ASSERT_OK(up->Start());
  EXPECT_EQ(ru.states, std::vector<bool>{true});
  // Started once the connection is up: told so, once.
  ASSERT_OK(feed->Start());
  EXPECT_EQ(rf.states, std::vector<bool>{true});

  made[0]->DeliverOn("es/reply/gw-b/up", "ack");
  made[0]->DeliverOn("es/reply/gw-b/feed", "page");
  made[0]->DeliverOn("es/region/eu/head", "head");
  EXPECT_EQ(ru.topics, std::vector<std::string>{"es/reply/gw-b/up"});
  EXPECT_EQ(rf.topics, (std::vector<std::string>{"es/reply/gw-b/feed", "es/region/eu/head"}));

  // The connection stays up until its last view disconnects.
  ASSERT_OK(up->Disconnect(100));
  EXPECT_TRUE(made[0]->connected());
  made[0]->DeliverOn("es/reply/gw-b/up", "late");
  EXPECT_EQ(ru.topics.size(), 1u) << "a disconnected view got a message";
  ASSERT_OK(feed->Disconnect(100));
  EXPECT_FALSE(made[0]->connected());
}

TEST(MqttLinkPoolTest, IdentityBoundLinksUseTheIdentitysClientId) {
  test::TempDir tmp;
  std::vector<std::string> ids;
  auto factory = [&](const MqttLinkOptions& o, std::unique_ptr<MqttLink>* l) {
    ids.push_back(o.client_id);
    *l = std::make_unique<FakeLink>([](const std::string&, const std::string&, FakeLink*) {});
    return Status::Ok();
  };
  auto links = IdentityBoundLinks("gw-b", factory);
  MqttLinkOptions o;
  o.uri = "tcp://127.0.0.1:1";
  o.client_id = "es-up-gw-b";
  std::unique_ptr<MqttLink> anonymous, with_password, with_certificate, second;
  ASSERT_OK(links(o, &anonymous));  // no identity: its own client id stands
  ASSERT_OK(WriteFileAtomic(tmp.path() + "/cred", "gw-b:secret\n"));
  o.credentials_file = tmp.path() + "/cred";
  ASSERT_OK(links(o, &with_password));
  o.client_id = "es-feed-gw-b";
  ASSERT_OK(links(o, &second));  // the same identity: the same connection
  o.credentials_file.clear();
  o.uri = "ssl://127.0.0.1:2";
  o.cert_file = "/dev/null";
  ASSERT_OK(links(o, &with_certificate));
  EXPECT_EQ(ids, (std::vector<std::string>{"es-up-gw-b", "gw-b", "gw-b"}));
}

}  // namespace
}  // namespace edgesync

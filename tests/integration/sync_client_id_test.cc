// Client ids bound to identities, with real parts: a Mosquitto region broker
// with the shipped config's settings (use_username_as_clientid) and ACL,
// identities made by edgesync-region-auth (passwords, or certificates with
// use_identity_as_username), a real hub process, gateway B's uplink and feed
// puller sharing one connection as the agent wires them
// (IdentityBoundLinks), gateway C's uplink. For 60 s a rogue holding
// gateway A's credential connects again and again under B's, C's and the
// hub's client ids (old and new names): the broker gives every one of those
// connections A's own client id, so nobody is disconnected, and B's and C's
// readings reach the region and each other's read views meanwhile.
#include <gtest/gtest.h>

#include "sync/feed_puller.h"
#include "sync/mqtt_link_pool.h"
#include "tests/support/region_auth.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

FeedPullerOptions PullerAt(AuthRegion& eu, const std::string& id) {
  FeedPullerOptions o;
  o.gateway_id = id;
  o.page_max_entries = 1000;
  o.poll_interval_ms = 300;
  o.answer_timeout_ms = 2000;
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  o.regions.push_back(RegionAt("eu", eu.uri()));
  o.regions.back().link = eu.As(id);
  return o;
}

uint64_t FeedApplied(const FeedPuller& p) {
  FeedPullerStats s = p.stats();
  return s.regions.empty() ? 0 : s.regions[0].applied;
}

void RogueCannotTakeOverSessions(bool certificates) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), certificates, {"gw-a", "gw-b", "gw-c"});
  ASSERT_TRUE(eu.Start()) << eu.site->broker().log();

  // B as the agent wires it: one connection for its uplink and feed puller,
  // under its identity's client id. The real link is kept to read its counters.
  MqttLink* b_connection = nullptr;
  MqttLinkFactory b_links = IdentityBoundLinks("gw-b", [&](const MqttLinkOptions& o, std::unique_ptr<MqttLink>* l) {
    Status st = NewPahoMqttLink(o, l);
    if (st.ok()) b_connection = l->get();
    return st;
  });
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  auto c = OpenGatewayStore(tmp.File("c.db"), "gw-c");
  SensorWorkload wb(50, 1780000000000, 1000, 2, "b-"), wc(50, 1780000000000, 1000, 3, "c-");
  Fill(b.get(), &wb, 1000);
  Fill(c.get(), &wc, 1000);
  UplinkOptions ub = FastUplinkOptions("gw-b"), uc = FastUplinkOptions("gw-c");
  ub.regions.push_back(RegionAt("eu", eu.uri()));
  ub.regions.back().link = eu.As("gw-b");
  uc.regions.push_back(RegionAt("eu", eu.uri()));
  uc.regions.back().link = eu.As("gw-c");
  Uplink up_b(b.get(), ub, nullptr, b_links);
  FeedPuller feed_b(b.get(), PullerAt(eu, "gw-b"), nullptr, b_links);
  Uplink up_c(c.get(), uc);
  ASSERT_OK(up_b.Start());
  ASSERT_OK(feed_b.Start());
  ASSERT_OK(up_c.Start());
  ASSERT_NE(b_connection, nullptr);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 1000 && Checkpoint(c.get()) == 1000; }, 60000))
      << eu.site->hub_log() << eu.site->broker().log();
  ASSERT_TRUE(WaitFor([&] { return FeedApplied(feed_b) == 1000; }, 60000)) << eu.site->hub_log();

  // The rogue: A's credential under everyone else's client ids, in a loop.
  std::string ids;
  for (const char* id : {"gw-b", "gw-c", "hub-eu", "es-up-gw-b", "es-feed-gw-b", "es-up-gw-c", "es-hub-eu-1"}) {
    ids += std::string(" ") + id;
  }
  std::string loop = "while :; do for id in" + ids + "; do mosquitto_pub" + eu.CliArgs("gw-a", "$id") +
                     " -q 1 -t edgesync/region/eu/in/0/gw-a -m rogue 2>/dev/null; done; done";
  Process rogue;
  ASSERT_TRUE(rogue.Start({"/bin/sh", "-c", loop}, tmp.File("rogue.log")));
  // B and C go on writing meanwhile: 6 rounds of 500 readings over 24 s
  // (the rogue's loop connects hundreds of times in that).
  for (int round = 0; round < 6; ++round) {
    Fill(b.get(), &wb, 500);
    Fill(c.get(), &wc, 500);
    SleepMs(4000);
  }
  rogue.Stop(2000);
  EXPECT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 4000 && Checkpoint(c.get()) == 4000; }, 60000))
      << eu.site->hub_log();
  // B's read view holds all of C's readings (the feed skips B's own).
  EXPECT_TRUE(WaitFor([&] { return FeedApplied(feed_b) == 4000; }, 60000)) << FeedApplied(feed_b);

  MqttLink::Counters bc = b_connection->counters();
  feed_b.Stop();
  up_b.Stop();
  up_c.Stop();
  EXPECT_EQ(bc.connects, 1) << "B's connection was closed under it";
  EXPECT_EQ(bc.connection_losses, 0);
  std::string log = eu.site->broker().log();
  // Mosquitto logs every session takeover.
  EXPECT_EQ(Occurrences(log, "already connected, closing old connection"), 0) << log;
  // Each of B, C and the hub connected once, as its own identity's client
  // id; the rogue's many connections were all given A's.
  EXPECT_EQ(Occurrences(log, " as gw-b ("), 1) << log;
  EXPECT_EQ(Occurrences(log, " as gw-c ("), 1) << log;
  EXPECT_EQ(Occurrences(log, " as hub-eu ("), 1) << log;
  EXPECT_GE(Occurrences(log, " as gw-a ("), 20) << log;
  EXPECT_EQ(Occurrences(log, " as es-"), 0) << log;
  ASSERT_EQ(eu.site->StopHub(), 0);
  ExpectExactlyOnce({eu.site.get()}, b->origin(), 4000);
  ExpectExactlyOnce({eu.site.get()}, c->origin(), 4000);
}

TEST(SyncClientIdTest, WithPasswordsARogueCannotTakeOverAnotherSession) { RogueCannotTakeOverSessions(false); }

TEST(SyncClientIdTest, WithCertificatesARogueCannotTakeOverAnotherSession) { RogueCannotTakeOverSessions(true); }

}  // namespace
}  // namespace edgesync::test

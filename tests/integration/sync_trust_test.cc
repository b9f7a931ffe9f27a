// Trust at the region, with real Mosquitto brokers set up by
// firmware-config/region/edgesync-region-auth and its ACL, a real hub
// process and real uplinks: gateway A's identity (a password, or a client
// certificate with use_identity_as_username) cannot get anything applied as
// gateway B: publishing on B's inbox is refused by the broker, naming B in a
// payload on A's own inbox is refused by the hub (counted, logged with both
// ids); A cannot read B's answers; B's readings stay intact and its later
// batches are applied. A revoked identity can no longer connect, with no
// certificate it was ever issued (one from before a renewal included).
// What a gateway leaves retained on its inbox is ignored by every later hub.
// Acknowledgements published on a gateway's reply topic by someone else
// (forged, replayed, stale) are counted and ignored by its uplink.
#include <gtest/gtest.h>

#include <mutex>

#include "sync/wire.h"
#include "tests/support/region_auth.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

// A batch naming `origin` that would raise its high-water mark far past
// what it wrote: everything the victim sends later would be "already held".
std::string ForgedBatch(const Origin& origin, uint64_t held, const std::string& reply_to) {
  WireBatch b;
  b.origin = origin;
  b.base_lsn = held + 1000000;
  b.first_lsn = b.base_lsn + 1;
  ChangeEntry e;
  e.lsn = b.first_lsn;
  e.reading = {"forged-dev", "temp", 1780000000000, 99.9, "C", 0};
  b.entries.push_back(e);
  b.last_lsn = e.lsn;
  std::string out;
  EXPECT_OK(EncodeBatch(reply_to, 42, b, {}, &out));
  return out;
}

void ImpersonationIsRefused(bool certificates) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), certificates, {"gw-a", "gw-b", "gw-c"});
  ASSERT_TRUE(eu.Start()) << eu.site->broker().log();
  if (certificates) {
    // A renews its certificate; the first one stays valid until revoked.
    for (const char* ext : {".crt", ".key"}) {
      WriteAll(eu.auth + "/ca/gw-a-first" + ext, ReadAll(eu.auth + "/ca/gw-a" + ext));
    }
    ASSERT_TRUE(Auth(eu.auth, "issue-cert gw-a"));
    ASSERT_NE(ReadAll(eu.auth + "/ca/gw-a.crt"), ReadAll(eu.auth + "/ca/gw-a-first.crt"));
    WriteAll(tmp.File("probe"), "probe");
    ASSERT_TRUE(CliPublish(eu, "gw-a-first", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("probe")))
        << eu.site->broker().log();
  }
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload wb(100, 1780000000000, 1000, 2, "b-");
  Fill(b.get(), &wb, 3000);
  UplinkOptions ub = FastUplinkOptions("gw-b");
  ub.regions.push_back(RegionAt("eu", eu.uri()));
  ub.regions.back().link = eu.As("gw-b");
  Uplink up_b(b.get(), ub);
  ASSERT_OK(up_b.Start());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 3000; }, 60000)) << eu.site->hub_log();

  // Gateway A's identity, trying to write as B; C's, listening where it may
  // not (an identity has one connection at a time: its client id is bound
  // to it, so A's publishes would close a listener of A's).
  Process listener;
  ASSERT_TRUE(listener.Start({"/bin/sh", "-c",
                              "exec mosquitto_sub" + eu.CliArgs("gw-c", "sub-gw-c") +
                                  " -v -q 1 -t 'edgesync/reply/gw-b/+' -t 'edgesync/region/eu/in/+/+' -t "
                                  "'edgesync/reply/gw-c/+'"},
                             tmp.File("c-listens.log")));
  SleepMs(1000);
  // 1. On B's own inbox: the broker's ACL drops it (the hub would take it as B).
  WriteAll(tmp.File("forged-b"), ForgedBatch(b->origin(), 3000, "edgesync/reply/gw-b/up"));
  CliPublish(eu, "gw-a", HubInboxTopic("edgesync", "eu", "gw-b"), tmp.File("forged-b"));
  // 2. On A's inbox, naming B: the hub refuses it.
  WriteAll(tmp.File("forged-a"), ForgedBatch(b->origin(), 3000, "edgesync/reply/gw-a/up"));
  ASSERT_TRUE(CliPublish(eu, "gw-a", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("forged-a")))
      << eu.site->broker().log();
  // 3. The hub's head notice is not A's to announce.
  ShardPositions forged_heads{};
  forged_heads.fill(1u << 30);
  WriteAll(tmp.File("forged-head"), EncodeFeedHead("eu", forged_heads, std::string(32, 'f')));
  CliPublish(eu, "gw-a", HeadTopic("edgesync", "eu"), tmp.File("forged-head"), true);
  // 4. Something retained on A's own inbox, for every later hub subscription.
  WriteAll(tmp.File("junk"), "junk");
  ASSERT_TRUE(CliPublish(eu, "gw-a", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("junk"), true));
  // 5. A verbatim replay of B's batch (B's reply address too) on A's inbox:
  // refused for its origin like the forgery, both ids in the log.
  ASSERT_TRUE(CliPublish(eu, "gw-a", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("forged-b")));
  ASSERT_TRUE(
      WaitFor([&] { return Occurrences(eu.site->hub_log(), "sent by gw-a naming origin gw-b") == 2; }, 30000))
      << eu.site->hub_log() << eu.site->broker().log();

  // B goes on writing; every later batch is applied.
  Fill(b.get(), &wb, 2000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 5000; }, 60000)) << eu.site->hub_log();
  up_b.Stop();
  listener.Stop(2000);
  std::string heard = ReadAll(tmp.File("c-listens.log"));
  EXPECT_EQ(heard.find("edgesync/reply/gw-b/"), std::string::npos) << "C read B's answers";
  EXPECT_EQ(heard.find("edgesync/region/eu/in/"), std::string::npos) << "C read an inbox";
  ASSERT_EQ(eu.site->StopHub(), 0);
  std::string log = eu.site->hub_log();
  EXPECT_NE(log.find("2 refused for naming another origin than their sender"), std::string::npos) << log;
  EXPECT_EQ(log.find("not one of its reply topics"), std::string::npos) << "a replay was taken for a bad address";
  EXPECT_NE(log.find("0 jumps over a hole"), std::string::npos) << "a forged jump was applied: " << log;
  EXPECT_EQ(log.find("forged-dev"), std::string::npos);
  ExpectExactlyOnce({eu.site.get()}, b->origin(), 5000);
  // The forged head notice did not replace the hub's.
  std::string head_cmd = "mosquitto_sub" + eu.CliArgs("gw-b", "observer") + " -N -C 1 -W 10 -t '" +
                         HeadTopic("edgesync", "eu") + "' > '" + tmp.File("head") + "'";
  ASSERT_EQ(std::system(head_cmd.c_str()), 0);
  WireMessage head;
  ASSERT_OK(DecodeMessage(ReadAll(tmp.File("head")), {}, &head, nullptr));
  EXPECT_NE(head.head_shards, forged_heads);

  // Revoking A: its identity no longer gets in.
  ASSERT_TRUE(Auth(eu.auth, "revoke gw-a"));
  if (certificates) {
    ASSERT_TRUE(eu.site->broker().Restart());  // mosquitto 2.0 reads the CRL at listener start
  } else {
    eu.site->broker().Reload();
    SleepMs(500);
  }
  EXPECT_FALSE(CliPublish(eu, "gw-a", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("forged-a")))
      << "a revoked identity connected";
  if (certificates) {
    EXPECT_FALSE(CliPublish(eu, "gw-a-first", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("forged-a")))
        << "A's certificate from before its renewal connected after the revocation";
  }
  // Revoking again finds nothing left to revoke, and says so without failing.
  EXPECT_TRUE(Auth(eu.auth, "revoke gw-a"));
  EXPECT_TRUE(CliPublish(eu, "gw-b", HubInboxTopic("edgesync", "eu", "gw-b"), tmp.File("forged-head")))
      << "revoking A locked out B";
  // What A left retained reaches the restarted hub, which ignores it.
  ASSERT_TRUE(eu.site->StartHub());
  EXPECT_TRUE(WaitFor(
      [&] {
        return eu.site->hub_log().find("ignored a retained message on " + HubInboxTopic("edgesync", "eu", "gw-a") +
                                       " (sender gw-a") != std::string::npos;
      },
      30000))
      << eu.site->hub_log();
  EXPECT_EQ(eu.site->StopHub(), 0);
}

TEST(SyncTrustTest, WithPasswordsAGatewayCannotWriteAsAnother) { ImpersonationIsRefused(false); }

TEST(SyncTrustTest, WithCertificatesAGatewayCannotWriteAsAnother) { ImpersonationIsRefused(true); }

}  // namespace
}  // namespace edgesync::test

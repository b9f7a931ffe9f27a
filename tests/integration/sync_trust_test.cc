// Trust at the region, with real Mosquitto brokers set up by
// firmware-config/region/edgesync-region-auth and its ACL, a real hub
// process and real uplinks: gateway A's identity (a password, or a client
// certificate with use_identity_as_username) cannot get anything applied as
// gateway B: publishing on B's inbox is refused by the broker, naming B in a
// payload on A's own inbox is refused by the hub (counted, logged with both
// ids); A cannot read B's answers; B's readings stay intact and its later
// batches are applied. A revoked identity can no longer connect.
// Acknowledgements published on a gateway's reply topic by someone else
// (forged, replayed, stale) are counted and ignored by its uplink.
#include <gtest/gtest.h>

#include <mutex>

#include "sync/wire.h"
#include "tests/integration/sync_sites.h"

namespace edgesync::test {
namespace {

std::string AuthScript() { return std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/region/edgesync-region-auth"; }

bool Auth(const std::string& dir, const std::string& args) {
  std::string cmd = AuthScript() + " --dir '" + dir + "' " + args + " >/dev/null 2>>'" + dir + "/auth.log'";
  return std::system(cmd.c_str()) == 0;
}

// A region broker with per-gateway identities: gw-a, gw-b and hub-eu.
struct AuthRegion {
  AuthRegion(const std::string& root, bool certificates) : certs(certificates), auth(root + "/auth") {
    RegionSite::MakeDir(auth);
    EXPECT_TRUE(Auth(auth, "init"));
    EXPECT_TRUE(Auth(auth, "add-hub eu hub-secret"));
    BrokerOptions bo;
    bo.acl_file = auth + "/acl";
    if (certs) {
      EXPECT_TRUE(Auth(auth, "init-ca"));
      EXPECT_TRUE(Auth(auth, "issue-server localhost 127.0.0.1"));
      for (const char* id : {"gw-a", "gw-b", "hub-eu"}) EXPECT_TRUE(Auth(auth, std::string("issue-cert ") + id));
      bo.tls_ca_file = auth + "/ca/ca.crt";
      bo.tls_cert_file = auth + "/ca/server.crt";
      bo.tls_key_file = auth + "/ca/server.key";
      bo.tls_require_client_cert = true;
      bo.extra_config = "use_identity_as_username true\ncrlfile " + auth + "/ca/crl.pem\n";
    } else {
      EXPECT_TRUE(Auth(auth, "add-gateway gw-a a-secret"));
      EXPECT_TRUE(Auth(auth, "add-gateway gw-b b-secret"));
      bo.password_file = auth + "/passwd";
      WriteAll(root + "/gw-a.cred", "gw-a:a-secret\n");
      WriteAll(root + "/gw-b.cred", "gw-b:b-secret\n");
      WriteAll(root + "/hub.cred", "hub-eu:hub-secret\n");
    }
    root_ = root;
    site = std::make_unique<RegionSite>(root, "eu", bo);
  }
  bool Start() {
    if (!site->broker().Start()) return false;
    if (certs) {
      std::string ca = auth + "/ca/";
      return site->StartHub(uri(), "ca_file = " + Q(ca + "ca.crt") + "\ncert_file = " + Q(ca + "hub-eu.crt") +
                                       "\nkey_file = " + Q(ca + "hub-eu.key") + "\n");
    }
    return site->StartHub(uri(), "credentials_file = " + Q(root_ + "/hub.cred") + "\n");
  }
  std::string uri() { return certs ? site->broker().tls_uri() : site->broker().uri(); }
  // Link options that authenticate as `id`.
  MqttLinkOptions As(const std::string& id) {
    UplinkRegion r = RegionAt("eu", uri());
    if (certs) {
      r.link.ca_file = auth + "/ca/ca.crt";
      r.link.cert_file = auth + "/ca/" + id + ".crt";
      r.link.key_file = auth + "/ca/" + id + ".key";
    } else {
      r.link.credentials_file = root_ + "/" + id + ".cred";
    }
    return r.link;
  }

  bool certs;
  std::string auth;
  std::string root_;
  std::unique_ptr<RegionSite> site;
};

// mosquitto_pub / mosquitto_sub (Debian mosquitto-clients) with someone's identity.
std::string CliArgs(AuthRegion& r, const std::string& id, const std::string& client_id) {
  int port = r.certs ? r.site->broker().tls_port() : r.site->broker().port();
  std::string args = " -h 127.0.0.1 -p " + std::to_string(port) + " -i " + client_id;
  if (r.certs) {
    std::string cert = r.auth + "/ca/" + id + ".crt";
    if (!FileExists(cert)) cert += ".revoked";
    return args + " --cafile '" + r.auth + "/ca/ca.crt' --cert '" + cert + "' --key '" + r.auth + "/ca/" + id + ".key'";
  }
  std::string password = id == "gw-a" ? "a-secret" : "b-secret";
  return args + " -u " + id + " -P " + password;
}

// Publishes a file's bytes; true if the broker took the connection.
bool CliPublish(AuthRegion& r, const std::string& id, const std::string& topic, const std::string& payload_file,
                bool retain = false) {
  std::string cmd = "mosquitto_pub" + CliArgs(r, id, "pub-" + id) + " -q 1 -t '" + topic + "' -f '" + payload_file +
                    "'" + (retain ? " -r" : "") + " 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

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
  EXPECT_TRUE(EncodeBatch(reply_to, 42, b, {}, &out).ok());
  return out;
}

void ImpersonationIsRefused(bool certificates) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), certificates);
  ASSERT_TRUE(eu.Start()) << eu.site->broker().log();
  auto b = OpenGatewayStore(tmp.File("b.db"), "gw-b");
  SensorWorkload wb(100, 1780000000000, 1000, 2, "b-");
  Fill(b.get(), &wb, 3000);
  UplinkOptions ub = FastUplinkOptions("gw-b");
  ub.regions.push_back(RegionAt("eu", eu.uri()));
  ub.regions.back().link = eu.As("gw-b");
  Uplink up_b(b.get(), ub);
  ASSERT_TRUE(up_b.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 3000; }, 60000)) << eu.site->hub_log();

  // Gateway A's identity, trying to write as B, and listening where it may not.
  Process listener;
  ASSERT_TRUE(listener.Start({"/bin/sh", "-c",
                              "exec mosquitto_sub" + CliArgs(eu, "gw-a", "sub-gw-a") +
                                  " -v -q 1 -t 'edgesync/reply/gw-b/+' -t 'edgesync/region/eu/in/+/+' -t "
                                  "'edgesync/reply/gw-a/+'"},
                             tmp.File("a-listens.log")));
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
  ASSERT_TRUE(WaitFor([&] { return eu.site->hub_log().find("sent by gw-a naming origin gw-b") != std::string::npos; },
                      30000))
      << eu.site->hub_log() << eu.site->broker().log();

  // B goes on writing; every later batch is applied.
  Fill(b.get(), &wb, 2000);
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(b.get()) == 5000; }, 60000)) << eu.site->hub_log();
  up_b.Stop();
  listener.Stop(2000);
  std::string heard = ReadAll(tmp.File("a-listens.log"));
  EXPECT_EQ(heard.find("edgesync/reply/gw-b/"), std::string::npos) << "A read B's answers";
  EXPECT_EQ(heard.find("edgesync/region/eu/in/"), std::string::npos) << "A read an inbox";
  ASSERT_EQ(eu.site->StopHub(), 0);
  std::string log = eu.site->hub_log();
  EXPECT_NE(log.find("1 refused for naming another origin than their sender"), std::string::npos) << log;
  EXPECT_NE(log.find("0 jumps over a hole"), std::string::npos) << "a forged jump was applied: " << log;
  EXPECT_EQ(log.find("forged-dev"), std::string::npos);
  ExpectExactlyOnce({eu.site.get()}, b->origin(), 5000);
  // The forged head notice did not replace the hub's.
  std::string head_cmd = "mosquitto_sub" + CliArgs(eu, "gw-b", "observer") + " -N -C 1 -W 10 -t '" +
                         HeadTopic("edgesync", "eu") + "' > '" + tmp.File("head") + "'";
  ASSERT_EQ(std::system(head_cmd.c_str()), 0);
  WireMessage head;
  ASSERT_TRUE(DecodeMessage(ReadAll(tmp.File("head")), {}, &head, nullptr).ok());
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
  EXPECT_TRUE(CliPublish(eu, "gw-b", HubInboxTopic("edgesync", "eu", "gw-b"), tmp.File("forged-head")))
      << "revoking A locked out B";
}

TEST(SyncTrustTest, WithPasswordsAGatewayCannotWriteAsAnother) { ImpersonationIsRefused(false); }

TEST(SyncTrustTest, WithCertificatesAGatewayCannotWriteAsAnother) { ImpersonationIsRefused(true); }

}  // namespace
}  // namespace edgesync::test

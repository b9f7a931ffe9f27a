// firmware-config/region/edgesync-region-auth with real openssl and a real
// Mosquitto: the commands of docs/SECURITY.md as written; ids that would
// overwrite the CA's or the broker's files refused; every certificate of an
// id revoked, renewals included; a CRL past its next update makes the broker
// refuse client certificates, and refresh-crl (what
// edgesync-region-crl.timer runs) brings them back. Nothing a revoked
// identity left stays on the broker: `revoke --broker` ends its persistent
// session (queued answers included) and clears its retained inbox messages,
// with passwords and with certificates, and revokes all the same when the
// broker is out of reach; a hub clears what it finds retained on its inbox.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "sync/mqtt_link.h"
#include "sync/wire.h"
#include "tests/support/region_auth.h"

namespace edgesync::test {
namespace {

// Runs a command; its stdout.
std::string Output(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(RegionAuthTest, DocumentedCommandsWorkAsWritten) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/auth";
  RegionSite::MakeDir(dir);
  // "Setting up a region broker", "Adding a gateway", "Revoking a gateway".
  ASSERT_TRUE(Auth(dir, "init"));
  ASSERT_TRUE(Auth(dir, "init-ca"));
  ASSERT_TRUE(Auth(dir, "issue-server broker.example.net 192.0.2.10")) << ReadAll(dir + "/auth.log");
  ASSERT_TRUE(Auth(dir, "add-hub eu"));
  ASSERT_TRUE(Auth(dir, "add-hub eu '' 2"));
  ASSERT_TRUE(Auth(dir, "add-gateway gw-0042"));
  ASSERT_TRUE(Auth(dir, "issue-cert gw-0042"));
  ASSERT_TRUE(Auth(dir, "issue-cert hub-eu"));
  std::string san = Output("openssl x509 -in '" + dir + "/ca/server.crt' -noout -ext subjectAltName");
  EXPECT_NE(san.find("DNS:broker.example.net"), std::string::npos) << san;
  EXPECT_NE(san.find("IP Address:192.0.2.10"), std::string::npos) << san;
  std::string passwd = ReadAll(dir + "/passwd");
  EXPECT_NE(passwd.find("hub-eu:"), std::string::npos);
  EXPECT_NE(passwd.find("hub-eu.2:"), std::string::npos);
  EXPECT_NE(passwd.find("gw-0042:"), std::string::npos);
  std::string acl = ReadAll(dir + "/acl");
  EXPECT_NE(acl.find("user hub-eu.2\ntopic readwrite edgesync/region/eu/in/+/+"), std::string::npos) << acl;

  // Several names and an IPv6 address.
  ASSERT_TRUE(Auth(dir, "issue-server broker.example.net mqtt.example.net 2001:db8::10"));
  san = Output("openssl x509 -in '" + dir + "/ca/server.crt' -noout -ext subjectAltName");
  EXPECT_NE(san.find("DNS:mqtt.example.net"), std::string::npos) << san;
  EXPECT_NE(san.find("IP Address:2001:DB8:0:0:0:0:0:10"), std::string::npos) << san;
  EXPECT_FALSE(Auth(dir, "issue-server 'bad name'"));
  EXPECT_FALSE(Auth(dir, "issue-server"));

  // Renewal, then revocation: both certificates revoked, the CRL lists both.
  ASSERT_TRUE(Auth(dir, "issue-cert gw-0042"));
  ASSERT_TRUE(Auth(dir, "revoke gw-0042"));
  std::string index = ReadAll(dir + "/ca/index.txt");
  EXPECT_EQ(Occurrences(index, "/CN=gw-0042\n"), 2) << index;
  EXPECT_EQ(Occurrences("\n" + index, "\nR\t"), 2) << index;
  std::string crl = Output("openssl crl -in '" + dir + "/ca/crl.pem' -noout -text");
  EXPECT_EQ(Occurrences(crl, "Serial Number:"), 2) << crl;
  EXPECT_EQ(ReadAll(dir + "/passwd").find("gw-0042:"), std::string::npos);
  // Again: nothing left to revoke is not an error; an id never seen is.
  EXPECT_TRUE(Auth(dir, "revoke gw-0042"));
  EXPECT_FALSE(Auth(dir, "revoke gw-never"));
  // The hub's certificate and the server's are untouched.
  EXPECT_EQ(Occurrences("\n" + ReadAll(dir + "/ca/index.txt"), "\nV\t"), 3);  // two servers, hub-eu
}

// The topics of the retained messages on the region's inboxes, as a
// subscriber with the read access of `args` (mosquitto_sub arguments:
// identity and broker) gets them at its subscription.
std::string RetainedOnInboxes(const std::string& args) {
  return Output("mosquitto_sub" + args + " -q 1 -t 'edgesync/region/eu/in/+/+' --retained-only -W 3 -F %t 2>/dev/null");
}

// A persistent session of `id` at the region broker (clean start off):
// whether the broker still held one at connect, and what arrives in it.
class SessionProbe {
 public:
  ~SessionProbe() { Close(); }
  bool Open(AuthRegion& eu, const std::string& id) {
    MqttLinkOptions o = eu.As(id);
    o.client_id = id;
    o.clean_start = false;
    if (!NewPahoMqttLink(o, &link_).ok()) return false;
    link_->SetStateHandler([this](bool up, bool present, const std::string&) {
      if (up) session_present_ = present;
    });
    link_->SetMessageHandler([this](MqttMessage&& m) {
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(m.payload);
    });
    return link_->Connect(10000).ok() && link_->Subscribe(ReplyTopic("edgesync", id, "up"), 1).ok();
  }
  void Close() {
    if (link_) link_->Disconnect(2000);
    link_.reset();
  }
  bool session_present() const { return session_present_; }
  std::vector<std::string> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }
  bool Received(const std::string& payload) {
    std::vector<std::string> r = received();
    return std::find(r.begin(), r.end(), payload) != r.end();
  }

 private:
  std::unique_ptr<MqttLink> link_;
  std::atomic<bool> session_present_{false};
  std::mutex mu_;
  std::vector<std::string> received_;
};

void RevokedIdentityLeavesNothing(bool certificates) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), certificates, {"gw-a", "gw-b"});
  Broker& broker = eu.site->broker();
  ASSERT_TRUE(broker.Start()) << broker.log();
  // A and B each leave a retained message on their inbox (mosquitto_pub
  // connects with a clean session, so first), then persistent sessions
  // subscribed to their answers, offline, where an answer queues.
  WriteAll(tmp.File("left"), "left behind");
  WriteAll(tmp.File("queued"), "queued answer");
  for (const char* id : {"gw-a", "gw-b"}) {
    ASSERT_TRUE(CliPublish(eu, id, HubInboxTopic("edgesync", "eu", id), tmp.File("left"), true)) << id;
    SessionProbe session;
    ASSERT_TRUE(session.Open(eu, id)) << id << broker.log();
    session.Close();
    ASSERT_TRUE(CliPublish(eu, "hub-eu", ReplyTopic("edgesync", id, "up"), tmp.File("queued"))) << id;
  }
  const std::string hub_args = eu.CliArgs("hub-eu", "hub-eu");
  std::string retained = RetainedOnInboxes(hub_args);
  ASSERT_NE(retained.find(HubInboxTopic("edgesync", "eu", "gw-a")), std::string::npos) << retained;
  ASSERT_NE(retained.find(HubInboxTopic("edgesync", "eu", "gw-b")), std::string::npos) << retained;

  // Revoking A at the broker, which the script reloads itself; then the
  // restart a certificate revocation needs.
  const std::string revoke = "--reload 'kill -HUP " + std::to_string(broker.pid()) +
                             "' revoke gw-a --broker 127.0.0.1:" + std::to_string(eu.port());
  ASSERT_TRUE(Auth(eu.auth, revoke)) << ReadAll(eu.auth + "/auth.log");
  std::string said = ReadAll(eu.auth + "/auth.log");
  EXPECT_NE(said.find("'gw-a': its session at 127.0.0.1:" + std::to_string(eu.port()) +
                      " ended, 1 retained message(s) cleared"),
            std::string::npos)
      << said;
  EXPECT_EQ(ReadAll(eu.auth + "/acl").find("user gw-a"), std::string::npos) << "the one-time read access stayed";
  if (certificates) {
    // The one-time certificate is revoked with A's own.
    std::string index = ReadAll(eu.auth + "/ca/index.txt");
    EXPECT_EQ(Occurrences(index, "/CN=gw-a\n"), 2) << index;
    EXPECT_EQ(Occurrences("\n" + index, "\nR\t"), 2) << index;
  } else {
    EXPECT_EQ(ReadAll(eu.auth + "/passwd").find("gw-a:"), std::string::npos);
  }
  ASSERT_TRUE(broker.Restart()) << broker.log();
  EXPECT_FALSE(CliPublish(eu, "gw-a", HubInboxTopic("edgesync", "eu", "gw-a"), tmp.File("left")))
      << "a revoked identity connected";

  // A hub subscribing now gets B's retained message, nothing of A's.
  retained = RetainedOnInboxes(hub_args);
  EXPECT_NE(retained.find(HubInboxTopic("edgesync", "eu", "gw-b")), std::string::npos) << retained;
  EXPECT_EQ(retained.find(HubInboxTopic("edgesync", "eu", "gw-a")), std::string::npos) << retained;

  // A's id issued again: the broker holds no session for it, and the answer
  // queued for the revoked identity is gone (the marker, sent after the
  // subscription, is all that arrives). B's session was kept, with its answer.
  ASSERT_TRUE(Auth(eu.auth, certificates ? "issue-cert gw-a" : "add-gateway gw-a gw-a-secret"));
  ASSERT_TRUE(broker.Restart()) << broker.log();
  SessionProbe a, b;
  ASSERT_TRUE(a.Open(eu, "gw-a")) << broker.log();
  ASSERT_TRUE(b.Open(eu, "gw-b")) << broker.log();
  EXPECT_FALSE(a.session_present());
  EXPECT_TRUE(b.session_present());
  WriteAll(tmp.File("marker"), "marker");
  ASSERT_TRUE(CliPublish(eu, "hub-eu", ReplyTopic("edgesync", "gw-a", "up"), tmp.File("marker")));
  ASSERT_TRUE(WaitFor([&] { return a.Received("marker"); }, 10000));
  EXPECT_EQ(a.received(), std::vector<std::string>{"marker"});
  EXPECT_TRUE(WaitFor([&] { return b.Received("queued answer"); }, 10000)) << "B's kept session lost its answer";
}

TEST(RegionAuthTest, RevokingAtTheBrokerEndsThePasswordIdentitysSessionAndRetainedMessages) {
  RevokedIdentityLeavesNothing(false);
}

TEST(RegionAuthTest, RevokingAtTheBrokerEndsTheCertificateIdentitysSessionAndRetainedMessages) {
  RevokedIdentityLeavesNothing(true);
}

TEST(RegionAuthTest, RevokingGoesOnWithTheBrokerOutOfReach) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), false, {"gw-a"});
  ASSERT_TRUE(eu.site->broker().Start()) << eu.site->broker().log();
  const int port = eu.port();
  eu.site->broker().Stop();
  ASSERT_TRUE(Auth(eu.auth, "--reload true revoke gw-a --broker 127.0.0.1:" + std::to_string(port)));
  std::string said = ReadAll(eu.auth + "/auth.log");
  EXPECT_NE(said.find("'gw-a': could not connect to the broker at 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("revoking anyway"), std::string::npos) << said;
  EXPECT_EQ(ReadAll(eu.auth + "/passwd").find("gw-a:"), std::string::npos);
  EXPECT_EQ(ReadAll(eu.auth + "/acl").find("user gw-a"), std::string::npos);
  EXPECT_NE(ReadAll(eu.auth + "/revoked").find("gw-a\n"), std::string::npos);
  // A malformed broker address is refused before anything changes.
  ASSERT_TRUE(Auth(eu.auth, "add-gateway gw-c gw-c-secret"));
  EXPECT_FALSE(Auth(eu.auth, "revoke gw-c --broker localhost"));
  EXPECT_NE(ReadAll(eu.auth + "/passwd").find("gw-c:"), std::string::npos);
}

TEST(RegionAuthTest, TheHubClearsWhatIsLeftRetainedOnItsInbox) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), false, {"gw-b"});
  ASSERT_TRUE(Auth(eu.auth, "add-hub eu hub-eu.2-secret 2"));  // a second hub's identity, to look
  ASSERT_TRUE(eu.site->broker().Start()) << eu.site->broker().log();
  const std::string topic = HubInboxTopic("edgesync", "eu", "gw-b");
  WriteAll(tmp.File("junk"), "junk");
  ASSERT_TRUE(CliPublish(eu, "gw-b", topic, tmp.File("junk"), true));
  const std::string look = eu.CliArgs("hub-eu.2", "hub-eu.2");
  ASSERT_NE(RetainedOnInboxes(look).find(topic), std::string::npos);

  // The hub gets it at its subscription, ignores it and clears it.
  ASSERT_TRUE(eu.Start()) << eu.site->hub_log();
  const std::string cleared = "ignored a retained message on " + topic + " (sender gw-b; 1 so far) and published its clearing";
  ASSERT_TRUE(WaitFor([&] { return eu.site->hub_log().find(cleared) != std::string::npos; }, 30000))
      << eu.site->hub_log();
  ASSERT_TRUE(WaitFor([&] { return RetainedOnInboxes(look).empty(); }, 30000)) << RetainedOnInboxes(look);
  // Its own clearing came back to it through its subscription before this
  // message (the broker took the clearing first): only this one is bad.
  ASSERT_TRUE(CliPublish(eu, "gw-b", topic, tmp.File("junk")));
  ASSERT_TRUE(WaitFor([&] { return eu.site->hub_log().find("refused a message from gw-b") != std::string::npos; },
                      30000))
      << eu.site->hub_log();
  ASSERT_EQ(eu.site->StopHub(), 0);
  std::string log = eu.site->hub_log();
  EXPECT_NE(log.find(", 1 bad messages,"), std::string::npos) << log;
  EXPECT_EQ(Occurrences(log, "ignored a retained message"), 1) << log;
}

TEST(RegionAuthTest, IdsNamingTheCaOrBrokerFilesAreRefused) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/auth";
  RegionSite::MakeDir(dir);
  ASSERT_TRUE(Auth(dir, "init"));
  ASSERT_TRUE(Auth(dir, "init-ca"));
  ASSERT_TRUE(Auth(dir, "issue-server localhost 127.0.0.1"));
  const std::string ca_key = ReadAll(dir + "/ca/ca.key"), server_key = ReadAll(dir + "/ca/server.key");
  const std::string crl = ReadAll(dir + "/ca/crl.pem"), index = ReadAll(dir + "/ca/index.txt");
  for (const char* id : {"ca", "server", "crl", "index", "serial", "crlnumber", "openssl", "new", "acl", "passwd",
                         "ca.key", "../ca"}) {
    EXPECT_FALSE(Auth(dir, std::string("issue-cert '") + id + "'")) << id;
    EXPECT_FALSE(Auth(dir, std::string("add-gateway '") + id + "' pw")) << id;
  }
  EXPECT_EQ(ReadAll(dir + "/ca/ca.key"), ca_key);
  EXPECT_EQ(ReadAll(dir + "/ca/server.key"), server_key);
  EXPECT_EQ(ReadAll(dir + "/ca/crl.pem"), crl);
  EXPECT_EQ(ReadAll(dir + "/ca/index.txt"), index);
  // The CA still issues and revokes.
  ASSERT_TRUE(Auth(dir, "issue-cert gw-1"));
  ASSERT_TRUE(Auth(dir, "revoke gw-1"));
}

TEST(RegionAuthTest, AnExpiredCrlLocksCertificatesOutUntilRefreshed) {
  TempDir tmp;
  AuthRegion eu(tmp.path(), true, {"gw-b"});
  ASSERT_TRUE(eu.site->broker().Start()) << eu.site->broker().log();
  WriteAll(tmp.File("probe"), "probe");
  const std::string topic = HubInboxTopic("edgesync", "eu", "gw-b");
  ASSERT_TRUE(CliPublish(eu, "gw-b", topic, tmp.File("probe"))) << eu.site->broker().log();

  // A CRL whose next update passes: after it, no client certificate gets in.
  ASSERT_TRUE(Auth(eu.auth, "refresh-crl 2"));
  SleepMs(3000);
  ASSERT_TRUE(eu.site->broker().Restart());
  EXPECT_FALSE(CliPublish(eu, "gw-b", topic, tmp.File("probe"))) << "a certificate got in past the CRL's next update";

  // The refresh the timer runs: 30 days again, and the broker restarted.
  ASSERT_TRUE(Auth(eu.auth, "refresh-crl"));
  ASSERT_TRUE(eu.site->broker().Restart());
  EXPECT_TRUE(CliPublish(eu, "gw-b", topic, tmp.File("probe"))) << eu.site->broker().log();
}

TEST(RegionAuthTest, TheCrlTimerRefreshesWellWithinTheCrlLifetime) {
  // The unit runs the script's refresh and restarts the broker; the timer
  // fires weekly, a quarter of the CRL's 30 days.
  const std::string deb = std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/deb/";
  std::string service = ReadAll(deb + "edgesync-region-crl.service");
  std::string timer = ReadAll(deb + "edgesync-region-crl.timer");
  EXPECT_NE(service.find("ExecStart=/usr/share/edgesync/region/edgesync-region-auth refresh-crl\n"), std::string::npos);
  EXPECT_NE(service.find("try-restart mosquitto.service"), std::string::npos);
  EXPECT_NE(timer.find("OnCalendar=weekly\n"), std::string::npos);
  EXPECT_NE(ReadAll(AuthScript()).find("crl_days=30\n"), std::string::npos);
  std::string build = ReadAll(deb + "build-deb.sh");
  EXPECT_NE(build.find("edgesync-region-crl.timer"), std::string::npos);
  EXPECT_NE(build.find("region/edgesync-region-auth"), std::string::npos);
}

}  // namespace
}  // namespace edgesync::test

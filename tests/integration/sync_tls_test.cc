// TLS to regions against a Mosquitto TLS listener with certificates made by
// the test (openssl): the server is verified against the CA file, the broker
// requires a client certificate (mutual TLS) and a password; readings flow
// end to end, and neither the uplink's nor the hub's log shows the password.
// Each TLS misconfiguration a field engineer makes (a CA that did not sign
// the broker, an expired broker or client certificate, no client
// certificate) delivers nothing, names what to check in the log, and leaves
// the gateway running: a failed handshake once ran a destroyed error handler
// (caught by the AddressSanitizer run, make test SANITIZE=address,undefined).
#include <gtest/gtest.h>

#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

[[maybe_unused]] const int kChildMode = MaybeRunUplinkChild();

constexpr char kPassword[] = "s3cret-Pa55word-never-logged";

struct TlsRegion {
  explicit TlsRegion(const std::string& root) {
    RegionSite::MakeDir(root + "/pki");
    RegionSite::MakeDir(root + "/other");
    pki = root + "/pki";
    EXPECT_TRUE(MakeTestPki(pki));
    EXPECT_TRUE(MakeTestPki(root + "/other"));  // an unrelated CA
    other_ca = root + "/other/ca.crt";
    password_file = root + "/passwd";
    WriteAll(password_file, "");
    EXPECT_EQ(std::system(("mosquitto_passwd -b '" + password_file + "' gw '" + kPassword + "' && mosquitto_passwd -b '" +
                           password_file + "' hub '" + kPassword + "'")
                              .c_str()),
              0);
    credentials = root + "/credentials";
    WriteAll(credentials, std::string("gw:") + kPassword + "\n");
    hub_credentials = root + "/hub-credentials";
    WriteAll(hub_credentials, std::string("hub:") + kPassword + "\n");
    BrokerOptions bo;
    bo.tls_ca_file = pki + "/ca.crt";
    bo.tls_cert_file = pki + "/server.crt";
    bo.tls_key_file = pki + "/server.key";
    bo.tls_require_client_cert = true;
    bo.password_file = password_file;
    site = std::make_unique<RegionSite>(root, "eu", bo);
  }
  bool Start() {
    if (!site->broker().Start()) return false;
    std::string extra = "ca_file = " + Q(pki + "/ca.crt") + "\ncert_file = " + Q(pki + "/client.crt") +
                        "\nkey_file = " + Q(pki + "/client.key") + "\ncredentials_file = " + Q(hub_credentials) +
                        "\n";
    return site->StartHub(site->broker().tls_uri(), extra);
  }
  std::string pki, other_ca, password_file, credentials, hub_credentials;
  std::unique_ptr<RegionSite> site;
};

TEST(SyncTlsTest, MutualTlsWithPasswordDeliversAndNeverLogsTheSecret) {
  TempDir tmp;
  TlsRegion eu(tmp.path());
  ASSERT_TRUE(eu.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 20000);
  uint64_t last = store->LastLsn();
  Process gateway;
  ASSERT_TRUE(StartUplinkChild(&gateway, tmp.File("gw.db"), "eu=" + eu.site->broker().tls_uri(), tmp.File("gw.log"),
                               eu.pki + "/ca.crt," + eu.pki + "/client.crt," + eu.pki + "/client.key," +
                                   eu.credentials));
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 30000))
      << ReadAll(tmp.File("gw.log")) << eu.site->hub_log();
  EXPECT_EQ(gateway.Stop(), 0);
  EXPECT_EQ(eu.site->StopHub(), 0);
  ExpectExactlyOnce({eu.site.get()}, store->origin(), last);
  std::string logs = ReadAll(tmp.File("gw.log")) + eu.site->hub_log();
  EXPECT_NE(logs.find("connected"), std::string::npos);
  EXPECT_EQ(logs.find(kPassword), std::string::npos);
}

// Signs the CSR MakeTestPki left in pki with its CA, valid until yesterday
// (`-days -1`: not after = a day before not before), into pki/<out>.
bool MakeExpiredCertificate(const std::string& pki, const std::string& csr, const std::string& out,
                            const std::string& extfile = "") {
  std::string cmd = "cd '" + pki + "' && openssl x509 -req -in " + csr +
                    " -CA ca.crt -CAkey ca.key -CAcreateserial -days -1 " +
                    (extfile.empty() ? "" : "-extfile " + extfile + " ") + "-out " + out + " 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

TEST(SyncTlsTest, EveryTlsMisconfigurationDeliversNothingLogsWhyAndKeepsRunning) {
  TempDir tmp;
  TlsRegion eu(tmp.path());
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(MakeExpiredCertificate(eu.pki, "server.csr", "expired-server.crt", "san.ext"));
  ASSERT_TRUE(MakeExpiredCertificate(eu.pki, "client.csr", "expired-client.crt"));
  // A second region broker presenting an expired certificate from the right CA.
  RegionSite::MakeDir(tmp.File("expired-broker"));
  BrokerOptions expired;
  expired.tls_ca_file = eu.pki + "/ca.crt";
  expired.tls_cert_file = eu.pki + "/expired-server.crt";
  expired.tls_key_file = eu.pki + "/server.key";
  expired.tls_require_client_cert = true;
  expired.password_file = eu.password_file;
  Broker expired_broker(tmp.File("expired-broker"), expired);
  ASSERT_TRUE(expired_broker.Start()) << expired_broker.log();

  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 1000);
  const std::string ca = eu.pki + "/ca.crt", cert = eu.pki + "/client.crt", key = eu.pki + "/client.key";
  struct Case {
    std::string name, uri, tls;
  };
  const std::vector<Case> cases = {
      {"wrong_ca", eu.site->broker().tls_uri(), eu.other_ca + "," + cert + "," + key + "," + eu.credentials},
      {"expired_server_certificate", expired_broker.tls_uri(), ca + "," + cert + "," + key + "," + eu.credentials},
      {"expired_client_certificate", eu.site->broker().tls_uri(),
       ca + "," + eu.pki + "/expired-client.crt," + key + "," + eu.credentials},
      {"no_client_certificate", eu.site->broker().tls_uri(), ca + ",,," + eu.credentials},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string log_path = tmp.File(c.name + ".log");
    Process gateway;
    ASSERT_TRUE(StartUplinkChild(&gateway, tmp.File("gw.db"), "eu=" + c.uri, log_path, c.tls));
    // The link logs its first failed attempt, then retries with backoff:
    // wait for that line and a few more handshakes, then stop it cleanly.
    EXPECT_TRUE(WaitFor([&] { return ReadAll(log_path).find("cannot connect") != std::string::npos; }, 60000))
        << ReadAll(log_path);
    SleepMs(1000);
    EXPECT_TRUE(gateway.running()) << ReadAll(log_path);
    EXPECT_EQ(gateway.Stop(), 0) << ReadAll(log_path);
    std::string log = ReadAll(log_path);
    EXPECT_NE(log.find("ca_file"), std::string::npos) << log;  // the hint on what to check
    EXPECT_EQ(log.find("connected as"), std::string::npos) << log;
    EXPECT_EQ(log.find(kPassword), std::string::npos);
    EXPECT_EQ(Checkpoint(store.get()), 0u);
  }
  EXPECT_TRUE(eu.site->Contents().empty());
}

}  // namespace
}  // namespace edgesync::test

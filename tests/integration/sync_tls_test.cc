// TLS to regions against a Mosquitto TLS listener with certificates made by
// the test (openssl): the server is verified against the CA file, the broker
// requires a client certificate (mutual TLS) and a password; readings flow
// end to end, and neither the uplink's nor the hub's log shows the password.
// A gateway trusting another CA, or without a client certificate, delivers
// nothing.
#include <gtest/gtest.h>

#include "tests/integration/sync_sites.h"

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

TEST(SyncTlsTest, UntrustedServerOrMissingClientCertificateDeliversNothing) {
  TempDir tmp;
  TlsRegion eu(tmp.path());
  ASSERT_TRUE(eu.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  Fill(store.get(), &workload, 1000);
  Process wrong_ca, no_cert;
  ASSERT_TRUE(StartUplinkChild(&wrong_ca, tmp.File("gw.db"), "eu=" + eu.site->broker().tls_uri(),
                               tmp.File("wrong_ca.log"),
                               eu.other_ca + "," + eu.pki + "/client.crt," + eu.pki + "/client.key," + eu.credentials));
  SleepMs(3000);
  EXPECT_EQ(Checkpoint(store.get()), 0u);
  EXPECT_EQ(wrong_ca.Stop(), 0);
  ASSERT_TRUE(StartUplinkChild(&no_cert, tmp.File("gw.db"), "eu=" + eu.site->broker().tls_uri(),
                               tmp.File("no_cert.log"), eu.pki + "/ca.crt,,," + eu.credentials));
  SleepMs(3000);
  EXPECT_EQ(Checkpoint(store.get()), 0u);
  EXPECT_EQ(no_cert.Stop(), 0);
  EXPECT_TRUE(eu.site->Contents().empty());
  std::string logs = ReadAll(tmp.File("wrong_ca.log")) + ReadAll(tmp.File("no_cert.log"));
  EXPECT_EQ(logs.find(kPassword), std::string::npos);
  EXPECT_EQ(logs.find("connected as"), std::string::npos) << logs;
}

}  // namespace
}  // namespace edgesync::test

// tests/support/region_auth.h: a region broker set up the way an
// operator does it, for the trust tests: identities made by
// firmware-config/region/edgesync-region-auth, its ACL, the global settings
// of the shipped firmware-config/region/mosquitto-region.conf (client ids
// bound to identities, limits), a real hub process, and mosquitto_pub /
// mosquitto_sub (Debian mosquitto-clients) speaking with someone's identity.
#ifndef EDGESYNC_TESTS_SUPPORT_REGION_AUTH_H_
#define EDGESYNC_TESTS_SUPPORT_REGION_AUTH_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/sync_sites.h"

namespace edgesync::test {

inline std::string AuthScript() {
  return std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/region/edgesync-region-auth";
}

// Runs the auth script on dir; true when it exits 0. Its stderr goes to dir/auth.log.
inline bool Auth(const std::string& dir, const std::string& args) {
  std::string cmd = AuthScript() + " --dir '" + dir + "' " + args + " >/dev/null 2>>'" + dir + "/auth.log'";
  return std::system(cmd.c_str()) == 0;
}

// The shipped region broker config's settings on identities and limits,
// for the test broker (tests/support/broker.h), which writes the rest (its
// files, ports and logging) itself. Its extra lines go after its last
// listener, which is the one the tests connect to.
inline std::string ShippedBrokerSettings() {
  std::istringstream in(ReadAll(std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/region/mosquitto-region.conf"));
  std::string line, out;
  bool bound = false;
  while (std::getline(in, line)) {
    std::string key = line.substr(0, line.find(' '));
    if (key == "use_username_as_clientid") {
      if (!bound) out += line + "\n";
      bound = true;
    } else if (key == "max_packet_size" || key.rfind("max_queued_", 0) == 0 || key == "max_inflight_messages") {
      out += line + "\n";
    }
  }
  EXPECT_TRUE(bound) << "the shipped region broker config binds no client id";
  return out;
}

// A region broker with per-identity credentials: gateways (password
// <id>-secret, or a certificate) and hub-eu.
struct AuthRegion {
  AuthRegion(const std::string& root, bool certificates, const std::vector<std::string>& gateways = {"gw-a", "gw-b"})
      : certs(certificates), auth(root + "/auth"), root_(root) {
    RegionSite::MakeDir(auth);
    EXPECT_TRUE(Auth(auth, "init"));
    EXPECT_TRUE(Auth(auth, "add-hub eu hub-eu-secret"));
    BrokerOptions bo;
    bo.acl_file = auth + "/acl";
    bo.extra_config = ShippedBrokerSettings();
    if (certs) {
      EXPECT_TRUE(Auth(auth, "init-ca"));
      EXPECT_TRUE(Auth(auth, "issue-server localhost 127.0.0.1"));
      for (const std::string& id : gateways) EXPECT_TRUE(Auth(auth, "issue-cert " + id));
      EXPECT_TRUE(Auth(auth, "issue-cert hub-eu"));
      bo.tls_ca_file = auth + "/ca/ca.crt";
      bo.tls_cert_file = auth + "/ca/server.crt";
      bo.tls_key_file = auth + "/ca/server.key";
      bo.tls_require_client_cert = true;
      bo.extra_config += "use_identity_as_username true\ncrlfile " + auth + "/ca/crl.pem\n";
    } else {
      for (const std::string& id : gateways) {
        EXPECT_TRUE(Auth(auth, "add-gateway " + id + " " + id + "-secret"));
        WriteAll(root + "/" + id + ".cred", id + ":" + id + "-secret\n");
      }
      bo.password_file = auth + "/passwd";
      WriteAll(root + "/hub-eu.cred", "hub-eu:hub-eu-secret\n");
    }
    site = std::make_unique<RegionSite>(root, "eu", bo);
  }
  // Starts the broker unless it runs, then the hub.
  bool Start() {
    if (!site->broker().running() && !site->broker().Start()) return false;
    if (certs) {
      std::string ca = auth + "/ca/";
      return site->StartHub(uri(), "ca_file = " + Q(ca + "ca.crt") + "\ncert_file = " + Q(ca + "hub-eu.crt") +
                                       "\nkey_file = " + Q(ca + "hub-eu.key") + "\n");
    }
    return site->StartHub(uri(), "credentials_file = " + Q(root_ + "/hub-eu.cred") + "\n");
  }
  std::string uri() { return certs ? site->broker().tls_uri() : site->broker().uri(); }
  int port() { return certs ? site->broker().tls_port() : site->broker().port(); }
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
  // mosquitto_pub / mosquitto_sub arguments: identity `id`, client id client_id.
  std::string CliArgs(const std::string& id, const std::string& client_id) {
    std::string args = " -h 127.0.0.1 -p " + std::to_string(port()) + " -i " + client_id;
    if (certs) {
      std::string cert = auth + "/ca/" + id + ".crt";
      if (!FileExists(cert)) cert += ".revoked";
      return args + " --cafile '" + auth + "/ca/ca.crt' --cert '" + cert + "' --key '" + auth + "/ca/" + id + ".key'";
    }
    return args + " -u " + id + " -P " + id + "-secret";
  }

  bool certs;
  std::string auth;
  std::string root_;
  std::unique_ptr<RegionSite> site;
};

// Publishes a file's bytes as `id`; true if the broker took the connection.
inline bool CliPublish(AuthRegion& r, const std::string& id, const std::string& topic, const std::string& payload_file,
                       bool retain = false, const std::string& client_id = "") {
  std::string cmd = "mosquitto_pub" + r.CliArgs(id, client_id.empty() ? "pub-" + id : client_id) + " -q 1 -t '" +
                    topic + "' -f '" + payload_file + "'" + (retain ? " -r" : "") + " 2>/dev/null";
  return std::system(cmd.c_str()) == 0;
}

// How often `needle` occurs in `text`.
inline int Occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_REGION_AUTH_H_

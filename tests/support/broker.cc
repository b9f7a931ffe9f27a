#include "tests/support/broker.h"

#include <signal.h>

#include <cstdlib>
#include <fstream>

namespace edgesync::test {

Broker::Broker(std::string dir, BrokerOptions options)
    : dir_(std::move(dir)), options_(std::move(options)), port_(FreePort()) {
  if (!options_.tls_cert_file.empty()) tls_port_ = FreePort();
  std::string mk = "mkdir -p '" + dir_ + "/data'";
  int rc = std::system(mk.c_str());
  (void)rc;
}

Broker::~Broker() { Kill9(); }

void Broker::WriteConfig() {
  std::ofstream c(dir_ + "/mosquitto.conf", std::ios::trunc);
  // Runs as the invoking user (tests and CI run as root; mosquitto would
  // otherwise drop to the mosquitto user, who cannot write our temp dir).
  c << "user " << (getuid() == 0 ? "root" : "") << "\n";
  c << "per_listener_settings false\n";
  c << "log_dest stderr\n";
  c << "log_type error\nlog_type warning\nlog_type notice\nlog_type information\n";
  c << "connection_messages true\n";
  // A gateway's broker must not drop a persistent session's queue silently:
  // the defaults (1000 messages) would lose readings while edgesync is down.
  c << "max_queued_messages 0\nmax_queued_bytes 0\nmax_inflight_messages 0\nset_tcp_nodelay true\n";
  if (options_.persistence) {
    c << "persistence true\npersistence_location " << dir_ << "/data/\n";
    c << "autosave_interval " << options_.autosave_interval_s << "\n";
  } else {
    c << "persistence false\n";
  }
  if (!options_.password_file.empty()) {
    c << "allow_anonymous false\npassword_file " << options_.password_file << "\n";
  } else {
    c << "allow_anonymous true\n";
  }
  if (!options_.acl_file.empty()) c << "acl_file " << options_.acl_file << "\n";
  c << "listener " << port_ << " 127.0.0.1\n";
  if (tls_port_ != 0) {
    c << "listener " << tls_port_ << " 127.0.0.1\n";
    c << "cafile " << options_.tls_ca_file << "\ncertfile " << options_.tls_cert_file << "\nkeyfile "
      << options_.tls_key_file << "\n";
    c << "require_certificate " << (options_.tls_require_client_cert ? "true" : "false") << "\n";
  }
  c << options_.extra_config << "\n";
}

bool Broker::Start(int64_t timeout_ms) {
  if (process_.running()) return true;
  const std::string log_path = dir_ + "/broker.log";
  for (int attempt = 0;; ++attempt) {
    WriteConfig();
    const size_t log_before = ReadAll(log_path).size();
    if (!process_.Start({"mosquitto", "-c", dir_ + "/mosquitto.conf"}, log_path)) return false;
    // Up means this broker's own "running" line, written once every
    // listener is bound; an open port alone could be another test's broker
    // on a clashing port while this one is still failing to bind (a gateway
    // under test then talked to a stranger and received nothing).
    bool running_line = false;
    WaitFor(
        [&] {
          running_line = ReadAll(log_path).find(" running", log_before) != std::string::npos;
          return running_line || !process_.running();
        },
        timeout_ms);
    if (running_line && process_.running() && WaitForPort(port_, timeout_ms) &&
        (tls_port_ == 0 || WaitForPort(tls_port_, timeout_ms))) {
      ports_handed_out_ = true;  // a restart keeps them
      return true;
    }
    const bool clash = ReadAll(log_path).find("Address already in use", log_before) != std::string::npos;
    if (process_.running()) process_.Kill9();
    if (!clash || ports_handed_out_ || attempt >= 3) return false;
    port_ = FreePort();
    if (tls_port_ != 0) tls_port_ = FreePort();
  }
}

int Broker::Stop() { return process_.Stop(10000); }

void Broker::Kill9() {
  if (process_.running()) process_.Kill9();
}

void Broker::Freeze() { process_.Signal(SIGSTOP); }
void Broker::Thaw() { process_.Signal(SIGCONT); }
void Broker::Reload() { process_.Signal(SIGHUP); }

std::string Broker::log() const { return ReadAll(dir_ + "/broker.log"); }

bool MakeTestPki(const std::string& dir) {
  std::string d = "'" + dir + "'";
  std::string script =
      "set -e; cd " + d +
      "; openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=edgesync-test-ca"
      " -keyout ca.key -out ca.crt 2>/dev/null"
      "; openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out server.csr 2>/dev/null"
      "; printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext"
      "; openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2"
      " -extfile san.ext -out server.crt 2>/dev/null"
      "; openssl req -newkey rsa:2048 -nodes -subj /CN=edgesync-client -keyout client.key -out client.csr 2>/dev/null"
      "; openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out client.crt 2>/dev/null"
      "; chmod 644 *.key";
  return std::system(script.c_str()) == 0;
}

}  // namespace edgesync::test

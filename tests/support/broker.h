// tests/support/broker.h: a real Mosquitto broker for integration tests.
//
// One reusable fixture: generate a config (listener on a free loopback port,
// a persistence dir, optional TLS listener and ACL/password), start it, wait
// until it accepts connections, stop it, SIGKILL it, and restart it on the
// same port with the same persistence.
#ifndef EDGESYNC_TESTS_SUPPORT_BROKER_H_
#define EDGESYNC_TESTS_SUPPORT_BROKER_H_

#include <memory>
#include <string>

#include "tests/support/process.h"

namespace edgesync::test {

struct BrokerOptions {
  bool persistence = true;
  int autosave_interval_s = 1;
  // TLS listener (in addition to the plain one) with these files; the test
  // generates them (see MakeTestPki).
  std::string tls_ca_file, tls_cert_file, tls_key_file;
  bool tls_require_client_cert = false;
  // Authentication: a password file made with mosquitto_passwd, and an ACL.
  std::string password_file, acl_file;
  // Extra lines appended to the generated mosquitto.conf.
  std::string extra_config;
};

class Broker {
 public:
  // dir holds mosquitto.conf, the persistence data and broker.log.
  Broker(std::string dir, BrokerOptions options = {});
  ~Broker();

  bool Start(int64_t timeout_ms = 10000);  // false if it did not accept in time
  int Stop();                              // SIGTERM: mosquitto saves its state
  void Kill9();                            // SIGKILL: no save
  bool Restart(int64_t timeout_ms = 10000) { Stop(); return Start(timeout_ms); }
  bool running() { return process_.running(); }
  // Sends SIGSTOP/SIGCONT: the broker hangs with the socket open (a silent link).
  void Freeze();
  void Thaw();
  // SIGHUP: mosquitto rereads its password and ACL files.
  void Reload();

  int port() const { return HandOut(port_); }
  pid_t pid() const { return process_.pid(); }  // -1 while not running
  int tls_port() const { return HandOut(tls_port_); }
  std::string uri() const { return "tcp://127.0.0.1:" + std::to_string(HandOut(port_)); }
  std::string tls_uri() const { return "ssl://127.0.0.1:" + std::to_string(HandOut(tls_port_)); }
  const std::string& dir() const { return dir_; }
  std::string log() const;

 private:
  void WriteConfig();
  std::string dir_;
  BrokerOptions options_;
  // Marks the ports as known to the test: from then on they never change.
  int HandOut(int port) const {
    ports_handed_out_ = true;
    return port;
  }

  int port_;
  int tls_port_ = 0;
  // A first start that finds its port taken picks new ones, unless the
  // test already knows them (a config written with uri() before Start()).
  mutable bool ports_handed_out_ = false;
  Process process_;
};

// Makes a CA, a server certificate for 127.0.0.1/localhost and a client
// certificate with openssl in dir: ca.crt, server.{crt,key}, client.{crt,key}.
bool MakeTestPki(const std::string& dir);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_BROKER_H_

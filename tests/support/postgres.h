// tests/support/postgres.h: a real PostgreSQL server for tests.
//
// Like the broker fixture: `initdb` into a folder of the test's own (once),
// then the server (`postgres`, Debian's /usr/lib/postgresql/<version>/bin)
// on a free loopback port with Unix sockets off, started, stopped (SIGINT:
// fast shutdown), SIGKILLed and restarted on the same port with the same
// data. Logins go over TCP with SCRAM and a password, so the hub's
// password_file is what gets a hub in. PostgreSQL refuses to run as root:
// under root the fixture runs initdb and the server as the `postgres` user
// that Debian's package creates, and opens the folders above the data
// folder to it (execute only).
//
// Thread safety: one test thread.
#ifndef EDGESYNC_TESTS_SUPPORT_POSTGRES_H_
#define EDGESYNC_TESTS_SUPPORT_POSTGRES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "store/hub_store.h"
#include "tests/support/process.h"

namespace edgesync::test {

struct PostgresOptions {
  std::string user = "edgesync";
  std::string password = "pg-fixture-secret";
  // fsync off: a test kills processes, not the machine, and a killed server
  // loses nothing committed either way (its WAL is in the page cache).
  bool fsync = false;
};

class Postgres {
 public:
  // dir holds data/, the password files and postgres.log.
  explicit Postgres(std::string dir, PostgresOptions options = {});
  ~Postgres();

  // initdb on the first start; false if the server did not answer in time.
  bool Start(int64_t timeout_ms = 60000);
  int Stop();   // SIGINT: fast shutdown
  void Kill9();
  bool running() { return process_.running(); }
  pid_t pid() const { return process_.pid(); }  // the postmaster's

  int port() const { return port_; }
  // postgresql://<user>@127.0.0.1:<port>/<db>: no password in it.
  std::string Uri(const std::string& db) const;
  // A file holding the password (what [hub] password_file points at).
  std::string password_file() const { return dir_ + "/password"; }
  const std::string& password() const { return options_.password; }

  // Runs SQL with psql against db; false (and the output in the log) on error.
  bool Sql(const std::string& db, const std::string& sql);
  // Runs one query with psql (unaligned, tuples only) and puts what it
  // printed in *out; false on error.
  bool Query(const std::string& db, const std::string& sql, std::string* out);
  bool CreateDatabase(const std::string& name) { return Sql("postgres", "CREATE DATABASE " + name); }
  bool DropDatabase(const std::string& name) {
    return Sql("postgres", "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  }
  std::string log() const;

  // True where Debian's PostgreSQL server is installed.
  static bool Installed();

 private:
  bool InitDb();
  // psql with extra flags, its output (and errors) appended to `out`.
  bool Psql(const std::string& db, const std::string& sql, const std::vector<std::string>& flags,
            const std::string& out);
  std::string dir_;
  PostgresOptions options_;
  int port_;
  bool initialised_ = false;
  Process process_;
};

// Hub store options for database db of the server: its URI and password
// file, a 5 s connect timeout (a test's server is on loopback).
HubStoreOptions HubStoreOptionsFor(const Postgres& pg, const std::string& db);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_POSTGRES_H_

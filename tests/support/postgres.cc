#include "tests/support/postgres.h"

#include <glob.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace edgesync::test {
namespace {

// The newest installed server's bin folder ("" = none).
std::string BinDir() {
  glob_t g;
  std::string best;
  if (glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &g) == 0) {
    std::vector<std::string> found(g.gl_pathv, g.gl_pathv + g.gl_pathc);
    // Numeric order: 15 before 9.6 would be wrong as text.
    std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
      return std::atof(a.c_str() + 20) < std::atof(b.c_str() + 20);
    });
    best = found.back().substr(0, found.back().size() - 7);
  }
  globfree(&g);
  return best;
}

// PostgreSQL refuses root; under root its programs run as `postgres`.
bool ServerUser(uid_t* uid, gid_t* gid) {
  if (geteuid() != 0) {
    *uid = 0;
    *gid = 0;
    return true;
  }
  struct passwd* pw = getpwnam("postgres");
  if (!pw) return false;
  *uid = pw->pw_uid;
  *gid = pw->pw_gid;
  return true;
}

// The server user must be able to pass through every folder above its own.
void OpenAncestors(const std::string& dir) {
  std::string p = dir;
  while (true) {
    size_t slash = p.rfind('/');
    if (slash == std::string::npos || slash == 0) return;
    p = p.substr(0, slash);
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return;
    if (st.st_uid == geteuid() && (st.st_mode & S_IXOTH) == 0) chmod(p.c_str(), (st.st_mode & 07777) | 0011);
  }
}

}  // namespace

Postgres::Postgres(std::string dir, PostgresOptions options)
    : dir_(std::move(dir)), options_(std::move(options)), port_(FreePort()) {}

Postgres::~Postgres() {
  if (process_.running()) Stop();
}

bool Postgres::Installed() { return !BinDir().empty(); }

std::string Postgres::Uri(const std::string& db) const {
  return "postgresql://" + options_.user + "@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

std::string Postgres::log() const { return ReadAll(dir_ + "/postgres.log"); }

bool Postgres::InitDb() {
  uid_t uid;
  gid_t gid;
  if (!ServerUser(&uid, &gid)) return false;
  mkdir(dir_.c_str(), 0755);
  OpenAncestors(dir_ + "/data");
  WriteAll(password_file(), options_.password + "\n");
  chmod(password_file().c_str(), 0600);
  // initdb reads the superuser's password from a file it can open.
  std::string pw = dir_ + "/initdb-password";
  WriteAll(pw, options_.password + "\n");
  if (uid != 0) {
    chown(dir_.c_str(), uid, gid);
    chown(pw.c_str(), uid, gid);
  }
  Process initdb;
  if (uid != 0) initdb.RunAs(uid, gid);
  if (!initdb.Start({BinDir() + "/initdb", "-D", dir_ + "/data", "-U", options_.user, "--pwfile=" + pw,
                     "--auth-host=scram-sha-256", "--auth-local=scram-sha-256", "-E", "UTF8", "--no-locale",
                     "--no-sync"},
                    dir_ + "/initdb.log")) {
    return false;
  }
  int rc = initdb.Wait(120000);
  unlink(pw.c_str());
  return rc == 0;
}

bool Postgres::Start(int64_t timeout_ms) {
  if (!initialised_) {
    if (!InitDb()) return false;
    initialised_ = true;
  }
  uid_t uid;
  gid_t gid;
  if (!ServerUser(&uid, &gid)) return false;
  if (uid != 0) process_.RunAs(uid, gid);
  std::vector<std::string> argv = {BinDir() + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_),
                                   "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                                   "-c", "max_connections=200"};
  if (!options_.fsync) {
    argv.insert(argv.end(), {"-c", "fsync=off", "-c", "full_page_writes=off"});
  }
  // Accepting TCP comes before accepting logins (recovery after a kill):
  // wait for a query to succeed. A killed server's backends notice their
  // postmaster is gone only at their next wake-up (later on a loaded
  // machine) and hold its shared memory until then; a new server refuses to
  // start beside them and exits, so it is started again until they are gone.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string log_path = dir_ + "/postgres.log";
  for (;;) {
    const size_t log_before = ReadAll(log_path).size();
    if (!process_.Start(argv, log_path)) return false;
    bool up = false;
    const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - std::chrono::steady_clock::now()).count();
    WaitFor([&] { return !process_.running() || (up = Sql("postgres", "SELECT 1")); }, std::max<int64_t>(left, 0));
    if (up) return true;
    const bool shm_busy = ReadAll(log_path).find("pre-existing shared memory block", log_before) != std::string::npos;
    if (process_.running() || !shm_busy || std::chrono::steady_clock::now() >= deadline) return false;
    SleepMs(200);
  }
}

int Postgres::Stop() {
  process_.Signal(SIGINT);  // fast shutdown: roll back open transactions, checkpoint, exit
  int rc = process_.Wait(30000);
  if (rc == INT32_MIN) {
    process_.Kill9();
    return -9;
  }
  return rc;
}

void Postgres::Kill9() { process_.Kill9(); }

bool Postgres::Sql(const std::string& db, const std::string& sql) {
  return Psql(db, sql, {}, dir_ + "/psql.log");
}

bool Postgres::Query(const std::string& db, const std::string& sql, std::string* out) {
  const std::string file = dir_ + "/query.out";
  ::unlink(file.c_str());
  bool ok = Psql(db, sql, {"-A", "-t"}, file);
  *out = ReadAll(file);
  return ok;
}

bool Postgres::Psql(const std::string& db, const std::string& sql, const std::vector<std::string>& flags,
                    const std::string& out) {
  Process psql;
  std::vector<std::string> argv = {"psql", "-X", "-q", "-h", "127.0.0.1", "-p", std::to_string(port_),
                                   "-U", options_.user, "-d", db, "-v", "ON_ERROR_STOP=1", "-c", sql};
  argv.insert(argv.end(), flags.begin(), flags.end());
  // Notices ("already exists, skipping") would land in a query's output.
  if (!psql.Start(argv, out, {"PGPASSWORD=" + options_.password, "PGCONNECT_TIMEOUT=5",
                              "PGOPTIONS=-c client_min_messages=warning"})) {
    return false;
  }
  return psql.Wait(60000) == 0;
}

HubStoreOptions HubStoreOptionsFor(const Postgres& pg, const std::string& db) {
  HubStoreOptions o;
  o.location = pg.Uri(db);
  o.password_file = pg.password_file();
  o.connect_timeout_s = 5;
  return o;
}

}  // namespace edgesync::test

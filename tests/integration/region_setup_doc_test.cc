// docs/REGION.md "Setting up PostgreSQL for a region", run as written on a
// real server (tests/support/postgres.h): the marked blocks are read out of
// the page, so the page and what works cannot drift apart. What differs
// from the page is where the server is: its loopback address and port for
// db.example.net:5432 and the hubs' network, this test's certificate and
// password file for the page's paths. The role, database, grants,
// pg_hba.conf line, TLS settings and hub config are the page's own. The
// password file's `install` lines (a root-owned file for the edgesync
// group) are not run; its password line is.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "firmware-config/config.h"
#include "platform/files.h"
#include "store/hub_store.h"
#include "tests/support/broker.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL

// The fenced block after <!-- region-setup:NAME --> in docs/REGION.md.
std::string DocBlock(const std::string& name) {
  const std::string page = ReadAll(std::string(EDGESYNC_SOURCE_DIR) + "/docs/REGION.md");
  size_t at = page.find("<!-- region-setup:" + name + " -->");
  EXPECT_NE(at, std::string::npos) << name;
  if (at == std::string::npos) return "";
  size_t open = page.find("```", at);
  size_t body = page.find('\n', open) + 1;
  size_t close = page.find("```", body);
  return page.substr(body, close - body);
}

// The SQL block's statements, one by one (CREATE DATABASE refuses to run in
// the transaction a multi-statement string makes; psql runs them apart too).
std::vector<std::string> Statements(const std::string& sql) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t semi = sql.find(';'); semi != std::string::npos; semi = sql.find(';', start)) {
    std::string s = sql.substr(start, semi - start);
    s.erase(0, s.find_first_not_of(" \n"));
    if (!s.empty()) out.push_back(s);
    start = semi + 1;
  }
  return out;
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "\"" << from << "\" not in:\n" << text;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class RegionSetupDocTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pg_ = std::make_unique<Postgres>(tmp_.File("pg"));
    ASSERT_TRUE(pg_->Start()) << pg_->log();
    ASSERT_OK(MakeDirs(tmp_.File("pki")));
    ASSERT_TRUE(MakeTestPki(tmp_.File("pki")));
  }
  void TearDown() override {
    if (pg_) pg_->Stop();
  }
  bool Sql(const std::string& db, const std::string& sql) {
    bool ok = pg_->Sql(db, sql);
    EXPECT_TRUE(ok) << sql << "\n" << ReadAll(tmp_.File("pg/psql.log"));
    return ok;
  }
  // A file in the server's data folder, owned by the server's user (the
  // key must be, mode 0600).
  void ServerFile(const std::string& name, const std::string& text) {
    std::string path = tmp_.File("pg/data/" + name);
    WriteAll(path, text);
    struct stat data;
    ASSERT_EQ(stat(tmp_.File("pg/data").c_str(), &data), 0);
    ASSERT_EQ(chmod(path.c_str(), 0600), 0);
    if (geteuid() == 0) {
      ASSERT_EQ(chown(path.c_str(), data.st_uid, data.st_gid), 0);
    }
  }
  void Append(const std::string& path, const std::string& text) { WriteAll(path, ReadAll(path) + text); }

  Status Open(const std::string& location, std::unique_ptr<HubStore>* hub) {
    HubStoreOptions o;
    o.location = location;
    o.password_file = password_file_;
    o.connect_timeout_s = 5;
    return OpenPostgresHubStore(o, hub);
  }

  TempDir tmp_;
  std::unique_ptr<Postgres> pg_;
  std::string password_file_;
};

TEST_F(RegionSetupDocTest, ThePagesStepsGiveAHubItsStoreOverTls) {
  const std::string port = std::to_string(pg_->port());
  // 2. The role and its database.
  const std::vector<std::string> role_and_db = Statements(DocBlock("role-and-database"));
  ASSERT_EQ(role_and_db.size(), 2u);
  for (const std::string& s : role_and_db) ASSERT_TRUE(Sql("postgres", s));

  // 3. pg_hba.conf and the server's TLS settings. A non-TLS login of the
  // role is rejected here by one more line after the page's, so what
  // succeeds below went over TLS.
  std::string hba = DocBlock("pg_hba.conf");
  hba = Replace(hba, "10.20.0.0/24", "127.0.0.1/32 ");
  const std::string hba_path = tmp_.File("pg/data/pg_hba.conf");
  WriteAll(hba_path, hba + "host edgesync_eu edgesync_eu 127.0.0.1/32 reject\n" + ReadAll(hba_path));
  ServerFile("server.crt", ReadAll(tmp_.File("pki/server.crt")));
  ServerFile("server.key", ReadAll(tmp_.File("pki/server.key")));
  std::string conf = DocBlock("postgresql.conf");
  conf = Replace(conf, "/etc/postgresql/15/main/server.crt", tmp_.File("pg/data/server.crt"));
  conf = Replace(conf, "/etc/postgresql/15/main/server.key", tmp_.File("pg/data/server.key"));
  // The fixture's command line sets listen_addresses (loopback), which
  // takes precedence over the file's.
  Append(tmp_.File("pg/data/postgresql.conf"), "\n" + conf);
  ASSERT_EQ(pg_->Stop(), 0);
  ASSERT_TRUE(pg_->Start()) << pg_->log();

  // 4. The password file: the page's password line.
  std::smatch m;
  const std::string password_block = DocBlock("password-file");
  ASSERT_TRUE(std::regex_search(password_block, m, std::regex("printf '%s\\\\n' '([^']+)'"))) << password_block;
  password_file_ = tmp_.File("pg-password");
  WriteAll(password_file_, std::string(m[1]) + "\n");
  ASSERT_EQ(chmod(password_file_.c_str(), 0600), 0);
  ASSERT_NE(role_and_db[0].find("'" + std::string(m[1]) + "'"), std::string::npos)
      << "the password file holds the role's password";

  // 5. The hub's config, checked as the program checks it.
  std::string toml = DocBlock("hub-config");
  toml = Replace(toml, "db.example.net:5432", "localhost:" + port);
  toml = Replace(toml, "/etc/edgesync/pg-ca.crt", tmp_.File("pki/ca.crt"));
  toml = Replace(toml, "/etc/edgesync/pg-password", password_file_);
  ASSERT_OK(MakeDirs(tmp_.File("hub")));
  const std::string config_path = tmp_.File("hub.toml");
  WriteAll(config_path, "[gateway]\ndata_dir = \"" + tmp_.File("hub") + "\"\n\n" + toml);
  Config config;
  std::vector<ConfigError> errors;
  ASSERT_OK(LoadConfig(config_path, ConfigRole::kRegion, &config, &errors))
      << (errors.empty() ? "" : errors[0].ToString());
  ASSERT_NE(config.hub_store.find("sslmode=verify-full"), std::string::npos);

  // The hub's store opens: schema made, a batch applied, over TLS.
  std::unique_ptr<HubStore> hub;
  Status st = Open(config.hub_store, &hub);
  ASSERT_OK(st) << pg_->log();
  std::vector<ChangeEntry> entries(3);
  for (size_t i = 0; i < entries.size(); ++i) {
    entries[i].lsn = i + 1;
    entries[i].reading = Reading{"dev-1", "temp", 1780000000000 + static_cast<int64_t>(i), 20.5, "C", 0};
  }
  OriginBatch batch;
  batch.origin = Origin{"gw-1", "0123456789abcdef0123456789abcdef"};
  batch.entries = &entries;
  ApplyResult applied;
  ASSERT_OK(hub->Apply(batch, &applied));
  EXPECT_EQ(applied.outcome, ApplyOutcome::kApplied);
  hub.reset();
  std::unique_ptr<HubStore> plain;
  EXPECT_FALSE(Open(Replace(config.hub_store, "sslmode=verify-full", "sslmode=disable"), &plain).ok())
      << "a login without TLS is refused, so the one above used it";

  // The program itself, with that config: `config check` and `status`
  // (the hub store read through the PostgreSQL module).
  std::string out;
  Process check;
  ASSERT_TRUE(check.Start({EDGESYNC_BINARY, "config", "check", config_path, "--role", "region"}, tmp_.File("check.log")));
  EXPECT_EQ(check.Wait(60000), 0) << ReadAll(tmp_.File("check.log"));
  Process status;
  ASSERT_TRUE(status.Start({EDGESYNC_BINARY, "status", "--json", "-c", config_path}, tmp_.File("status.log")));
  EXPECT_EQ(status.Wait(60000), 0) << ReadAll(tmp_.File("status.log"));
  EXPECT_NE(ReadAll(tmp_.File("status.log")).find("\"postgresql\""), std::string::npos)
      << ReadAll(tmp_.File("status.log"));
}

// PostgreSQL 15: a role that does not own its database may not create in
// schema public. The hub's error names its whole statement; the page's
// grants are what it then needs.
TEST_F(RegionSetupDocTest, WithoutOwnershipTheErrorNamesTheStatementAndThePagesGrantsFixIt) {
  const std::vector<std::string> role_and_db = Statements(DocBlock("role-and-database"));
  ASSERT_EQ(role_and_db.size(), 2u);
  for (const std::string& s : role_and_db) ASSERT_TRUE(Sql("postgres", s));
  ASSERT_TRUE(Sql("postgres", "ALTER DATABASE edgesync_eu OWNER TO edgesync"));  // the fixture's superuser
  password_file_ = tmp_.File("pg-password");
  std::smatch m;
  const std::string password_block = DocBlock("password-file");
  ASSERT_TRUE(std::regex_search(password_block, m, std::regex("printf '%s\\\\n' '([^']+)'")));
  WriteAll(password_file_, std::string(m[1]) + "\n");
  const std::string location = "postgresql://edgesync_eu@127.0.0.1:" + std::to_string(pg_->port()) + "/edgesync_eu";

  std::unique_ptr<HubStore> hub;
  Status st = Open(location, &hub);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("permission denied for schema public"), std::string::npos) << st.ToString();
  // The whole statement, not its first 40 characters.
  EXPECT_NE(st.message().find("CREATE TABLE IF NOT EXISTS es_meta (key text PRIMARY KEY, value text NOT NULL): "),
            std::string::npos)
      << st.ToString();
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.ToString();

  for (const std::string& s : Statements(DocBlock("grants-instead-of-ownership"))) ASSERT_TRUE(Sql("edgesync_eu", s));
  st = Open(location, &hub);
  EXPECT_OK(st);
}
#endif

}  // namespace
}  // namespace edgesync::test

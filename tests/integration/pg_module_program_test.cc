// The PostgreSQL module's log lines are the program's (store/pg_module.h):
// a real `edgesync region` on a real PostgreSQL server loads the real
// edgesync-postgresql.so, and the line the module writes when it opens the
// hub store comes out of the program's logger, in the program's format (a
// terminal's timestamp and level; journald's priority prefix when stderr is
// the journal) and only at the program's level.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <regex>
#include <sstream>
#include <string>

#include "tests/support/broker.h"
#include "tests/support/notify_socket.h"
#include "tests/support/postgres.h"
#include "tests/support/process.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL
// A region hub on a PostgreSQL database, started and stopped by the test.
struct PgRegion {
  TempDir dir;
  Broker broker{dir.File("broker")};
  Postgres postgres{dir.File("postgres")};
  NotifySocket notify{dir.File("notify.sock")};
  int runs = 0;

  bool Start() {
    if (!broker.Start() || !notify.bound()) return false;
    if (!postgres.Start()) {
      ADD_FAILURE() << "PostgreSQL did not start: " << postgres.log();
      return false;
    }
    return postgres.CreateDatabase("hub");
  }

  // Runs the hub at log_level until it tells systemd it is ready (its
  // stores are open by then), stops it and returns what it wrote. With
  // journal, its stderr is announced as the journal's stream
  // (JOURNAL_STREAM names the log file's device and inode).
  std::string RunHub(const std::string& log_level, bool journal = false) {
    ++runs;
    std::string config = dir.File("region" + std::to_string(runs) + ".toml");
    WriteAll(config, "[gateway]\ndata_dir = \"" + dir.File("hub") + "\"\nlog_level = \"" + log_level +
                         "\"\n[hub]\nregion = \"eu\"\nbroker_uri = \"" + broker.uri() + "\"\nstore = \"" +
                         postgres.Uri("hub") + "\"\npassword_file = \"" + postgres.password_file() + "\"\n" +
                         // No status page: not what is tested here, and a hub stopped
                         // just after READY may not have its listener running yet.
                         "[metrics]\nlisten = \"\"\n");
    std::string log = dir.File("hub" + std::to_string(runs) + ".log");
    WriteAll(log, "");
    std::vector<std::string> env = {"NOTIFY_SOCKET=" + notify.path()};
    if (journal) {
      struct stat st {};
      if (::stat(log.c_str(), &st) != 0) return "";
      env.push_back("JOURNAL_STREAM=" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino));
    }
    notify.Drain();  // what the previous run sent
    Process hub;
    if (!hub.Start({EDGESYNC_BINARY, "region", "--config", config}, log, env)) return "";
    bool ready = false;
    for (int64_t deadline = NowMs() + 60000; !ready && NowMs() < deadline && hub.running();) {
      ready = notify.Next(200).rfind("READY=1", 0) == 0;
    }
    EXPECT_TRUE(ready) << "the hub did not become ready:\n" << ReadAll(log);
    EXPECT_EQ(hub.Stop(5000), 0) << ReadAll(log);
    return ReadAll(log);
  }
};

// The lines of text that contain needle.
std::vector<std::string> LinesWith(const std::string& text, const std::string& needle) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

TEST(PgModuleProgramTest, TheModulesOpenLineIsWrittenByTheProgramsLoggerAtItsLevel) {
  PgRegion region;
  ASSERT_TRUE(region.Start());
  const std::string uri = region.postgres.Uri("hub");
  // What the module writes (store/pg/pg_hub_store.cc), after the program's
  // prefix: the main store and the feed store, each on its own connection.
  const std::string open = "hub store " + uri + " open as edgesync-hub-eu";
  // The program's terminal format: time to the millisecond, the level padded to 5.
  const std::regex stamp(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3} info  )");
  const std::regex details(R"(^: PostgreSQL server \d+\.\d+, schema version \d+ \(created\), epoch \S+$)");

  std::string first = region.RunHub("info");
  std::vector<std::string> lines = LinesWith(first, open + ":");
  ASSERT_EQ(lines.size(), 1u) << first;
  std::smatch prefix;
  ASSERT_TRUE(std::regex_search(lines[0], prefix, stamp)) << lines[0];
  ASSERT_EQ(lines[0].compare(prefix.length(0), open.size(), open), 0) << lines[0];
  // A new database: the module created its schema.
  EXPECT_TRUE(std::regex_match(lines[0].substr(prefix.length(0) + open.size()), details)) << lines[0];
  std::vector<std::string> feed = LinesWith(first, open + "-feed:");
  ASSERT_EQ(feed.size(), 1u) << first;
  // The program's own line about the same store, in the same format.
  std::vector<std::string> own = LinesWith(first, "region eu: hub store " + uri);
  ASSERT_EQ(own.size(), 1u) << first;
  EXPECT_TRUE(std::regex_search(own[0], stamp)) << own[0];

  // At the program's level warn the module writes nothing of its open.
  std::string quiet = region.RunHub("warn");
  EXPECT_TRUE(LinesWith(quiet, open).empty()) << quiet;
  EXPECT_TRUE(LinesWith(quiet, "region eu: hub store").empty()) << quiet;

  // stderr as the journal: the program's format there is the syslog
  // priority prefix without a timestamp, and the module's line has it too.
  std::string journal = region.RunHub("info", true);
  lines = LinesWith(journal, open + ":");
  ASSERT_EQ(lines.size(), 1u) << journal;
  EXPECT_EQ(lines[0].rfind("<6>" + open + ": PostgreSQL server ", 0), 0u) << lines[0];
  // The schema was there from the first run.
  EXPECT_EQ(lines[0].find("(created)"), std::string::npos) << lines[0];
  own = LinesWith(journal, "region eu: hub store " + uri);
  ASSERT_EQ(own.size(), 1u) << journal;
  EXPECT_EQ(own[0].rfind("<6>region eu: hub store ", 0), 0u) << own[0];
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test

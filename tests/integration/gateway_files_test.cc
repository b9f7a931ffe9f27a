// The running gateway's files under umask 000: the data directory 0700, the
// store, its WAL files, the intake journal, the presence mark and the status
// file 0600. And `edgesync query` reads the store of a running and of a
// stopped gateway without creating, changing or migrating anything.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <set>

#include "platform/files.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/status_metrics.h"

namespace edgesync::test {
namespace {

int Mode(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_mode & 07777;
}

// The directory's entries, without the status file's passing temp file.
std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != ".." && n != "status.json.tmp") names.insert(n);
  }
  ::closedir(d);
  return names;
}

int RunQuery(const TempDir& dir, const std::string& config, std::string* out) {
  static int runs = 0;
  std::string log = dir.File("query-" + std::to_string(runs++) + ".txt");
  Process p;
  if (!p.Start({EDGESYNC_BINARY, "query", "-c", config, "--device", "p0"}, log)) return -1;
  int rc = p.Wait(30000);
  *out = ReadAll(log);
  return rc;
}

size_t Lines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(GatewayFilesTest, PrivateFilesUnderUmask000AndReadOnlyQueries) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start());
  const std::string data = dir.File("data");
  const std::string config = dir.File("edgesync.toml");
  WriteAll(config, "[gateway]\nid = \"gw-files\"\ndata_dir = \"" + data + "\"\n[ingest]\nbroker_uri = \"" +
                       broker.uri() + "\"\nepoch_floor = \"2020-01-01T00:00:00Z\"\n");
  Process gateway;
  ASSERT_TRUE(gateway.Start({"/bin/sh", "-c", std::string("umask 000 && exec ") + EDGESYNC_BINARY +
                                                  " gateway --config " + config},
                            dir.File("gateway.log")));
  Process publisher;
  // Subscribed once connected (the status file says so): only then publish.
  auto connected = [&] {
    std::string text;
    if (!ReadFile(data + "/status.json", &text).ok()) return false;
    auto j = nlohmann::json::parse(text, nullptr, false);
    return !j.is_discarded() && StatusField(j, metrics::kIngestMqttConnected) == 1;
  };
  ASSERT_TRUE(WaitFor(connected, 30000)) << ReadAll(dir.File("gateway.log"));
  ASSERT_TRUE(publisher.Start({EDGESYNC_PUBLISHER, broker.uri(), "pub", "1", "10", "p", "1800000000000"},
                              dir.File("publisher.log")));
  ASSERT_EQ(publisher.Wait(60000), 0) << ReadAll(dir.File("publisher.log"));
  std::string out;
  ASSERT_TRUE(WaitFor([&] { return RunQuery(dir, config, &out) == 0 && Lines(out, "\"device\"") == 10; }, 30000))
      << out << ReadAll(dir.File("gateway.log"));

  EXPECT_EQ(Mode(data), 0700);
  for (const char* f : {"store.db", "store.db-wal", "store.db-shm", "intake-a.journal", "intake-b.journal",
                        "ingest-presence", "status.json"}) {
    EXPECT_EQ(Mode(data + "/" + f), 0600) << f;
  }

  // Beside the running gateway: nothing new in its directory.
  std::set<std::string> before = Entries(data);
  ASSERT_EQ(RunQuery(dir, config, &out), 0) << out;
  EXPECT_EQ(Lines(out, "\"device\""), 10u) << out;
  EXPECT_EQ(Entries(data), before);

  // Stopped: the store alone, read as it is, byte for byte unchanged.
  ASSERT_EQ(gateway.Stop(), 0) << ReadAll(dir.File("gateway.log"));
  before = Entries(data);
  EXPECT_EQ(before.count("store.db-wal"), 0u);
  std::string store_before = ReadAll(data + "/store.db");
  ASSERT_EQ(RunQuery(dir, config, &out), 0) << out;
  EXPECT_EQ(Lines(out, "\"device\""), 10u) << out;
  EXPECT_EQ(Entries(data), before);
  EXPECT_EQ(ReadAll(data + "/store.db"), store_before);
}

}  // namespace
}  // namespace edgesync::test

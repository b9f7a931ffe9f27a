// The edgesync program as a user meets it: --version, --help, config check.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "platform/files.h"
#include "tests/support/process.h"

namespace edgesync::test {
namespace {

struct CliRun {
  int code;
  std::string out;
};

// env: "NAME=value ..." set for the program only.
CliRun Edgesync(const std::string& args, const std::string& env = "") {
  std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(EDGESYNC_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(CliTest, VersionAndHelp) {
  CliRun v = Edgesync("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("edgesync ", 0), 0u) << v.out;
  CliRun h = Edgesync("--help");
  EXPECT_EQ(h.code, 0);
  for (const char* sub : {"gateway", "region", "query", "feed", "status", "config"}) {
    EXPECT_NE(h.out.find(sub), std::string::npos) << sub;
  }
}

TEST(CliTest, ConfigCheckReportsEachErrorWithFileLineKey) {
  TempDir dir;
  std::string path = dir.File("bad.toml");
  WriteAll(path, "[gateway]\nid = \"gw 1\"\n\n[store]\nsync = \"always\"\ncolour = \"blue\"\n[[region]]\nname = \"eu\"\n");
  CliRun r = Edgesync("config check " + path + " --role gateway");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find(path + ":2: gateway.id:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(path + ":5: store.sync:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(path + ":6: store.colour: unknown key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("region[0].uri: missing"), std::string::npos) << r.out;
}

TEST(CliTest, ConfigCheckPrintsEffectiveConfiguration) {
  TempDir dir;
  std::string path = dir.File("good.toml");
  WriteAll(path, "[gateway]\nid = \"gw-1\"\n[store]\nsync = \"full\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://127.0.0.1:1\"\n");
  CliRun r = Edgesync("config check " + path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("sync = \"full\""), std::string::npos);
  EXPECT_NE(r.out.find("batch_max = 2000"), std::string::npos);  // defaults are shown too
  EXPECT_NE(r.out.find("[[region]]"), std::string::npos);
}

// A file from before the store sized its compaction spans itself still
// checks clean; each retired option is named in a warning and no longer
// shown in the effective configuration.
TEST(CliTest, ConfigCheckWarnsOfRetiredCompactionOptions) {
  TempDir dir;
  std::string path = dir.File("old.toml");
  WriteAll(path, "[gateway]\nid = \"gw-1\"\n[store]\ncompact_span_readings = 1000\ncompact_always = true\n");
  CliRun r = Edgesync("config check " + path + " --role gateway");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: store.compact_span_readings: no longer used"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning: store.compact_always: no longer used"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("compact_span_readings ="), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("compact_always ="), std::string::npos) << r.out;
}

TEST(CliTest, ConfigCheckAppliesTheTopicPatternRules) {
  TempDir dir;
  std::string bad = dir.File("bad.toml");
  WriteAll(bad, "[gateway]\nid = \"gw-1\"\n[ingest]\nsubscriptions = [\"a/+/{deviceId}\", \"b//{deviceId}\"]\n");
  CliRun r = Edgesync("config check " + bad + " --role gateway");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("wildcards are not allowed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("level 2 is empty"), std::string::npos) << r.out;
  // A pattern without placeholders: the device comes from the payload.
  std::string good = dir.File("good.toml");
  WriteAll(good, "[gateway]\nid = \"gw-1\"\n[ingest]\nsubscriptions = [\"senml\"]\n");
  r = Edgesync("config check " + good + " --role gateway");
  EXPECT_EQ(r.code, 0) << r.out;
  // The device description topic follows the same grammar.
  std::string device_topic = dir.File("device_topic.toml");
  WriteAll(device_topic, "[gateway]\nid = \"gw-1\"\n[ingest]\ndevice_topic = \"meta/+/{deviceId}\"\n");
  r = Edgesync("config check " + device_topic + " --role gateway");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("ingest.device_topic: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wildcards are not allowed"), std::string::npos) << r.out;
}

TEST(CliTest, ShippedExampleChecksClean) {
  CliRun r = Edgesync(std::string("config check ") + EDGESYNC_SOURCE_DIR + "/firmware-config/edgesync.example.toml --role gateway");
  EXPECT_EQ(r.code, 0) << r.out;
}

// The transport rule holds for the running roles, not only for `config
// check`: each refuses to start, before it creates or connects anything.
// (192.0.2.0/24 is TEST-NET-1: nothing is ever sent there.)
TEST(CliTest, RolesRefusePlaintextOffLoopback) {
  TempDir dir;
  std::string gw = dir.File("gw.toml");
  WriteAll(gw, "[gateway]\nid = \"gw-1\"\ndata_dir = " + std::string("\"") + dir.File("gw-data") +
                   "\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://192.0.2.10:1883\"\n");
  CliRun r = Edgesync("gateway -c " + gw);
  // EX_CONFIG: a config the service cannot use, which its unit does not
  // restart on (only an edit helps).
  EXPECT_EQ(r.code, 78) << r.out;
  EXPECT_NE(r.out.find("region[0].uri"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("allow_insecure"), std::string::npos) << r.out;
  EXPECT_FALSE(FileExists(dir.File("gw-data"))) << "refused after creating its data directory";
  std::string hub = dir.File("hub.toml");
  WriteAll(hub, "[gateway]\ndata_dir = " + std::string("\"") + dir.File("hub-data") +
                    "\"\n[hub]\nregion = \"eu\"\nbroker_uri = \"tcp://192.0.2.11:1883\"\n");
  r = Edgesync("region -c " + hub);
  EXPECT_EQ(r.code, 78) << r.out;
  EXPECT_NE(r.out.find("hub.broker_uri"), std::string::npos) << r.out;
  EXPECT_FALSE(FileExists(dir.File("hub-data")));
}

#ifdef EDGESYNC_HAVE_POSTGRESQL
// The program does not link libpq: a region hub on PostgreSQL loads
// edgesync-postgresql.so. Without a loadable module it stops with an error
// naming the file and the loader's reason, before anything else starts.
TEST(CliTest, RegionOnPostgresWithoutItsModuleNamesTheFileTried) {
  TempDir dir;
  std::string hub = dir.File("hub.toml");
  WriteAll(hub, "[gateway]\ndata_dir = \"" + dir.File("hub-data") +
                    "\"\n[hub]\nregion = \"eu\"\nbroker_uri = \"tcp://127.0.0.1:1\"\n"
                    "store = \"postgresql://edgesync@127.0.0.1:1/hub\"\n");
  std::string missing = dir.File("missing/edgesync-postgresql.so");
  CliRun r = Edgesync("region -c " + hub, "EDGESYNC_PG_MODULE=" + missing);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no PostgreSQL hub store module"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(missing + ": cannot open shared object file"), std::string::npos) << r.out;

  // A file that is there but no shared object: the loader's own reason.
  std::string bogus = dir.File("edgesync-postgresql.so");
  WriteAll(bogus, "not an ELF file\n");
  r = Edgesync("region -c " + hub, "EDGESYNC_PG_MODULE=" + bogus);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("does not load: " + bogus + ": "), std::string::npos) << r.out;
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

TEST(CliTest, MissingFileIsAClearError) {
  CliRun r = Edgesync("config check /nonexistent.toml");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("/nonexistent.toml"), std::string::npos);
}

}  // namespace
}  // namespace edgesync::test

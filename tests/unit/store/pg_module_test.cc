// Where the program looks for its PostgreSQL module and what it says when
// there is none to load or the one found is of another build
// (store/pg_module.h): real shared objects, built as modules of other ABIs
// and versions (tests/tools/fake_pg_module.cc). Loading the real module and
// its log lines are the edgesync program's part (integration.PgModuleProgramTest).
#include "store/pg_module.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace edgesync::test {
namespace {

#ifdef EDGESYNC_HAVE_POSTGRESQL
std::string ThisProgramsDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string path(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return path.substr(0, path.rfind('/'));
}

TEST(PgModuleTest, LooksNextToTheProgramThenInTheInstalledFolder) {
  unsetenv("EDGESYNC_PG_MODULE");
  std::vector<std::string> paths = PgModuleCandidates();
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], ThisProgramsDir() + "/edgesync-postgresql.so");
  // The Debian package's folder, /usr/lib/<multiarch>/edgesync/.
  EXPECT_EQ(paths[1].rfind("/usr/lib/", 0), 0u) << paths[1];
  const std::string tail = "/edgesync/edgesync-postgresql.so";
  ASSERT_GT(paths[1].size(), tail.size());
  EXPECT_EQ(paths[1].substr(paths[1].size() - tail.size()), tail) << paths[1];
}

TEST(PgModuleTest, TheEnvironmentNamesTheOnlyFileTried) {
  setenv("EDGESYNC_PG_MODULE", "/nonexistent/pg.so", 1);
  EXPECT_EQ(PgModuleCandidates(), std::vector<std::string>{"/nonexistent/pg.so"});
  const PgModuleApi* api = nullptr;
  Status st = LoadPgModule(&api);
  EXPECT_EQ(st.code(), Status::Code::kUnsupported) << st.ToString();
  EXPECT_NE(st.message().find("/nonexistent/pg.so: cannot open shared object file"), std::string::npos)
      << st.ToString();
  EXPECT_EQ(api, nullptr);
  unsetenv("EDGESYNC_PG_MODULE");
}

TEST(PgModuleTest, AFileThatIsNoSharedObjectIsAnErrorWithTheLoadersReason) {
  TempDir dir;
  std::string path = dir.File("edgesync-postgresql.so");
  WriteAll(path, "not an ELF file\n");
  setenv("EDGESYNC_PG_MODULE", path.c_str(), 1);
  const PgModuleApi* api = nullptr;
  Status st = LoadPgModule(&api);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_NE(st.message().find("does not load: " + path + ": "), std::string::npos) << st.ToString();
  EXPECT_EQ(api, nullptr);
  unsetenv("EDGESYNC_PG_MODULE");
}
// Loads fake module `kind` (tests/tools/fake_pg_module.cc); the Status
// says why it was refused, *api stays nullptr.
Status LoadFake(int kind, std::string* path, const PgModuleApi** api) {
  *path = std::string(EDGESYNC_FAKE_PG_MODULE_DIR) + "/libes_fake_pg_module_" + std::to_string(kind) + ".so";
  setenv("EDGESYNC_PG_MODULE", path->c_str(), 1);
  Status st = LoadPgModule(api);
  unsetenv("EDGESYNC_PG_MODULE");
  return st;
}

TEST(PgModuleTest, AModuleOfAbi1IsRefusedByName) {
  std::string path;
  const PgModuleApi* api = nullptr;
  Status st = LoadFake(1, &path, &api);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_EQ(api, nullptr);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("no entry point edgesync_pg_module_v4 (this program's module ABI 4): "
                              "it is a module of ABI 1 (entry point edgesync_pg_module)"),
            std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find(std::string("install the module of this edgesync ") + EDGESYNC_VERSION),
            std::string::npos)
      << st.ToString();
}

// An ABI 1 module as built then does not even load: it takes store/ code
// from the program, which exports none now.
TEST(PgModuleTest, AnAbi1ModuleThatTakesProgramSymbolsIsRefusedByName) {
  std::string path;
  const PgModuleApi* api = nullptr;
  Status st = LoadFake(2, &path, &api);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_EQ(api, nullptr);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("undefined symbol: _ZN8edgesync19TakenFromTheProgramEv"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("a module of ABI 1, entry point edgesync_pg_module"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("this program's module ABI is 4"), std::string::npos) << st.ToString();
}

TEST(PgModuleTest, AModuleOfALaterAbiIsRefusedNamingBoth) {
  std::string path;
  const PgModuleApi* api = nullptr;
  Status st = LoadFake(3, &path, &api);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_EQ(api, nullptr);
  EXPECT_NE(st.message().find("the PostgreSQL hub store module " + path + " is unusable: no entry point "
                              "edgesync_pg_module_v4 (this program's module ABI 4): it is a module of ABI 5"),
            std::string::npos)
      << st.ToString();
}

TEST(PgModuleTest, ATableOfAnotherAbiIsRefusedNamingBoth) {
  std::string path;
  const PgModuleApi* api = nullptr;
  Status st = LoadFake(4, &path, &api);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_EQ(api, nullptr);
  EXPECT_NE(st.message().find(path + " is unusable: built for another edgesync (module ABI 7, this program's 4)"),
            std::string::npos)
      << st.ToString();
}

TEST(PgModuleTest, AModuleOfAnotherVersionIsRefusedNamingBoth) {
  std::string path;
  const PgModuleApi* api = nullptr;
  Status st = LoadFake(5, &path, &api);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_EQ(api, nullptr);
  EXPECT_NE(st.message().find(path + " is unusable: built as edgesync 0.0.1-other, this program is " +
                              std::string(EDGESYNC_VERSION)),
            std::string::npos)
      << st.ToString();
}
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test

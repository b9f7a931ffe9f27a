// Where the program looks for its PostgreSQL module and what it says when
// there is none to load (store/pg_module.h). Loading the real module is the
// edgesync program's part (integration.pg.*, HubPostgresTest): it resolves
// its store/ and platform/ symbols in that program, not in a test program.
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
#endif  // EDGESYNC_HAVE_POSTGRESQL

}  // namespace
}  // namespace edgesync::test

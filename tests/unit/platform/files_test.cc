#include "platform/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/process.h"

namespace edgesync {
namespace {

TEST(FilesTest, WriteFileAtomicReplacesWholeContent) {
  test::TempDir dir;
  std::string path = dir.File("state.json");
  ASSERT_TRUE(WriteFileAtomic(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "second, longer").ok());
  std::string got;
  ASSERT_TRUE(ReadFile(path, &got).ok());
  EXPECT_EQ(got, "second, longer");
  EXPECT_FALSE(FileExists(path + ".tmp"));
}

TEST(FilesTest, WriteIntoMissingDirIsAnIoError) {
  Status s = WriteFileAtomic("/nonexistent-dir/x", "data");
  EXPECT_EQ(s.code(), Status::Code::kIoError);
  EXPECT_NE(s.message().find("/nonexistent-dir/x.tmp"), std::string::npos);
}

TEST(FilesTest, ReadMissingFileIsNotFound) {
  std::string got;
  EXPECT_EQ(ReadFile("/nonexistent-file", &got).code(), Status::Code::kNotFound);
}

TEST(FilesTest, MakeDirsCreatesParents) {
  test::TempDir dir;
  std::string deep = dir.File("a/b/c");
  ASSERT_TRUE(MakeDirs(deep).ok());
  struct stat st;
  ASSERT_EQ(stat(deep.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_TRUE(MakeDirs(deep).ok());  // idempotent
}

TEST(FilesTest, FreeBytesAndProcessStats) {
  auto free = FreeBytes("/tmp");
  ASSERT_TRUE(free.ok());
  EXPECT_GT(*free, 0u);
  EXPECT_FALSE(FreeBytes("/nonexistent-dir").ok());
  ProcessStats stats = ReadProcessStats();
  EXPECT_GT(stats.rss_bytes, 0u);
  EXPECT_GE(stats.peak_rss_bytes, stats.rss_bytes);
}

}  // namespace
}  // namespace edgesync

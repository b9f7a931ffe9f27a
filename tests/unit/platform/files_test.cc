#include "platform/files.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

TEST(FilesTest, WriteFileAtomicReplacesWholeContent) {
  test::TempDir dir;
  std::string path = dir.File("state.json");
  ASSERT_OK(WriteFileAtomic(path, "first"));
  ASSERT_OK(WriteFileAtomic(path, "second, longer"));
  std::string got;
  ASSERT_OK(ReadFile(path, &got));
  EXPECT_EQ(got, "second, longer");
  EXPECT_FALSE(FileExists(path + ".tmp"));
}

int64_t WriteBytes() {
  std::string io;
  if (!ReadFile("/proc/self/io", &io).ok()) return -1;
  size_t at = io.find("\nwrite_bytes: ");
  return at == std::string::npos ? -1 : std::stoll(io.substr(at + 14));
}

// Readers see one whole content or the other; each rewrite goes in place,
// so a file rewritten every second does not make the filesystem write a
// new block each time (ext4 does at every rename over a file).
TEST(FilesTest, ReplaceFileSwappedReplacesWholeContentWithoutNewBlocks) {
  test::TempDir dir;
  const std::string path = dir.File("status.json");
  ASSERT_OK(ReplaceFileSwapped(path, "first, the longest of all"));
  std::string got;
  ASSERT_OK(ReadFile(path, &got));
  EXPECT_EQ(got, "first, the longest of all");
  ASSERT_OK(ReplaceFileSwapped(path, "second"));
  ASSERT_OK(ReadFile(path, &got));
  EXPECT_EQ(got, "second") << "a shorter content kept the old one's tail";
  ASSERT_OK(ReplaceFileSwapped(path, "third, longer than the second"));
  ASSERT_OK(ReadFile(path, &got));
  EXPECT_EQ(got, "third, longer than the second");
  const std::string page(3800, 'x');
  ASSERT_OK(ReplaceFileSwapped(path, page));
  ASSERT_OK(ReplaceFileSwapped(path, page));
  const int64_t before = WriteBytes();
  ASSERT_GE(before, 0);
  for (int i = 0; i < 40; ++i) ASSERT_OK(ReplaceFileSwapped(path, page));
  // Two files of one page each, written back at most once or twice by the
  // kernel meanwhile; a rename over the file each time costs 40 pages here.
  EXPECT_LE(WriteBytes() - before, 4 * 4096);
  ASSERT_OK(ReadFile(path, &got));
  EXPECT_EQ(got, page);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600);
}

int Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST(FilesTest, PrivateDirsAndFilesWhateverTheUmask) {
  test::TempDir dir;
  mode_t old = umask(0);
  ASSERT_OK(MakePrivateDir(dir.File("a/b/data/")));
  EXPECT_EQ(Mode(dir.File("a/b/data")), 0700);
  ASSERT_OK(WriteFileAtomic(dir.File("a/b/data/status.json"), "{}", false));
  EXPECT_EQ(Mode(dir.File("a/b/data/status.json")), 0600);
  int fd = OpenPrivateFile(dir.File("a/b/data/journal"), O_RDWR);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(Mode(dir.File("a/b/data/journal")), 0600);
  // An existing file readable by others is narrowed when opened.
  ASSERT_EQ(chmod(dir.File("a/b/data/journal").c_str(), 0644), 0);
  fd = OpenPrivateFile(dir.File("a/b/data/journal"), O_RDWR);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EQ(Mode(dir.File("a/b/data/journal")), 0600);
  ASSERT_EQ(chmod(dir.File("a/b/data/journal").c_str(), 0640), 0);
  ASSERT_OK(MakeFilePrivate(dir.File("a/b/data/journal")));
  EXPECT_EQ(Mode(dir.File("a/b/data/journal")), 0600);
  EXPECT_OK(MakeFilePrivate(dir.File("a/b/data/missing")));
  // An existing directory is left as it is (it may be shared on purpose).
  ASSERT_EQ(chmod(dir.File("a/b").c_str(), 0755), 0);
  ASSERT_OK(MakePrivateDir(dir.File("a/b")));
  EXPECT_EQ(Mode(dir.File("a/b")), 0755);
  umask(old);
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
  ASSERT_OK(MakeDirs(deep));
  struct stat st;
  ASSERT_EQ(stat(deep.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_OK(MakeDirs(deep));  // idempotent
}

TEST(FilesTest, FreeBytesAndProcessStats) {
  auto free = FreeBytes("/tmp");
  ASSERT_OK(free);
  EXPECT_GT(*free, 0u);
  EXPECT_FALSE(FreeBytes("/nonexistent-dir").ok());
  ProcessStats stats = ReadProcessStats();
  EXPECT_GT(stats.rss_bytes, 0u);
  EXPECT_GE(stats.peak_rss_bytes, stats.rss_bytes);
}

}  // namespace
}  // namespace edgesync

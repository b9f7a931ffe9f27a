// Who has a store file open (store/store_lock.h), on real files with real
// open file description locks: a reader is told whether a writer is open, a
// writer waits for a reader's gate and is refused after its timeout, a
// reader likewise for a writer opening or closing, two writers see each
// other, and all of it holds between processes: a lock held by another
// process refuses, and its kill -9 frees it.
#include "store/store_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "platform/files.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

// A StoreLock in a child process of its own, holding the file as a writer
// (opened, its transition ended) or a reader until it is killed.
class LockHolder {
 public:
  enum class Role { kWriter, kReader };
  LockHolder(const std::string& path, Role role) {
    int ready[2];
    if (::pipe(ready) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      StoreLock lock;
      bool writer_open = false;
      Status st = role == Role::kWriter ? lock.BeginWriterOpen(path, 5000) : lock.OpenReader(path, 5000, &writer_open);
      if (role == Role::kWriter) lock.EndTransition();
      char c = st.ok() ? 'y' : 'n';
      if (::write(ready[1], &c, 1) != 1) ::_exit(2);
      for (;;) ::pause();  // holds the lock until killed
    }
    ::close(ready[1]);
    char c = 0;
    held_ = pid_ > 0 && ::read(ready[0], &c, 1) == 1 && c == 'y';
    ::close(ready[0]);
  }
  ~LockHolder() { Kill9(); }
  bool held() const { return held_; }
  void Kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  bool held_ = false;
};

class StoreLockTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(WriteFileAtomic(path_, "not a database: the locks never read it")); }
  int64_t Size() {
    struct stat st;
    return ::stat(path_.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  }
  // A writer fully open: joined, its transition ended.
  void OpenWriter(StoreLock* w) {
    ASSERT_OK(w->BeginWriterOpen(path_, 1000));
    w->EndTransition();
  }

  TempDir dir_;
  std::string path_ = dir_.File("store.db");
};

TEST_F(StoreLockTest, AReaderIsToldWhetherAWriterIsOpen) {
  {
    StoreLock reader;
    bool writer_open = true;
    ASSERT_OK(reader.OpenReader(path_, 1000, &writer_open));
    EXPECT_FALSE(writer_open);
  }
  StoreLock writer;
  OpenWriter(&writer);
  {
    StoreLock reader;
    bool writer_open = false;
    ASSERT_OK(reader.OpenReader(path_, 1000, &writer_open));
    EXPECT_TRUE(writer_open);
  }
  // Readers share the gate with each other.
  StoreLock r1, r2;
  bool open1 = false, open2 = false;
  ASSERT_OK(r1.OpenReader(path_, 1000, &open1));
  ASSERT_OK(r2.OpenReader(path_, 1000, &open2));
  EXPECT_TRUE(open1);
  EXPECT_TRUE(open2);
  // Locks past the end of the file never change it.
  EXPECT_EQ(Size(), static_cast<int64_t>(std::string("not a database: the locks never read it").size()));
}

TEST_F(StoreLockTest, AWriterWaitsForAReadersGateAndIsRefusedAfterItsTimeout) {
  auto reader = std::make_unique<StoreLock>();
  bool writer_open = true;
  ASSERT_OK(reader->OpenReader(path_, 1000, &writer_open));
  StoreLock writer;
  Status st = writer.BeginWriterOpen(path_, 100);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("is being read by another process"), std::string::npos) << st.message();
  // It waits: the reader leaves while the writer is still trying.
  std::atomic<bool> done{false};
  Status waited;
  std::thread t([&] {
    StoreLock w;
    waited = w.BeginWriterOpen(path_, 30000);
    done = true;
  });
  test::SleepMs(100);
  EXPECT_FALSE(done.load()) << "the writer went past a reader's gate";
  reader.reset();
  t.join();
  EXPECT_OK(waited);
}

TEST_F(StoreLockTest, AReaderWaitsForAWriterOpeningOrClosing) {
  StoreLock writer;
  ASSERT_OK(writer.BeginWriterOpen(path_, 1000));  // opening: holds the gate
  {
    StoreLock reader;
    bool writer_open = false;
    Status st = reader.OpenReader(path_, 100, &writer_open);
    EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
    EXPECT_NE(st.message().find("being opened or closed by a writer"), std::string::npos) << st.message();
  }
  std::atomic<bool> done{false};
  Status waited;
  bool seen_open = false;
  std::thread t([&] {
    StoreLock reader;
    waited = reader.OpenReader(path_, 30000, &seen_open);
    done = true;
  });
  test::SleepMs(100);
  EXPECT_FALSE(done.load()) << "a reader went past a writer's transition";
  writer.EndTransition();
  t.join();
  ASSERT_OK(waited);
  EXPECT_TRUE(seen_open) << "a reader let in after the open sees the writer";

  // Closing: the gate again, and a reader is kept out until the close ends.
  writer.BeginWriterClose(1000);
  StoreLock late;
  bool open = false;
  EXPECT_EQ(late.OpenReader(path_, 100, &open).code(), Status::Code::kUnavailable);
}

TEST_F(StoreLockTest, TwoWritersOfOneFileSeeEachOther) {
  StoreLock first;
  ASSERT_OK(first.BeginWriterOpen(path_, 1000));
  bool other = true;
  ASSERT_OK(first.OtherWriterOpen(&other));
  EXPECT_FALSE(other) << "its own lock is no other writer";
  first.EndTransition();
  StoreLock second;  // another descriptor: another holder, in one process too
  ASSERT_OK(second.BeginWriterOpen(path_, 1000));
  ASSERT_OK(second.OtherWriterOpen(&other));
  EXPECT_TRUE(other);
  second.EndTransition();
}

TEST_F(StoreLockTest, AMissingFileIsAnErrorNotACrash) {
  StoreLock writer;
  Status st = writer.BeginWriterOpen(dir_.File("missing.db"), 100);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
  EXPECT_NE(st.message().find("missing.db"), std::string::npos);
  writer.BeginWriterClose(10);  // never opened: nothing to do
  writer.EndTransition();
  StoreLock reader;
  bool open = false;
  st = reader.OpenReader(dir_.File("missing.db"), 100, &open);
  EXPECT_EQ(st.code(), Status::Code::kIoError) << st.ToString();
}

TEST_F(StoreLockTest, AnotherProcesssReaderKeepsAWriterOutUntilItIsKilled) {
  LockHolder other(path_, LockHolder::Role::kReader);
  ASSERT_TRUE(other.held());
  StoreLock writer;
  Status st = writer.BeginWriterOpen(path_, 200);
  EXPECT_EQ(st.code(), Status::Code::kUnavailable) << st.ToString();
  other.Kill9();  // the kernel drops a dead process's locks
  StoreLock again;
  EXPECT_OK(again.BeginWriterOpen(path_, 5000));
}

TEST_F(StoreLockTest, AnotherProcesssWriterIsSeenAndItsKillEndsIt) {
  LockHolder other(path_, LockHolder::Role::kWriter);
  ASSERT_TRUE(other.held());
  {
    StoreLock reader;
    bool writer_open = false;
    ASSERT_OK(reader.OpenReader(path_, 1000, &writer_open));
    EXPECT_TRUE(writer_open);
  }
  {
    StoreLock second;
    ASSERT_OK(second.BeginWriterOpen(path_, 1000));
    bool another = false;
    ASSERT_OK(second.OtherWriterOpen(&another));
    EXPECT_TRUE(another);
  }
  other.Kill9();
  StoreLock reader;
  bool writer_open = true;
  ASSERT_OK(reader.OpenReader(path_, 1000, &writer_open));
  EXPECT_FALSE(writer_open) << "a killed writer still counted as open";
}

}  // namespace
}  // namespace edgesync::test

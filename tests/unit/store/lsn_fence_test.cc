// LsnFence through its own API on a real SQLite file: what it records in
// meta, and the floor it sets on a reopen in another boot.
#include "store/lsn_fence.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class LsnFenceTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    db_.Close();
    ASSERT_OK(db_.Open(dir_.File("fence.db"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
    ASSERT_OK(db_.Exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value)"));
  }
  int64_t Meta(const std::string& key) {
    int64_t v = -1;
    EXPECT_OK(db_.QueryInt("SELECT value FROM meta WHERE key='" + key + "'", &v));
    return v;
  }
  TempDir dir_;
  Db db_;
};

TEST_F(LsnFenceTest, ReserveRecordsAFencePastTheLastLsnOncePerBlock) {
  LsnFence fence(true, "s");
  ASSERT_OK(fence.Reserve(&db_, "boot-a", 10));
  const uint64_t reserved = fence.reserved();
  EXPECT_GT(reserved, 10u);
  EXPECT_EQ(Meta("lsn_fence"), static_cast<int64_t>(reserved));
  std::string boot;
  ASSERT_OK(db_.QueryText("SELECT value FROM meta WHERE key='lsn_fence_boot'", &boot));
  EXPECT_EQ(boot, "boot-a");
  // Inside the reserved block nothing is written again.
  ASSERT_OK(db_.Exec("DELETE FROM meta"));
  ASSERT_OK(fence.Reserve(&db_, "boot-a", reserved));
  EXPECT_EQ(Meta("lsn_fence"), 0);
  ASSERT_OK(fence.Reserve(&db_, "boot-a", reserved + 1));
  EXPECT_GT(fence.reserved(), reserved + 1);
}

TEST_F(LsnFenceTest, ReopenInAnotherBootNumbersOnAfterTheFence) {
  uint64_t reserved = 0;
  {
    LsnFence fence(true, "s");
    ASSERT_OK(fence.Reserve(&db_, "boot-a", 100));
    reserved = fence.reserved();
  }  // no Release: as after a power cut
  Reopen();
  LsnFence fence(true, "s");
  uint64_t floor = 0;
  ASSERT_OK(fence.Load(&db_, "boot-b", 42, &floor));
  EXPECT_EQ(floor, reserved);
  EXPECT_EQ(fence.reserved(), reserved);
}

TEST_F(LsnFenceTest, ReopenInTheSameBootLeavesNoGap) {
  {
    LsnFence fence(true, "s");
    ASSERT_OK(fence.Reserve(&db_, "boot-a", 100));
  }
  Reopen();
  LsnFence fence(true, "s");
  uint64_t floor = 0;
  ASSERT_OK(fence.Load(&db_, "boot-a", 42, &floor));
  EXPECT_EQ(floor, 0u);
}

TEST_F(LsnFenceTest, ReleaseLowersTheFenceSoARebootLeavesNoGap) {
  {
    LsnFence fence(true, "s");
    ASSERT_OK(fence.Reserve(&db_, "boot-a", 100));
    fence.Release(&db_, 120);
    EXPECT_EQ(fence.reserved(), 120u);
    EXPECT_EQ(Meta("lsn_fence"), 120);
  }
  Reopen();
  LsnFence fence(true, "s");
  uint64_t floor = 0;
  ASSERT_OK(fence.Load(&db_, "boot-b", 121, &floor));
  EXPECT_EQ(floor, 0u);
}

TEST_F(LsnFenceTest, DisabledFenceRecordsNothing) {
  LsnFence fence(false, "s");
  ASSERT_OK(fence.Reserve(&db_, "boot-a", 100));
  EXPECT_EQ(fence.reserved(), 0u);
  EXPECT_EQ(Meta("lsn_fence"), 0);
}

}  // namespace
}  // namespace edgesync::test

// PresenceMark: the monotonic time of a boot, kept in a file, read back only
// in the same boot.
#include "agent/ingest/presence_mark.h"

#include <gtest/gtest.h>

#include "platform/files.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

TEST(PresenceMark, ReadsBackTheLastMarkOfThisBoot) {
  test::TempDir dir;
  ManualClock clock(0, 1);
  {
    PresenceMark mark(dir.path(), &clock);
    int64_t at = -1;
    EXPECT_EQ(mark.Read(&at), PresenceMark::Found::kNone) << "no file yet";
    ASSERT_OK(mark.Write(123456789012));
    ASSERT_OK(mark.Write(42));  // rewritten in place: no longer tail left over
  }
  PresenceMark again(dir.path(), &clock);
  int64_t at = -1;
  ASSERT_EQ(again.Read(&at), PresenceMark::Found::kThisBoot);
  EXPECT_EQ(at, 42);
}

TEST(PresenceMark, AMarkOfAnotherBootIsNotATime) {
  test::TempDir dir;
  ManualClock clock(0, 1);
  PresenceMark mark(dir.path(), &clock);
  ASSERT_OK(mark.Write(5000));
  clock.Reboot("manual-boot-2");
  int64_t at = -1;
  EXPECT_EQ(mark.Read(&at), PresenceMark::Found::kOtherBoot);
  EXPECT_EQ(at, -1);
}

TEST(PresenceMark, ADamagedOrForeignFileIsNoMark) {
  test::TempDir dir;
  ManualClock clock(0, 1);
  PresenceMark mark(dir.path(), &clock);
  int64_t at = -1;
  for (const char* text : {"", "garbage", "edgesync-presence 2 manual-boot-1 5", "edgesync-presence 1 manual-boot-1",
                           "edgesync-presence 1 manual-boot-1 -5", "other 1 manual-boot-1 5"}) {
    ASSERT_OK(WriteFileAtomic(dir.File(PresenceMark::kFileName), text, false));
    EXPECT_EQ(mark.Read(&at), PresenceMark::Found::kNone) << text;
  }
  EXPECT_EQ(at, -1);
}

TEST(PresenceMark, NoDirectoryNoFile) {
  ManualClock clock(0, 1);
  PresenceMark mark("", &clock);
  EXPECT_OK(mark.Write(7));
  int64_t at = -1;
  EXPECT_EQ(mark.Read(&at), PresenceMark::Found::kNone);
}

}  // namespace
}  // namespace edgesync

#include "platform/log.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace edgesync {
namespace {

TEST(LogTest, ParsesEveryLevelName) {
  for (LogLevel l : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError,
                     LogLevel::kOff}) {
    LogLevel parsed;
    ASSERT_TRUE(ParseLogLevel(LogLevelName(l), &parsed));
    EXPECT_EQ(parsed, l);
  }
  LogLevel parsed;
  EXPECT_FALSE(ParseLogLevel("verbose", &parsed));
}

TEST(LogTest, LevelFilters) {
  InitLogging(LogLevel::kWarn);
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  SetLogLevel(LogLevel::kOff);
  EXPECT_FALSE(LogEnabled(LogLevel::kError));
  SetLogLevel(LogLevel::kInfo);
}

TEST(LogTest, JournalFormatOnlyWhenJournalStreamNamesOurStderr) {
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(StderrIsJournal());
  struct stat st;
  ASSERT_EQ(fstat(2, &st), 0);
  std::string ours = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", ours.c_str(), 1);
  EXPECT_TRUE(StderrIsJournal());
  setenv("JOURNAL_STREAM", "1:2", 1);  // inherited from a parent, not ours
  EXPECT_FALSE(StderrIsJournal());
  unsetenv("JOURNAL_STREAM");
}

}  // namespace
}  // namespace edgesync

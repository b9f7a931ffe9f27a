#include "platform/log.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>

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

// What a PostgreSQL client error looks like: several lines, the last one
// ended by the library.
constexpr char kMultiLine[] =
    "pg: server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\r\n"
    "before or while processing the request.\n";

TEST(LogTest, EveryRecordIsOneLineWithItsBreaksEscaped) {
  unsetenv("JOURNAL_STREAM");
  InitLogging(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  LogLine(LogLevel::kWarn, kMultiLine);
  LogLine(LogLevel::kInfo, std::string("a\\n is not a break; a bell \a and a NUL ") + '\0' + " are escaped");
  std::string out = testing::internal::GetCapturedStderr();
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  std::string first = out.substr(0, out.find('\n'));
  EXPECT_NE(first.find("pg: server closed the connection unexpectedly\\n\\tThis probably means the server "
                       "terminated abnormally\\r\\nbefore or while processing the request."),
            std::string::npos)
      << first;
  EXPECT_EQ(first.back(), '.') << "the library's own final newline is dropped, not escaped";
  std::string second = out.substr(out.find('\n') + 1);
  EXPECT_NE(second.find("a\\\\n is not a break; a bell \\x07 and a NUL \\x00 are escaped"), std::string::npos)
      << second;
}

TEST(LogTest, TheRecentErrorLinesAreOneLineToo) {
  InitLogging(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  LogLine(LogLevel::kError, kMultiLine);
  testing::internal::GetCapturedStderr();
  std::vector<RecentLogLine> recent = RecentErrors();
  ASSERT_FALSE(recent.empty());
  EXPECT_EQ(recent.back().text.find('\n'), std::string::npos) << recent.back().text;
  EXPECT_EQ(recent.back().text.rfind("pg: server closed the connection unexpectedly\\n", 0), 0u)
      << recent.back().text;
}

}  // namespace
}  // namespace edgesync

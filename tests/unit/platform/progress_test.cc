#include "platform/progress.h"

#include <gtest/gtest.h>

#include "platform/log.h"

namespace edgesync {
namespace {

TEST(ProgressLog, LineSaysDoneRemainingRateAndTimeToFinish) {
  EXPECT_EQ(ProgressLog::Line("uplink drain", "readings", 120000, 380000, 40000),
            "uplink drain: 120000 readings done, 380000 remaining, 40000 readings/s, done in 10 s");
  EXPECT_EQ(ProgressLog::Line("feed", "entries", 0, 900000, 100), "feed: 0 entries done, 900000 remaining, "
                                                                    "100 entries/s, done in 2.5 h");
  EXPECT_NE(ProgressLog::Line("feed", "entries", 0, 5, 0).find("unknown"), std::string::npos);
}

TEST(ProgressLog, LogsLongCatchUpsEveryIntervalThenCloses) {
  InitLogging(LogLevel::kInfo);
  ProgressLog p("drain", "readings", 5000, 1000);
  p.Update(0, 500, 0);  // below the threshold: nothing starts
  EXPECT_FALSE(p.active());
  p.Update(0, 50000, 0);
  EXPECT_TRUE(p.active());
  testing::internal::CaptureStderr();
  p.Update(10000, 40000, 1000);  // too soon
  p.Update(25000, 25000, 5000);
  p.Update(50000, 0, 7000);
  std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("drain: 25000 readings done, 25000 remaining, 5000 readings/s, done in 5 s"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("10000 readings done"), std::string::npos) << out;
  EXPECT_NE(out.find("drain: caught up, 50000 readings in 7.0 s"), std::string::npos) << out;
  EXPECT_FALSE(p.active());
}

TEST(RecentErrors, KeepsTheLastWarningsAndErrorsOnly) {
  InitLogging(LogLevel::kInfo);
  testing::internal::CaptureStderr();
  ES_LOG(kInfo, "not kept");
  for (size_t i = 0; i < kRecentErrorLines + 5; ++i) ES_LOG(kWarn, "warning {}", i);
  ES_LOG(kError, "the last error");
  testing::internal::GetCapturedStderr();
  std::vector<RecentLogLine> lines = RecentErrors();
  ASSERT_EQ(lines.size(), kRecentErrorLines);
  EXPECT_EQ(lines.back().text, "the last error");
  EXPECT_EQ(lines.back().level, LogLevel::kError);
  EXPECT_EQ(lines.front().text, "warning 6");
  EXPECT_GT(lines.front().wall_ms, 0);
}

}  // namespace
}  // namespace edgesync

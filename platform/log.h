// platform/log.h: leveled logging for every part of edgesync.
//
// Backed by spdlog (Debian libspdlog-dev): it gives thread-safe sinks, level
// filtering and formatting, so edgesync does not carry its own. Lines go to
// stderr; when stderr is connected to the journal (systemd sets
// JOURNAL_STREAM), each line starts with the syslog priority prefix "<N>"
// that journald turns into the entry's priority, and carries no timestamp
// (journald adds its own).
//
// Call sites use fmt syntax: ES_LOG(kInfo, "joined region {}", name).
// Never log credentials: config values marked secret are not printable.
//
// Thread safety: all functions may be called from any thread.
#ifndef EDGESYNC_PLATFORM_LOG_H_
#define EDGESYNC_PLATFORM_LOG_H_

#include <fmt/core.h>

#include <cstdint>

#include <string>
#include <string_view>
#include <vector>

namespace edgesync {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

// Parses "trace", "debug", "info", "warn", "error", "off". False if unknown.
bool ParseLogLevel(std::string_view text, LogLevel* level);
const char* LogLevelName(LogLevel level);

// Sets up the process logger once; later calls change the level only.
// journald output is chosen from the environment (JOURNAL_STREAM).
void InitLogging(LogLevel level, std::string_view name = "edgesync");
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, std::string_view line);

// True when the journal prefix format would be chosen for this environment.
bool StderrIsJournal();

// The most recent warning and error lines (at most kRecentErrorLines, oldest
// first), kept in memory for `edgesync status` and the status page, so a
// field engineer sees what went wrong without reading the journal.
struct RecentLogLine {
  int64_t wall_ms = 0;
  LogLevel level = LogLevel::kWarn;
  std::string text;
};
constexpr size_t kRecentErrorLines = 20;
std::vector<RecentLogLine> RecentErrors();

}  // namespace edgesync

#define ES_LOG(level, ...)                                                  \
  do {                                                                      \
    if (::edgesync::LogEnabled(::edgesync::LogLevel::level))                \
      ::edgesync::LogLine(::edgesync::LogLevel::level, fmt::format(__VA_ARGS__)); \
  } while (0)

#endif  // EDGESYNC_PLATFORM_LOG_H_

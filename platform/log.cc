#include "platform/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>  // std::call_once

#include "platform/mutex.h"

namespace edgesync {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::once_flag g_init_once;
std::shared_ptr<spdlog::logger> g_logger;

spdlog::level::level_enum ToSpd(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

// syslog priorities as journald reads them from a "<N>" line prefix
// (sd-daemon(3)): err=3, warning=4, info=6, debug=7.
int SyslogPriority(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return 3;
    case LogLevel::kWarn: return 4;
    case LogLevel::kInfo: return 6;
    default: return 7;
  }
}

std::shared_ptr<spdlog::logger> Logger() {
  std::call_once(g_init_once, [] {
    g_logger = std::make_shared<spdlog::logger>(
        "edgesync", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    g_logger->set_level(spdlog::level::trace);  // filtered by g_level first
    // journald stamps entries itself; a terminal wants time and level.
    g_logger->set_pattern(StderrIsJournal() ? "%v" : "%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v");
  });
  return g_logger;
}

}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  for (LogLevel l : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError,
                     LogLevel::kOff}) {
    if (text == LogLevelName(l)) {
      *level = l;
      return true;
    }
  }
  return false;
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "trace";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "info";
}

bool StderrIsJournal() {
  // JOURNAL_STREAM is "device:inode" of the journal's stream; it only counts
  // when it still names our stderr (a child may have inherited the variable).
  const char* js = std::getenv("JOURNAL_STREAM");
  if (js == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (fstat(2, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

void InitLogging(LogLevel level, std::string_view) {
  Logger();
  SetLogLevel(level);
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) {
  return level != LogLevel::kOff && static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

namespace {

// Never destroyed: library threads (Paho's) may still log while the process
// exits, after static destructors have run.
struct RecentRing {
  Mutex mu;
  std::deque<RecentLogLine> lines GUARDED_BY(mu);
};
RecentRing& Recent() {
  static RecentRing* ring = new RecentRing;
  return *ring;
}

void KeepRecent(LogLevel level, std::string_view line) {
  if (level < LogLevel::kWarn) return;
  // Wall time: these lines are read by people, next to the journal's stamps.
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  RecentRing& r = Recent();
  MutexLock lock(&r.mu);
  r.lines.push_back({now, level, std::string(line.substr(0, 500))});
  while (r.lines.size() > kRecentErrorLines) r.lines.pop_front();
}

// One record, one line, whatever the text holds (a PostgreSQL client error
// spans lines): journald and log shippers split records at newlines. Line
// breaks and other control characters are written as escapes; a backslash is
// doubled so that an escape in the text itself stays distinguishable.
std::string OneLine(std::string_view line) {
  // Client libraries end their messages with a newline of their own.
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (std::none_of(line.begin(), line.end(),
                   [](char c) { return c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return std::string(line);
  }
  std::string out;
  out.reserve(line.size() + 16);
  for (char c : line) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\\': out += "\\\\"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

std::vector<RecentLogLine> RecentErrors() {
  RecentRing& r = Recent();
  MutexLock lock(&r.mu);
  return {r.lines.begin(), r.lines.end()};
}

// Every record is one line (OneLine): line breaks and other control
// characters in the text are written as \n, \r, \t or \xNN, a backslash as \\.
void LogLine(LogLevel level, std::string_view text) {
  const std::string line = OneLine(text);
  KeepRecent(level, line);
  auto logger = Logger();
  static const bool journal = StderrIsJournal();
  if (journal) {
    logger->log(ToSpd(level), "<{}>{}", SyslogPriority(level), line);
  } else {
    logger->log(ToSpd(level), "{}", line);
  }
}

}  // namespace edgesync

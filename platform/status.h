// platform/status.h: errors as values at module edges.
//
// Every public function of platform/, store/, sync/ and the agent's modules
// that can fail returns a Status (or a Result<T>, a Status plus a value).
// Library exceptions (SQLite wrappers, Paho, toml11, nlohmann::json) are
// caught inside the module that calls the library and turned into a Status
// here, so callers never need a try block.
//
// Thread safety: values; safe to copy between threads.
#ifndef EDGESYNC_PLATFORM_STATUS_H_
#define EDGESYNC_PLATFORM_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace edgesync {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,  // the caller's input is wrong (bad reading, bad config)
    kNotFound,
    kCorruption,       // a file or message is damaged or not ours
    kIoError,          // the OS said no (open, write, fsync)
    kNoSpace,          // disk full, or the configured size limit reached
    kConflict,         // compare-and-set lost (lease version, ownership)
    kUnavailable,      // a peer (broker, region) cannot be reached now
    kTimeout,
    kRejected,         // refused by policy (rate limit, disk policy)
    kUnsupported,      // e.g. a store written by a newer version
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Code::kCorruption, std::move(m)); }
  static Status IoError(std::string m) { return Status(Code::kIoError, std::move(m)); }
  static Status NoSpace(std::string m) { return Status(Code::kNoSpace, std::move(m)); }
  static Status Conflict(std::string m) { return Status(Code::kConflict, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
  static Status Timeout(std::string m) { return Status(Code::kTimeout, std::move(m)); }
  static Status Rejected(std::string m) { return Status(Code::kRejected, std::move(m)); }
  static Status Unsupported(std::string m) { return Status(Code::kUnsupported, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NoSpace: database or disk is full (store.db)"; "OK" when ok().
  std::string ToString() const;
  static const char* CodeName(Code code);

  // Prefixes the message with context, keeping the code: "opening store: ...".
  Status Annotate(const std::string& context) const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status saying why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}             // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}     // NOLINT: implicit by design
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace edgesync

#define ES_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::edgesync::Status es_status_ = (expr); \
    if (!es_status_.ok()) return es_status_; \
  } while (0)

#endif  // EDGESYNC_PLATFORM_STATUS_H_

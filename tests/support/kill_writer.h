// tests/support/kill_writer.h: one round of a SIGKILL test: a forked child
// runs a writer that never returns and reports each commit through a pipe;
// the test lets it run a while, kills it with a real SIGKILL, reaps it and
// gets back everything it reported before it died, then checks the files
// the writer left.
//
// The writer reports fixed-size records (a last committed LSN, or a few of
// them); writes of up to PIPE_BUF bytes to a pipe are atomic, so a record is
// either read whole or was never reported.
//
// Thread safety: call from the test's thread; the child runs only the
// writer (fork copies just the calling thread).
#ifndef EDGESYNC_TESTS_SUPPORT_KILL_WRITER_H_
#define EDGESYNC_TESTS_SUPPORT_KILL_WRITER_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace edgesync::test {

struct KillRound {
  // Wait for the writer's first report before the run starts (the store
  // exists and is open: under load its creation can outlast run_ms).
  bool wait_for_first = false;
  int64_t run_ms = 0;  // how long the writer runs before SIGKILL
};

// Forks; the child calls writer(fd) (which writes records to fd and must
// never return; it _exits on error with a code of its own). Fails if the
// child could not start, never reported when asked to, or exited before
// the kill (its exit code in the message). *reports gets the bytes of every
// record reported, whole records only, record_size bytes each.
::testing::AssertionResult RunAndKill(const std::function<void(int fd)>& writer, const KillRound& round,
                                      size_t record_size, std::string* reports);

// RunAndKill for records of type Record (trivially copyable).
template <typename Record>
::testing::AssertionResult RunAndKill(const std::function<void(int fd)>& writer, const KillRound& round,
                                      std::vector<Record>* reports) {
  std::string bytes;
  ::testing::AssertionResult ok = RunAndKill(writer, round, sizeof(Record), &bytes);
  reports->resize(bytes.size() / sizeof(Record));
  if (!bytes.empty()) std::memcpy(reports->data(), bytes.data(), reports->size() * sizeof(Record));
  return ok;
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_KILL_WRITER_H_

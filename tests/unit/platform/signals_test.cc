#include "platform/signals.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

namespace edgesync {
namespace {

class SignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Signals::Install();
    Signals::ResetForTest();
  }
  void TearDown() override {
    Signals::ResetForTest();
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
  }
};

TEST_F(SignalsTest, HupSetsReloadOnceAndDoesNotStop) {
  raise(SIGHUP);
  EXPECT_FALSE(Signals::StopRequested());
  EXPECT_TRUE(Signals::TakeReload());
  EXPECT_FALSE(Signals::TakeReload());
}

TEST_F(SignalsTest, TermAndIntRequestStop) {
  raise(SIGTERM);
  EXPECT_TRUE(Signals::StopRequested());
  Signals::ResetForTest();
  raise(SIGINT);
  EXPECT_TRUE(Signals::StopRequested());
}

TEST_F(SignalsTest, WaitWakesOnSignalFromAnotherThread) {
  std::thread t([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(getpid(), SIGTERM);
  });
  EXPECT_TRUE(Signals::WaitForSignal(20000));  // would time out without the wake-up
  t.join();
  EXPECT_TRUE(Signals::StopRequested());
}

TEST_F(SignalsTest, WaitTimesOutWithoutSignal) { EXPECT_FALSE(Signals::WaitForSignal(20)); }

TEST_F(SignalsTest, SigpipeIsIgnored) {
  struct sigaction sa;
  sigaction(SIGPIPE, nullptr, &sa);
  EXPECT_EQ(sa.sa_handler, SIG_IGN);
}

}  // namespace
}  // namespace edgesync

// The worker-liveness registry on a manual clock, and its watchdog gate
// talking to a real datagram socket standing in for systemd's notify socket.
#include "platform/liveness.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "platform/signals.h"
#include "tests/support/notify_socket.h"
#include "tests/support/process.h"

namespace edgesync {
namespace {

TEST(LivenessTest, AWorkerIsIdleUntilItsFirstBeat) {
  ManualClock clock;
  LivenessRegistry registry(&clock);
  Heartbeat beat("uplink", &registry);
  clock.Advance(60000);
  EXPECT_TRUE(registry.StalledWorkers(1000).empty());
  EXPECT_EQ(registry.Workers(), std::vector<std::string>{"uplink"});
}

TEST(LivenessTest, ABusyWorkerSilentPastTheDeadlineIsStalled) {
  ManualClock clock;
  LivenessRegistry registry(&clock);
  Heartbeat uplink("uplink", &registry);
  Heartbeat committer("committer", &registry);
  uplink.Beat();
  committer.Beat();
  clock.Advance(1000);
  EXPECT_TRUE(registry.StalledWorkers(1000).empty()) << "exactly at the deadline is still alive";
  committer.Beat();
  clock.Advance(1);
  std::vector<LivenessRegistry::Stalled> stalled = registry.StalledWorkers(1000);
  ASSERT_EQ(stalled.size(), 1u);
  EXPECT_EQ(stalled[0].worker, "uplink");
  EXPECT_EQ(stalled[0].silent_ms, 1001);
  uplink.Beat();
  EXPECT_TRUE(registry.StalledWorkers(1000).empty()) << "a beat ends the stall";
}

TEST(LivenessTest, IdleByDesignIsNeverAStall) {
  ManualClock clock;
  LivenessRegistry registry(&clock);
  Heartbeat committer("committer", &registry);
  committer.Beat();
  {
    IdleScope idle(&committer);
    clock.Advance(3600 * 1000);
    EXPECT_TRUE(registry.StalledWorkers(1000).empty());
  }
  // Leaving the wait is a beat: the deadline counts from there.
  clock.Advance(1000);
  EXPECT_TRUE(registry.StalledWorkers(1000).empty());
  clock.Advance(1);
  EXPECT_EQ(registry.StalledWorkers(1000).size(), 1u);
}

TEST(LivenessTest, BusyScopeIsBusyOnlyInside) {
  ManualClock clock;
  LivenessRegistry registry(&clock);
  Heartbeat ingest("ingest", &registry);
  {
    BusyScope busy(&ingest);
    clock.Advance(5000);
    EXPECT_EQ(registry.StalledWorkers(1000).size(), 1u) << "stuck inside one message";
  }
  clock.Advance(60000);
  EXPECT_TRUE(registry.StalledWorkers(1000).empty());
}

TEST(LivenessTest, AWorkerThatEndsLeavesTheRegistry) {
  ManualClock clock;
  LivenessRegistry registry(&clock);
  {
    Heartbeat gone("feed-puller", &registry);
    gone.Beat();
  }
  clock.Advance(60000);
  EXPECT_TRUE(registry.StalledWorkers(1000).empty());
  EXPECT_TRUE(registry.Workers().empty());
}

TEST(LivenessTest, TheStallHookBlocksBeatUntilAStopIsRequested) {
  Signals::ResetForTest();
  setenv("EDGESYNC_TEST_STALL", "hub-applier:0", 1);
  LivenessRegistry registry(SystemClock());
  Heartbeat hub("hub-applier", &registry);
  Heartbeat other("uplink", &registry);
  unsetenv("EDGESYNC_TEST_STALL");
  other.Beat();  // not aimed at: returns at once
  std::atomic<bool> returned{false};
  std::thread t([&] {
    hub.Beat();
    returned = true;
  });
  test::SleepMs(300);
  EXPECT_FALSE(returned.load());
  Signals::RequestStop();
  t.join();
  EXPECT_TRUE(returned.load());
  Signals::ResetForTest();
}

TEST(LivenessTest, WatchdogGatePetsOnlyWhileNoWorkerIsStalled) {
  test::TempDir dir;
  test::NotifySocket sock(dir.File("notify.sock"));
  ASSERT_TRUE(sock.bound());
  setenv("NOTIFY_SOCKET", dir.File("notify.sock").c_str(), 1);
  setenv("WATCHDOG_USEC", "2000000", 1);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  SystemdNotifier systemd;  // sd_notify reads NOTIFY_SOCKET at every send
  ManualClock clock;
  LivenessRegistry registry(&clock);
  WatchdogGate gate(&systemd, &registry);
  EXPECT_EQ(gate.deadline_ms(), 2000) << "the deadline is the watchdog period";

  Heartbeat uplink("uplink", &registry);
  uplink.Beat();
  EXPECT_TRUE(gate.Tick());
  EXPECT_EQ(sock.Drain(), std::vector<std::string>{"WATCHDOG=1"});

  clock.Advance(2001);
  EXPECT_FALSE(gate.Tick());
  EXPECT_EQ(sock.Drain(), std::vector<std::string>{"STATUS=stalled: uplink (silent 2 s)"});
  EXPECT_FALSE(gate.Tick());
  EXPECT_TRUE(sock.Drain().empty()) << "no petting, and the stall is reported once";

  uplink.Beat();
  EXPECT_TRUE(gate.Tick());
  EXPECT_EQ(sock.Drain(), (std::vector<std::string>{"STATUS=running", "WATCHDOG=1"}));
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
}

}  // namespace
}  // namespace edgesync

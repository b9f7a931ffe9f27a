// The watchdog as systemd sees it: the real edgesync gateway, a real
// Mosquitto, and a real datagram socket as NOTIFY_SOCKET with WATCHDOG_USEC
// set. A worker wedged through the EDGESYNC_TEST_STALL hook
// (platform/liveness.h) must stop the WATCHDOG=1 pets, which is what makes
// systemd restart the service; a worker idle for want of work must not.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "tests/support/broker.h"
#include "tests/support/notify_socket.h"
#include "tests/support/process.h"

namespace edgesync {
namespace {

using test::Broker;
using test::NotifySocket;
using test::Process;
using test::TempDir;

// The watchdog period given to the gateway, and so the workers' deadline.
constexpr int64_t kWatchdogMs = 4000;

struct WatchdogEnv {
  TempDir dir;
  Broker broker{dir.File("broker")};
  NotifySocket notify{dir.File("notify.sock")};
  Process gateway;
  std::vector<std::string> seen;  // every datagram received, in order

  // A gateway with one region (on the same broker, where no hub answers), so
  // that ingest, the committer, the uplink and the feed puller all run; or,
  // with role "region", a region hub on that broker.
  bool Start(const std::string& stall, const std::string& role = "gateway") {
    if (!broker.Start() || !notify.bound()) return false;
    std::string config = dir.File("edgesync.toml");
    if (role == "gateway") {
      test::WriteAll(config, "[gateway]\nid = \"gw1\"\ndata_dir = \"" + dir.File("data") +
                                 "\"\n[ingest]\nbroker_uri = \"" + broker.uri() +
                                 "\"\nepoch_floor = \"2020-01-01T00:00:00Z\"\n[[region]]\nname = \"r1\"\n" +
                                 "uri = \"" + broker.uri() + "\"\n");
    } else {
      test::WriteAll(config, "[gateway]\ndata_dir = \"" + dir.File("data") + "\"\n[hub]\nregion = \"r1\"\n" +
                                 "broker_uri = \"" + broker.uri() + "\"\n");
    }
    std::vector<std::string> env = {"NOTIFY_SOCKET=" + notify.path(),
                                    "WATCHDOG_USEC=" + std::to_string(kWatchdogMs * 1000)};
    if (!stall.empty()) env.push_back("EDGESYNC_TEST_STALL=" + stall);
    return gateway.Start({EDGESYNC_BINARY, role, "--config", config}, dir.File("gateway.log"), env);
  }
  // Reads datagrams until one starts with prefix; false after timeout_ms.
  bool WaitFor(const std::string& prefix, int64_t timeout_ms) {
    int64_t deadline = test::NowMs() + timeout_ms;
    while (test::NowMs() < deadline) {
      std::string m = notify.Next(200);
      if (m.empty()) continue;
      seen.push_back(m);
      if (m.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }
  // Datagrams received over the next ms.
  std::vector<std::string> Collect(int64_t ms) {
    std::vector<std::string> got;
    int64_t deadline = test::NowMs() + ms;
    while (test::NowMs() < deadline) {
      std::string m = notify.Next(100);
      if (!m.empty()) got.push_back(m);
    }
    seen.insert(seen.end(), got.begin(), got.end());
    return got;
  }
  std::string Log() { return test::ReadAll(dir.File("gateway.log")); }
  std::string Seen() {
    std::string s;
    for (const auto& m : seen) s += m + "\n";
    return s;
  }
};

int Count(const std::vector<std::string>& v, const std::string& what) {
  int n = 0;
  for (const auto& m : v) n += m == what;
  return n;
}

bool AnyStartsWith(const std::vector<std::string>& v, const std::string& prefix) {
  for (const auto& m : v) {
    if (m.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

TEST(WatchdogTest, AHealthyGatewayKeepsPettingTheWatchdog) {
  WatchdogEnv env;
  ASSERT_TRUE(env.Start(""));
  ASSERT_TRUE(env.WaitFor("READY=1", 60000)) << env.Log();
  // Three watchdog periods: every worker is alive or idle throughout.
  std::vector<std::string> got = env.Collect(3 * kWatchdogMs);
  EXPECT_GE(Count(got, "WATCHDOG=1"), 3) << env.Seen() << env.Log();
  EXPECT_FALSE(AnyStartsWith(got, "STATUS=stalled")) << env.Seen();
  EXPECT_EQ(env.gateway.Stop(10000), 0) << env.Log();
}

TEST(WatchdogTest, AStalledUplinkStopsThePetting) {
  WatchdogEnv env;
  ASSERT_TRUE(env.Start("uplink:2000"));
  ASSERT_TRUE(env.WaitFor("READY=1", 60000)) << env.Log();
  ASSERT_TRUE(env.WaitFor("WATCHDOG=1", 30000)) << env.Seen() << env.Log();
  // The uplink wedges 2 s after it started; one period later it is stalled.
  ASSERT_TRUE(env.WaitFor("STATUS=stalled: uplink", 60000)) << env.Seen() << env.Log();
  std::vector<std::string> after = env.Collect(2 * kWatchdogMs);
  EXPECT_EQ(Count(after, "WATCHDOG=1"), 0) << env.Seen();
  EXPECT_NE(env.Log().find("not petting, stalled worker(s): uplink"), std::string::npos) << env.Log();
  EXPECT_TRUE(env.gateway.running()) << "systemd, not the process, decides the restart";
  // The hook lets go on SIGTERM, so the gateway still stops cleanly.
  EXPECT_EQ(env.gateway.Stop(10000), 0) << env.Log();
}

TEST(WatchdogTest, AnIdleCommitterIsNotAStallButAWedgedOneIs) {
  WatchdogEnv env;
  // The hook is armed from the start, but the committer reaches Beat() only
  // when work arrives: until then it waits for readings, idle by design.
  ASSERT_TRUE(env.Start("committer"));
  ASSERT_TRUE(env.WaitFor("READY=1", 60000)) << env.Log();
  std::vector<std::string> idle = env.Collect(2 * kWatchdogMs);
  EXPECT_GE(Count(idle, "WATCHDOG=1"), 2) << env.Seen() << env.Log();
  EXPECT_FALSE(AnyStartsWith(idle, "STATUS=stalled")) << env.Seen();

  // Readings arrive; the committer takes them and wedges (holding the
  // ingest lock, so the publisher may never get all its acknowledgements:
  // it is not waited for).
  Process pub;
  ASSERT_TRUE(pub.Start({EDGESYNC_PUBLISHER, env.broker.uri(), "pub", "1", "5", "dev", "1800000000000"},
                        env.dir.File("pub.log")));
  ASSERT_TRUE(env.WaitFor("STATUS=stalled: committer", 60000)) << env.Seen() << env.Log();
  std::vector<std::string> after = env.Collect(2 * kWatchdogMs);
  EXPECT_EQ(Count(after, "WATCHDOG=1"), 0) << env.Seen();
  EXPECT_EQ(env.gateway.Stop(10000), 0) << env.Log();
}

TEST(WatchdogTest, AStalledHubApplierStopsTheHubsPetting) {
  WatchdogEnv env;
  ASSERT_TRUE(env.Start("hub-applier:2000", "region"));
  ASSERT_TRUE(env.WaitFor("READY=1", 60000)) << env.Log();
  ASSERT_TRUE(env.WaitFor("WATCHDOG=1", 30000)) << env.Seen() << env.Log();
  ASSERT_TRUE(env.WaitFor("STATUS=stalled: hub-applier", 60000)) << env.Seen() << env.Log();
  std::vector<std::string> after = env.Collect(2 * kWatchdogMs);
  EXPECT_EQ(Count(after, "WATCHDOG=1"), 0) << env.Seen();
  EXPECT_EQ(env.gateway.Stop(10000), 0) << env.Log();
}

}  // namespace
}  // namespace edgesync

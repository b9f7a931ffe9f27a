// tests/support/lane_rig.h: a gateway whose region link is shaped and cut,
// the set-up the two-lane and priority integration tests share: a local
// broker, region eu (broker and `edgesync region` hub) behind a TCP proxy
// shaped to a link's bytes per second each way and cut until the test
// restores it, a watch on the region's answers on the gateway's reply topic,
// and the `edgesync gateway` program (made, not started) whose region link
// is the proxy. Code in lane_rig.cc.
#ifndef EDGESYNC_TESTS_SUPPORT_LANE_RIG_H_
#define EDGESYNC_TESTS_SUPPORT_LANE_RIG_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tests/support/broker.h"
#include "tests/support/gateway_program.h"
#include "tests/support/lane_traffic.h"
#include "tests/support/process.h"
#include "tests/support/sync_sites.h"
#include "tests/support/tcp_proxy.h"

namespace edgesync::test {

class ShapedLinkRig {
 public:
  explicit ShapedLinkRig(size_t backlog) : backlog_(backlog) {}

  // Starts the local broker, region eu, the proxy (cut) and the watch, and
  // makes the gateway program `gateway_id` with `options`, its region link
  // the proxy. Fatal failures on the way (call under ASSERT_NO_FATAL_FAILURE).
  void StartShapedLink(const std::string& gateway_id, int64_t link_bytes_per_s, GatewayProgramOptions options);

  // The link comes back; returns once the region answered (the uplink is
  // connected again). Notes the time and the proxy's upstream bytes then.
  void RestoreLink();

  uint64_t HighWater() { return watch_->high_water(); }

  // Waits until the region's mark reaches `lsn`: the time and the proxy's
  // upstream bytes of the first answer that said so.
  ::testing::AssertionResult WaitForMark(uint64_t lsn, int64_t timeout_ms);

  // Mid-drain kills: the gateway with SIGKILL once the region's mark reaches
  // `gateway_at` (started again at once), then the hub once it reaches
  // `hub_at` (waiting at most `hub_wait_ms`; back two seconds later). The
  // region's marks at each kill in `at_gateway_kill` and `at_hub_kill`.
  // Fatal failures on the way.
  void KillGatewayThenHub(uint64_t gateway_at, uint64_t hub_at, int64_t hub_wait_ms, uint64_t* at_gateway_kill,
                          uint64_t* at_hub_kill);

  size_t backlog_;  // readings the test writes to the gateway's store before the link comes back
  TempDir tmp_;
  std::unique_ptr<Broker> local_;
  std::unique_ptr<RegionSite> eu_;
  std::unique_ptr<TcpProxy> link_;
  std::unique_ptr<AckWatch> watch_;
  std::unique_ptr<GatewayProgram> gateway_;
  int64_t restored_ms_ = 0, restored_up_ = 0, drained_ms_ = 0, drained_up_ = 0;
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_LANE_RIG_H_

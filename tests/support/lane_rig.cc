#include "tests/support/lane_rig.h"

#include <sys/stat.h>

#include <vector>

namespace edgesync::test {

void ShapedLinkRig::StartShapedLink(const std::string& gateway_id, int64_t link_bytes_per_s,
                                    GatewayProgramOptions options) {
  RegionSite::MakeDir(tmp_.File("local"));
  local_ = std::make_unique<Broker>(tmp_.File("local"));
  ASSERT_TRUE(local_->Start()) << local_->log();
  eu_ = std::make_unique<RegionSite>(tmp_.path(), "eu");
  ASSERT_TRUE(eu_->Start()) << eu_->error() << eu_->hub_log();
  link_ = std::make_unique<TcpProxy>(eu_->broker().port());
  link_->SetRateBytesPerSec(link_bytes_per_s);
  link_->Cut();
  watch_ = std::make_unique<AckWatch>(eu_->broker().uri(), gateway_id, link_.get());
  std::string error;
  ASSERT_TRUE(watch_->Start(&error)) << error;

  options.region_uris = {link_->uri()};
  gateway_ = std::make_unique<GatewayProgram>(tmp_.path(), gateway_id, local_->uri(),
                                              std::vector<RegionSite*>{eu_.get()}, options);
  ::chmod(gateway_->data_dir().c_str(), 0700);
}

void ShapedLinkRig::RestoreLink() {
  restored_ms_ = NowMs();
  restored_up_ = link_->bytes_upstream();
  link_->Restore();
  ASSERT_TRUE(WaitFor([&] { return watch_->count() > 0; }, 60000)) << gateway_->log();
}

::testing::AssertionResult ShapedLinkRig::WaitForMark(uint64_t lsn, int64_t timeout_ms) {
  if (!WaitFor([&] { return HighWater() >= lsn; }, timeout_ms)) {
    return ::testing::AssertionFailure() << "the region's mark is at " << HighWater() << " of " << lsn << " after "
                                         << timeout_ms << " ms:\n" << gateway_->StatusDump();
  }
  SeenAck drained;
  watch_->FirstMarkAt(lsn, &drained);
  drained_ms_ = drained.ms;
  drained_up_ = drained.link_up;
  return ::testing::AssertionSuccess();
}

void ShapedLinkRig::KillGatewayThenHub(uint64_t gateway_at, uint64_t hub_at, int64_t hub_wait_ms,
                                       uint64_t* at_gateway_kill, uint64_t* at_hub_kill) {
  ASSERT_TRUE(WaitFor([&] { return HighWater() >= gateway_at; }, 120000)) << gateway_->StatusDump();
  gateway_->Kill9();
  *at_gateway_kill = HighWater();
  ASSERT_TRUE(gateway_->StartWithIngest());

  ASSERT_TRUE(WaitFor([&] { return HighWater() >= hub_at; }, hub_wait_ms)) << gateway_->StatusDump();
  eu_->KillHub();
  *at_hub_kill = HighWater();
  SleepMs(2000);
  ASSERT_TRUE(eu_->StartHubProcess()) << eu_->error();
}

}  // namespace edgesync::test

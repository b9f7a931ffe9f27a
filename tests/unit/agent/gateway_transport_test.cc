// A Gateway built from a Config in code (not through `config check`) still
// refuses a plaintext region off loopback, before it touches the disk.
#include <gtest/gtest.h>

#include "agent/gateway.h"
#include "platform/files.h"
#include "tests/support/process.h"

namespace edgesync::test {
namespace {

TEST(GatewayTransportTest, StartRefusesPlaintextRegionOffLoopback) {
  TempDir dir;
  Config c;
  c.gateway_id = "gw-1";
  c.data_dir = dir.File("data");
  RegionConfig r;
  r.name = "eu";
  r.uri = "tcp://192.0.2.10:1883";  // TEST-NET-1: never contacted, the check comes first
  c.regions.push_back(r);
  Gateway gateway(c);
  Status s = gateway.Start();
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("region[0].uri"), std::string::npos) << s.ToString();
  EXPECT_FALSE(FileExists(c.data_dir));
}

}  // namespace
}  // namespace edgesync::test

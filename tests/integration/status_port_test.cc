// Two edgesync processes on one machine given the same status address: the
// first serves it, the second says at start which address it could not take
// (and runs on without the page), and every request reaches the first; none
// is ever answered by the second. Real `edgesync region` processes, a real
// Mosquitto, plain HTTP GETs.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "platform/files.h"
#include "tests/support/broker.h"
#include "tests/support/http_get.h"
#include "tests/support/process.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

class Hub {
 public:
  Hub(const std::string& root, const std::string& region, const Broker& broker, const std::string& listen)
      : dir_(root + "/" + region) {
    RegionSite::MakeDir(dir_);
    std::ofstream(config()) << "[gateway]\ndata_dir = " << Q(dir_ + "/data") << "\n\n"
                            << "[metrics]\nlisten = " << Q(listen) << "\n\n"
                            << "[hub]\nregion = " << Q(region) << "\nbroker_uri = " << Q(broker.uri()) << "\n";
  }
  ~Hub() { process_.Stop(5000); }
  bool Start() { return process_.Start({EDGESYNC_BINARY, "region", "--config", config()}, dir_ + "/hub.log"); }
  bool running() { return process_.running(); }
  std::string config() const { return dir_ + "/hub.toml"; }
  std::string log() const { return ReadAll(dir_ + "/hub.log"); }
  std::string status_file() const { return dir_ + "/data/status.json"; }

 private:
  std::string dir_;
  Process process_;
};

// The region named by the snapshot the port serves ("" when none answered).
std::string RegionAt(int port) {
  int code = 0;
  std::string body = HttpGet(port, "/status.json", &code);
  if (code != 200) return "";
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.contains("hub")) return "";
  return j["hub"].value("region", "");
}

TEST(StatusPortTest, ASecondProcessOnATakenAddressSaysSoAndNeverAnswersThere) {
  TempDir tmp;
  RegionSite::MakeDir(tmp.File("broker"));
  Broker broker(tmp.File("broker"));
  ASSERT_TRUE(broker.Start());
  const int port = FreePort();
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  Hub first(tmp.path(), "first", broker, listen);
  ASSERT_TRUE(first.Start());
  ASSERT_TRUE(WaitFor([&] { return RegionAt(port) == "first"; }, 60000)) << first.log();

  Hub second(tmp.path(), "second", broker, listen);
  ASSERT_TRUE(second.Start());
  const std::string refusal = "status page and metrics off: Unavailable: metrics.listen " + listen +
                              ": Address already in use";
  ASSERT_TRUE(WaitFor([&] { return second.log().find(refusal) != std::string::npos; }, 60000)) << second.log();
  EXPECT_EQ(second.log().find("status page http://"), std::string::npos) << second.log();
  // It runs on: the data path does not depend on its view, and its figures
  // are still in its status file (what `edgesync status` reads).
  ASSERT_TRUE(WaitFor([&] { return ReadAll(second.status_file()).find("\"second\"") != std::string::npos; }, 60000))
      << second.log();
  EXPECT_TRUE(second.running());
  // With SO_REUSEPORT the kernel spread connections over both listeners.
  for (int i = 0; i < 40; ++i) ASSERT_EQ(RegionAt(port), "first") << "request " << i;
  EXPECT_EQ(first.log().find("Address already in use"), std::string::npos) << first.log();
}

}  // namespace
}  // namespace edgesync::test

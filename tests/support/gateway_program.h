// tests/support/gateway_program.h: the `edgesync gateway` program as it
// runs on a board, started by a test with its own config (a local broker,
// regions of tests/support/sync_sites.h, test timings), and the sensors
// that feed it (a publishing process).
//
// Thread safety: used from the test's thread.
#ifndef EDGESYNC_TESTS_SUPPORT_GATEWAY_PROGRAM_H_
#define EDGESYNC_TESTS_SUPPORT_GATEWAY_PROGRAM_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {

class GatewayProgram {
 public:
  // extra_toml: more sections (a [store] table for retention or compaction).
  GatewayProgram(const std::string& root, std::string id, const std::string& local_uri,
                 const std::vector<RegionSite*>& regions, const std::string& extra_toml = "")
      : id_(std::move(id)), dir_(root + "/" + id_) {
    RegionSite::MakeDir(dir_);
    std::ofstream c(config());
    c << "[gateway]\nid = " << Q(id_) << "\ndata_dir = " << Q(dir_) << "\n\n"
      << extra_toml << (extra_toml.empty() ? "" : "\n")
      << "[ingest]\nbroker_uri = " << Q(local_uri) << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
      << "[uplink]\nbatch_max_delay_ms = 20\nack_timeout_ms = 2000\nbackoff_base_ms = 50\nbackoff_max_ms = 500\n"
      << "probe_interval_ms = 200\n";
    int preference = 0;
    for (RegionSite* r : regions) {
      c << "\n[[region]]\nname = " << Q(r->name()) << "\nuri = " << Q(r->broker().uri())
        << "\npreference = " << preference++ << "\n";
    }
  }
  ~GatewayProgram() { process_.Stop(5000); }

  bool Start() { return process_.Start({EDGESYNC_BINARY, "gateway", "--config", config()}, dir_ + "/gateway.log"); }
  void Kill9() { process_.Kill9(); }
  int Stop() { return process_.Stop(10000); }
  std::string config() const { return dir_ + "/gateway.toml"; }
  std::string store_path() const { return dir_ + "/store.db"; }
  std::string log() const { return ReadAll(dir_ + "/gateway.log"); }
  // The uplink's checkpoint and the store's last LSN, from the status file.
  std::string StatusLine() const {
    std::string cmd = std::string(EDGESYNC_BINARY) + " status --line --config " + config() + " 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    char buf[1024] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    pclose(p);
    return std::string(buf, n);
  }
  // The ingest link to the local broker is up (status file), so the
  // gateway's subscription exists and what sensors publish from now on waits
  // for it across restarts. The status line alone came seconds before the
  // link under ThreadSanitizer, and readings published meanwhile were lost.
  bool IngestConnected() const {
    return StatusField(ReadStatusFile(dir_ + "/status.json"), metrics::kIngestMqttConnected) == 1;
  }
  // Start, then the ingest link up and a moment more: the subscription
  // exists before the sensors publish.
  ::testing::AssertionResult StartWithIngest() {
    if (!Start()) return ::testing::AssertionFailure() << "edgesync gateway did not start";
    if (!WaitFor([&] { return IngestConnected(); }, 60000)) {
      return ::testing::AssertionFailure() << "the ingest link never connected:\n" << log();
    }
    SleepMs(500);
    return ::testing::AssertionSuccess();
  }
  // A figure of status.json (0 while absent).
  int64_t Field(const StatusKey& figure) const { return StatusField(ReadStatusFile(dir_ + "/status.json"), figure); }
  std::string StatusDump() const { return ReadStatusFile(dir_ + "/status.json").dump(2); }
  bool CaughtUp(uint64_t expected) const {
    std::string line = StatusLine();
    return line.find("ingested " + std::to_string(expected) + " ") == 0 && line.find("backlog 0 ") != std::string::npos;
  }

 private:
  std::string id_;
  std::string dir_;
  Process process_;
};

// Runs the publisher to the end: `devices` sensors x `readings` readings to
// the local broker at uri (rate per second, 0 = as fast as it goes).
inline int Publish(const std::string& uri, const std::string& client, int devices, int readings,
                   const std::string& prefix, int rate = 0) {
  Process p;
  p.Start({EDGESYNC_PUBLISHER, uri, client, std::to_string(devices), std::to_string(readings), prefix, "1800000000000",
           std::to_string(rate)});
  return p.Wait(120000);
}

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_GATEWAY_PROGRAM_H_

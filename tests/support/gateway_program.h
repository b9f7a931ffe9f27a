// tests/support/gateway_program.h: the `edgesync gateway` program as it
// runs on a board, started by a test with its own config (a local broker,
// regions of tests/support/sync_sites.h, test timings), and the sensors
// that feed it (a publishing process). Code in gateway_program.cc.
//
// Thread safety: used from the test's thread.
#ifndef EDGESYNC_TESTS_SUPPORT_GATEWAY_PROGRAM_H_
#define EDGESYNC_TESTS_SUPPORT_GATEWAY_PROGRAM_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"
#include "tests/support/status_file.h"
#include "tests/support/status_metrics.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {

// The [uplink] timings of the gateway's config: short, so that a test's
// faults heal in seconds.
struct GatewayUplinkTimings {
  int batch_max_delay_ms = 20;
  int ack_timeout_ms = 2000;
  int backoff_base_ms = 50;
  int backoff_max_ms = 500;
  int probe_interval_ms = 200;
  int failback_after_s = 0;  // 0: the program's default
  int64_t max_bytes_per_s = 0;  // uplink.max_bytes_per_s; 0: not written (no cap)
  // uplink.live_lane (two lanes after an outage, or strict LSN order),
  // written only when set: a program that does not know the option refuses
  // its config ("unknown key"), so a test that leaves it unset runs the
  // program's default on every build.
  std::optional<bool> live_lane;
  // uplink.priority_topics, written only when not empty (as live_lane).
  std::vector<std::string> priority_topics;
};

struct GatewayProgramOptions {
  // More sections (a [store] table for retention or compaction).
  std::string extra_toml;
  // The data directory: <root>/<id> itself (""), or a folder below it
  // ("data": <root>/<id>/data, which a test may mount a small filesystem on;
  // the config and the log stay beside it).
  std::string data_subdir;
  // Where the gateway reaches each region, by the regions' order: "" (or
  // none) = the region's broker, else another URI (a TcpProxy in front of it).
  std::vector<std::string> region_uris;
  GatewayUplinkTimings uplink;
  // The program runs under libfaketime with this timestamp file ("" = the
  // real clock; see FakeTimeEnv).
  std::string faketime_file;
};

class GatewayProgram {
 public:
  // The regions' [[region]] tables in this order, preference 0, 1, ...
  // extra_toml: more sections (a [store] table for retention or compaction).
  GatewayProgram(const std::string& root, std::string id, const std::string& local_uri,
                 const std::vector<RegionSite*>& regions, const std::string& extra_toml = "");
  GatewayProgram(const std::string& root, std::string id, const std::string& local_uri,
                 const std::vector<RegionSite*>& regions, GatewayProgramOptions options);
  ~GatewayProgram() { process_.Stop(5000); }
  GatewayProgram(const GatewayProgram&) = delete;
  GatewayProgram& operator=(const GatewayProgram&) = delete;

  bool Start();
  void Kill9() { process_.Kill9(); }
  void Signal(int sig) { process_.Signal(sig); }
  int Stop(int64_t grace_ms = 10000) { return process_.Stop(grace_ms); }
  bool running() { return process_.running(); }
  Process& process() { return process_; }
  const std::string& id() const { return id_; }
  std::string config() const { return dir_ + "/gateway.toml"; }
  std::string data_dir() const { return data_dir_; }
  std::string store_path() const { return data_dir_ + "/store.db"; }
  std::string log() const { return ReadAll(dir_ + "/gateway.log"); }
  // The uplink's checkpoint and the store's last LSN, from the status file.
  std::string StatusLine() const;
  // The ingest link to the local broker is up (status file), so the
  // gateway's subscription exists and what sensors publish from now on waits
  // for it across restarts. The status line alone came seconds before the
  // link under ThreadSanitizer, and readings published meanwhile were lost.
  bool IngestConnected() const { return Field(metrics::kIngestMqttConnected) == 1; }
  // Start, then the ingest link up and a moment more: the subscription
  // exists before the sensors publish.
  ::testing::AssertionResult StartWithIngest();
  // status.json ({} while absent), and one figure of it (0 while absent).
  nlohmann::json StatusJson() const { return ReadStatusFile(data_dir_ + "/status.json"); }
  int64_t Field(const StatusKey& figure) const { return StatusField(StatusJson(), figure); }
  std::string StatusDump() const { return StatusJson().dump(2); }
  bool CaughtUp(uint64_t expected) const;

 private:
  std::string id_;
  std::string dir_;
  std::string data_dir_;
  std::string faketime_file_;
  Process process_;
};

// Runs the publisher to the end: `devices` sensors x `readings` readings to
// the local broker at uri (rate per second, 0 = as fast as it goes).
int Publish(const std::string& uri, const std::string& client, int devices, int readings, const std::string& prefix,
            int rate = 0);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_GATEWAY_PROGRAM_H_

#include "tests/support/gateway_program.h"

namespace edgesync::test {
namespace {

GatewayProgramOptions WithExtraToml(const std::string& extra_toml) {
  GatewayProgramOptions o;
  o.extra_toml = extra_toml;
  return o;
}

}  // namespace

GatewayProgram::GatewayProgram(const std::string& root, std::string id, const std::string& local_uri,
                               const std::vector<RegionSite*>& regions, const std::string& extra_toml)
    : GatewayProgram(root, std::move(id), local_uri, regions, WithExtraToml(extra_toml)) {}

GatewayProgram::GatewayProgram(const std::string& root, std::string id, const std::string& local_uri,
                               const std::vector<RegionSite*>& regions, GatewayProgramOptions options)
    : id_(std::move(id)),
      dir_(root + "/" + id_),
      data_dir_(options.data_subdir.empty() ? dir_ : dir_ + "/" + options.data_subdir),
      faketime_file_(options.faketime_file) {
  RegionSite::MakeDir(data_dir_);
  const std::string& extra_toml = options.extra_toml;
  const GatewayUplinkTimings& t = options.uplink;
  std::ofstream c(config());
  c << "[gateway]\nid = " << Q(id_) << "\ndata_dir = " << Q(data_dir_) << "\n\n"
    << extra_toml << (extra_toml.empty() ? "" : "\n")
    << "[ingest]\nbroker_uri = " << Q(local_uri) << "\ndevice_rate = 100000.0\ndevice_burst = 100000\n\n"
    << "[uplink]\nbatch_max_delay_ms = " << t.batch_max_delay_ms << "\nack_timeout_ms = " << t.ack_timeout_ms
    << "\nbackoff_base_ms = " << t.backoff_base_ms << "\nbackoff_max_ms = " << t.backoff_max_ms
    << "\nprobe_interval_ms = " << t.probe_interval_ms << "\n";
  if (t.failback_after_s > 0) c << "failback_after_s = " << t.failback_after_s << "\n";
  if (t.max_bytes_per_s > 0) c << "max_bytes_per_s = " << t.max_bytes_per_s << "\n";
  if (t.live_lane) c << "live_lane = " << (*t.live_lane ? "true" : "false") << "\n";
  if (!t.priority_topics.empty()) {
    c << "priority_topics = [";
    for (size_t i = 0; i < t.priority_topics.size(); ++i) c << (i ? ", " : "") << Q(t.priority_topics[i]);
    c << "]\n";
  }
  for (size_t i = 0; i < regions.size(); ++i) {
    const bool via = i < options.region_uris.size() && !options.region_uris[i].empty();
    c << "\n[[region]]\nname = " << Q(regions[i]->name())
      << "\nuri = " << Q(via ? options.region_uris[i] : regions[i]->broker().uri()) << "\npreference = " << i << "\n";
  }
}

bool GatewayProgram::Start() {
  std::vector<std::string> env;
  if (!faketime_file_.empty()) env = FakeTimeEnv(faketime_file_);
  return process_.Start({EDGESYNC_BINARY, "gateway", "--config", config()}, dir_ + "/gateway.log", env);
}

std::string GatewayProgram::StatusLine() const {
  std::string cmd = std::string(EDGESYNC_BINARY) + " status --line --config " + config() + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[1024] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  pclose(p);
  return std::string(buf, n);
}

::testing::AssertionResult GatewayProgram::StartWithIngest() {
  if (!Start()) return ::testing::AssertionFailure() << "edgesync gateway did not start";
  if (!WaitFor([&] { return IngestConnected(); }, 60000)) {
    return ::testing::AssertionFailure() << "the ingest link never connected:\n" << log();
  }
  SleepMs(500);
  return ::testing::AssertionSuccess();
}

bool GatewayProgram::CaughtUp(uint64_t expected) const {
  std::string line = StatusLine();
  return line.find("ingested " + std::to_string(expected) + " ") == 0 && line.find("backlog 0 ") != std::string::npos;
}

int Publish(const std::string& uri, const std::string& client, int devices, int readings, const std::string& prefix,
            int rate) {
  Process p;
  p.Start({EDGESYNC_PUBLISHER, uri, client, std::to_string(devices), std::to_string(readings), prefix, "1800000000000",
           std::to_string(rate)});
  return p.Wait(120000);
}

}  // namespace edgesync::test

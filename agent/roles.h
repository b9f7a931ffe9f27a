// agent/roles.h: what each subcommand runs once the config is loaded.
// Each returns the process exit code: 0 on success or graceful stop.
#ifndef EDGESYNC_AGENT_ROLES_H_
#define EDGESYNC_AGENT_ROLES_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "firmware-config/config.h"
#include "platform/status.h"
#include "store/store.h"

namespace edgesync {

enum class OutputFormat { kTable, kJson, kCsv };

struct QueryOptions {
  std::string device_id;
  std::string metric;
  // RFC 3339 ("2026-03-01T12:00:00Z", offsets and fractions allowed),
  // relative to now ("-1h", "-30m", "-2d", "-45s", "now") or Unix ms.
  std::string from;                    // "" = no lower bound
  std::string to;                      // "" = no upper bound
  int64_t limit = 1000;
  bool oldest_first = false;           // default: the newest rows, newest first
  OutputFormat format = OutputFormat::kJson;
};

struct FeedOptions {
  bool list_ranges = false;
  int64_t range_id = -1;
  std::string from = "beginning";
  int64_t max_entries = 100;
  bool follow = false;                 // keep waiting for new changes
  int64_t poll_ms = 500;               // how often --follow looks for new changes
  std::string lease_owner;             // "" = no lease; else share the ranges with other owners
};

enum class StatusFormat { kText, kJson, kLine };

int RunGateway(const Config& config);
int RunRegionHub(const Config& config);
int RunQuery(const Config& config, const QueryOptions& options);
int RunDevices(const Config& config, OutputFormat format);
int RunFeed(const Config& config, const FeedOptions& options);
// feed --lease OWNER (agent/feed_lease.cc).
int RunLeasedFeed(const Config& config, const FeedOptions& options);
int RunStatus(const Config& config, StatusFormat format);
// `edgesync reidentify`: the stopped gateway's store takes the config's
// gateway.id (StoreOptions::reidentify); 0 when it has it (now or already).
int RunReidentify(const Config& config);
// Exit status of `edgesync gateway` and `region` for a config they cannot
// use (EX_CONFIG of sysexits.h; the units' RestartPreventExitStatus).
constexpr int kExitConfig = 78;

// Opens the config's store for the read-only commands: never creates it,
// never migrates or writes it, skips the open-time check (the running
// process checks it).
Status OpenStoreForReading(const Config& config, std::unique_ptr<Store>* store);
// The options OpenStoreForReading opens the store with (a SQLite hub
// store's file is opened with them too, agent/hub_reads.cc).
StoreOptions StoreOptionsForReading(const Config& config);
// The same store opened read-write for `feed --lease`, whose owners write
// their leases and checkpoints into it; never creates it.
Status OpenStoreForLeases(const Config& config, std::unique_ptr<Store>* store);
// A change entry as `feed` prints it (one JSON object).
nlohmann::json FeedEntryJson(const ChangeEntry& e);
// A point in time for --from/--to (see QueryOptions), in Unix ms.
Status ParseTimeArg(const std::string& text, int64_t now_ms, int64_t* ms);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_ROLES_H_

#include "agent/cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "agent/ingest/topic_pattern.h"
#include "agent/metrics_table.h"
#include "agent/roles.h"
#include "firmware-config/config.h"
#include "platform/log.h"

#ifndef EDGESYNC_VERSION
#define EDGESYNC_VERSION "0.0.0"
#endif

namespace edgesync {
namespace {

// Loads FILE for a role; prints every error as file:line: key: message.
bool LoadOrReport(const std::string& path, ConfigRole role, Config* config) {
  std::vector<ConfigError> errors;
  Status s = LoadConfig(path, role, config, &errors);
  for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
  for (const auto& r : config->retired_options) std::fprintf(stderr, "%s: warning: %s\n", path.c_str(), r.c_str());
  if (!s.ok() && errors.empty()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok();
}

void ApplyLogLevel(const Config& config, const std::string& override_level) {
  LogLevel level = LogLevel::kInfo;
  ParseLogLevel(override_level.empty() ? config.log_level : override_level, &level);
  InitLogging(level);
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"edgesync: store-and-forward sync of sensor readings from gateways to regions"};
  app.set_version_flag("--version", std::string("edgesync ") + EDGESYNC_VERSION);
  app.require_subcommand(1);
  std::string config_path;
  std::string log_level;
  app.add_option("--log-level", log_level, "override the config's log level (trace..off)");

  auto* gateway = app.add_subcommand("gateway", "run on the board: ingest, store, uplink, read view");
  gateway->add_option("-c,--config", config_path, "config file (TOML)")->required();

  auto* region = app.add_subcommand("region", "run a region hub: receive batches, apply them, serve the feed");
  region->add_option("-c,--config", config_path, "config file (TOML)")->required();

  const std::map<std::string, OutputFormat> formats = {
      {"table", OutputFormat::kTable}, {"json", OutputFormat::kJson}, {"csv", OutputFormat::kCsv}};
  const char* time_help = "RFC 3339 (2026-03-01T12:00:00Z), relative (-1h, -30m, -2d, now) or Unix ms";
  QueryOptions query_options;
  auto* query = app.add_subcommand("query", "readings of a device from local data and the read view, newest first");
  query->add_option("-c,--config", config_path, "config file (TOML)")->required();
  query->add_option("--device", query_options.device_id, "deviceId (see `edgesync devices`)")->required();
  query->add_option("--metric", query_options.metric, "only this metric");
  query->add_option("--from", query_options.from, std::string("from this time, inclusive: ") + time_help);
  query->add_option("--to", query_options.to, std::string("to this time, exclusive: ") + time_help);
  query->add_option("--limit", query_options.limit, "at most this many rows (a note on stderr when more match)");
  query->add_flag("--oldest-first", query_options.oldest_first, "the oldest rows, oldest first");
  query->add_option("--format", query_options.format, "table, json (one object per line) or csv")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));

  OutputFormat devices_format = OutputFormat::kTable;
  auto* devices = app.add_subcommand("devices", "the devices a store holds readings of (local and read view)");
  devices->add_option("-c,--config", config_path, "config file (TOML)")->required();
  devices->add_option("--format", devices_format, "table, json (one object per line) or csv")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));

  FeedOptions feed_options;
  auto* feed = app.add_subcommand("feed", "read the change feed of one partition key range, or share all of them");
  feed->add_option("-c,--config", config_path, "config file (TOML)")->required();
  feed->add_option("--range", feed_options.range_id, "range id (see `feed --list`)");
  feed->add_flag("--list", feed_options.list_ranges, "list partition key ranges");
  feed->add_option("--from", feed_options.from, "beginning, now, lsn:N, time:MS or a continuation token");
  feed->add_option("--max", feed_options.max_entries, "at most this many entries (per page)");
  feed->add_flag("--follow", feed_options.follow, "keep waiting for new changes (until SIGINT/SIGTERM)");
  feed->add_option("--lease", feed_options.lease_owner,
                   "follow every range shared with other processes using the same store: OWNER's share of the "
                   "ranges, held through the store's leases, resumed from their checkpoints");
  feed->add_option("--poll-ms", feed_options.poll_ms, "how often --follow and --lease look for new changes")
      ->check(CLI::Range(10, 60000));

  auto* status = app.add_subcommand("status", "figures of a running or stopped gateway or region hub");
  status->add_option("-c,--config", config_path, "config file (TOML)")->required();
  bool status_line = false;
  bool status_json = false;
  status->add_flag("--line", status_line, "one line: ingested, backlog, sent, acknowledged, rates, time to drain");
  auto* status_json_flag = status->add_flag("--json", status_json, "the whole snapshot as JSON (docs/STATUS.md)");
  status_json_flag->excludes(status->get_option("--line"));

  auto* reidentify = app.add_subcommand(
      "reidentify", "give a stopped gateway's store, and every reading it holds, the config's gateway.id as a new "
                    "origin (docs/DEPLOY.md)");
  reidentify->add_option("-c,--config", config_path, "config file (TOML) with the new gateway.id")->required();

  auto* config_cmd = app.add_subcommand("config", "configuration tools");
  config_cmd->require_subcommand(1);
  std::string check_path;
  std::string check_role = "any";
  auto* check = config_cmd->add_subcommand("check", "check a config file and print the effective configuration");
  check->add_option("file", check_path, "config file (TOML)")->required();
  check->add_option("--role", check_role, "also check what a role needs: any, gateway, region")
      ->check(CLI::IsMember({"any", "gateway", "region"}));

  auto* example = config_cmd->add_subcommand("example", "print a commented config with the options an operator decides, at their defaults");
  auto* reference = config_cmd->add_subcommand("reference", "print every option as a Markdown table (docs/CONFIG.md)");
  // Hidden: a tool for the docs, not for an operator.
  auto* metrics_cmd = app.add_subcommand("metrics", "status figure tools")->group("");
  metrics_cmd->require_subcommand(1);
  auto* metrics_reference = metrics_cmd->add_subcommand(
      "reference", "print every status figure as a Markdown table (the \"Every figure\" part of docs/STATUS.md)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (example->parsed()) {
    std::printf("%s", ExampleConfig().c_str());
    return 0;
  }
  if (reference->parsed()) {
    std::printf("%s", ConfigReference().c_str());
    return 0;
  }
  if (metrics_reference->parsed()) {
    std::printf("%s", MetricsReference().c_str());
    return 0;
  }
  if (check->parsed()) {
    ConfigRole role = check_role == "gateway" ? ConfigRole::kGateway
                      : check_role == "region" ? ConfigRole::kRegion
                                               : ConfigRole::kAny;
    Config config;
    if (!LoadOrReport(check_path, role, &config)) return 1;
    if (role != ConfigRole::kRegion) {
      bool patterns_ok = true;
      for (const SubscriptionConfig& sub : config.subscriptions) {
        TopicPattern pattern;
        Status s = TopicPattern::Parse(sub.pattern, &pattern);
        if (!s.ok()) std::fprintf(stderr, "%s: ingest.subscriptions: %s\n", check_path.c_str(), s.message().c_str());
        patterns_ok = patterns_ok && s.ok();
      }
      if (!config.ingest_device_topic.empty()) {
        TopicPattern pattern;
        Status s = TopicPattern::Parse(config.ingest_device_topic, &pattern);
        if (!s.ok()) std::fprintf(stderr, "%s: ingest.device_topic: %s\n", check_path.c_str(), s.message().c_str());
        patterns_ok = patterns_ok && s.ok();
      }
      if (!patterns_ok) return 1;
    }
    std::printf("%s", DumpConfig(config).c_str());
    return 0;
  }

  ConfigRole role = gateway->parsed() || reidentify->parsed() ? ConfigRole::kGateway
                    : region->parsed()                          ? ConfigRole::kRegion
                                                                : ConfigRole::kAny;
  Config config;
  if (!LoadOrReport(config_path, role, &config)) {
    // EX_CONFIG (sysexits.h) from the services: their units do not restart
    // on it (RestartPreventExitStatus), since only an edit can help; the
    // unit shows failed, with the reason in its journal.
    return gateway->parsed() || region->parsed() ? kExitConfig : 1;
  }
  ApplyLogLevel(config, log_level);
  if (gateway->parsed()) return RunGateway(config);
  if (region->parsed()) return RunRegionHub(config);
  if (reidentify->parsed()) return RunReidentify(config);
  if (query->parsed()) return RunQuery(config, query_options);
  if (devices->parsed()) return RunDevices(config, devices_format);
  if (feed->parsed()) return RunFeed(config, feed_options);
  if (status->parsed()) {
    return RunStatus(config, status_json ? StatusFormat::kJson : status_line ? StatusFormat::kLine : StatusFormat::kText);
  }
  return 2;
}

}  // namespace edgesync

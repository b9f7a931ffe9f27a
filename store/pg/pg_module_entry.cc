// The PostgreSQL module's entry point (store/pg_module.h) and the module's
// own logging: the one symbol edgesync-postgresql.so exports, and the
// definitions of platform/log.h's LogEnabled and LogLine that its code (and
// the store/ and platform/ code linked into it) calls, which hand every line
// to the program through the host table. Built into the module only: test
// programs link platform/log.cc instead.
#include <atomic>
#include <string_view>

#include "platform/log.h"
#include "store/pg_module.h"

namespace edgesync {
namespace {

// Set once by the entry point, before any store exists; read by every log
// call on whatever thread.
std::atomic<const PgModuleHost*> g_host{nullptr};

}  // namespace

bool LogEnabled(LogLevel level) {
  const PgModuleHost* host = g_host.load(std::memory_order_acquire);
  return host != nullptr && level != LogLevel::kOff && host->log_enabled(static_cast<int>(level));
}

void LogLine(LogLevel level, std::string_view line) {
  const PgModuleHost* host = g_host.load(std::memory_order_acquire);
  if (host != nullptr) host->log(static_cast<int>(level), line.data(), line.size());
}

}  // namespace edgesync

extern "C" __attribute__((visibility("default"))) const edgesync::PgModuleApi* edgesync_pg_module_v4(
    const edgesync::PgModuleHost* host) {
  static const edgesync::PgModuleApi usable = [] {
    edgesync::PgModuleApi a;
    a.abi = edgesync::kPgModuleAbi;
    a.version = EDGESYNC_VERSION;
    a.open_hub_store = &edgesync::OpenPostgresHubStore;
    a.open_shard_leases = &edgesync::OpenPostgresShardLeases;
    return a;
  }();
  // A host of another layout: its fields past abi are not read. The table
  // without factories tells the loader this module's ABI and version.
  static const edgesync::PgModuleApi refused = [] {
    edgesync::PgModuleApi a;
    a.abi = edgesync::kPgModuleAbi;
    a.version = EDGESYNC_VERSION;
    return a;
  }();
  if (host == nullptr || host->abi != edgesync::kPgModuleAbi || host->log_enabled == nullptr || host->log == nullptr) {
    return &refused;
  }
  edgesync::g_host.store(host, std::memory_order_release);
  return &usable;
}

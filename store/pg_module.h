// store/pg_module.h: the PostgreSQL hub store as a module the program loads
// when a region hub is configured with `[hub] store = "postgresql://..."`.
//
// Why a module: libpq brings libldap, GnuTLS, Kerberos, SASL and p11-kit
// with it, ~3.3 MB of shared-library pages in every process that maps them
// (docs/LIMITS.md, gateway memory). A gateway never opens a PostgreSQL store, so
// the `edgesync` program does not link libpq; store/pg/ is built a second
// time as edgesync-postgresql.so, which the region role loads with dlopen.
// Test programs link store/pg/ directly (es_store_pg) and call
// OpenPostgresHubStore without a module.
//
// The seam stays the C++ interfaces (HubStore, ShardLeases): the module's
// one exported C symbol, edgesync_pg_module(), hands back a table of the two
// factories. The module is not self-contained: everything of store/ and
// platform/ it uses (Status, logging, the remote chunk codec, ValidateOriginBatch
// ...) it takes from the program that loads it, whose symbols of namespace
// edgesync are exported for that (cmake/edgesync-exports.list). So there is
// one copy of every global (the logger, its level, counters), and the
// module must be loaded by the edgesync program of the same build: the
// table carries the version and an ABI number the loader checks.
//
// Where the module is looked for, first found wins:
//   1. $EDGESYNC_PG_MODULE, a file path, when set (alone: nothing else is tried);
//   2. next to the program (the build tree: build/edgesync-postgresql.so);
//   3. the installed folder, /usr/lib/<multiarch>/edgesync/ (the Debian
//      package; EDGESYNC_PG_MODULE_DIR at build time).
//
// Thread safety: LoadPgModule may be called from any thread; the module is
// loaded once per process and never unloaded (its code runs the stores it made).
#ifndef EDGESYNC_STORE_PG_MODULE_H_
#define EDGESYNC_STORE_PG_MODULE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/status.h"
#include "store/hub_store.h"
#include "store/hub_store_leases.h"

namespace edgesync {

// Raised whenever HubStore, ShardLeases, their options or this table change
// shape: a module of another layout is refused instead of misread.
constexpr uint32_t kPgModuleAbi = 1;
constexpr const char kPgModuleFile[] = "edgesync-postgresql.so";
constexpr const char kPgModuleSymbol[] = "edgesync_pg_module";

struct PgModuleApi {
  uint32_t abi = 0;            // kPgModuleAbi of the module's build
  const char* version = "";    // the project version the module was built as
  Status (*open_hub_store)(const HubStoreOptions& options, std::unique_ptr<HubStore>* store) = nullptr;
  Status (*open_shard_leases)(const HubStoreOptions& options, const ShardLeaseOptions& lease_options,
                              std::unique_ptr<ShardLeases>* leases) = nullptr;
};

// The files tried, in order (see above).
std::vector<std::string> PgModuleCandidates();

// Loads the module (once: later calls return the same table; a failure is
// not remembered, the next call tries again). Refused as not supported when no candidate exists or the build has no
// PostgreSQL support; IoError when a module file exists but does not load
// (dlerror()'s text), lacks the entry point or is of another build. The
// message names every path tried.
Status LoadPgModule(const PgModuleApi** api);

}  // namespace edgesync

// The module's entry point (store/pg/pg_module_entry.cc): its table.
extern "C" const edgesync::PgModuleApi* edgesync_pg_module();

#endif  // EDGESYNC_STORE_PG_MODULE_H_

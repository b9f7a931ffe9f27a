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
// The contract is this header and nothing else:
//   - The module exports one symbol, edgesync_pg_module_v<kPgModuleAbi>
//     (kPgModuleSymbol), a C function. The program calls it with its host
//     table (PgModuleHost) and gets the module's table (PgModuleApi) back.
//   - The module is self-contained: it carries its own copy of the store/
//     and platform/ code it uses (linked in, hidden: a version script keeps
//     every other symbol local) and resolves nothing against the program.
//     The program exports nothing for it.
//   - What must exist once per process comes through the host table:
//       * logging: the module's log lines are the program's (its level,
//         format, journal prefix, and the recent-errors ring of `edgesync
//         status`): the module's LogEnabled/LogLine call log_enabled and
//         log, read at every line, so a level change reaches it at once.
//   - Copies that are harmless, so not routed:
//       * SystemClock(): stateless (clock_gettime and the boot id file);
//         libfaketime interposes the C library for the module too, and a
//         test clock is passed per store in HubStoreOptions::clock;
//       * Status, the remote chunk codec, ValidateOriginBatch, ReadFile:
//         functions without state, but for the codec's per-thread scratch
//         buffers and zstd contexts (column_block.cc, remote_chunk_codec.cc),
//         which a second copy only duplicates on the threads that call it;
//       * the module has no counters, registries or test hooks (the
//         EDGESYNC_TEST_STALL hook is platform/liveness.cc, not linked in):
//         its figures reach the program as return values of HubStore and
//         ShardLeases calls, which the program counts.
//   - Objects cross the seam only as the C++ interfaces HubStore and
//     ShardLeases (virtual calls land in the module's code), their options
//     and Status, all of the same layout in both because the loader admits
//     only a module of the same ABI and the same project version. Nothing
//     relies on type identity across the seam (no dynamic_cast, typeid or
//     exception crosses it).
//   - Both sides check the ABI: the program refuses a module whose table
//     carries another ABI or version, naming the path and both; the module
//     ignores a host table of another ABI (it reads only its abi field) and
//     hands back a table without factories. A module of the first layout
//     (exporting only edgesync_pg_module, kPgModuleSymbolV1) is refused by
//     that name.
//
// Where the module is looked for, first found wins:
//   1. $EDGESYNC_PG_MODULE, a file path, when set (alone: nothing else is tried);
//   2. next to the program (the build tree: build/edgesync-postgresql.so);
//   3. the installed folder, /usr/lib/<multiarch>/edgesync/ (the Debian
//      package; EDGESYNC_PG_MODULE_DIR at build time).
//
// Thread safety: LoadPgModule may be called from any thread; the module is
// loaded once per process and never unloaded (its code runs the stores it
// made). The host table's functions may be called from any thread.
#ifndef EDGESYNC_STORE_PG_MODULE_H_
#define EDGESYNC_STORE_PG_MODULE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "platform/status.h"
#include "store/hub_store.h"
#include "store/hub_store_leases.h"

namespace edgesync {

// Raised whenever HubStore, ShardLeases, their options, Status or either
// table change shape, together with the entry point's name (kPgModuleSymbol
// and the declaration below): a module of another layout is refused instead
// of misread. 3: HubStore's OriginBatch and ApplyResult carry a live lane's
// flag and the held spans. 4: OriginBatch carries a priority level and its
// span's end, ApplyResult the priority marks.
constexpr uint32_t kPgModuleAbi = 4;
constexpr const char kPgModuleFile[] = "edgesync-postgresql.so";
constexpr const char kPgModuleSymbol[] = "edgesync_pg_module_v4";
// The entry point of ABI 1 modules, which took every store/ and platform/
// symbol from the program: recognised only to refuse it by name.
constexpr const char kPgModuleSymbolV1[] = "edgesync_pg_module";

// What the program lends the module: plain C function pointers, valid for
// the life of the process.
struct PgModuleHost {
  uint32_t abi = 0;          // kPgModuleAbi of the program's build
  const char* version = "";  // the project version the program was built as
  // Whether a line of this level (LogLevel as int) is written now.
  bool (*log_enabled)(int level) = nullptr;
  // Writes one line at that level through the program's logger.
  void (*log)(int level, const char* text, size_t size) = nullptr;
};

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
// (dlerror()'s text), lacks the entry point, has only the ABI 1 one or is of
// another build. The message names the path and, for another build, both
// ABIs or versions.
Status LoadPgModule(const PgModuleApi** api);

}  // namespace edgesync

// The module's entry point (store/pg/pg_module_entry.cc): records the host
// table (when of its ABI) and returns the module's table, never nullptr.
extern "C" const edgesync::PgModuleApi* edgesync_pg_module_v4(const edgesync::PgModuleHost* host);

#endif  // EDGESYNC_STORE_PG_MODULE_H_

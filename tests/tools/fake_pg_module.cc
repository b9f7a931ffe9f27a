// Stand-ins for PostgreSQL modules of other builds, for the loader's
// refusals (tests/unit/store/pg_module_test.cc). FAKE_PG_MODULE picks one:
//   1 an ABI 1 module: only the old entry point, edgesync_pg_module();
//   2 an ABI 1 module as it was built: also takes a store/ symbol from the
//     program that loads it, which no program exports any more;
//   3 a module of a later ABI: only edgesync_pg_module_v5;
//   4 this ABI's entry point, but its table says another ABI;
//   5 this ABI, another project version.
#include <cstdint>

#include "store/pg_module.h"

namespace {

// The table of ABI 1, as its modules returned it.
struct PgModuleApiV1 {
  uint32_t abi = 1;
  const char* version = "0.9.0";
  void* open_hub_store = nullptr;
  void* open_shard_leases = nullptr;
};

}  // namespace

#if FAKE_PG_MODULE == 2
namespace edgesync {
void TakenFromTheProgram();
}  // namespace edgesync
#endif

#if FAKE_PG_MODULE == 1 || FAKE_PG_MODULE == 2
extern "C" const PgModuleApiV1* edgesync_pg_module() {
#if FAKE_PG_MODULE == 2
  edgesync::TakenFromTheProgram();
#endif
  static const PgModuleApiV1 api;
  return &api;
}
#elif FAKE_PG_MODULE == 3
extern "C" const edgesync::PgModuleApi* edgesync_pg_module_v5(const void*) {
  static edgesync::PgModuleApi api;
  api.abi = 5;
  return &api;
}
#elif FAKE_PG_MODULE == 4 || FAKE_PG_MODULE == 5
extern "C" const edgesync::PgModuleApi* edgesync_pg_module_v4(const edgesync::PgModuleHost*) {
  static const edgesync::PgModuleApi api = [] {
    edgesync::PgModuleApi a;
#if FAKE_PG_MODULE == 4
    a.abi = 7;
    a.version = EDGESYNC_VERSION;
#else
    a.abi = edgesync::kPgModuleAbi;
    a.version = "0.0.1-other";
#endif
    return a;
  }();
  return &api;
}
#else
#error "FAKE_PG_MODULE must be 1..5"
#endif

// The PostgreSQL module's entry point (store/pg_module.h): the one symbol
// edgesync-postgresql.so exports for the program to find.
#include "store/pg_module.h"

extern "C" const edgesync::PgModuleApi* edgesync_pg_module() {
  static const edgesync::PgModuleApi api = [] {
    edgesync::PgModuleApi a;
    a.abi = edgesync::kPgModuleAbi;
    a.version = EDGESYNC_VERSION;
    a.open_hub_store = &edgesync::OpenPostgresHubStore;
    a.open_shard_leases = &edgesync::OpenPostgresShardLeases;
    return a;
  }();
  return &api;
}

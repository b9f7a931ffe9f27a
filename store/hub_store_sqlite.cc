// SqliteHubStore (store/hub_store.h), apart from the hub store's shared
// rules in hub_store.cc: it needs the SQLite store's type, which the
// PostgreSQL module (linking hub_store.cc) must not pull in.
#include "store/hub_store.h"
#include "store/sqlite_store.h"

namespace edgesync {

HubStore* SqliteHubStore(Store* store) { return dynamic_cast<SqliteStore*>(store); }

}  // namespace edgesync

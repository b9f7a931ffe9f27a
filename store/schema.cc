#include "store/schema.h"

#include <string>

namespace edgesync {
namespace {

const char* const kV1 = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE series(id INTEGER PRIMARY KEY, device_id TEXT NOT NULL, metric TEXT NOT NULL,
                    unit TEXT NOT NULL, hkey INTEGER NOT NULL, UNIQUE(device_id, metric, unit));
CREATE TABLE log(lsn INTEGER PRIMARY KEY, kind INTEGER NOT NULL, series INTEGER NOT NULL,
                 ts INTEGER NOT NULL, value REAL NOT NULL, quality INTEGER NOT NULL);
CREATE INDEX log_query ON log(lsn >> 11, series, ts);
CREATE TABLE batches(first_lsn INTEGER PRIMARY KEY, written_at INTEGER NOT NULL);
CREATE TABLE devices(device_id TEXT PRIMARY KEY, name TEXT NOT NULL, location TEXT NOT NULL,
                     default_unit TEXT NOT NULL, deleted INTEGER NOT NULL, lsn INTEGER NOT NULL,
                     updated_at INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE ranges(id INTEGER PRIMARY KEY, min INTEGER NOT NULL, max INTEGER NOT NULL,
                    parent INTEGER NOT NULL, active INTEGER NOT NULL, entries INTEGER NOT NULL,
                    bytes INTEGER NOT NULL);
CREATE TABLE leases(range_id INTEGER PRIMARY KEY, owner TEXT NOT NULL, continuation TEXT NOT NULL,
                    renewed_at INTEGER NOT NULL, version INTEGER NOT NULL);
CREATE TABLE checkpoints(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE acks(target TEXT PRIMARY KEY, lsn INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE origins(id INTEGER PRIMARY KEY, gateway_id TEXT NOT NULL, epoch TEXT NOT NULL,
                     UNIQUE(gateway_id, epoch));
CREATE TABLE remote(rid INTEGER PRIMARY KEY, origin INTEGER NOT NULL, olsn INTEGER NOT NULL,
                    kind INTEGER NOT NULL, series INTEGER NOT NULL, ts INTEGER NOT NULL, value REAL NOT NULL,
                    quality INTEGER NOT NULL, at INTEGER NOT NULL, UNIQUE(origin, olsn));
CREATE INDEX remote_query ON remote(rid >> 11, series, ts);
CREATE TABLE remote_devices(rid INTEGER PRIMARY KEY, name TEXT NOT NULL, location TEXT NOT NULL,
                            default_unit TEXT NOT NULL, deleted INTEGER NOT NULL);
CREATE TABLE dead_letters(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, topic TEXT NOT NULL,
                          head BLOB NOT NULL, reason TEXT NOT NULL);
)sql";

// Version 2: what a region hub keeps. high_water rows are never deleted
// (dedupe must hold for any outage length); region_feed's AUTOINCREMENT
// keeps sequence numbers unique even after the feed is pruned.
const char* const kV1ToV2 = R"sql(
CREATE TABLE high_water(origin INTEGER PRIMARY KEY, lsn INTEGER NOT NULL);
CREATE TABLE region_feed(seq INTEGER PRIMARY KEY AUTOINCREMENT, rid INTEGER NOT NULL);
)sql";

// Version 3: a lease's renewal as (boot id, monotonic ms) of the renewing
// host, so expiry never reads the wall clock (renewed_at stays, for people).
const char* const kV2ToV3 = R"sql(
ALTER TABLE leases ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN renewed_mono INTEGER NOT NULL DEFAULT 0;
)sql";

}  // namespace

Status CreateSchema(Db* db, int version) {
  if (version < 1 || version > kSchemaVersion) {
    return Status::InvalidArgument("schema version " + std::to_string(version) + " unknown");
  }
  ES_RETURN_IF_ERROR(db->Exec(kV1));
  ES_RETURN_IF_ERROR(db->Exec("PRAGMA application_id=" + std::to_string(kApplicationId)));
  ES_RETURN_IF_ERROR(db->Exec("PRAGMA user_version=1"));
  if (version > 1) ES_RETURN_IF_ERROR(MigrateSchema(db, 1));
  return Status::Ok();
}

Status MigrateSchema(Db* db, int from) {
  for (int v = from; v < kSchemaVersion; ++v) {
    switch (v) {
      case 1:
        ES_RETURN_IF_ERROR(db->Exec(kV1ToV2).Annotate("migrating schema 1 to 2"));
        break;
      case 2:
        ES_RETURN_IF_ERROR(db->Exec(kV2ToV3).Annotate("migrating schema 2 to 3"));
        break;
      default:
        return Status::Unsupported("no migration from schema " + std::to_string(v));
    }
    ES_RETURN_IF_ERROR(db->Exec("PRAGMA user_version=" + std::to_string(v + 1)));
  }
  return Status::Ok();
}

}  // namespace edgesync

// store/origin_catalog.h: the origins a store holds entries of (table
// `origins`): a gateway id and store epoch, interned as a row id that the
// read view, the region feed and the hub's marks carry.
//
// Origin rows are never deleted, so a cached (origin, id) pair never goes
// stale. An origin inserted by a transaction is cached only once it is
// found again (inserted rows may roll back); a rolled-back write calls
// Forget, which empties the cache.
//
// Thread safety: any thread. The cache has its own mutex; the statements a
// call is given belong to the caller's connection, whose mutex the caller
// holds (taken before this one).
#ifndef EDGESYNC_STORE_ORIGIN_CATALOG_H_
#define EDGESYNC_STORE_ORIGIN_CATALOG_H_

#include <cstdint>
#include <string>
#include <unordered_map>

#include "platform/mutex.h"
#include "platform/status.h"
#include "store/sqlite_util.h"
#include "store/types.h"

namespace edgesync {

class OriginCatalog {
 public:
  // The statements a connection uses with the catalog.
  struct Statements {
    Status Prepare(Db* db, bool can_insert);
    Stmt find;    // by (gateway_id, epoch)
    Stmt insert;  // prepared when can_insert
    Stmt by_id;
  };

  // The origin's id; an origin not held yet is inserted when `insert`
  // (inside the caller's write transaction), else *id = 0.
  Status Find(const Origin& origin, Statements* stmts, bool insert, int64_t* id) EXCLUDES(mu_);
  // Corruption when no origin has that id.
  Status ById(int64_t id, Statements* stmts, Origin* origin) EXCLUDES(mu_);
  // A write rolled back: origins it inserted must not stay cached.
  void Forget() EXCLUDES(mu_);

 private:
  void Keep(int64_t id, const Origin& origin) EXCLUDES(mu_);

  Mutex mu_;
  std::unordered_map<std::string, int64_t> ids_ GUARDED_BY(mu_);
  std::unordered_map<int64_t, Origin> origins_ GUARDED_BY(mu_);
};

}  // namespace edgesync

#endif  // EDGESYNC_STORE_ORIGIN_CATALOG_H_

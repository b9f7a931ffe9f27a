#include "store/origin_catalog.h"

#include "store/schema.h"

namespace edgesync {

Status OriginCatalog::Statements::Prepare(Db* db, bool can_insert) {
  ES_RETURN_IF_ERROR(find.Prepare(db, kFindOriginSql));
  ES_RETURN_IF_ERROR(by_id.Prepare(db, "SELECT gateway_id, epoch FROM origins WHERE id=?"));
  if (!can_insert) return Status::Ok();
  return insert.Prepare(db, "INSERT INTO origins(gateway_id, epoch) VALUES(?, ?) RETURNING id");
}

void OriginCatalog::Keep(int64_t id, const Origin& origin) {
  MutexLock lock(&mu_);
  ids_[origin.ToString()] = id;
  origins_[id] = origin;
}

Status OriginCatalog::Find(const Origin& origin, Statements* stmts, bool insert, int64_t* id) {
  {
    MutexLock lock(&mu_);
    auto it = ids_.find(origin.ToString());
    if (it != ids_.end()) {
      *id = it->second;
      return Status::Ok();
    }
  }
  Stmt& s = stmts->find;
  StmtScope scope(&s);
  s.Bind(1, std::string_view(origin.gateway_id));
  s.Bind(2, std::string_view(origin.epoch));
  Status st;
  if (s.Step(&st)) {
    *id = s.Int(0);
    Keep(*id, origin);
    return Status::Ok();
  }
  ES_RETURN_IF_ERROR(st);
  *id = 0;
  if (!insert) return Status::Ok();
  Stmt& ins = stmts->insert;
  StmtScope ins_scope(&ins);
  ins.Bind(1, std::string_view(origin.gateway_id));
  ins.Bind(2, std::string_view(origin.epoch));
  if (!ins.Step(&st)) return st.ok() ? Status::IoError("origin insert returned no id") : st;
  *id = ins.Int(0);
  return Status::Ok();  // not cached until its transaction commits
}

Status OriginCatalog::ById(int64_t id, Statements* stmts, Origin* origin) {
  {
    MutexLock lock(&mu_);
    auto it = origins_.find(id);
    if (it != origins_.end()) {
      *origin = it->second;
      return Status::Ok();
    }
  }
  Stmt& s = stmts->by_id;
  StmtScope scope(&s);
  s.Bind(1, id);
  Status st;
  if (!s.Step(&st)) return st.ok() ? Status::Corruption("unknown origin id " + std::to_string(id)) : st;
  *origin = Origin{s.Text(0), s.Text(1)};
  Keep(id, *origin);
  return Status::Ok();
}

void OriginCatalog::Forget() {
  MutexLock lock(&mu_);
  ids_.clear();
  origins_.clear();
}

}  // namespace edgesync

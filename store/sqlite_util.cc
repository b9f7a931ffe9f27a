#include "store/sqlite_util.h"

#include <cerrno>

namespace edgesync {

Status SqliteStatus(int rc, sqlite3* db, const std::string& context) {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return Status::Ok();
  std::string msg = context + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_FULL:
      return Status::NoSpace(msg + " (no space left on the store's filesystem)");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(msg);
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
      return Status::InvalidArgument(msg);
    case SQLITE_IOERR:
      // A short write on a full filesystem can surface as an I/O error.
      if (db && sqlite3_system_errno(db) == ENOSPC) return Status::NoSpace(msg + " (no space left on device)");
      if (db && sqlite3_system_errno(db) == EFBIG) return Status::NoSpace(msg + " (file size limit reached)");
      return Status::IoError(msg);
    default:
      return Status::IoError(msg);
  }
}

Db::~Db() { Close(); }

Status Db::Open(const std::string& path, int flags) {
  Close();
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteStatus(rc, db_, "opening " + path);
    Close();
    return s;
  }
  sqlite3_extended_result_codes(db_, 1);
  return Status::Ok();
}

void Db::Close() {
  for (sqlite3_stmt*& op : txn_ops_) {
    if (op) sqlite3_finalize(op);
    op = nullptr;
  }
  if (db_) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

Status Db::Exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  return SqliteStatus(rc, db_, "sql");
}

Status Db::RunTxnOp(TxnOp op) {
  static const char* const kSql[] = {"BEGIN", "BEGIN IMMEDIATE", "COMMIT"};
  sqlite3_stmt*& stmt = txn_ops_[static_cast<int>(op)];
  const char* sql = kSql[static_cast<int>(op)];
  if (stmt == nullptr) {
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(rc, db_, std::string("preparing ") + sql);
  }
  int rc = sqlite3_step(stmt);
  Status s = SqliteStatus(rc, db_, sql);
  sqlite3_reset(stmt);
  return s;
}

Status Db::QueryInt(const std::string& sql, int64_t* value) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(this, sql.c_str()));
  Status st;
  *value = s.Step(&st) ? s.Int(0) : 0;
  return st;
}

Status Db::QueryText(const std::string& sql, std::string* value) {
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(this, sql.c_str()));
  Status st;
  *value = s.Step(&st) ? s.Text(0) : std::string();
  return st;
}

Stmt::~Stmt() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Status Stmt::Prepare(Db* db, const char* sql) {
  if (stmt_) sqlite3_finalize(stmt_);  // preparing again must not leak the old statement
  stmt_ = nullptr;
  db_ = db;
  int rc = sqlite3_prepare_v3(db->get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  return SqliteStatus(rc, db->get(), std::string("preparing ") + sql);
}

bool Stmt::Step(Status* status) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) *status = SqliteStatus(rc, db_->get(), "step");
  return false;
}

Status Stmt::Run() {
  StmtScope scope(this);
  Status st;
  Step(&st);
  return st;
}

Txn::~Txn() { Rollback(); }

Status Txn::Begin(Mode mode) {
  ES_RETURN_IF_ERROR(db_->RunTxnOp(mode == Mode::kImmediate ? Db::TxnOp::kBeginImmediate : Db::TxnOp::kBegin));
  open_ = true;
  return Status::Ok();
}

Status Txn::Commit() {
  Status s = db_->RunTxnOp(Db::TxnOp::kCommit);
  if (s.ok()) {
    open_ = false;
  }
  return s;
}

void Txn::Rollback() {
  if (!open_) return;
  open_ = false;
  // A failed COMMIT (SQLITE_FULL) may already have rolled back: only roll
  // back when a transaction is still open.
  if (!sqlite3_get_autocommit(db_->get())) sqlite3_exec(db_->get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace edgesync

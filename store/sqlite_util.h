// store/sqlite_util.h: small RAII owners for SQLite handles, used only inside
// store/ (<sqlite3.h> never reaches the public store.h).
//
// Db owns a connection, Stmt a prepared statement (reset on every use so a
// cached statement never holds a read snapshot open), Txn a transaction that
// rolls back in its destructor unless committed. SQLite result codes become
// Status values here: SQLITE_FULL is NoSpace, SQLITE_BUSY is Unavailable,
// SQLITE_CORRUPT / NOTADB are Corruption.
//
// Thread safety: none; each Db (and its statements) is used under one mutex.
#ifndef EDGESYNC_STORE_SQLITE_UTIL_H_
#define EDGESYNC_STORE_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "platform/status.h"

namespace edgesync {

// Maps a SQLite result code (with the connection's message) to a Status.
Status SqliteStatus(int rc, sqlite3* db, const std::string& context);

class Db {
 public:
  Db() = default;
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Status Open(const std::string& path, int flags);
  void Close();
  sqlite3* get() const { return db_; }
  // Runs one or more statements without results.
  Status Exec(const std::string& sql);
  // The first column of the first row as an integer (0 if no row).
  Status QueryInt(const std::string& sql, int64_t* value);
  Status QueryText(const std::string& sql, std::string* value);
  int64_t changes() const { return sqlite3_changes64(db_); }
  // Transaction control through statements prepared once: parsing "BEGIN"
  // and "COMMIT" again for every small commit costs more than running them.
  enum class TxnOp { kBegin, kBeginImmediate, kCommit, kCount };
  Status RunTxnOp(TxnOp op);

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* txn_ops_[static_cast<int>(TxnOp::kCount)] = {};
};

class Stmt {
 public:
  Stmt() = default;
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status Prepare(Db* db, const char* sql);
  sqlite3_stmt* get() const { return stmt_; }

  // Text is bound without copying: it must outlive the next Step/Reset.
  void Bind(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindBlob(int i, std::string_view v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }

  // true = a row is ready; false = done. Errors go to *status.
  bool Step(Status* status);
  // Runs to completion (INSERT/UPDATE/DELETE) and resets.
  Status Run();
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  // Valid until the next Step/Reset.
  std::string_view Blob(int col) const {
    const void* p = sqlite3_column_blob(stmt_, col);
    return p ? std::string_view(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string_view();
  }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : std::string();
  }

 private:
  Db* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// Resets a cached statement when the scope ends, whatever path it leaves by.
class StmtScope {
 public:
  explicit StmtScope(Stmt* s) : s_(s) {}
  ~StmtScope() { s_->Reset(); }
  StmtScope(const StmtScope&) = delete;
  StmtScope& operator=(const StmtScope&) = delete;

 private:
  Stmt* s_;
};

class Txn {
 public:
  enum class Mode { kDeferred, kImmediate };
  explicit Txn(Db* db) : db_(db) {}
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  Status Begin(Mode mode = Mode::kImmediate);
  Status Commit();
  void Rollback();

 private:
  Db* db_;
  bool open_ = false;
};

// uint64 hashes and LSNs are stored as int64; hashes are offset so that
// signed comparison in SQL keeps their unsigned order.
inline int64_t HashKey(uint64_t h) { return static_cast<int64_t>(h ^ (uint64_t{1} << 63)); }
inline uint64_t HashFromKey(int64_t k) { return static_cast<uint64_t>(k) ^ (uint64_t{1} << 63); }

}  // namespace edgesync

#endif  // EDGESYNC_STORE_SQLITE_UTIL_H_

// store/pg/pg_conn.h: one libpq connection, owned, with errors as Status.
//
// The only place besides pg_conn.cc that sees libpq is pg_hub_store.cc; the
// rest of the tree never includes <libpq-fe.h>. A query's SQLSTATE decides
// the Status code: a lost compare-and-set, a unique violation, a
// serialization failure or a deadlock is Conflict (the caller retries the
// transaction); a broken connection is Unavailable (the next call
// reconnects); anything else is IoError with the server's message.
//
// Thread safety: none; the owner serialises use.
#ifndef EDGESYNC_STORE_PG_PG_CONN_H_
#define EDGESYNC_STORE_PG_PG_CONN_H_

#include <libpq-fe.h>

#include <memory>
#include <string>
#include <vector>

#include "platform/status.h"

namespace edgesync {

// A query's result; PQclear on destruction.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(PGresult* r) : r_(r) {}
  ~PgResult() { Reset(nullptr); }
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept {
    if (this != &o) {
      Reset(o.r_);
      o.r_ = nullptr;
    }
    return *this;
  }
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;

  int rows() const { return r_ ? PQntuples(r_) : 0; }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::string Text(int row, int col) const { return std::string(PQgetvalue(r_, row, col), PQgetlength(r_, row, col)); }
  int64_t Int(int row, int col) const;
  double Double(int row, int col) const;
  int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched

 private:
  void Reset(PGresult* r) {
    if (r_) PQclear(r_);
    r_ = r;
  }
  PGresult* r_ = nullptr;
};

struct PgConnectOptions {
  std::string uri;            // postgresql://user@host:port/db?... (no password)
  std::string password;       // "" = none
  int connect_timeout_s = 10;
  std::string application_name;
};

class PgConn {
 public:
  ~PgConn();
  // InvalidArgument for a malformed URI or one that carries a password.
  static Status Connect(const PgConnectOptions& options, std::unique_ptr<PgConn>* conn);

  // Reconnects when the connection broke (server restarted, network cut).
  Status EnsureConnected();
  // A statement without parameters or rows (BEGIN, COMMIT, DDL).
  Status Exec(const std::string& sql);
  // A statement with text parameters; rows (if any) into *out.
  Status Query(const std::string& sql, const std::vector<std::string>& params, PgResult* out = nullptr);
  // COPY ... FROM STDIN with rows in COPY's text format.
  Status CopyIn(const std::string& copy_sql, const std::string& data);
  // ROLLBACK, ignoring errors (the transaction may already be gone).
  void Rollback();
  // The server's version as libpq reports it (150004 = 15.4); 0 when unknown.
  int server_version() const { return PQserverVersion(c_); }

 private:
  explicit PgConn(PGconn* c) : c_(c) {}
  // An error names the whole statement `sql` and the server's message.
  Status Check(PGresult* r, const std::string& sql, PgResult* out);
  PGconn* c_;
};

struct HubStoreOptions;
// Connects to the hub store's database (location, password file, timeouts).
Status ConnectPostgres(const HubStoreOptions& options, std::unique_ptr<PgConn>* conn);

// Appends text to COPY's text format: backslash, tab, newline, CR escaped.
void AppendCopyText(std::string* out, const std::string& text);
// A PostgreSQL array literal of text values ({"a","b"}).
std::string PgTextArray(const std::vector<std::string>& values);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_PG_PG_CONN_H_

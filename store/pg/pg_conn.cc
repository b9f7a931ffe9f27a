#include "store/pg/pg_conn.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace edgesync {
namespace {

// libpq's message on one line: its lines (a message and its continuation,
// "server closed the connection unexpectedly / This probably means ...")
// joined by a space, each without its indentation, so that a Status read
// by an operator or written to the log stays one record.
std::string Trim(const char* m) {
  std::string out;
  std::string line;
  auto flush = [&] {
    size_t b = line.find_first_not_of(" \t\r");
    size_t e = line.find_last_not_of(" \t\r");
    if (b != std::string::npos) out += (out.empty() ? "" : " ") + line.substr(b, e - b + 1);
    line.clear();
  };
  for (const char* c = m ? m : ""; *c; ++c) {
    if (*c == '\n') {
      flush();
    } else {
      line += *c;
    }
  }
  flush();
  return out;
}

// A failed statement's error from the server's fields: severity, message,
// and its detail and hint when given. Not libpq's text, which adds the
// statement again with a caret line under the failing position.
std::string ServerError(const PGresult* r) {
  const char* primary = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
  if (primary == nullptr) return Trim(PQresultErrorMessage(r));
  const char* severity = PQresultErrorField(r, PG_DIAG_SEVERITY);
  const char* detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
  const char* hint = PQresultErrorField(r, PG_DIAG_MESSAGE_HINT);
  std::string m = std::string(severity ? severity : "ERROR") + ": " + Trim(primary);
  if (detail) m += " (detail: " + Trim(detail) + ")";
  if (hint) m += " (hint: " + Trim(hint) + ")";
  return m;
}

// The statement an error names: all of it (an operator must see which
// table and which privilege), its layout's line breaks and indentation
// folded into single spaces so that it reads as one line.
std::string Statement(const std::string& sql) {
  std::string out;
  out.reserve(sql.size());
  for (char c : sql) {
    const bool blank = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

int64_t PgResult::Int(int row, int col) const {
  const char* v = PQgetvalue(r_, row, col);
  int64_t out = 0;
  std::from_chars(v, v + PQgetlength(r_, row, col), out);
  return out;
}

double PgResult::Double(int row, int col) const { return std::strtod(PQgetvalue(r_, row, col), nullptr); }

int64_t PgResult::affected() const {
  const char* n = r_ ? PQcmdTuples(r_) : "";
  return n && *n ? std::strtoll(n, nullptr, 10) : 0;
}

PgConn::~PgConn() {
  if (c_) PQfinish(c_);
}

Status PgConn::Connect(const PgConnectOptions& o, std::unique_ptr<PgConn>* conn) {
  // A password in the URI would end up in config files, `config check`
  // output and logs: it belongs in the password file.
  char* err = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(o.uri.c_str(), &err);
  if (!parsed) {
    std::string m = Trim(err);
    PQfreemem(err);
    return Status::InvalidArgument("PostgreSQL location: " + m);
  }
  bool has_password = false;
  for (PQconninfoOption* p = parsed; p->keyword; ++p) {
    if (std::strcmp(p->keyword, "password") == 0 && p->val && *p->val) has_password = true;
  }
  PQconninfoFree(parsed);
  if (has_password) {
    return Status::InvalidArgument("PostgreSQL location carries a password: put it in [hub] password_file instead");
  }
  std::string timeout = std::to_string(o.connect_timeout_s);
  std::vector<const char*> keys = {"dbname", "connect_timeout", "application_name"};
  std::vector<const char*> values = {o.uri.c_str(), timeout.c_str(), o.application_name.c_str()};
  if (!o.password.empty()) {
    keys.push_back("password");
    values.push_back(o.password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* c = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (!c) return Status::IoError("PostgreSQL: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string m = Trim(PQerrorMessage(c));
    PQfinish(c);
    return Status::Unavailable("connecting to PostgreSQL: " + m);
  }
  conn->reset(new PgConn(c));
  // Notices (e.g. "relation already exists, skipping") are not errors.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return Status::Ok();
}

Status PgConn::EnsureConnected() {
  if (PQstatus(c_) == CONNECTION_OK) return Status::Ok();
  PQreset(c_);
  if (PQstatus(c_) != CONNECTION_OK) return Status::Unavailable("reconnecting to PostgreSQL: " + Trim(PQerrorMessage(c_)));
  return Status::Ok();
}

Status PgConn::Check(PGresult* r, const std::string& sql, PgResult* out) {
  PgResult owned(r);
  ExecStatusType t = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK || t == PGRES_COPY_IN) {
    if (out) *out = std::move(owned);
    return Status::Ok();
  }
  if (PQstatus(c_) != CONNECTION_OK) return Status::Unavailable("PostgreSQL connection lost: " + Trim(PQerrorMessage(c_)));
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string m = Statement(sql) + ": " + (r ? ServerError(r) : Trim(PQerrorMessage(c_)));
  std::string code = state ? state : "";
  // 23505 unique_violation: another writer inserted the same (origin, LSN)
  // first; 40001 serialization_failure; 40P01 deadlock_detected.
  if (code == "23505" || code == "40001" || code == "40P01") return Status::Conflict(m);
  // Class 53: insufficient resources (disk full, out of memory).
  if (code.rfind("53", 0) == 0) return Status::NoSpace(m);
  // Class 08 (connection exception) and 57P (operator intervention: the
  // server is shutting down).
  if (code.rfind("08", 0) == 0 || code.rfind("57P", 0) == 0) return Status::Unavailable(m);
  return Status::IoError(m);
}

Status PgConn::Exec(const std::string& sql) { return Check(PQexec(c_, sql.c_str()), sql, nullptr); }

Status PgConn::Query(const std::string& sql, const std::vector<std::string>& params, PgResult* out) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const std::string& p : params) values.push_back(p.c_str());
  PGresult* r = PQexecParams(c_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                             nullptr, 0);
  return Check(r, sql, out);
}

Status PgConn::CopyIn(const std::string& copy_sql, const std::string& data) {
  ES_RETURN_IF_ERROR(Check(PQexec(c_, copy_sql.c_str()), copy_sql, nullptr));
  if (PQputCopyData(c_, data.data(), static_cast<int>(data.size())) != 1 || PQputCopyEnd(c_, nullptr) != 1) {
    return Status::Unavailable("PostgreSQL COPY: " + Trim(PQerrorMessage(c_)));
  }
  // The COPY's own outcome, then the end of the command.
  Status st = Status::Ok();
  while (PGresult* r = PQgetResult(c_)) {
    Status s = Check(r, copy_sql, nullptr);
    if (st.ok()) st = s;
  }
  return st;
}

void PgConn::Rollback() {
  if (PQstatus(c_) != CONNECTION_OK) return;
  PQclear(PQexec(c_, "ROLLBACK"));
}

void AppendCopyText(std::string* out, const std::string& text) {
  for (char c : text) {
    switch (c) {
      case '\\':
        *out += "\\\\";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      default:
        *out += c;
    }
  }
}

std::string PgTextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

}  // namespace edgesync

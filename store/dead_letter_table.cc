#include "store/dead_letter_table.h"

#include <sqlite3.h>

#include <algorithm>
#include <string_view>

namespace edgesync {
namespace dead_letter_table {

Status Add(Db* db, const std::vector<DeadLetter>& letters, int64_t cap) {
  if (letters.empty()) return Status::Ok();
  Txn txn(db);
  ES_RETURN_IF_ERROR(txn.Begin());
  Stmt ins;
  ES_RETURN_IF_ERROR(ins.Prepare(db, "INSERT INTO dead_letters(at, topic, head, reason) VALUES(?, ?, ?, ?)"));
  for (const auto& d : letters) {
    std::string_view head(d.head.data(), std::min<size_t>(d.head.size(), 256));
    std::string_view topic(d.topic.data(), std::min<size_t>(d.topic.size(), 1024));
    std::string_view reason(d.reason.data(), std::min<size_t>(d.reason.size(), 1024));
    ins.Bind(1, d.at_ms);
    ins.Bind(2, topic);
    ins.BindBlob(3, head);
    ins.Bind(4, reason);
    ES_RETURN_IF_ERROR(ins.Run());
  }
  Stmt trim;
  ES_RETURN_IF_ERROR(trim.Prepare(db, "DELETE FROM dead_letters WHERE id <= (SELECT max(id) FROM dead_letters) - ?"));
  trim.Bind(1, cap);
  ES_RETURN_IF_ERROR(trim.Run());
  Stmt count;
  ES_RETURN_IF_ERROR(count.Prepare(db,
                                   "INSERT INTO meta(key, value) VALUES('dead_letters', ?) "
                                   "ON CONFLICT(key) DO UPDATE SET value = ifnull(value, 0) + excluded.value"));
  count.Bind(1, static_cast<int64_t>(letters.size()));
  ES_RETURN_IF_ERROR(count.Run());
  return txn.Commit();
}

Status List(Db* db, size_t max, std::vector<DeadLetter>* letters) {
  letters->clear();
  Stmt s;
  ES_RETURN_IF_ERROR(s.Prepare(db, "SELECT at, topic, head, reason FROM dead_letters ORDER BY id DESC LIMIT ?"));
  s.Bind(1, static_cast<int64_t>(std::min<uint64_t>(max, INT64_MAX)));
  Status st;
  while (s.Step(&st)) {
    DeadLetter d;
    d.at_ms = s.Int(0);
    d.topic = s.Text(1);
    d.head.assign(s.Blob(2));
    d.reason = s.Text(3);
    letters->push_back(std::move(d));
  }
  return st;
}

}  // namespace dead_letter_table
}  // namespace edgesync

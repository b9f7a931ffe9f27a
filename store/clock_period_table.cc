// The time corrections a SQLite store keeps: store/clock_period_table.h.
#include "store/clock_period_table.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>

namespace edgesync {
namespace clock_period_table {

Status Open(Db* db, const std::string& boot_id, int64_t offset_ms, int64_t now_ms, uint32_t* id) {
  *id = 0;
  int64_t last = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("SELECT ifnull(max(id), 0) FROM clock_periods", &last));
  if (last >= static_cast<int64_t>(kMaxClockPeriod)) {
    return Status::Rejected("no clock period number left (" + std::to_string(kMaxClockPeriod) + " used)");
  }
  Stmt ins;
  ES_RETURN_IF_ERROR(ins.Prepare(db, "INSERT INTO clock_periods(id, boot_id, offset_ms, opened_at) VALUES(?, ?, ?, ?)"));
  ins.Bind(1, last + 1);
  ins.Bind(2, std::string_view(boot_id));
  ins.Bind(3, offset_ms);
  ins.Bind(4, now_ms);
  ES_RETURN_IF_ERROR(ins.Run());
  *id = static_cast<uint32_t>(last + 1);
  return Status::Ok();
}

Status CountReadings(Db* db, Stmt* count, const std::vector<Reading>& readings) {
  struct Count {
    int64_t n = 0, first = INT64_MAX, last = INT64_MIN;
  };
  std::map<uint32_t, Count> by_period;  // a commit holds one period, or two across a step
  for (const Reading& r : readings) {
    const uint32_t period = QualityPeriod(r.quality);
    if (period == 0) continue;
    Count& c = by_period[period];
    ++c.n;
    c.first = std::min(c.first, r.ts_ms);
    c.last = std::max(c.last, r.ts_ms);
  }
  if (by_period.empty()) return Status::Ok();
  if (count->get() == nullptr) {
    ES_RETURN_IF_ERROR(count->Prepare(db,
                                      "UPDATE clock_periods SET readings = readings + ?1, first_ts = "
                                      "min(ifnull(first_ts, ?2), ?2), last_ts = max(ifnull(last_ts, ?3), ?3) "
                                      "WHERE id = ?4"));
  }
  for (const auto& [period, c] : by_period) {
    count->Bind(1, c.n);
    count->Bind(2, c.first);
    count->Bind(3, c.last);
    count->Bind(4, static_cast<int64_t>(period));
    ES_RETURN_IF_ERROR(count->Run());
    if (db->changes() != 1) {
      return Status::InvalidArgument("readings name clock period " + std::to_string(period) +
                                     ", which this store never opened");
    }
  }
  return Status::Ok();
}

Status List(Db* db, std::vector<ClockPeriod>* periods) {
  periods->clear();
  Stmt list;
  ES_RETURN_IF_ERROR(list.Prepare(db,
                                  "SELECT id, boot_id, offset_ms, opened_at, readings, ifnull(first_ts, 0), "
                                  "ifnull(last_ts, 0), delta_ms IS NOT NULL, ifnull(delta_ms, 0), "
                                  "ifnull(corrected_at, 0) FROM clock_periods ORDER BY id"));
  Status st;
  while (list.Step(&st)) {
    ClockPeriod p;
    p.id = static_cast<uint32_t>(list.Int(0));
    p.boot_id = list.Text(1);
    p.offset_ms = list.Int(2);
    p.opened_at_ms = list.Int(3);
    p.readings = list.Int(4);
    p.first_ts_ms = list.Int(5);
    p.last_ts_ms = list.Int(6);
    p.corrected = list.Int(7) != 0;
    p.delta_ms = list.Int(8);
    p.corrected_at_ms = list.Int(9);
    periods->push_back(std::move(p));
  }
  return st;
}

Status MarkCorrected(Db* db, uint32_t id, int64_t delta_ms, int64_t now_ms, bool* changed) {
  *changed = false;
  Stmt upd;
  ES_RETURN_IF_ERROR(upd.Prepare(db,
                                 "UPDATE clock_periods SET delta_ms = ?, corrected_at = ? "
                                 "WHERE id = ? AND delta_ms IS NULL"));
  upd.Bind(1, delta_ms);
  upd.Bind(2, now_ms);
  upd.Bind(3, static_cast<int64_t>(id));
  ES_RETURN_IF_ERROR(upd.Run());
  if (db->changes() == 1) {
    *changed = true;
    return Status::Ok();
  }
  int64_t known = 0;
  ES_RETURN_IF_ERROR(db->QueryInt("SELECT count(*) FROM clock_periods WHERE id = " + std::to_string(id), &known));
  if (known == 0) return Status::NotFound("no clock period " + std::to_string(id));
  return Status::Ok();  // corrected before
}

Status CorrectionOf(Db* db, uint32_t period, TimeCorrection* correction) {
  Stmt row;
  ES_RETURN_IF_ERROR(row.Prepare(db,
                                 "SELECT delta_ms, corrected_at, opened_at, first_ts, last_ts FROM clock_periods "
                                 "WHERE id = ? AND delta_ms IS NOT NULL"));
  row.Bind(1, static_cast<int64_t>(period));
  Status st;
  if (!row.Step(&st)) {
    ES_RETURN_IF_ERROR(st);
    return Status::Corruption("clock period " + std::to_string(period) + " is not corrected");
  }
  const int64_t delta = row.Int(0);
  // The span is fixed once corrected: no reading stamped in the period can
  // pass what the untrusted clock read at the correction, also one
  // committed after it.
  int64_t from = row.Int(2), to = SaturatingSub(row.Int(1), delta);
  if (sqlite3_column_type(row.get(), 3) != SQLITE_NULL) from = std::min(from, row.Int(3));
  if (sqlite3_column_type(row.get(), 4) != SQLITE_NULL) to = std::max(to, row.Int(4));
  *correction = TimeCorrection{period, delta, from, std::max(from, to)};
  return Status::Ok();
}

Status LoadOwnOverlay(Db* db, TimeOverlay* overlay) {
  Stmt list;
  ES_RETURN_IF_ERROR(list.Prepare(db,
                                  "SELECT id, delta_ms, first_ts, last_ts FROM clock_periods "
                                  "WHERE delta_ms IS NOT NULL AND readings > 0"));
  Status st;
  while (list.Step(&st)) {
    overlay->Add(TimeCorrection{static_cast<uint32_t>(list.Int(0)), list.Int(1), list.Int(2), list.Int(3)});
  }
  return st;
}

Status KeepOriginCorrection(Db* db, int64_t origin_id, const TimeCorrection& c) {
  Stmt put;
  ES_RETURN_IF_ERROR(put.Prepare(db, "INSERT OR REPLACE INTO origin_time_corrections VALUES(?, ?, ?, ?, ?)"));
  put.Bind(1, origin_id);
  put.Bind(2, static_cast<int64_t>(c.period));
  put.Bind(3, c.delta_ms);
  put.Bind(4, c.from_ms);
  put.Bind(5, c.to_ms);
  return put.Run();
}

Status LoadOriginOverlays(Db* db, std::unordered_map<int64_t, TimeOverlay>* overlays) {
  overlays->clear();
  Stmt list;
  ES_RETURN_IF_ERROR(
      list.Prepare(db, "SELECT origin, period, delta_ms, from_ts, to_ts FROM origin_time_corrections"));
  Status st;
  while (list.Step(&st)) {
    (*overlays)[list.Int(0)].Add(
        TimeCorrection{static_cast<uint32_t>(list.Int(1)), list.Int(2), list.Int(3), list.Int(4)});
  }
  return st;
}

}  // namespace clock_period_table
}  // namespace edgesync

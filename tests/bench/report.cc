#include "tests/bench/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "platform/files.h"
#include "store/sqlite_util.h"

namespace edgesync::bench {

Report::Report(std::string part, std::string dir) : part_(std::move(part)), dir_(std::move(dir)) {
  if (dir_.empty()) {
    const char* env = std::getenv("EDGESYNC_BENCH_DIR");
    dir_ = env != nullptr ? env : "build/bench";
  }
}

void Report::Add(const std::string& name, double value, const std::string& unit,
                 const std::string& baseline_name, double baseline) {
  rows_.push_back({name, value, unit, baseline_name, baseline, baseline != 0 ? value / baseline : 0});
}

bool Report::Write() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows_) {
    out.push_back({{"name", r.name}, {"value", r.value}, {"unit", r.unit},
                   {"baseline_name", r.baseline_name}, {"baseline", r.baseline}, {"ratio", r.ratio}});
  }
  if (!MakeDirs(dir_).ok()) return false;
  std::ofstream f(dir_ + "/" + part_ + ".json");
  f << out.dump(2) << "\n";
  PrintTable(rows_);
  return static_cast<bool>(f);
}

void PrintTable(const std::vector<Row>& rows) {
  std::printf("%-44s %14s %-12s %-36s %14s %8s\n", "name", "value", "unit", "baseline_name", "baseline", "ratio");
  for (const auto& r : rows) {
    std::printf("%-44s %14.3f %-12s %-36s %14.3f %8.3f\n", r.name.c_str(), r.value, r.unit.c_str(),
                r.baseline_name.c_str(), r.baseline, r.ratio);
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

int64_t PagesInUse(const std::string& path) {
  Db db;
  if (!db.Open(path, SQLITE_OPEN_READONLY).ok()) return -1;
  int64_t pages = 0, free_pages = 0, page_size = 0;
  if (!db.QueryInt("PRAGMA page_count", &pages).ok() || !db.QueryInt("PRAGMA freelist_count", &free_pages).ok() ||
      !db.QueryInt("PRAGMA page_size", &page_size).ok()) {
    return -1;
  }
  return (pages - free_pages) * page_size;
}

int64_t StoreLastLsn(const std::string& path) {
  Db db;
  if (!db.Open(path, SQLITE_OPEN_READONLY).ok()) return 0;
  int64_t last = 0;
  if (!db.QueryInt("SELECT ifnull(max(last_lsn), 0) FROM chunks", &last).ok()) return 0;
  return last;
}

int64_t StoreCheckpoint(const std::string& path, const std::string& name) {
  Db db;
  if (!db.Open(path, SQLITE_OPEN_READONLY).ok()) return 0;
  Stmt stmt;
  if (!stmt.Prepare(&db, "SELECT value FROM checkpoints WHERE name = ?").ok()) return 0;
  stmt.Bind(1, std::string_view(name));
  Status status;
  return stmt.Step(&status) ? stmt.Int(0) : 0;
}

bool Quick() { return std::getenv("EDGESYNC_BENCH_QUICK") != nullptr; }

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

}  // namespace edgesync::bench

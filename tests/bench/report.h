// tests/bench/report.h: how every benchmark reports a figure, and the
// measurements of a store's size several of them take.
//
// Each figure is measured together with a baseline run in the same process
// invocation (same machine, same load), so the ratio means something even on
// a noisy machine. Rows go to <dir>/<part>.json; bench_report merges them.
#ifndef EDGESYNC_TESTS_BENCH_REPORT_H_
#define EDGESYNC_TESTS_BENCH_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace edgesync::bench {

struct Row {
  std::string name;
  double value = 0;
  std::string unit;
  std::string baseline_name;
  double baseline = 0;
  double ratio = 0;  // value / baseline
};

class Report {
 public:
  // dir defaults to $EDGESYNC_BENCH_DIR, else build/bench.
  explicit Report(std::string part, std::string dir = "");
  // ratio = value / baseline (0 when baseline is 0).
  void Add(const std::string& name, double value, const std::string& unit,
           const std::string& baseline_name, double baseline);
  // Writes <dir>/<part>.json and prints the rows; false on I/O failure.
  bool Write() const;
  const std::vector<Row>& rows() const { return rows_; }

 private:
  std::string part_;
  std::string dir_;
  std::vector<Row> rows_;
};

// Prints rows as an aligned table.
void PrintTable(const std::vector<Row>& rows);

// The p-quantile of v by rank (0.5: the median of several runs); -1 when
// v is empty.
double Percentile(std::vector<double> v, double p);
inline double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

// Bytes of the SQLite file's pages in use ((page_count - freelist_count) *
// page_size): what a store holds once its free pages are reused by new
// rows, as they are before the file grows. -1 if the file cannot be read.
int64_t PagesInUse(const std::string& path);

// The highest LSN a gateway store's commit chunks hold, read with a
// connection of its own (a fresh snapshot per call): 0 when none or when
// the file cannot be read. Plain SQL on the `chunks` table, which every
// schema since 4 has, so it also reads a previous build's store (whose
// schema this build's Store would refuse to open read-only).
int64_t StoreLastLsn(const std::string& path);
// The checkpoint `name` of a store (0 when absent), by the same plain SQL.
int64_t StoreCheckpoint(const std::string& path, const std::string& name);

// EDGESYNC_BENCH_QUICK is set: a smoke run that shortens the workload (its
// figures are no measurement).
bool Quick();

// Bytes of a file (0 when it is missing).
int64_t FileBytes(const std::string& path);
// Bytes a SQLite store takes on disk: its file and its WAL.
inline int64_t StoreFileBytes(const std::string& path) { return FileBytes(path) + FileBytes(path + "-wal"); }

}  // namespace edgesync::bench

#endif  // EDGESYNC_TESTS_BENCH_REPORT_H_

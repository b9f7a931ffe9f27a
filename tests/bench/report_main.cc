// bench_report DIR: merges DIR/<part>.json files into DIR/results.json (one
// JSON array of {name, value, unit, baseline_name, baseline, ratio}) and
// prints the table.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/bench/report.h"

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "build/bench";
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".json" && n != "results.json") files.push_back(n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  nlohmann::json all = nlohmann::json::array();
  std::vector<edgesync::bench::Row> rows;
  for (const auto& f : files) {
    std::ifstream in(dir + "/" + f);
    nlohmann::json part = nlohmann::json::parse(in, nullptr, false);
    if (!part.is_array()) {
      std::fprintf(stderr, "bench_report: %s is not a JSON array, skipped\n", f.c_str());
      continue;
    }
    for (const auto& r : part) {
      all.push_back(r);
      rows.push_back({r.value("name", ""), r.value("value", 0.0), r.value("unit", ""),
                      r.value("baseline_name", ""), r.value("baseline", 0.0), r.value("ratio", 0.0)});
    }
  }
  std::ofstream out(dir + "/results.json");
  out << all.dump(2) << "\n";
  std::printf("\n== %s/results.json ==\n", dir.c_str());
  edgesync::bench::PrintTable(rows);
  return rows.empty() ? 1 : 0;
}

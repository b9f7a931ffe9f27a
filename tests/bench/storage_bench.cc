// bench_storage: what the store costs an SD card on a real gateway, paced as
// sensors publish (not a burst), and how fast its compressed layout answers
// a person's query.
//   1. The reference workload (tests/support/workload.h: 1000 devices x 8
//      metrics at 1 Hz) as 8,000 single-reading MQTT messages/s for 60 s
//      through the local Mosquitto into the edgesync gateway process with
//      its default config: bytes written to storage per reading (/proc/PID/io
//      write_bytes of the gateway: journal, WAL, database, checkpoints),
//      bytes on disk per retained reading (store file and WAL at the end),
//      readings committed/s against a do-nothing subscriber receiving the
//      same paced load in the same run, and the gateway's peak RSS. The
//      figures' baselines are the targets of the design (ARCHITECTURE.md's
//      budget) where no same-run baseline exists; bench_retention compares
//      the layout against raw SQLite rows.
//   2. Query of one device and metric over 24 h at 1 Hz in a store of >= 50M
//      readings (73 devices x 8 metrics x 86,400 s), built directly through
//      Store::AppendReadings in groups of 2,000: the median of 5 queries,
//      against the 50 ms target, first in commit chunks, then after
//      compacting the whole store (store/sqlite_store_compact.cc) as the
//      retention worker does: the same query before compaction is the
//      baseline; also the pages in use per reading before and after, the
//      bytes compaction writes to storage per reading (/proc/self/io: WAL
//      and checkpoints) and its longest step against the longest append.
//      Each query's wall time is reported, and the querying thread's CPU
//      time (CLOCK_THREAD_CPUTIME_ID) beside it: on a loaded shared machine
//      wall time mostly measures the wait for a core, CPU time what the
//      query itself costs.
//   3. The same one-series query over 1 h on a gateway whose read view holds
//      another gateway's readings of that hour (73 devices x 8 metrics at
//      1 Hz, 2.1M entries, applied in feed pages of 5,000), against the same
//      query on the same store before the read view was applied: what the
//      read view adds to a local device's query (thread CPU, median of 5).
// With EDGESYNC_BENCH_PREVIOUS=<a previous build's edgesync> (make
// bench-previous) part 1's runs are made again with both programs, and
// `edgesync query` of each runs on the store its paced run left (one series,
// and one device's 8 series; median of 5, alternating).
// EDGESYNC_BENCH_QUICK=1 shortens all three (a smoke run, not a figure).
// EDGESYNC_BENCH_QUERY_ONLY=1 skips part 1 (its rows are left out);
// EDGESYNC_BENCH_PACED_ONLY=1 runs part 1 alone; EDGESYNC_BENCH_LOW_RATE_ONLY=1
// only its runs at 100 messages/s.
// EDGESYNC_BENCH_QUERY_STORE=DIR keeps part 2's stores in DIR between runs
// (query-chunks.db in commit chunks, query.db compacted): a run that finds
// both measures only the queries, and leaves out compaction's rows.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "platform/files.h"
#include "store/store.h"
#include "tests/bench/report.h"
#include "tests/bench/subscriber.h"
#include "tests/support/broker.h"
#include "tests/support/process.h"
#include "tests/support/workload.h"

namespace edgesync {
namespace {

using Steady = std::chrono::steady_clock;

constexpr int kDevices = 1000;
constexpr double kRate = 8000;  // messages/s, one reading each

// The reference workload's messages (`devices` x 8 a round) at `rate`
// messages/s.
bool StartPublisher(test::Process* p, const test::Broker& broker, const std::string& dir, const std::string& id,
                    int rounds, int devices = kDevices, double rate = kRate) {
  return p->Start({EDGESYNC_PUBLISHER, broker.uri(), id, std::to_string(devices), std::to_string(rounds), "dev-",
                   "1780000000000", std::to_string(rate), "reference"},
                  dir + "/" + id + ".log");
}

// A subscriber that only counts, receiving the same paced load.
double PlainSubscriberRate(const test::Broker& broker, const std::string& dir, int rounds) {
  test::Process pub;
  double rate = bench::CountingSubscriberRate(broker.uri(), int64_t{kDevices} * 8 * rounds,
                                              [&] { return StartPublisher(&pub, broker, dir, "pub-baseline", rounds); });
  pub.Wait(10000);
  return rate;
}

// `program query -c config ARGS...` as a user runs it, on the store a paced
// run left: wall milliseconds, or -1 if it failed.
double CliQueryMs(const std::string& program, const std::string& config, const std::vector<std::string>& args) {
  std::vector<std::string> argv{program, "query", "-c", config};
  argv.insert(argv.end(), args.begin(), args.end());
  test::Process p;
  const auto start = std::chrono::steady_clock::now();
  if (!p.Start(argv, "/dev/null")) return -1;
  if (p.Wait(600000) != 0) return -1;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// The medians of five runs of the same query by two programs, each on its
// own store, alternating so both see the same load. {-1, -1} on a failure.
std::pair<double, double> CliQueryMedians(const std::string& program_a, const std::string& config_a,
                                          const std::string& program_b, const std::string& config_b,
                                          const std::vector<std::string>& args) {
  std::vector<double> a, b;
  for (int i = 0; i < 5; ++i) {
    a.push_back(CliQueryMs(program_a, config_a, args));
    b.push_back(CliQueryMs(program_b, config_b, args));
  }
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a.front() < 0 || b.front() < 0) return {-1, -1};
  return {a[2], b[2]};
}

struct PacedRun {
  double rate = 0;
  double written_per_reading = 0;
  double disk_per_reading = 0;
  double peak_rss_mib = 0;
};

// The default config: only the ids, paths and the broker are set, and the
// lines `store` and `ingest` in those tables.
// program: the gateway binary (this build's, or a previous build's for the
// comparison rows).
// runtime_dir: "" = the status file and the intake journal in the data
// directory (the default); else both there, as the Pi config puts them in
// /run/edgesync (a tmpfs: the caller gives one).
PacedRun GatewayPaced(const test::Broker& broker, const std::string& dir, int rounds, const std::string& name,
                      const std::string& store, const std::string& ingest, int devices = kDevices,
                      double rate = kRate, const std::string& program = EDGESYNC_BINARY,
                      const std::string& runtime_dir = "") {
  PacedRun run;
  const int64_t total = int64_t{devices} * 8 * rounds;
  const std::string data = dir + "/" + name + "-data";
  const std::string config = dir + "/" + name + ".toml";
  const std::string status = (runtime_dir.empty() ? data : runtime_dir) + "/status.json";
  test::WriteAll(config, "[gateway]\nid = \"bench\"\ndata_dir = \"" + data + "\"\nstatus_file = \"" + status +
                             "\"\n[store]\n" + store + "[ingest]\nbroker_uri = \"" + broker.uri() +
                             "\"\nclient_id = \"edgesync-" + name + "\"\n" +
                             (runtime_dir.empty() ? "" : "journal_dir = \"" + runtime_dir + "\"\n") + ingest);
  test::Process gw;
  if (!gw.Start({program, "gateway", "--config", config}, dir + "/" + name + ".log")) return run;
  test::WaitFor([&] {
    std::string s;
    return ReadFile(status, &s).ok() && s.find("\"connected\": true") != std::string::npos;
  }, 30000);
  const std::string store_path = data + "/store.db";
  const uint64_t written_before = ReadProcessStats(gw.pid()).write_bytes;
  test::Process pub;
  auto t0 = Steady::now();
  if (!StartPublisher(&pub, broker, dir, "pub-" + name, rounds, devices, rate)) return run;
  // Done once the last LSN is committed; plain SQL, as the store may be of
  // a previous build's schema.
  bool done = test::WaitFor([&] { return bench::StoreLastLsn(store_path) >= total; }, 600000);
  double secs = std::chrono::duration<double>(Steady::now() - t0).count();
  ProcessStats ps = ReadProcessStats(gw.pid());
  pub.Wait(10000);
  gw.Stop();
  if (!done) return run;
  run.rate = static_cast<double>(total) / secs;
  run.written_per_reading = static_cast<double>(ps.write_bytes - written_before) / static_cast<double>(total);
  run.peak_rss_mib = static_cast<double>(ps.peak_rss_bytes) / 1048576.0;
  // After a clean stop the WAL is checkpointed into the file.
  run.disk_per_reading =
      static_cast<double>(bench::StoreFileBytes(store_path)) / static_cast<double>(total);
  return run;
}

struct QueryTime {
  double wall_ms = -1;  // median of the queries
  double cpu_ms = -1;   // the querying thread's CPU time, median
};

struct QueryFigures {
  int64_t readings = 0;
  QueryTime chunks;     // the commit-chunk layout (before compaction)
  QueryTime compacted;  // after compaction
  QueryTime compacted_cold;  // the same, the page cache dropped first (root only; else wall_ms -1)
  bool compaction_measured = false;  // false when both stores were reused
  double compact_s = 0;       // compaction's time over the whole store
  double in_use_before = 0;   // bytes of pages in use per reading
  double in_use_after = 0;
  double compact_written = 0;  // bytes compaction wrote to storage per reading (/proc/self/io)
  int64_t longest_step_ms = 0;
  double longest_append_ms = 0;  // of the 2,000-reading commits that built the store
};

double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The medians of 5 one-device-one-metric queries over 24 h.
QueryTime MedianQueryMs(Store* store, test::SensorWorkload* w, int devices, int64_t start, int64_t seconds) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < 5; ++i) {
    QueryRequest q;
    q.device_id = w->DeviceId(i % devices);
    q.metric = "temperature";
    q.from_ms = start;
    q.to_ms = start + seconds * 1000;
    q.limit = 100000;
    std::vector<QueryRow> rows;
    const double c0 = ThreadCpuMs();
    auto q0 = Steady::now();
    Status st = store->Query(q, &rows);
    wall.push_back(std::chrono::duration<double, std::milli>(Steady::now() - q0).count());
    cpu.push_back(ThreadCpuMs() - c0);
    if (!st.ok() || static_cast<int64_t>(rows.size()) != seconds) {
      std::fprintf(stderr, "bench_storage: query gave %zu rows (%s), expected %lld\n", rows.size(),
                   st.ToString().c_str(), static_cast<long long>(seconds));
      return QueryTime{};
    }
  }
  return QueryTime{bench::Median(wall), bench::Median(cpu)};
}

// Builds the store of >= 50M readings in commit chunks at o.path.
bool BuildQueryStore(const StoreOptions& o, test::SensorWorkload* w, int64_t total, QueryFigures* f) {
  std::unique_ptr<Store> store;
  if (!Store::Open(o, &store).ok()) return false;
  std::vector<Reading> group;
  AppendResult r;
  auto t0 = Steady::now();
  for (int64_t done = 0; done < total;) {
    group = w->Take(static_cast<size_t>(std::min<int64_t>(2000, total - done)));
    done += static_cast<int64_t>(group.size());
    auto a0 = Steady::now();
    Status st = store->AppendReadings(group, &r);
    f->longest_append_ms =
        std::max(f->longest_append_ms, std::chrono::duration<double, std::milli>(Steady::now() - a0).count());
    if (!st.ok()) return false;
  }
  std::printf("query store: %lld readings appended in %.1f s, %.1f bytes/reading on disk\n",
              static_cast<long long>(total), std::chrono::duration<double>(Steady::now() - t0).count(),
              static_cast<double>(bench::StoreFileBytes(o.path)) / static_cast<double>(total));
  return true;
}

// Compacts the whole store at o.path as the retention worker runs it, span
// by span, with compaction's own cost.
bool CompactQueryStore(const StoreOptions& o, int64_t total, QueryFigures* f) {
  std::unique_ptr<Store> store;
  Status st = Store::Open(o, &store);
  if (st.ok()) st = store->AckUpstream("eu", store->LastLsn());
  if (!st.ok()) return false;
  ::sync();
  const uint64_t written0 = ReadProcessStats().write_bytes;
  auto c0 = Steady::now();
  CompactResult sum;
  for (;;) {
    CompactResult step;
    auto s0 = Steady::now();
    st = store->CompactStep(&step);
    f->longest_step_ms = std::max<int64_t>(
        f->longest_step_ms, std::chrono::duration_cast<std::chrono::milliseconds>(Steady::now() - s0).count());
    if (!st.ok()) {
      std::fprintf(stderr, "bench_storage: compaction: %s\n", st.ToString().c_str());
      return false;
    }
    sum.Add(step);
    if (step.spans == 0) break;
  }
  f->compact_s = std::chrono::duration<double>(Steady::now() - c0).count();
  store.reset();  // closing checkpoints the WAL into the file
  ::sync();
  f->compact_written = static_cast<double>(ReadProcessStats().write_bytes - written0) / static_cast<double>(total);
  f->compaction_measured = true;
  std::printf("compaction: %lld spans, %lld readings, blobs %lld -> %lld bytes, %.1f s, longest step %lld ms, "
              "%.2f bytes written/reading\n",
              static_cast<long long>(sum.spans), static_cast<long long>(sum.readings),
              static_cast<long long>(sum.bytes_before), static_cast<long long>(sum.bytes_after), f->compact_s,
              static_cast<long long>(f->longest_step_ms), f->compact_written);
  return true;
}

// Part 3: a local device's hour, without and then with another gateway's
// hour in the read view.
struct ViewFigures {
  int64_t view_entries = 0;
  QueryTime without_view, with_view;
};

ViewFigures ViewQueryMs(const std::string& dir) {
  ViewFigures f;
  const int seconds = bench::Quick() ? 600 : 3600;
  const int other_devices = bench::Quick() ? 8 : 73;
  StoreOptions o;
  o.path = dir + "/view.db";
  o.gateway_id = "gw-view";
  o.open_check = StoreOptions::OpenCheck::kNone;
  std::unique_ptr<Store> store;
  if (!Store::Open(o, &store).ok()) return f;
  const int64_t start = 1780000000000;
  test::SensorWorkload local(4, start);
  AppendResult r;
  for (int64_t done = 0; done < int64_t{4} * 8 * seconds; done += 2000) {
    if (!store->AppendReadings(local.Take(2000), &r).ok()) return f;
  }
  f.without_view = MedianQueryMs(store.get(), &local, 4, start, seconds);
  test::SensorWorkload other(other_devices, start, 1000, 2);
  const Origin origin{"gw-other", "0123456789abcdef0123456789abcdef"};
  const int64_t total = int64_t{other_devices} * 8 * seconds;
  std::vector<RemoteEntry> page;
  for (int64_t done = 0; done < total; done += 5000) {
    page.clear();
    for (Reading& x : other.Take(5000)) {
      x.device_id = "other-" + x.device_id;
      ChangeEntry e;
      e.lsn = static_cast<uint64_t>(++f.view_entries);
      e.reading = std::move(x);
      page.push_back(RemoteEntry{origin, e.lsn, std::move(e)});
    }
    int64_t applied = 0;
    if (!store->ApplyRemote(page, &applied).ok()) return f;
  }
  f.with_view = MedianQueryMs(store.get(), &local, 4, start, seconds);
  return f;
}

QueryTime QueryStore(const StoreOptions& o, test::SensorWorkload* w, int devices, int64_t start, int64_t seconds) {
  std::unique_ptr<Store> store;
  if (!Store::Open(o, &store).ok()) return QueryTime{};
  return MedianQueryMs(store.get(), w, devices, start, seconds);
}

// The 24 h query in a store of >= 50M readings, in commit chunks and then
// after compacting the whole store (acknowledged, compact_after_ms 0, the
// default span), with compaction's own cost.
QueryFigures QueryMs(const std::string& dir) {
  QueryFigures f;
  const int devices = bench::Quick() ? 4 : 73;
  const int64_t seconds = bench::Quick() ? 3600 : 86400;
  const char* keep = std::getenv("EDGESYNC_BENCH_QUERY_STORE");
  const std::string store_dir = keep != nullptr ? keep : dir;
  if (keep != nullptr && !MakeDirs(store_dir).ok()) return f;
  StoreOptions chunks;
  chunks.path = store_dir + (keep != nullptr ? "/query-chunks.db" : "/query.db");
  chunks.gateway_id = "gw-query";
  chunks.open_check = StoreOptions::OpenCheck::kNone;
  chunks.compact_after_ms = 0;  // nothing is acknowledged while the store is built: nothing compacts before
  if (bench::Quick()) chunks.compact_span_readings = 16384;  // a smoke run's small store still compacts
  StoreOptions compacted = chunks;
  compacted.path = store_dir + "/query.db";
  const int64_t start = 1780000000000;
  test::SensorWorkload w(devices, start);
  const int64_t total = int64_t{devices} * 8 * seconds;
  const bool reuse = keep != nullptr && FileExists(chunks.path) && FileExists(compacted.path);
  if (reuse) {
    std::printf("query store: reusing %s and %s\n", chunks.path.c_str(), compacted.path.c_str());
  } else {
    std::filesystem::remove(chunks.path);
    std::filesystem::remove(compacted.path);
    if (!BuildQueryStore(chunks, &w, total, &f)) return f;
  }
  f.readings = total;
  f.chunks = QueryStore(chunks, &w, devices, start, seconds);
  f.in_use_before = static_cast<double>(bench::PagesInUse(chunks.path)) / static_cast<double>(total);
  if (!reuse) {
    std::error_code ec;
    if (compacted.path != chunks.path && !std::filesystem::copy_file(chunks.path, compacted.path, ec)) return f;
    if (!CompactQueryStore(compacted, total, &f)) return f;
  }
  f.in_use_after = static_cast<double>(bench::PagesInUse(compacted.path)) / static_cast<double>(total);
  f.compacted = QueryStore(compacted, &w, devices, start, seconds);
  // From disk: the kernel's page cache dropped before the queries (as after
  // a reboot or hours of other work), so every page they touch is read.
  // Needs root; a virtual machine's host may still cache its disk.
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  if (drop && (drop << "3\n").flush()) {
    drop.close();
    f.compacted_cold = QueryStore(compacted, &w, devices, start, seconds);
  }
  return f;
}

}  // namespace
}  // namespace edgesync

int main() {
  using namespace edgesync;
  test::TempDir dir;
  bench::Report report("storage");
  const bool query_only = std::getenv("EDGESYNC_BENCH_QUERY_ONLY") != nullptr;
  const bool low_only = std::getenv("EDGESYNC_BENCH_LOW_RATE_ONLY") != nullptr;
  PacedRun run;
  if (!query_only) {
    // Each run on its own broker, so an earlier gateway's session does not
    // queue this run's messages.
    auto paced = [&](const char* name, const std::string& store, const std::string& ingest, int rounds, int devices,
                     double rate, const std::string& program = EDGESYNC_BINARY, const std::string& runtime_dir = "") {
      test::Broker own(dir.File(std::string("broker-") + name));
      PacedRun r;
      if (own.Start()) {
        r = GatewayPaced(own, dir.path(), rounds, name, store, ingest, devices, rate, program, runtime_dir);
      }
      std::printf("paced %s: gateway %.0f/s, %.1f bytes written/reading, %.2f on disk, peak RSS %.1f MiB\n", name,
                  r.rate, r.written_per_reading, r.disk_per_reading, r.peak_rss_mib);
      return r;
    };
    const int rounds = bench::Quick() ? 5 : 60;  // seconds of the reference workload
    const char* kPlain = "plain subscriber received/s (paced 8,000 msg/s)";
    bool failed = false;
    if (!low_only) {
      test::Broker broker(dir.File("broker"));
      if (!broker.Start()) {
        std::fprintf(stderr, "bench_storage: mosquitto did not start\n");
        return 1;
      }
      const double plain = PlainSubscriberRate(broker, dir.path(), rounds);
      run = GatewayPaced(broker, dir.path(), rounds, "paced", "", "");
      std::printf(
          "paced: plain %.0f/s, gateway %.0f/s, %.1f bytes written/reading, %.2f on disk, peak RSS %.1f MiB\n",
          plain, run.rate, run.written_per_reading, run.disk_per_reading, run.peak_rss_mib);
      // store.sync = "full": every commit and every journal record is
      // synced, so it falls behind the paced load (the broker queues the
      // rest): 2 s of the workload (16,000 messages) keep the run short.
      // The commit groups before they grew (batch_max 1,000, 250 ms above
      // the busy rate), for the bytes a larger group saves.
      const PacedRun former = paced("former-groups", "", "batch_max = 1000\nbatch_delay_ms = 250\n", rounds,
                                    kDevices, kRate);
      const PacedRun full = paced("full", "sync = \"full\"\n", "", std::min(rounds, 2), kDevices, kRate);
      report.Add("gateway committed/s (paced 8,000 msg/s, default config)", run.rate, "readings/s", kPlain, plain);
      report.Add("gateway bytes written/reading (paced 8,000 msg/s, /proc/PID/io)", run.written_per_reading,
                 "bytes", "target", 30);
      report.Add("gateway bytes on disk/retained reading (paced run, local readings)", run.disk_per_reading,
                 "bytes", "target", 4);
      report.Add("gateway peak RSS (paced 8,000 msg/s)", run.peak_rss_mib, "MiB", "target", 20);
      report.Add("gateway bytes written/reading, default config (paced 8,000 msg/s)", run.written_per_reading,
                 "bytes", "commit groups of batch_max = 1000, batch_delay_ms = 250, same run",
                 former.written_per_reading);
      report.Add("gateway peak RSS, default config (paced 8,000 msg/s)", run.peak_rss_mib, "MiB",
                 "commit groups of batch_max = 1000, batch_delay_ms = 250, same run", former.peak_rss_mib);
      report.Add("gateway bytes written/reading, store.sync = full (paced 8,000 msg/s)", full.written_per_reading,
                 "bytes", "default config (store.sync = normal), same run", run.written_per_reading);
      report.Add("gateway committed/s, store.sync = full (paced 8,000 msg/s)", full.rate, "readings/s", kPlain,
                 plain);
      failed = former.rate <= 0 || full.rate <= 0;
    }
    // At 100 messages/s: 13 devices x 8 metrics, each series once a second
    // (a small gateway's steady state: every series seen before), for 40 s
    // each: the Pi config (firmware-config/deb/edgesync.toml: sync =
    // "commit", ingest.batch_delay_ms = 1000), the same with sync = "full",
    // the default config, and the default config with the commit groups of
    // before they followed the rate (batch_delay_ms = 10: a commit per
    // reading or two at this rate).
    const int low_devices = 13;
    const int low_rounds = bench::Quick() ? 5 : 40;
    // The Pi config keeps its status file and intake journal in
    // /run/edgesync (a tmpfs); here a directory of /dev/shm stands in.
    test::TempDir shm("/dev/shm");
    auto pi_config = [&](const char* name, const char* sync, const std::string& program = EDGESYNC_BINARY) {
      const std::string runtime = shm.File(name);
      return paced(name, std::string("sync = \"") + sync + "\"\n", "batch_delay_ms = 1000\n", low_rounds, low_devices,
                   100, program, runtime);
    };
    const PacedRun pi = pi_config("pi-100", "commit");
    // sync = "full" with the journal on the card, where it syncs each record.
    const PacedRun pi_full =
        paced("pi-full-100", "sync = \"full\"\n", "batch_delay_ms = 1000\n", low_rounds, low_devices, 100);
    const PacedRun low = paced("default-100", "", "", low_rounds, low_devices, 100);
    const PacedRun fixed = paced("fixed-10ms-100", "", "batch_delay_ms = 10\n", low_rounds, low_devices, 100);
    report.Add("gateway bytes written/reading, default config, 100 msg/s", low.written_per_reading, "bytes",
               "fixed 10 ms commit groups (the former default), same run", fixed.written_per_reading);
    report.Add("gateway bytes written/reading, default config, 100 msg/s, against the target",
               low.written_per_reading, "bytes", "target", 400);
    report.Add("gateway bytes written/reading, Pi config (sync = commit, batch_delay_ms = 1000, status and journal "
               "on tmpfs), 100 msg/s",
               pi.written_per_reading, "bytes", "target", 100);
    report.Add("gateway bytes written/reading, Pi config against sync = full, 100 msg/s",
               pi.written_per_reading, "bytes", "the same with sync = full, same run", pi_full.written_per_reading);
    report.Add("gateway bytes on disk/retained reading, default config, 100 msg/s", low.disk_per_reading, "bytes",
               "the same at 8,000 msg/s, same run", low_only ? 0 : run.disk_per_reading);
    // EDGESYNC_BENCH_PREVIOUS=<a previous build's edgesync> (make
    // bench-previous): the same runs with that program, as the baseline of
    // rows that say whether this build made anything worse. Each run on a
    // broker of its own, one after the other, so both see the same load.
    if (const char* previous = std::getenv("EDGESYNC_BENCH_PREVIOUS")) {
      const std::string prev(previous);
      const char* kPrev = "the previous binary, same run";
      if (!low_only) {
        const PacedRun now = paced("paced-again", "", "", rounds, kDevices, kRate);
        const PacedRun before = paced("paced-previous", "", "", rounds, kDevices, kRate, prev);
        report.Add("gateway committed/s (paced 8,000 msg/s) against the previous binary", now.rate, "readings/s",
                   kPrev, before.rate);
        report.Add("gateway bytes written/reading (paced 8,000 msg/s) against the previous binary",
                   now.written_per_reading, "bytes", kPrev, before.written_per_reading);
        report.Add("gateway bytes on disk/retained reading (paced 8,000 msg/s) against the previous binary",
                   now.disk_per_reading, "bytes", kPrev, before.disk_per_reading);
        report.Add("gateway peak RSS (paced 8,000 msg/s) against the previous binary", now.peak_rss_mib, "MiB",
                   kPrev, before.peak_rss_mib);
        failed = failed || now.rate <= 0 || before.rate <= 0;
        // `edgesync query` on the store each program left (uncompacted:
        // compaction waits for older data): one device and metric over the
        // run, and every metric of that device (rows as JSON lines).
        test::SensorWorkload names(kDevices, 1780000000000);
        const Reading first = names.Next();
        const std::vector<std::string> window{"--from", "1780000000000", "--to", "1790000000000"};
        std::vector<std::string> one{"--device", first.device_id, "--metric", first.metric};
        one.insert(one.end(), window.begin(), window.end());
        std::vector<std::string> all{"--device", first.device_id, "--limit", "1000000"};
        all.insert(all.end(), window.begin(), window.end());
        const std::string config_now = dir.File("paced-again.toml"), config_before = dir.File("paced-previous.toml");
        const auto one_ms = CliQueryMedians(EDGESYNC_BINARY, config_now, prev, config_before, one);
        const auto all_ms = CliQueryMedians(EDGESYNC_BINARY, config_now, prev, config_before, all);
        std::printf("edgesync query, this build / previous: one series %.1f / %.1f ms, one device %.1f / %.1f ms\n",
                    one_ms.first, one_ms.second, all_ms.first, all_ms.second);
        report.Add("edgesync query, one device+metric of the paced run, against the previous binary (median of 5)",
                   one_ms.first, "ms", kPrev, one_ms.second);
        report.Add("edgesync query, one device (8 metrics) of the paced run, against the previous binary (median of 5)",
                   all_ms.first, "ms", kPrev, all_ms.second);
        failed = failed || one_ms.first < 0 || all_ms.first < 0;
      }
      const PacedRun low_before = paced("default-100-previous", "", "", low_rounds, low_devices, 100, prev);
      const PacedRun pi_before = pi_config("pi-100-previous", "commit", prev);
      report.Add("gateway bytes written/reading, default config, 100 msg/s, against the previous binary",
                 low.written_per_reading, "bytes", kPrev, low_before.written_per_reading);
      report.Add("gateway bytes written/reading, Pi config, 100 msg/s, against the previous binary",
                 pi.written_per_reading, "bytes", kPrev, pi_before.written_per_reading);
      failed = failed || low_before.rate <= 0 || pi_before.rate <= 0;
    }
    if (failed || pi.rate <= 0 || pi_full.rate <= 0 || low.rate <= 0 || fixed.rate <= 0) {
      run.rate = 0;  // a run failed
    } else if (low_only) {
      run.rate = low.rate;
    }
    if (low_only) return report.Write() && run.rate > 0 ? 0 : 1;
  }
  if (std::getenv("EDGESYNC_BENCH_PACED_ONLY") != nullptr) return report.Write() && run.rate > 0 ? 0 : 1;
  const QueryFigures q = QueryMs(dir.path());
  const std::string store_name = "(store of " + std::to_string(q.readings / 1000000) + "M readings)";
  std::printf("query: %.1f ms (CPU %.1f ms) in commit chunks, %.1f ms (CPU %.1f ms) compacted, over %lld readings\n",
              q.chunks.wall_ms, q.chunks.cpu_ms, q.compacted.wall_ms, q.compacted.cpu_ms,
              static_cast<long long>(q.readings));
  report.Add("query one device+metric over 24 h, compacted " + store_name, q.compacted.wall_ms, "ms",
             "the same query before compaction (commit chunks)", q.chunks.wall_ms);
  report.Add("query one device+metric over 24 h, compacted, against the target", q.compacted.wall_ms, "ms", "target",
             50);
  if (q.compacted_cold.wall_ms >= 0) {
    std::printf("query from disk (page cache dropped): %.1f ms (CPU %.1f ms)\n", q.compacted_cold.wall_ms,
                q.compacted_cold.cpu_ms);
    report.Add("query one device+metric over 24 h, compacted, page cache dropped first", q.compacted_cold.wall_ms,
               "ms", "target", 50);
  }
  report.Add("query one device+metric over 24 h, compacted, querying thread CPU " + store_name, q.compacted.cpu_ms,
             "ms", "target (wall)", 50);
  report.Add("query one device+metric over 24 h, in commit chunks, querying thread CPU " + store_name,
             q.chunks.cpu_ms, "ms", "the same query's wall time", q.chunks.wall_ms);
  report.Add("store pages in use per reading after compaction " + store_name, q.in_use_after, "bytes",
             "before compaction (commit chunks of 2,000)", q.in_use_before);
  const ViewFigures v = ViewQueryMs(dir.path());
  std::printf("query of 1 h: %.1f ms (CPU %.1f ms), with %lld read-view entries of another gateway in that hour: "
              "%.1f ms (CPU %.1f ms)\n",
              v.without_view.wall_ms, v.without_view.cpu_ms, static_cast<long long>(v.view_entries),
              v.with_view.wall_ms, v.with_view.cpu_ms);
  char view_name[160];
  std::snprintf(view_name, sizeof view_name,
                "query one local device+metric over 1 h, read view holding another gateway's %.1fM readings of "
                "that hour, thread CPU",
                static_cast<double>(v.view_entries) / 1e6);
  report.Add(view_name, v.with_view.cpu_ms, "ms", "the same query before the read view was applied",
             v.without_view.cpu_ms);
  if (q.compaction_measured) {
    if (!query_only) {
      report.Add("compaction: bytes written to storage per reading compacted (/proc/self/io)", q.compact_written,
                 "bytes", "gateway bytes written/reading (paced run, no compaction)", run.written_per_reading);
    }
    report.Add("compaction: longest step (span of 131,072 readings)", static_cast<double>(q.longest_step_ms), "ms",
               "longest 2,000-reading append building the store", q.longest_append_ms);
  }
  const bool ok = (query_only || run.rate > 0) && q.compacted.wall_ms >= 0 && q.chunks.wall_ms >= 0 &&
                  v.with_view.wall_ms >= 0;
  return report.Write() && ok ? 0 : 1;
}

// es_power_cut_writer: the gateway's ingest and store, wired as the gateway
// wires them (agent/options.h from a Config), fed a numbered stream of
// sensor messages, for the power-cut test (tests/integration/
// power_cut_test.cc) to run under the power-cut layer
// (tests/powercut/power_cut_fs.cc, LD_PRELOAD).
//
//   es_power_cut_writer DATA_DIR REPORT SYNC BOOT_ID FIRST_ID COUNT T0_MS
//   es_power_cut_writer DATA_DIR REPORT SYNC BOOT_ID dump
//
// BOOT_ID stands for the machine's boot id (Clock::BootId): a power cut is a
// reboot, so the test gives every start after a cut a new one; the clocks
// are the system's.
//
// Message k goes to sensors/dev-<k % 20>/m as {"v": k, "t": <T0_MS/1000 +
// k/20 s>}, so each reading names its message. Messages are given to
// Ingest::OnMessage one after another, 0.2 ms apart, as the MQTT receive
// thread does; the
// first one is marked as a redelivery (DUP), as the broker marks a message
// it sent before the cut and never got a PUBACK for. Lines appended to
// REPORT (outside DATA_DIR, never cut):
//   "open ok" once the store is open and PRAGMA integrity_check says ok,
//   "open error <message>" otherwise (exit 3);
//   "A <k>" once OnMessage(k) returned: the PUBACK would now go out;
//   "C <lsn> <k>" for each reading a reader of the change log (as the
//   uplink reads it) has seen committed;
//   "done" after COUNT messages and a clean stop.
// dump: opens the store, commits what the intake journal holds (as a start
// does), stops, and writes "R <lsn> <k>" for every reading in the log.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/ingest/ingest.h"
#include "agent/options.h"
#include "firmware-config/config.h"
#include "platform/clock.h"
#include "store/store.h"

namespace {

int report_fd = -1;

void Line(const std::string& line) {
  std::string l = line + "\n";
  ssize_t n = ::write(report_fd, l.data(), l.size());  // O_APPEND: one line per call
  (void)n;
}

std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  std::string result;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    result = "cannot open";
  } else {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) != SQLITE_OK) {
      result = sqlite3_errmsg(db);
    } else {
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char* t = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
        result += (result.empty() ? "" : "; ") + std::string(t ? t : "");
      }
      sqlite3_finalize(stmt);
    }
  }
  sqlite3_close(db);
  return result;
}

int64_t MessageOf(const edgesync::ChangeEntry& e) { return static_cast<int64_t>(e.reading.value); }

class BootClock : public edgesync::Clock {
 public:
  explicit BootClock(std::string boot_id) : boot_id_(std::move(boot_id)) {}
  int64_t MonotonicNanos() const override { return edgesync::SystemClock()->MonotonicNanos(); }
  int64_t WallMillis() const override { return edgesync::SystemClock()->WallMillis(); }
  std::string BootId() const override { return boot_id_; }

 private:
  std::string boot_id_;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace edgesync;
  const bool dump = argc == 6 && std::string(argv[5]) == "dump";
  if (argc != 8 && !dump) {
    std::fprintf(stderr, "usage: es_power_cut_writer DATA_DIR REPORT SYNC BOOT_ID FIRST_ID COUNT T0_MS | ... dump\n");
    return 1;
  }
  report_fd = ::open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (report_fd < 0) return 2;

  Config config;
  config.gateway_id = "powercut";
  config.data_dir = argv[1];
  config.store_sync = argv[3];
  BootClock clock(argv[4]);
  StoreOptions so = StoreOptionsFromConfig(config);
  so.clock = &clock;
  std::unique_ptr<Store> store;
  Status st = Store::Open(so, &store);
  if (st.ok()) {
    std::string check = IntegrityCheck(so.path);
    if (check != "ok") st = Status::Corruption("integrity_check: " + check);
  }
  if (!st.ok()) {
    Line("open error " + st.ToString());
    return 3;
  }
  Line("open ok");

  StoreSink sink(store.get());
  Ingest ingest(IngestOptionsFromConfig(config), &sink, &clock);
  st = ingest.Init();
  if (st.ok()) st = ingest.Start();  // commits what the journal holds past the store's checkpoint
  if (!st.ok()) {
    Line("open error ingest: " + st.ToString());
    return 3;
  }

  if (dump) {
    ingest.Stop();
    std::vector<ChangeEntry> entries;
    uint64_t after = 0;
    do {
      entries.clear();
      st = store->ReadLog(after, 10000, &entries);
      if (!st.ok()) {
        Line("open error read: " + st.ToString());
        return 3;
      }
      for (const ChangeEntry& e : entries) {
        Line("R " + std::to_string(e.lsn) + " " + std::to_string(MessageOf(e)));
        after = e.lsn;
      }
    } while (!entries.empty());
    Line("done");
    return 0;
  }

  // The change log's reader, as the uplink reads it: what it sees is what
  // could have been sent upstream under these LSNs.
  std::atomic<bool> stop{false};
  const uint64_t replayed_up_to = store->LastLsn();
  std::thread reader([&] {
    uint64_t after = replayed_up_to;
    std::vector<ChangeEntry> entries;
    while (true) {
      bool last = stop.load();
      entries.clear();
      if (!store->ReadLog(after, 1000, &entries).ok()) break;
      for (const ChangeEntry& e : entries) {
        Line("C " + std::to_string(e.lsn) + " " + std::to_string(MessageOf(e)));
        after = e.lsn;
      }
      if (last && entries.empty()) break;
      if (entries.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });

  const int64_t first = std::atoll(argv[5]);
  const int64_t count = std::atoll(argv[6]);
  const int64_t t0_ms = std::atoll(argv[7]);
  char payload[96];
  for (int64_t k = first; k < first + count; ++k) {
    const int64_t ts_ms = t0_ms + (k / 20) * 1000;
    std::snprintf(payload, sizeof payload, "{\"v\": %lld, \"t\": %lld.%03lld}", static_cast<long long>(k),
                  static_cast<long long>(ts_ms / 1000), static_cast<long long>(ts_ms % 1000));
    ingest.OnMessage("sensors/dev-" + std::to_string(k % 20) + "/m", payload, /*duplicate=*/k == first);
    Line("A " + std::to_string(k));
    // Messages arrive over time, as from sensors: group commits (every
    // ingest.batch_delay_ms) then fall all through a run, not only at its end.
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ingest.Stop();
  stop = true;
  reader.join();
  IngestCounters c = ingest.counters();
  int64_t rejected = 0;
  for (int64_t r : c.rejected) rejected += r;
  if (rejected != 0 || c.readings_rate_limited != 0) {
    Line("open error " + std::to_string(rejected) + " rejected, " + std::to_string(c.readings_rate_limited) +
         " rate limited");
    return 4;
  }
  Line("done");
  return 0;
}

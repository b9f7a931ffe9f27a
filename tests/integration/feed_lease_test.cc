// `edgesync feed --lease OWNER`: real processes share a store's ranges
// through its leases while a writer keeps appending; one owner is SIGKILLed,
// another joins later. Every change is delivered at least once, each owner
// delivers a range in LSN order (going back only when it acquires the range
// again, from the checkpoint), and at the end each range has one live owner
// and the ranges are spread over the owners.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "store/store.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync::test {
namespace {

class Owner {
 public:
  Owner(const TempDir& dir, const std::string& config, std::string name) : name_(std::move(name)) {
    out_ = dir.File(name_ + ".out");
    err_ = dir.File(name_ + ".err");
    config_ = config;
  }
  bool Start() {
    return p_.Start({"/bin/sh", "-c",
                     std::string("exec ") + EDGESYNC_BINARY + " feed -c " + config_ + " --lease " + name_ +
                         " --max 50 --poll-ms 50 >>" + out_ + " 2>>" + err_});
  }
  void Kill9() { p_.Kill9(); }
  int Stop() { return p_.Stop(10000); }
  // range -> LSNs in the order printed.
  std::map<uint32_t, std::vector<uint64_t>> Delivered() const {
    std::map<uint32_t, std::vector<uint64_t>> by_range;
    std::istringstream in(ReadAll(out_));
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("lsn")) continue;
      by_range[j["range"].get<uint32_t>()].push_back(j["lsn"].get<uint64_t>());
    }
    return by_range;
  }
  // How often this owner got range r (acquired, or took it from another).
  int Acquisitions(uint32_t r) const {
    std::string log = ReadAll(err_);
    std::regex re("(acquired|took) range " + std::to_string(r) + "\\b");
    return static_cast<int>(std::distance(std::sregex_iterator(log.begin(), log.end(), re), std::sregex_iterator()));
  }
  const std::string& name() const { return name_; }
  std::string err() const { return ReadAll(err_); }

 private:
  std::string name_, out_, err_, config_;
  Process p_;
};

TEST(FeedLeaseTest, OwnersShareRangesSurviveAKillAndRebalanceOnJoin) {
  TempDir dir;
  std::string config = dir.File("edgesync.toml");
  WriteAll(config, "[gateway]\nid = \"gw-lease\"\ndata_dir = \"" + dir.path() +
                       "\"\n\n[store]\ninitial_ranges = 4\nlease_expiry_ms = 1500\n");
  StoreOptions o;
  o.path = dir.File("store.db");
  o.gateway_id = "gw-lease";
  o.initial_ranges = 4;
  std::unique_ptr<Store> store;
  ASSERT_OK(Store::Open(o, &store));
  uint64_t written = 0;
  auto write = [&](int n) {
    std::vector<Reading> v;
    for (int i = 0; i < n; ++i) {
      v.push_back(Reading{"dev" + std::to_string((written + i) % 64), "t", static_cast<int64_t>(written + i), 1, "", 0});
    }
    AppendResult r;
    ASSERT_OK(store->AppendReadings(v, &r));
    written = r.last_lsn;
  };
  write(500);

  Owner a(dir, config, "owner-a"), b(dir, config, "owner-b"), c(dir, config, "owner-c"), d(dir, config, "owner-d");
  ASSERT_TRUE(a.Start());
  ASSERT_TRUE(b.Start());
  ASSERT_TRUE(c.Start());
  for (int i = 0; i < 10; ++i) {
    write(100);
    SleepMs(200);
  }
  b.Kill9();  // its leases stay until they expire
  for (int i = 0; i < 10; ++i) {
    write(100);
    SleepMs(200);
  }
  ASSERT_TRUE(d.Start());
  for (int i = 0; i < 10; ++i) {
    write(100);
    SleepMs(200);
  }

  std::vector<Owner*> owners = {&a, &b, &c, &d};
  auto covered = [&] {
    std::set<uint64_t> seen;
    for (Owner* ow : owners) {
      for (const auto& [range, lsns] : ow->Delivered()) seen.insert(lsns.begin(), lsns.end());
    }
    return seen.size() == written && *seen.begin() == 1 && *seen.rbegin() == written;
  };
  ASSERT_TRUE(WaitFor(covered, 60000)) << "not every change was delivered\n" << a.err() << c.err() << d.err();

  // Balanced: the three live owners hold the four ranges, each at least one,
  // none the killed one's.
  std::map<std::string, int> held;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::vector<Lease> leases;
        if (!store->ListLeases(&leases).ok()) return false;
        held.clear();
        for (const Lease& l : leases) ++held[l.owner];
        return leases.size() == 4 && held["owner-a"] >= 1 && held["owner-c"] >= 1 && held["owner-d"] >= 1 &&
               held.count("owner-b") == 0;
      },
      30000))
      << "leases by owner: a=" << held["owner-a"] << " b=" << held["owner-b"] << " c=" << held["owner-c"]
      << " d=" << held["owner-d"] << "\n"
      << a.err() << c.err() << d.err();

  // In order per range: an owner goes back only when it (re)acquires a range.
  for (Owner* ow : owners) {
    for (const auto& [range, lsns] : ow->Delivered()) {
      int back = 0;
      for (size_t i = 1; i < lsns.size(); ++i) back += lsns[i] <= lsns[i - 1] ? 1 : 0;
      EXPECT_LE(back, std::max(0, ow->Acquisitions(range) - 1)) << ow->name() << " range " << range;
    }
  }
  EXPECT_NE(d.err().find("took range"), std::string::npos) << "the newcomer took a range from a busy owner\n"
                                                          << d.err();
  // A SIGTERMed owner gives its ranges back at once.
  EXPECT_EQ(a.Stop(), 0);
  std::vector<Lease> leases;
  ASSERT_OK(store->ListLeases(&leases));
  for (const Lease& l : leases) EXPECT_NE(l.owner, "owner-a");
  c.Stop();
  d.Stop();
}

}  // namespace
}  // namespace edgesync::test

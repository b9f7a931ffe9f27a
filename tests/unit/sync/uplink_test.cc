// Uplink against a scripted hub behind a fake MqttLink (the broker always
// acknowledges; the hub answers or not as the test says) and a real store:
// the checkpoint moves only on the region's answer, never more than `window`
// batches are unanswered, silence and refusals send it back to the
// checkpoint on its own timer, and every batch declares base = checkpoint.
#include "sync/uplink.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "tests/support/process.h"
#include "tests/support/workload.h"
#include "tests/support/fake_link.h"
#include "tests/support/wire_peer.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

struct ScriptedHub {
  // kHold: answers like kAnswer, but only when Release() says so.
  enum class Mode { kSilent, kAnswer, kRefuseOnce, kHold };
  std::mutex mu;
  Mode mode = Mode::kSilent;
  int pings_to_answer = -1;  // -1: every one; then none once it reaches 0
  uint64_t high_water = 0;
  std::vector<WireBatch> received;  // bounds and base only
  int refusals = 0;
  std::vector<std::pair<FakeLink*, std::string>> held;  // answers kHold keeps back
  std::vector<int64_t> held_at_ms;                      // when each was kept back (steady clock)
  SeriesContextCache contexts{size_t{64} << 20};         // decodes batches that refer to earlier ones
  // Protocol 4: the store's epoch, named in answers and pongs; a batch
  // whose record names another one, or a mark above high_water, is
  // answered Regressed ("" = a hub of protocol 3: no check).
  std::string epoch;
  int regressed = 0;
  // The protocol its answers and pongs carry (0 = this one's). One of 5 or
  // older refuses a batch holding a time correction as undecodable, as its
  // decoder would (counted in refused_unknown_kind).
  uint16_t version = 0;
  int refused_unknown_kind = 0;
  int pings = 0;                         // received
  std::vector<uint64_t> correction_lsns;  // time corrections received
  // Batches' entries may leave LSNs of their span out (withheld corrections).
  bool holes = false;
  // Protocol 7: spans held above high_water for live batches, as a hub's
  // PlanApply keeps them (ascending, disjoint); kHold keeps back only the
  // answers to backlog batches while hold_backlog_only is set.
  std::vector<LsnSpan> spans;
  bool hold_backlog_only = false;
  int live_batches = 0;
  // Each LSN applied: counted once per time it was new to the hub.
  std::map<uint64_t, int> applied;
  // Protocol 8: the priority marks P1..P3, applied as the hub's PlanApply
  // does; the contiguous mark when each LSN was applied, and the priority
  // batches' levels in arrival order. An entry of another level in a
  // priority batch counts in wrong_level.
  uint64_t priority_held[kMaxPriorityLevel] = {0, 0, 0};
  std::map<uint64_t, uint64_t> mark_when_applied;
  std::vector<int> priority_levels;
  int wrong_level = 0;
  int priority_gaps = 0;
  // A hub of protocol 7 behind the same broker gets the priority batches:
  // it refuses their encoding (BadBatch, in an answer saying 7) and applies
  // nothing; the lane batches reach a hub of this protocol.
  bool refuse_priority = false;
  int priority_refused = 0;

  void Merge() {
    std::sort(spans.begin(), spans.end(), [](const LsnSpan& a, const LsnSpan& b) { return a.first < b.first; });
    std::vector<LsnSpan> out;
    for (const LsnSpan& sp : spans) {
      if (sp.last <= high_water) continue;
      if (sp.first <= high_water + 1) {
        high_water = sp.last;
        continue;
      }
      if (!out.empty() && sp.first <= out.back().last + 1) {
        out.back().last = std::max(out.back().last, sp.last);
      } else {
        out.push_back(sp);
      }
    }
    spans = out;
    bool again = false;
    for (const LsnSpan& sp : spans) again = again || sp.first <= high_water + 1;
    if (again) Merge();
  }
  bool Held(uint64_t lsn) const {
    if (lsn <= high_water) return true;
    for (const LsnSpan& sp : spans) {
      if (sp.first <= lsn && lsn <= sp.last) return true;
    }
    return false;
  }

  void Send(FakeLink* link, std::string payload) {
    uint16_t v;
    {
      std::lock_guard<std::mutex> lock(mu);
      v = version;
    }
    link->Deliver(v == 0 ? payload : AsProtocol(std::move(payload), v));
  }

  void OnPublish(const std::string&, const std::string& payload, FakeLink* link) {
    WireMessage m;
    const std::string sender = "gw-1";
    Status st = DecodeMessage(payload, {}, &m, nullptr, &contexts, &sender);
    ASSERT_OK(st);
    if (m.kind == WireKind::kPing) {
      std::string e;
      {
        std::lock_guard<std::mutex> lock(mu);
        ++pings;
        if (pings_to_answer == 0) return;
        if (pings_to_answer > 0) --pings_to_answer;
        e = epoch;
      }
      Send(link, EncodePong(m.correlation_id, "eu", m.ping_sent_ns, e));
      return;
    }
    ASSERT_EQ(m.kind, WireKind::kBatch);
    std::unique_lock<std::mutex> lock(mu);
    WireBatch b = m.batch;
    if (holes || b.priority > 0) {  // a priority batch carries its level's entries of its span only
      ASSERT_LE(b.entries.size(), b.last_lsn - b.first_lsn + 1);
    } else {
      ASSERT_EQ(b.entries.size(), b.last_lsn - b.first_lsn + 1);
    }
    bool unknown_kind = false;
    for (const ChangeEntry& e : b.entries) {
      if (e.kind != ChangeEntry::Kind::kTimeCorrection) continue;
      unknown_kind = version != 0 && version < kTimeCorrectionVersion;
      if (!unknown_kind) correction_lsns.push_back(e.lsn);
    }
    std::vector<uint64_t> lsns;
    // Entries a lane batch carries that the hub holds by a priority mark
    // are skipped, as PlanApply does.
    std::set<uint64_t> by_priority;
    for (const ChangeEntry& e : b.entries) {
      lsns.push_back(e.lsn);
      const uint32_t level = e.kind == ChangeEntry::Kind::kReading ? QualityPriority(e.reading.quality) : 0;
      if (b.priority > 0 && level != b.priority) ++wrong_level;
      if (level > 0 && e.lsn <= priority_held[level - 1]) by_priority.insert(e.lsn);
    }
    b.entries.clear();
    received.push_back(b);
    if (mode == Mode::kSilent) return;
    WireAck ack{"eu", m.batch.origin, high_water, AckCode::kOk, "", "", {}};
    ack.epoch = epoch;
    uint64_t start = std::max(high_water, m.batch.base_lsn);
    if (b.priority > 0 && refuse_priority) {
      priority_levels.push_back(b.priority);
      ++priority_refused;
      ack.code = AckCode::kBadBatch;
      ack.message = "message: unknown entry encoding 3";
      lock.unlock();
      link->Deliver(AsProtocol(EncodeAck(m.correlation_id, ack), kLiveLaneVersion));
      return;
    } else if (b.priority > 0) {
      priority_levels.push_back(b.priority);
      uint64_t& p = priority_held[b.priority - 1];
      if (m.batch.first_lsn > p + 1 && m.batch.first_lsn > high_water + 1) {
        ++priority_gaps;
        ack.code = AckCode::kGap;
      } else {
        for (uint64_t l : lsns) {
          if (l > p && !Held(l)) {
            ++applied[l];
            mark_when_applied[l] = high_water;
          }
        }
        p = std::max(p, m.batch.last_lsn);
      }
    } else if (unknown_kind) {
      ++refused_unknown_kind;
      ack.code = AckCode::kBadBatch;
    } else if (!epoch.empty() && ((m.batch.region_epoch != 0 && m.batch.region_epoch != EpochTag(epoch)) ||
                           m.batch.region_held > high_water)) {
      ++regressed;
      ack.code = AckCode::kRegressed;
    } else if (mode == Mode::kRefuseOnce && refusals == 0) {
      ++refusals;
      ack.code = AckCode::kGap;
    } else if (m.batch.first_lsn <= start + 1 && m.batch.last_lsn > high_water) {
      for (uint64_t l : lsns) {
        if (!Held(l) && by_priority.count(l) == 0) {
          ++applied[l];
          mark_when_applied[l] = high_water;
        }
      }
      high_water = m.batch.last_lsn;
      Merge();
      ack.high_water = high_water;
    } else if (m.batch.first_lsn > start + 1 && m.batch.live) {
      ++live_batches;
      for (uint64_t l : lsns) {
        if (!Held(l)) ++applied[l];
      }
      spans.push_back(LsnSpan{m.batch.first_lsn, m.batch.last_lsn});
      Merge();
    } else if (m.batch.first_lsn > start + 1) {
      ack.code = AckCode::kGap;
    }
    ack.held = spans;
    if (version == 0 || version >= kPriorityVersion) {
      ack.priority_held.assign(std::begin(priority_held), std::end(priority_held));
    }
    std::string answer = EncodeAck(m.correlation_id, ack);
    if (version != 0) answer = AsProtocol(std::move(answer), version);
    if (mode == Mode::kHold && !(hold_backlog_only && m.batch.live)) {
      held.emplace_back(link, answer);
      held_at_ms.push_back(NowMs());
      return;
    }
    lock.unlock();
    link->Deliver(answer);
  }

  // Delivers the answers kept back, in order.
  void Release() { ReleaseOlderThan(-1); }
  // Delivers, in order, the answers kept back for more than age_ms: a
  // region that answers every batch that late.
  void ReleaseOlderThan(int64_t age_ms) {
    std::vector<std::pair<FakeLink*, std::string>> out;
    {
      std::lock_guard<std::mutex> lock(mu);
      const int64_t now = NowMs();
      size_t n = 0;
      while (n < held.size() && now - held_at_ms[n] > age_ms) ++n;
      out.assign(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n));
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n));
      held_at_ms.erase(held_at_ms.begin(), held_at_ms.begin() + static_cast<std::ptrdiff_t>(n));
    }
    for (auto& [link, answer] : out) link->Deliver(answer);
  }
  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

class UplinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.path = tmp_.File("gw.db");
    so.gateway_id = "gw-1";
    ASSERT_OK(Store::Open(so, &store_));
    test::SensorWorkload workload(100, 1780000000000);
    AppendResult r;
    ASSERT_OK(store_->AppendReadings(workload.Take(10000), &r));
    options_.gateway_id = "gw-1";
    options_.batch_max_readings = 1000;
    options_.batch_max_delay_ms = 10;
    options_.window = 3;
    options_.ack_timeout_ms = 400;
    options_.backoff_base_ms = 20;
    options_.backoff_max_ms = 100;
    options_.probe_interval_ms = 100;
    UplinkRegion eu;
    eu.name = "eu";
    options_.regions.push_back(eu);
  }
  std::unique_ptr<Uplink> Make() {
    return std::make_unique<Uplink>(store_.get(), options_, nullptr,
                                    [this](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
                                      *link = std::make_unique<FakeLink>(
                                          [this](const std::string& t, const std::string& p, FakeLink* l) {
                                            hub_.OnPublish(t, p, l);
                                          });
                                      return Status::Ok();
                                    });
  }
  // Replaces the fixture's store (10,000 readings) with an empty one.
  void OpenEmptyStore(const std::string& name) {
    StoreOptions so;
    so.path = tmp_.File(name);
    so.gateway_id = "gw-1";
    ASSERT_OK(Store::Open(so, &store_));
  }
  uint64_t Checkpoint() {
    uint64_t v = 0;
    store_->GetCheckpoint("upstream", &v);
    return v;
  }
  size_t Received() {
    std::lock_guard<std::mutex> lock(hub_.mu);
    return hub_.received.size();
  }

  test::TempDir tmp_;
  std::unique_ptr<Store> store_;
  UplinkOptions options_;
  ScriptedHub hub_;
};

TEST_F(UplinkTest, CheckpointMovesOnlyOnTheRegionsAnswer) {
  // The full window is watched for until the first answer is overdue: at
  // 400 ms, under qemu-user (armhf) and under ThreadSanitizer on a loaded
  // machine, that came before the check below saw the window full.
  options_.ack_timeout_ms = 3000;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  // The broker took every publish, the hub says nothing: the window fills
  // and the checkpoint stays. The worker counts the batches in flight in
  // stats() after its sends, so the count is waited for, not read as soon
  // as the hub has the third batch (it read 0 there under ThreadSanitizer).
  ASSERT_TRUE(test::WaitFor([&] { return Received() >= 3; }, 30000));
  EXPECT_TRUE(test::WaitFor([&] { return uplink->stats().inflight == 3u; }, 2000))
      << "in flight: " << uplink->stats().inflight;
  EXPECT_EQ(Checkpoint(), 0u);
  // Silence past ack_timeout: it goes back to the checkpoint by itself.
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().ack_timeouts >= 1 && Received() >= 6; }, 30000));
  EXPECT_EQ(Checkpoint(), 0u);
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    EXPECT_EQ(hub_.received[3].first_lsn, 1u) << "resend starts after the checkpoint";
    for (const WireBatch& b : hub_.received) EXPECT_EQ(b.base_lsn, 0u);
    hub_.mode = ScriptedHub::Mode::kAnswer;
  }
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 30000));
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_GE(s.resends, 1u);
  StoreStats st;
  ASSERT_OK(store_->Stats(&st));
  EXPECT_EQ(st.acked_lsn, 10000u);
  uint64_t per_region = 0;
  store_->GetCheckpoint("upstream:eu", &per_region);
  EXPECT_EQ(per_region, 10000u);
}

// The completeness watermark a batch carries (Batch.complete_through_ms):
// the commit time of the first group of readings it leaves out, the wall
// time of the log's read when it leaves none out, never a time from before
// the clock was trusted.
class UplinkWatermarkTest : public UplinkTest {
 protected:
  static constexpr int64_t kW1 = 1'800'000'000'000, kW2 = kW1 + 60'000, kW3 = kW1 + 120'000, kNow = kW1 + 180'000;
  // Three commit groups: LSNs 1-1500 at kW1, 1501-2000 at kW2, 2001-2100
  // at kW3; the clock then reads kNow.
  void OpenThreeGroups(const std::string& name) {
    StoreOptions so;
    so.path = tmp_.File(name);
    so.gateway_id = "gw-1";
    so.clock = &clock_;
    store_.reset();
    ASSERT_OK(Store::Open(so, &store_));
    test::SensorWorkload workload(100, 1780000000000);
    AppendResult r;
    clock_.SetWall(kW1);
    ASSERT_OK(store_->AppendReadings(workload.Take(1500), &r));
    clock_.SetWall(kW2);
    ASSERT_OK(store_->AppendReadings(workload.Take(500), &r));
    clock_.SetWall(kW3);
    ASSERT_OK(store_->AppendReadings(workload.Take(100), &r));
    ASSERT_EQ(r.last_lsn, 2100u);
    clock_.SetWall(kNow);
  }
  // Drains the store to an answering hub; the watermark each batch carried, by its last LSN.
  std::map<uint64_t, int64_t> Drain(UplinkStats* stats) {
    hub_.mode = ScriptedHub::Mode::kAnswer;
    auto uplink = Make();
    EXPECT_OK(uplink->Start());
    EXPECT_TRUE(test::WaitFor([&] { return Checkpoint() == 2100; }, 30000));
    EXPECT_TRUE(test::WaitFor([&] { return uplink->stats().inflight == 0; }, 30000));
    *stats = uplink->stats();
    uplink->Stop();
    std::map<uint64_t, int64_t> by_last;
    std::lock_guard<std::mutex> lock(hub_.mu);
    for (const WireBatch& b : hub_.received) {
      auto [it, fresh] = by_last.emplace(b.last_lsn, b.complete_through_ms);
      EXPECT_TRUE(fresh || it->second == b.complete_through_ms) << "a resend of " << b.last_lsn << " changed it";
    }
    hub_.received.clear();
    hub_.high_water = 0;
    return by_last;
  }
  ManualClock clock_{kW1, 0};
};

TEST_F(UplinkWatermarkTest, ABatchCarriesTheCommitTimeOfTheFirstGroupItLeavesOut) {
  options_.batch_max_readings = 1000;
  OpenThreeGroups("three.db");
  UplinkStats s;
  std::map<uint64_t, int64_t> got = Drain(&s);
  // 1-1000 leaves out the rest of the first group; 1001-2000 the third;
  // 2001-2100 nothing: the time the log was read.
  std::map<uint64_t, int64_t> want = {{1000, kW1}, {2000, kW3}, {2100, kNow}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.complete_through_ms, kNow) << "the highest acknowledged";
  int64_t through = 0;
  ASSERT_OK(store_->CompleteThrough(1500, &through));
  EXPECT_EQ(through, kW2) << "a batch ending on a group's last LSN: the next group's time";
  ASSERT_OK(store_->CompleteThrough(0, &through));
  EXPECT_EQ(through, kW1);
}

TEST_F(UplinkWatermarkTest, AnUntrustedClockNeverAdvancesIt) {
  options_.batch_max_readings = 1000;
  OpenThreeGroups("untrusted.db");
  options_.clock_trusted_since = [] { return int64_t{0}; };  // never synchronised
  UplinkStats s;
  std::map<uint64_t, int64_t> got = Drain(&s);
  ASSERT_FALSE(got.empty());
  for (const auto& [last, through] : got) EXPECT_EQ(through, 0) << "batch ending at " << last;
  EXPECT_EQ(s.complete_through_ms, 0);
  EXPECT_EQ(s.checkpoint, 2100u) << "the readings still go";
}

TEST_F(UplinkWatermarkTest, CommitTimesFromBeforeTrustBeganAreNotClaimed) {
  options_.batch_max_readings = 1000;
  OpenThreeGroups("trusted_later.db");
  options_.clock_trusted_since = [] { return kW2; };  // synchronised between the first and the third group
  UplinkStats s;
  std::map<uint64_t, int64_t> got = Drain(&s);
  std::map<uint64_t, int64_t> want = {{1000, 0}, {2000, kW3}, {2100, kNow}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.complete_through_ms, kNow);
}

// A region that answers every batch later than ack_timeout_ms (a busy hub):
// the uplink waits longer after each timeout instead of resending forever
// (each resend's answer would come late again and be ignored), and drains.
// The region's store is re-created (a new epoch, nothing held): the next
// batch names the old store, is answered Regressed, and the uplink resends
// the region everything from its actual mark (0), once, then goes on.
TEST_F(UplinkTest, ARegionThatLostItsStoreIsRefilledFromItsMark) {
  hub_.mode = ScriptedHub::Mode::kAnswer;
  hub_.epoch = "e1";
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 30000));
  uint64_t tag = 0;
  store_->GetCheckpoint("upstream-epoch:eu", &tag);
  EXPECT_EQ(tag, EpochTag("e1"));
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    hub_.epoch = "e2";
    hub_.high_water = 0;
    hub_.received.clear();
  }
  test::SensorWorkload more(100, 1790000000000);
  AppendResult r;
  ASSERT_OK(store_->AppendReadings(more.Take(1000), &r));
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor(
      [&] {
        uint64_t held = 0;
        {
          std::lock_guard<std::mutex> lock(hub_.mu);
          held = hub_.high_water;
        }
        return held == 11000 && uplink->stats().refills_pending == 0;
      },
      30000))
      << "checkpoint " << Checkpoint();
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_EQ(Checkpoint(), 11000u);
  EXPECT_GE(s.region_regressions, 1u);
  EXPECT_EQ(s.refill_lost, 0u);
  EXPECT_FALSE(s.regions[0].refilling);
  store_->GetCheckpoint("upstream-epoch:eu", &tag);
  EXPECT_EQ(tag, EpochTag("e2"));
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_GE(hub_.regressed, 1);
  // The refill starts at the region's mark without a jump, and no batch of
  // it jumps over anything.
  bool from_one = false;
  for (const WireBatch& b : hub_.received) {
    if (b.first_lsn == 1) from_one = true;
    if (b.region_epoch == EpochTag("e2")) {
      EXPECT_LT(b.base_lsn, b.first_lsn);
      EXPECT_FALSE(b.base_lost);
    }
  }
  EXPECT_TRUE(from_one);
}

TEST_F(UplinkTest, ARegionAnsweringLaterThanTheTimeoutIsWaitedForLonger) {
  options_.ack_timeout_ms = 300;
  options_.batch_max_delay_ms = 0;
  hub_.mode = ScriptedHub::Mode::kHold;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  // Every answer comes 1 s after its batch: over three times the timeout.
  EXPECT_TRUE(test::WaitFor(
      [&] {
        hub_.ReleaseOlderThan(1000);
        return Checkpoint() == 10000;
      },
      60000))
      << "checkpoint " << Checkpoint() << ", answer wait " << uplink->stats().answer_wait_ms << " ms";
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_GE(s.ack_timeouts, 1u);
  EXPECT_GE(s.answer_wait_ms, 1200) << "the wait grew past the answers' delay";
  EXPECT_LE(s.answer_wait_ms, 8 * options_.ack_timeout_ms);
}

// The log says which of the two an answer timeout was: a region that
// answers nothing at all (its hub stopped behind a live broker) or one that
// answers its probes and not the batch in time (a busy hub).
TEST_F(UplinkTest, ATimeoutAfterTheRegionFellSilentIsNotCalledSlow) {
  options_.probe_interval_ms = 5000;  // the region stays healthy through the test
  hub_.pings_to_answer = 1;           // the probe that chooses it, then nothing
  auto uplink = Make();
  testing::internal::CaptureStderr();
  ASSERT_OK(uplink->Start());
  bool timed_out = test::WaitFor([&] { return uplink->stats().ack_timeouts >= 1; }, 30000);
  uplink->Stop();
  std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(timed_out);
  EXPECT_NE(log.find("uplink: region eu has answered nothing, not even a probe, for "), std::string::npos) << log;
  EXPECT_EQ(log.find("answers probes but not batches"), std::string::npos) << log;
}

TEST_F(UplinkTest, ATimeoutWhileTheRegionAnswersProbesIsCalledSlow) {
  auto uplink = Make();  // probes every 100 ms, each answered; batches never
  testing::internal::CaptureStderr();
  ASSERT_OK(uplink->Start());
  bool timed_out = test::WaitFor([&] { return uplink->stats().ack_timeouts >= 1; }, 30000);
  uplink->Stop();
  std::string log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(timed_out);
  EXPECT_NE(log.find("uplink: region eu answers probes but not batches within 400 ms (a busy hub); batches now "
                     "wait 800 ms"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("answered nothing"), std::string::npos) << log;
}

TEST_F(UplinkTest, ARefusalSendsItBackToTheCheckpoint) {
  hub_.mode = ScriptedHub::Mode::kRefuseOnce;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 10000));
  UplinkStats s = uplink->stats();
  uplink->Stop();
  // The refused batch and the ones pipelined behind it are refused; the
  // uplink goes back to the checkpoint once for all of them.
  EXPECT_GE(s.refusals, 1u);
  EXPECT_LE(s.refusals, options_.window);
  EXPECT_EQ(s.resends, 1u);
  std::lock_guard<std::mutex> lock(hub_.mu);
  // Later batches declare the checkpoint at their send time as base.
  uint64_t max_base = 0;
  for (const WireBatch& b : hub_.received) {
    EXPECT_LE(b.base_lsn, b.first_lsn - 1);
    max_base = std::max(max_base, b.base_lsn);
  }
  EXPECT_GT(max_base, 0u);
}

TEST_F(UplinkTest, ResumesFromTheStoredCheckpointAfterARestart) {
  hub_.mode = ScriptedHub::Mode::kAnswer;
  {
    auto uplink = Make();
    ASSERT_OK(uplink->Start());
    ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 10000));
    uplink->Stop();
  }
  test::SensorWorkload more(100, 1790000000000);
  AppendResult r;
  ASSERT_OK(store_->AppendReadings(more.Take(500), &r));
  size_t before = Received();
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10500; }, 10000));
  uplink->Stop();
  std::lock_guard<std::mutex> lock(hub_.mu);
  ASSERT_GT(hub_.received.size(), before);
  EXPECT_EQ(hub_.received[before].first_lsn, 10001u);
  EXPECT_EQ(hub_.received[before].base_lsn, 10000u);
}

// Latency without paying bytes: a reading alone on a quiet link goes at once;
// what follows while its batch is unanswered waits for the answer (not for
// batch_max_delay_ms), then goes in one batch.
TEST_F(UplinkTest, ALoneReadingGoesAtOnceAndTheNextOnesWaitForItsAnswer) {
  ASSERT_NO_FATAL_FAILURE(OpenEmptyStore("quiet.db"));
  options_.batch_max_delay_ms = 600000;
  options_.ack_timeout_ms = 600000;  // answers are held on purpose
  hub_.mode = ScriptedHub::Mode::kHold;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  test::SensorWorkload workload(100, 1780000000000);
  AppendResult r;
  ASSERT_OK(store_->AppendReadings(workload.Take(1), &r));
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor([&] { return Received() == 1; }, 30000)) << "not sent at once";
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK(store_->AppendReadings(workload.Take(1), &r));
    uplink->NotifyAppended();
  }
  test::SleepMs(500);
  EXPECT_EQ(Received(), 1u) << "readings behind an unanswered batch wait to be coalesced";
  EXPECT_EQ(uplink->stats().inflight, 1u);
  hub_.Release();
  ASSERT_TRUE(test::WaitFor([&] { return Received() == 2; }, 30000)) << "not sent once the answer came";
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    EXPECT_EQ(hub_.received[1].first_lsn, 2u);
    EXPECT_EQ(hub_.received[1].last_lsn, 4u) << "the three readings share one batch";
    EXPECT_EQ(hub_.received[1].base_lsn, 1u);
  }
  hub_.Release();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 4; }, 30000));
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_EQ(s.batches_sent, 2u);
  EXPECT_EQ(s.entries_sent, 4u) << "nothing sent twice";
  EXPECT_EQ(s.resends, 0u);
}

// A full batch never waits for answers: the backlog drains with `window`
// batches in flight, never more.
TEST_F(UplinkTest, FullBatchesFillTheWindowWithoutWaitingForAnswers) {
  options_.batch_max_delay_ms = 600000;
  options_.ack_timeout_ms = 600000;  // answers are held on purpose
  hub_.mode = ScriptedHub::Mode::kHold;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Received() == options_.window; }, 30000));
  test::SleepMs(300);
  EXPECT_EQ(Received(), options_.window) << "never more than the window in flight";
  while (Checkpoint() < 10000) {
    hub_.Release();
    ASSERT_TRUE(test::WaitFor([&] {
      std::lock_guard<std::mutex> lock(hub_.mu);
      return !hub_.held.empty() || Checkpoint() == 10000;
    }, 30000));
    EXPECT_LE(uplink->stats().inflight, options_.window);
  }
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_EQ(s.entries_sent, 10000u) << "each reading sent once";
  std::lock_guard<std::mutex> lock(hub_.mu);
  for (size_t i = 1; i < hub_.received.size(); ++i) {
    EXPECT_EQ(hub_.received[i].first_lsn, hub_.received[i - 1].last_lsn + 1) << "LSN order, no gap";
  }
}

// uplink.batch_min_delay_ms holds even a lone reading on a quiet link.
TEST_F(UplinkTest, BatchMinDelayHoldsAPartialBatch) {
  ASSERT_NO_FATAL_FAILURE(OpenEmptyStore("linger.db"));
  options_.batch_min_delay_ms = 1500;
  hub_.mode = ScriptedHub::Mode::kAnswer;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  test::SensorWorkload workload(100, 1780000000000);
  AppendResult r;
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(store_->AppendReadings(workload.Take(1), &r));
    uplink->NotifyAppended();
  }
  test::SleepMs(200);
  EXPECT_EQ(Received(), 0u) << "sent before batch_min_delay_ms";
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 5; }, 30000));
  uplink->Stop();
  std::lock_guard<std::mutex> lock(hub_.mu);
  ASSERT_EQ(hub_.received.size(), 1u) << "the five readings share one batch";
  EXPECT_EQ(hub_.received[0].last_lsn, 5u);
}

}  // namespace
}  // namespace edgesync

namespace edgesync {
namespace {

// uplink.max_bytes_per_s on a ManualClock the test moves: every publish the
// uplink hands to its link (batches, the resend after a refusal, probes),
// counted as a whole MQTT packet, stays within cap x span + a quarter
// second of the cap over any span (plus the part of a batch above that);
// batches are sized to about a quarter second of the cap, at least 4 KB;
// the checkpoint still reaches the end.
TEST_F(UplinkTest, TheCapBoundsTheLinkBytesOverAnySpan) {
  // 100,000 readings: ~80 KB on the link.
  constexpr int64_t kCap = 8000;
  constexpr int64_t kDepth = kCap / 4;  // the bucket: a quarter second of the cap
  constexpr uint64_t kReadings = 100000;
  {
    test::SensorWorkload more(100, 1790000000000);
    for (int i = 0; i < 9; ++i) {
      AppendResult r;
      ASSERT_OK(store_->AppendReadings(more.Take(10000), &r));
    }
    ASSERT_EQ(store_->LastLsn(), kReadings);
  }
  constexpr int64_t kStepMs = 10;
  options_.max_bytes_per_s = kCap;
  options_.ack_timeout_ms = 60000;  // virtual time runs ahead of the worker
  options_.probe_interval_ms = 1000;  // probes take a small share of the cap
  // ~800 bytes carry 1,000 of these readings: batches of this many would
  // take five seconds of the cap.
  options_.batch_max_readings = 50000;
  hub_.mode = ScriptedHub::Mode::kRefuseOnce;
  ManualClock clock(1780000000000, int64_t{1} << 40);
  struct Sent {
    int64_t ms;
    int64_t bytes;
    bool batch;
  };
  std::mutex mu;
  std::vector<Sent> sent;
  Uplink uplink(store_.get(), options_, &clock, [&](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
    *link = std::make_unique<FakeLink>([&](const std::string& t, const std::string& p, FakeLink* l) {
      WireKind kind = WireKind::kBatch;
      EXPECT_TRUE(PeekKind(p, {}, &kind));
      const bool batch = kind == WireKind::kBatch;
      {
        std::lock_guard<std::mutex> lock(mu);
        sent.push_back({clock.MonotonicMillis(),
                        static_cast<int64_t>(MqttPublishPacketBytes(t.size(), p.size(), batch ? 1 : 0, 4)), batch});
      }
      hub_.OnPublish(t, p, l);
    });
    return Status::Ok();
  });
  ASSERT_OK(uplink.Start());
  const int64_t start_ms = clock.MonotonicMillis();
  // Virtual time moves 10 ms per 2 ms of real time.
  for (int i = 0; i < 30000 && Checkpoint() < kReadings; ++i) {
    clock.Advance(kStepMs);
    test::SleepMs(2);
  }
  ASSERT_EQ(Checkpoint(), kReadings);
  const UplinkStats s = uplink.stats();
  uplink.Stop();
  const int64_t span_ms = clock.MonotonicMillis() - start_ms;

  std::lock_guard<std::mutex> lock(mu);
  int64_t total = 0, largest_batch = 0, batches = 0;
  for (const Sent& x : sent) {
    total += x.bytes;
    if (x.batch) {
      ++batches;
      largest_batch = std::max(largest_batch, x.bytes);
    }
  }
  EXPECT_EQ(s.link_bytes_sent, static_cast<uint64_t>(total)) << "the counter is the packets handed to the link";
  EXPECT_EQ(s.max_bytes_per_s, kCap);
  EXPECT_GE(s.resends, 1u) << "the refusal's resend went through the bucket too";
  // A drain of 100,000 readings at this cap takes many virtual seconds.
  EXPECT_GT(span_ms, 5000) << total << " bytes";
  EXPECT_LE(total, kCap * span_ms / 1000 + kCap) << "over " << span_ms << " ms";
  // Sized to about a quarter second of the cap, here below the 4 KB floor
  // (the first batch on a guess of bytes per entry, the next ones on what
  // the last measured): never many times that, and smaller than
  // batch_max_readings.
  EXPECT_LE(largest_batch, 2 * 4096);
  EXPECT_GT(batches, 10);
  {
    std::lock_guard<std::mutex> hub_lock(hub_.mu);
    uint64_t most = 0;
    for (const WireBatch& b : hub_.received) most = std::max(most, b.last_lsn - b.first_lsn + 1);
    EXPECT_LT(most, options_.batch_max_readings) << "the cap, not batch_max_readings, sized the batches";
  }
  // Any span: cap x span + the depth (plus the part of its last packet
  // above that, when one alone was larger). The recorded times
  // may trail the bucket's by the test's step at either end.
  for (size_t a = 0; a < sent.size(); ++a) {
    int64_t bytes = 0;
    for (size_t b = a; b < sent.size(); ++b) {
      bytes += sent[b].bytes;
      const int64_t span = sent[b].ms - sent[a].ms + 2 * kStepMs;
      ASSERT_LE(bytes, kCap * span / 1000 + kDepth + std::max<int64_t>(0, sent[b].bytes - kDepth))
          << "packets " << a << ".." << b << " over " << span << " ms";
    }
  }
}

}  // namespace
}  // namespace edgesync

namespace edgesync {
namespace {

// Under a cap, live batches gather up to a second (at 28,000 bytes/s and
// below: a batch's ~320 bytes of its own then take ~1% of a 28,000 cap, not
// the 4% batches every 200 ms took), and never longer: each live reading leaves within a
// second of its commit (plus the bucket's wait for the backlog batch ahead
// of it), on the virtual clock the bucket runs on.
TEST_F(UplinkTest, UnderACapLiveBatchesGatherASecondAndNoLonger) {
  constexpr int64_t kStepMs = 10;
  {
    // ~160 KB of backlog: over 10 virtual seconds at this cap.
    test::SensorWorkload more(100, 1790000000000);
    AppendResult r;
    for (int i = 0; i < 4; ++i) ASSERT_OK(store_->AppendReadings(more.Take(50000), &r));
  }
  options_.live_lane = true;
  options_.max_bytes_per_s = 16000;
  options_.batch_max_delay_ms = 200;
  options_.ack_timeout_ms = 60000;  // virtual time runs ahead of the worker
  options_.probe_interval_ms = 1000;
  hub_.mode = ScriptedHub::Mode::kAnswer;
  ManualClock clock(1780000000000, int64_t{1} << 40);
  struct LiveSent {
    int64_t ms;
    uint64_t first, last;
  };
  std::mutex mu;
  std::vector<LiveSent> live;
  Uplink uplink(store_.get(), options_, &clock, [&](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
    *link = std::make_unique<FakeLink>([&](const std::string& t, const std::string& p, FakeLink* l) {
      size_t before = 0;
      {
        std::lock_guard<std::mutex> hub_lock(hub_.mu);
        before = hub_.received.size();
      }
      hub_.OnPublish(t, p, l);
      std::lock_guard<std::mutex> hub_lock(hub_.mu);
      if (hub_.received.size() > before && hub_.received.back().live) {
        std::lock_guard<std::mutex> lock(mu);
        live.push_back({clock.MonotonicMillis(), hub_.received.back().first_lsn, hub_.received.back().last_lsn});
      }
    });
    return Status::Ok();
  });
  ASSERT_OK(uplink.Start());
  for (int i = 0; i < 5000 && !uplink.stats().live_lane_open; ++i) {
    clock.Advance(kStepMs);
    test::SleepMs(2);
  }
  ASSERT_TRUE(uplink.stats().live_lane_open) << "no live lane opened";
  // A live reading every 50 virtual ms for 2 virtual seconds.
  test::SensorWorkload workload(100, 1780000100000);
  std::map<uint64_t, int64_t> committed_ms;  // LSN -> virtual time of its commit
  for (int i = 0; i < 200; ++i) {
    if (i % 5 == 0) {
      AppendResult r;
      ASSERT_OK(store_->AppendReadings(workload.Take(1), &r));
      committed_ms[store_->LastLsn()] = clock.MonotonicMillis();
      uplink.NotifyAppended();
    }
    clock.Advance(kStepMs);
    test::SleepMs(2);
  }
  const uint64_t last = store_->LastLsn();
  for (int i = 0; i < 30000 && Checkpoint() < last; ++i) {
    clock.Advance(kStepMs);
    test::SleepMs(2);
  }
  ASSERT_EQ(Checkpoint(), last);
  uplink.Stop();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(live.empty()) << "no live batch went";
  int64_t live_readings = 0;
  for (const LiveSent& b : live) {
    for (auto it = committed_ms.lower_bound(b.first); it != committed_ms.end() && it->first <= b.last; ++it) {
      ++live_readings;
      // A second's gathering, then the bucket's debt of the backlog batch
      // before it (batches of at least 4 KB: 256 ms of this cap); the
      // worker may trail the virtual clock by a few of the test's steps.
      EXPECT_LE(b.ms - it->second, 1000 + 256 + 10 * kStepMs) << "live reading " << it->first << " waited";
    }
  }
  EXPECT_GE(live_readings, 20) << "most of the 40 live readings went in the live lane";
  // Gathered a second at a time: 2 s of live readings in 2-4 batches, where
  // 200 ms gathering sent ~10.
  EXPECT_LE(live.size(), 4u) << live.size() << " live batches for " << live_readings << " readings";
}

// A cap far below one batch's own bytes (a cellular plan's ~300 B/s):
// batches are still sized to carry many readings (at least 4 KB), each goes
// once the bucket is full and the next waits for its debt, and probes still
// go at least every other interval, so the region stays the write region.
TEST_F(UplinkTest, AVeryLowCapStillSendsFullBatchesAndKeepsTheRegionHealthy) {
  constexpr int64_t kCap = 300;
  options_.max_bytes_per_s = kCap;
  options_.ack_timeout_ms = 600000;
  options_.probe_interval_ms = 5000;
  options_.batch_max_readings = 5000;
  hub_.mode = ScriptedHub::Mode::kAnswer;
  ManualClock clock(1780000000000, int64_t{1} << 40);
  std::mutex mu;
  int64_t batch_bytes = 0, probe_bytes = 0;
  Uplink uplink(store_.get(), options_, &clock, [&](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
    *link = std::make_unique<FakeLink>([&](const std::string& t, const std::string& p, FakeLink* l) {
      WireKind kind = WireKind::kBatch;
      EXPECT_TRUE(PeekKind(p, {}, &kind));
      {
        std::lock_guard<std::mutex> lock(mu);
        (kind == WireKind::kBatch ? batch_bytes : probe_bytes) +=
            static_cast<int64_t>(MqttPublishPacketBytes(t.size(), p.size(), kind == WireKind::kBatch ? 1 : 0, 4));
      }
      hub_.OnPublish(t, p, l);
    });
    return Status::Ok();
  });
  ASSERT_OK(uplink.Start());
  const int64_t start_ms = clock.MonotonicMillis();
  // Virtual time moves 50 ms per 2 ms of real time.
  for (int i = 0; i < 30000 && Checkpoint() < 10000; ++i) {
    clock.Advance(50);
    test::SleepMs(2);
  }
  ASSERT_EQ(Checkpoint(), 10000u);
  const UplinkStats s = uplink.stats();
  uplink.Stop();
  const int64_t span_ms = clock.MonotonicMillis() - start_ms;
  // Each 4 KB batch needs ~13 s of virtual time at this cap, far longer
  // than the worker takes to prepare it, however slow the machine (under
  // qemu the cap of the test above can stay ahead of the worker).
  EXPECT_GT(s.cap_wait_ms, 0) << "the time waited on the cap is counted";
  EXPECT_EQ(s.region_switches, 1u) << "the region stayed the write region throughout";
  EXPECT_EQ(s.write_region, "eu");
  std::lock_guard<std::mutex> lock(mu);
  std::lock_guard<std::mutex> hub_lock(hub_.mu);
  ASSERT_FALSE(hub_.received.empty());
  // Not one-reading batches of ~660 bytes each: the 10,000 readings went
  // in a handful of batches.
  EXPECT_LT(hub_.received.size(), 40u);
  EXPECT_GT(probe_bytes, 0);
  // The long run: the cap, plus the bucket's second and the last batch's debt.
  EXPECT_LE(batch_bytes + probe_bytes, kCap * span_ms / 1000 + kCap + 8192) << "over " << span_ms << " ms";
  EXPECT_EQ(s.link_bytes_sent, static_cast<uint64_t>(batch_bytes + probe_bytes));
}

// The store's log with some of its LSNs holding time corrections (kind 3)
// instead of the readings there: what a gateway's log holds once its clock
// was corrected (the uplink only reads the log).
class CorrectingSource : public UplinkSource {
 public:
  explicit CorrectingSource(Store* store) : store_(store) {}
  void CorrectAt(uint64_t lsn) {
    std::lock_guard<std::mutex> lock(mu_);
    at_.insert(lsn);
  }
  Origin origin() const override { return store_->origin(); }
  uint64_t LastLsn() const override { return store_->LastLsn(); }
  Status ReadLog(uint64_t after, size_t max, std::vector<ChangeEntry>* entries) override {
    ES_RETURN_IF_ERROR(store_->ReadLog(after, max, entries));
    std::lock_guard<std::mutex> lock(mu_);
    for (ChangeEntry& e : *entries) {
      if (at_.count(e.lsn) == 0) continue;
      e.kind = ChangeEntry::Kind::kTimeCorrection;
      e.reading = Reading{};
      e.correction = TimeCorrection{static_cast<uint32_t>(e.lsn % 7 + 1), 259200000, 1779740800000, 1779740900000};
    }
    return Status::Ok();
  }
  Status CompleteThrough(uint64_t lsn, int64_t* through_ms) override { return store_->CompleteThrough(lsn, through_ms); }
  Status GetCheckpoint(const std::string& name, uint64_t* value) override { return store_->GetCheckpoint(name, value); }
  Status SetCheckpoint(const std::string& name, uint64_t value) override { return store_->SetCheckpoint(name, value); }
  Status AckUpstream(const std::string& target, uint64_t lsn) override { return store_->AckUpstream(target, lsn); }

 private:
  Store* store_;
  std::mutex mu_;
  std::set<uint64_t> at_;
};

class UplinkCorrectionsTest : public UplinkTest {
 protected:
  std::unique_ptr<Uplink> MakeOver(CorrectingSource* source) {
    return std::make_unique<Uplink>(source, options_, nullptr,
                                    [this](const MqttLinkOptions&, std::unique_ptr<MqttLink>* link) {
                                      auto fake = std::make_unique<FakeLink>(
                                          [this](const std::string& t, const std::string& p, FakeLink* l) {
                                            hub_.OnPublish(t, p, l);
                                          });
                                      link_ = fake.get();
                                      *link = std::move(fake);
                                      return Status::Ok();
                                    });
  }
  std::vector<uint64_t> CorrectionsReceived() {
    std::lock_guard<std::mutex> lock(hub_.mu);
    return hub_.correction_lsns;
  }
  void Append(size_t n) {
    AppendResult r;
    ASSERT_OK(store_->AppendReadings(more_.Take(n), &r));
  }
  FakeLink* link_ = nullptr;
  test::SensorWorkload more_{100, 1790000000000};
};

TEST_F(UplinkCorrectionsTest, ARegionOfProtocol6GetsEveryCorrection) {
  hub_.mode = ScriptedHub::Mode::kAnswer;
  CorrectingSource source(store_.get());
  for (uint64_t lsn : {1u, 1500u, 1501u, 10000u}) source.CorrectAt(lsn);
  auto uplink = MakeOver(&source);
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 30000)) << Checkpoint();
  UplinkStats s = uplink->stats();
  uplink->Stop();
  std::vector<uint64_t> got = CorrectionsReceived();
  std::sort(got.begin(), got.end());
  got.erase(std::unique(got.begin(), got.end()), got.end());  // resends
  EXPECT_EQ(got, (std::vector<uint64_t>{1, 1500, 1501, 10000}));
  EXPECT_EQ(s.corrections_withheld, 0u);
  EXPECT_EQ(hub_.refused_unknown_kind, 0);
}

// A region of protocol 5 would refuse a batch holding a correction (an
// entry kind it does not know): it gets the batches without them, each
// counted once, and the gateway goes on; a correction at the log's tail
// waits for the next entry, whose batch covers its LSN.
TEST_F(UplinkCorrectionsTest, ARegionOfProtocol5GetsTheBatchesWithoutCorrectionsAndTheGatewayGoesOn) {
  hub_.mode = ScriptedHub::Mode::kAnswer;
  hub_.version = 5;
  hub_.holes = true;
  CorrectingSource source(store_.get());
  for (uint64_t lsn : {1u, 1500u, 1501u, 10000u}) source.CorrectAt(lsn);
  auto uplink = MakeOver(&source);
  ASSERT_OK(uplink->Start());
  // Everything up to the tail's correction is held by the region.
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 9999 && uplink->stats().corrections_withheld == 4; }, 30000))
      << Checkpoint() << " withheld " << uplink->stats().corrections_withheld;
  EXPECT_EQ(uplink->stats().inflight, 0u);
  // The next reading's batch covers the tail correction's LSN: the
  // region's mark and the checkpoint pass it.
  Append(5);
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10005; }, 30000)) << Checkpoint();
  // A correction inside the next batch's span, and one more at the tail.
  source.CorrectAt(10007);
  source.CorrectAt(10010);
  Append(5);
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10009; }, 30000)) << Checkpoint();
  Append(1);
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10011; }, 30000)) << Checkpoint();
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_EQ(s.corrections_withheld, 6u);
  EXPECT_EQ(s.refusals, 0u);
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.refused_unknown_kind, 0);
  EXPECT_TRUE(hub_.correction_lsns.empty());
  EXPECT_EQ(hub_.high_water, 10011u);
  // The batch after the tail correction opens its span on it.
  bool covered = false;
  for (const WireBatch& b : hub_.received) covered |= b.first_lsn == 10000 && b.last_lsn == 10005;
  EXPECT_TRUE(covered);
}

// More corrections in a row than a batch holds: the uplink reads past them
// to the next entry instead of finding nothing to send there forever.
TEST_F(UplinkCorrectionsTest, ARunOfCorrectionsLongerThanABatchIsReadPast) {
  OpenEmptyStore("run.db");
  Append(20);
  options_.batch_max_readings = 2;
  hub_.mode = ScriptedHub::Mode::kAnswer;
  hub_.version = 5;
  hub_.holes = true;
  CorrectingSource source(store_.get());
  for (uint64_t lsn = 5; lsn <= 11; ++lsn) source.CorrectAt(lsn);
  auto uplink = MakeOver(&source);
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 20; }, 30000)) << Checkpoint();
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_EQ(s.corrections_withheld, 7u);
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.refused_unknown_kind, 0);
  bool spans_the_run = false;
  for (const WireBatch& b : hub_.received) spans_the_run |= b.first_lsn == 5 && b.last_lsn == 12;
  EXPECT_TRUE(spans_the_run);
}

// After a reconnect the region's protocol is unknown until it answers: a
// batch holding a correction does not go before, whatever the store holds.
TEST_F(UplinkCorrectionsTest, NoCorrectionGoesBeforeTheRegionsProtocolIsKnown) {
  hub_.mode = ScriptedHub::Mode::kAnswer;
  CorrectingSource source(store_.get());
  auto uplink = MakeOver(&source);
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 30000)) << Checkpoint();
  size_t before = 0;
  int pings = 0;
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    hub_.pings_to_answer = 0;
    before = hub_.received.size();
  }
  link_->Start();  // a new connection: what the region speaks is asked again
  source.CorrectAt(10001);
  Append(2);
  uplink->NotifyAppended();
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    pings = hub_.pings;
  }
  // Probes go every 100 ms; three more unanswered, and no batch went.
  ASSERT_TRUE(test::WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(hub_.mu);
        return hub_.pings >= pings + 3;
      },
      30000));
  EXPECT_EQ(Received(), before);
  EXPECT_EQ(Checkpoint(), 10000u);
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    hub_.pings_to_answer = -1;
  }
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10002; }, 30000)) << Checkpoint();
  uplink->Stop();
  EXPECT_EQ(CorrectionsReceived(), (std::vector<uint64_t>{10001}));
}

// Two lanes: while a capped backlog drains, readings committed after the
// lane opened go in live batches the region holds as a span above its mark,
// ahead of the backlog's last batches; the checkpoint moves only with the
// contiguous mark; once the backlog reaches the span both are one stream,
// each LSN applied once.
TEST_F(UplinkTest, LiveEntriesGoAheadOfACappedBacklogAndJoinIt) {
  options_.live_lane = true;
  options_.batch_max_readings = 500;
  options_.max_bytes_per_s = 8000;  // the 10,000-reading backlog takes seconds
  hub_.mode = ScriptedHub::Mode::kAnswer;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().live_lane_open; }, 10000)) << "no live lane opened";
  EXPECT_EQ(uplink->stats().live_from, 10001u);
  test::SensorWorkload workload(100, 1780000100000);
  AppendResult r;
  for (int i = 0; i < 30; ++i) {
    ASSERT_OK(store_->AppendReadings(workload.Take(1), &r));
    uplink->NotifyAppended();
    test::SleepMs(10);
  }
  // Every live reading is held by the region while the backlog drains.
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().live_lane.waiting == 0; }, 10000));
  UplinkStats mid = uplink->stats();
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    ASSERT_EQ(hub_.spans.size(), 1u) << "the live lane's span";
    EXPECT_EQ(hub_.spans[0].first, 10001u);
    EXPECT_EQ(hub_.spans[0].last, 10030u);
    EXPECT_LT(hub_.high_water, 10000u) << "the backlog drained before the live readings went";
    EXPECT_LE(mid.checkpoint, hub_.high_water) << "the checkpoint moved past the contiguous mark";
  }
  EXPECT_TRUE(mid.live_lane_open);
  EXPECT_GT(mid.backlog_lane.waiting, 0u);
  EXPECT_GE(mid.live_lane.entries_sent, 30u);
  EXPECT_LE(mid.live_lane.entries_sent, 30u) << "a live reading sent twice";
  // The backlog reaches the span: the mark takes it in, one stream again.
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10030; }, 60000)) << "checkpoint " << Checkpoint();
  ASSERT_TRUE(test::WaitFor([&] { return !uplink->stats().live_lane_open; }, 10000));
  ASSERT_OK(store_->AppendReadings(workload.Take(1), &r));
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10031; }, 10000));
  uplink->Stop();
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.high_water, 10031u);
  EXPECT_TRUE(hub_.spans.empty());
  EXPECT_GE(hub_.live_batches, 1);
  EXPECT_EQ(hub_.applied.size(), 10031u);
  for (const auto& [lsn, n] : hub_.applied) ASSERT_EQ(n, 1) << "LSN " << lsn << " applied " << n << " times";
  // The last live batch went before the backlog's last one.
  size_t first_live = hub_.received.size(), backlog_end = 0;
  for (size_t i = 0; i < hub_.received.size(); ++i) {
    if (hub_.received[i].live && first_live == hub_.received.size()) first_live = i;
    if (hub_.received[i].last_lsn == 10000) backlog_end = i;
  }
  EXPECT_LT(first_live, backlog_end);
}

// A link whose bytes stop reaching the broker (a blackholed connection)
// while the uplink gives its batches up and sends them again: what the
// broker never acknowledged stays in the MQTT session and goes again on the
// next connection, so it must not grow with every resend. Both lanes'
// windows bound it.
TEST_F(UplinkTest, BatchesTheBrokerNeverAcknowledgedDoNotPileUpAcrossResends) {
  options_.live_lane = true;
  options_.batch_max_readings = 500;
  options_.ack_timeout_ms = 200;
  hub_.mode = ScriptedHub::Mode::kHold;  // the backlog's answers wait; the lane opens
  hub_.hold_backlog_only = true;
  FakeLink* link = nullptr;
  auto uplink = std::make_unique<Uplink>(store_.get(), options_, nullptr,
                                         [&](const MqttLinkOptions&, std::unique_ptr<MqttLink>* out) {
                                           auto fake = std::make_unique<FakeLink>(
                                               [this](const std::string& t, const std::string& p, FakeLink* l) {
                                                 hub_.OnPublish(t, p, l);
                                               });
                                           link = fake.get();
                                           *out = std::move(fake);
                                           return Status::Ok();
                                         });
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().live_lane_open; }, 10000)) << "no live lane opened";
  link->SetStalled(true);
  test::SensorWorkload workload(100, 1780000100000);
  AppendResult r;
  const uint64_t before = uplink->stats().ack_timeouts;
  int most = 0;
  // 3 s: time for several answer timeouts (0.2, 0.4, 0.8 s...), each of
  // which gave the batches in flight up and sent them again.
  const int64_t until = ScriptedHub::NowMs() + 3000;
  while (ScriptedHub::NowMs() < until) {
    ASSERT_OK(store_->AppendReadings(workload.Take(20), &r));  // live readings keep coming
    uplink->NotifyAppended();
    test::SleepMs(20);
    most = std::max(most, link->inflight());
  }
  ASSERT_GE(uplink->stats().ack_timeouts, before + 1) << "the uplink never gave its batches up";
  EXPECT_GE(most, 1) << "nothing was sent while the link was stalled";
  EXPECT_LE(most, static_cast<int>(2 * options_.window)) << "unacknowledged publishes piled up across resends";
  // The link comes back: everything is held once.
  link->SetStalled(false);
  hub_.hold_backlog_only = false;
  hub_.mode = ScriptedHub::Mode::kAnswer;
  hub_.Release();
  const uint64_t last = store_->LastLsn();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == last; }, 30000)) << "checkpoint " << Checkpoint();
  uplink->Stop();
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.applied.size(), last);
  for (const auto& [lsn, n] : hub_.applied) ASSERT_EQ(n, 1) << "LSN " << lsn << " applied " << n << " times";
}

// uplink.live_lane = false: strict LSN order, whatever waits behind.
TEST_F(UplinkTest, StrictOrderWithoutTheLiveLane) {
  options_.live_lane = false;
  options_.batch_max_readings = 500;
  options_.ack_timeout_ms = 600000;
  hub_.mode = ScriptedHub::Mode::kHold;
  hub_.hold_backlog_only = true;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  test::SensorWorkload workload(100, 1780000100000);
  AppendResult r;
  ASSERT_TRUE(test::WaitFor([&] { return Received() == options_.window; }, 10000));
  ASSERT_OK(store_->AppendReadings(workload.Take(5), &r));
  uplink->NotifyAppended();
  test::SleepMs(300);
  EXPECT_FALSE(uplink->stats().live_lane_open);
  EXPECT_EQ(Received(), options_.window) << "a batch went outside the window";
  while (Checkpoint() < 10005) {
    hub_.Release();
    ASSERT_TRUE(test::WaitFor([&] {
      std::lock_guard<std::mutex> lock(hub_.mu);
      return !hub_.held.empty() || Checkpoint() == 10005;
    }, 30000));
  }
  uplink->Stop();
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.live_batches, 0);
  for (size_t i = 1; i < hub_.received.size(); ++i) {
    EXPECT_EQ(hub_.received[i].first_lsn, hub_.received[i - 1].last_lsn + 1) << "LSN order, no gap";
    EXPECT_FALSE(hub_.received[i].live);
  }
}

// Priority by topic: a store whose backlog holds readings of levels 1 and 2
// scattered through it (as ingest stamps them from uplink.priority_topics).
class UplinkPriorityTest : public UplinkTest {
 protected:
  static constexpr uint64_t kEntries = 20000;
  // Level 1 every 997th LSN, level 2 every 1499th (not both), the rest 0.
  static uint32_t LevelOf(uint64_t lsn) { return lsn % 997 == 0 ? 1 : lsn % 1499 == 0 ? 2 : 0; }
  void SetUp() override {
    UplinkTest::SetUp();
    OpenEmptyStore("prio.db");
    test::SensorWorkload workload(100, 1780000000000);
    for (uint64_t at = 0; at < kEntries; at += 2000) {
      std::vector<Reading> v = workload.Take(2000);
      for (size_t i = 0; i < v.size(); ++i) v[i].quality = WithPriority(v[i].quality, LevelOf(at + i + 1));
      AppendResult r;
      ASSERT_OK(store_->AppendReadings(v, &r));
    }
    options_.batch_max_readings = 500;
    options_.max_bytes_per_s = 16000;  // the backlog takes seconds to drain
    options_.priority_levels = 2;
    hub_.mode = ScriptedHub::Mode::kAnswer;
  }
  void ExpectEachOnce() {
    std::lock_guard<std::mutex> lock(hub_.mu);
    EXPECT_EQ(hub_.applied.size(), kEntries);
    for (const auto& [lsn, n] : hub_.applied) ASSERT_EQ(n, 1) << "LSN " << lsn << " applied " << n << " times";
    EXPECT_EQ(hub_.wrong_level, 0) << "entries of another level in a priority batch";
  }
  // Runs an uplink until the region's checkpoint holds every entry, stops
  // it and checks each entry was applied once; `stats` are its figures then.
  void SendAll(UplinkStats* stats) {
    auto uplink = Make();
    ASSERT_OK(uplink->Start());
    ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == kEntries; }, 120000)) << "checkpoint " << Checkpoint();
    *stats = uplink->stats();
    uplink->Stop();
    ExpectEachOnce();
  }
};

// Every reading of a priority level is held by the region while the
// capped backlog's mark is still far below it; level 1 goes before level
// 2; the checkpoint moves with the lanes only, and each LSN is applied once
// (the backlog's batches still carry the priority readings; the region
// skips them).
TEST_F(UplinkPriorityTest, PriorityReadingsGoAheadOfACappedBacklogAndAreAppliedOnce) {
  UplinkStats s;
  ASSERT_NO_FATAL_FAILURE(SendAll(&s));
  std::lock_guard<std::mutex> lock(hub_.mu);
  size_t prioritised = 0;
  for (uint64_t lsn = 1; lsn <= kEntries; ++lsn) {
    if (LevelOf(lsn) == 0) continue;
    ++prioritised;
    // Past the first batches (the lanes' first answer, which says the
    // region's protocol, comes before any priority batch): held while the
    // backlog's mark was below it by more than 4 batches, and in fact below
    // a quarter of the backlog.
    if (lsn <= 5000) continue;
    EXPECT_LT(hub_.mark_when_applied[lsn] + 4 * options_.batch_max_readings, lsn)
        << "the level " << LevelOf(lsn) << " reading at LSN " << lsn << " came with the backlog";
    EXPECT_LT(hub_.mark_when_applied[lsn], 5000u) << "LSN " << lsn;
  }
  ASSERT_FALSE(hub_.priority_levels.empty());
  EXPECT_EQ(hub_.priority_levels.front(), 1) << "level 1 goes first";
  EXPECT_EQ(hub_.priority_gaps, 0);
  EXPECT_GE(s.priority_readings_sent, prioritised);
  EXPECT_EQ(s.priority_batches_sent, hub_.priority_levels.size());
  // The priority batches never moved the checkpoint past the contiguous mark.
  EXPECT_EQ(hub_.high_water, kEntries);
}

// A region of protocol 7 would take a priority batch for a lane batch and
// its span for contiguous: none goes to it.
TEST_F(UplinkPriorityTest, NoPriorityBatchGoesToARegionOfProtocol7) {
  hub_.version = kLiveLaneVersion;
  UplinkStats s;
  ASSERT_NO_FATAL_FAILURE(SendAll(&s));
  EXPECT_EQ(s.priority_batches_sent, 0u);
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_TRUE(hub_.priority_levels.empty());
}

// A region whose priority batches reach a hub that does not decode them
// (one of protocol 7 behind the same broker) refuses them and applies
// nothing: the uplink stops sending it priority batches, though the lanes'
// answers still say 8, and the lanes bring every entry, each once.
TEST_F(UplinkPriorityTest, ARegionThatRefusesPriorityBatchesGetsNoMoreAndLosesNothing) {
  hub_.refuse_priority = true;
  UplinkStats s;
  ASSERT_NO_FATAL_FAILURE(SendAll(&s));
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.high_water, kEntries);
  ASSERT_GE(hub_.priority_refused, 1) << "no priority batch went: the test proves nothing";
  // At most the one of each level already in flight when the first
  // refusal came (the lanes' answers after it still say protocol 8).
  EXPECT_LE(hub_.priority_refused, static_cast<int>(options_.priority_levels));
  EXPECT_EQ(s.priority_batches_sent, static_cast<uint64_t>(hub_.priority_refused));
  EXPECT_GE(s.refusals, static_cast<uint64_t>(hub_.priority_refused));
}

// A rewind (here: answers that stop, then come again) forgets the marks and
// the cursors: the priority batches start again from what the region's
// answers say it holds, and still nothing is applied twice.
TEST_F(UplinkPriorityTest, ARewindResumesFromTheRegionsMarks) {
  options_.ack_timeout_ms = 500;
  hub_.mode = ScriptedHub::Mode::kSilent;
  auto uplink = Make();
  ASSERT_OK(uplink->Start());
  ASSERT_TRUE(test::WaitFor([&] { return Received() >= 2; }, 30000));
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    for (const WireBatch& b : hub_.received) {
      EXPECT_EQ(b.priority, 0) << "a priority batch went before any answer said the region's protocol";
    }
    hub_.mode = ScriptedHub::Mode::kAnswer;
  }
  // Once priority batches flow, the region falls silent again past the
  // answer timeout: the uplink rewinds and forgets its cursors.
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().priority_batches_sent >= 1; }, 30000));
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    hub_.mode = ScriptedHub::Mode::kSilent;
  }
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().ack_timeouts >= 1; }, 30000));
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    hub_.mode = ScriptedHub::Mode::kAnswer;
  }
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == kEntries; }, 120000)) << "checkpoint " << Checkpoint();
  uplink->Stop();
  ExpectEachOnce();
  std::lock_guard<std::mutex> lock(hub_.mu);
  EXPECT_EQ(hub_.priority_gaps, 0) << "a priority batch began above both of the region's marks";
}

}  // namespace
}  // namespace edgesync

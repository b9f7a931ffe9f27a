// Ingest with a fake sink and a ManualClock: timestamps and quality flags,
// group commit, rejection counters and dead letters, rate limiting.
#include "agent/ingest/ingest.h"
#include "agent/ingest/intake_gate.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "platform/files.h"
#include "store/store.h"
#include "tests/support/process.h"
#include "tests/support/fake_link.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

class FakeSink : public IngestSink {
 public:
  Status AppendReadings(const std::vector<Reading>& readings, uint64_t intake_seq) override {
    std::lock_guard<std::mutex> lock(mu);
    if (full) return Status::NoSpace("store.max_bytes reached");
    if (fail_always || fail_next > 0) {
      if (fail_next > 0) --fail_next;
      return Status::IoError("disk busy");
    }
    batches.push_back(readings);
    for (const auto& r : readings) all.push_back(r);
    EXPECT_GE(intake_seq, checkpoint) << "the intake checkpoint went back";
    checkpoint = intake_seq;
    return Status::Ok();
  }
  Status IntakeCheckpoint(uint64_t* intake_seq) override {
    std::lock_guard<std::mutex> lock(mu);
    *intake_seq = checkpoint;
    return Status::Ok();
  }
  Status AddDeadLetters(const std::vector<DeadLetter>& letters) override {
    std::unique_lock<std::mutex> lock(mu);
    in_dead_letters = true;
    cv.wait(lock, [&] { return !hold_dead_letters; });
    for (const auto& l : letters) dead.push_back(l);
    return Status::Ok();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu);
    hold_dead_letters = false;
    cv.notify_all();
  }
  bool InDeadLetters() {
    std::lock_guard<std::mutex> lock(mu);
    return in_dead_letters;
  }
  bool Contains(const Reading& r) override {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& a : all) {
      if (a.device_id == r.device_id && a.metric == r.metric && a.ts_ms == r.ts_ms && a.value == r.value) return true;
    }
    return false;
  }
  Status PutDevice(const DeviceRecord& device) override {
    std::lock_guard<std::mutex> lock(mu);
    if (full) return Status::NoSpace("store.max_bytes reached");
    auto it = devices.find(device.device_id);
    if (device.deleted && (it == devices.end() || it->second.deleted)) {
      return Status::NotFound("device " + device.device_id + " has no record");
    }
    devices[device.device_id] = device;
    ++device_writes;
    return Status::Ok();
  }
  bool HasValue(const std::string& device, double value) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& a : all) {
      if (a.device_id == device && a.value == value) return true;
    }
    return false;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return all.size();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool hold_dead_letters = false;  // AddDeadLetters blocks until Release()
  bool in_dead_letters = false;
  int fail_next = 0;
  bool fail_always = false;
  bool full = false;  // refuses every commit as a store full under reject-new does
  uint64_t checkpoint = 0;
  std::vector<std::vector<Reading>> batches;
  std::vector<Reading> all;
  std::vector<DeadLetter> dead;
  std::map<std::string, DeviceRecord> devices;  // the latest version of each record
  int device_writes = 0;
};

constexpr int64_t kFloor = 1767225600000;  // 2026-01-01

IngestOptions Options(AckMode ack) {
  IngestOptions o;
  o.epoch_floor_ms = kFloor;
  o.ack = ack;
  o.retry_delay_ms = 1;
  o.clock_sync = [] { return ClockSync::kSynchronized; };  // the floor alone decides, unless a test says
  return o;
}

// A board booted offline with a saved time days behind: past the floor, but
// the kernel says the clock is not synchronised. Times ingest stamps are
// flagged until it is, and stay trusted for the rest of the boot; a device's
// own time is left as it stamped it.
TEST(Ingest, StampedTimesStayUntrustedUntilTheKernelSaysTheClockIsSynchronised) {
  FakeSink sink;
  ManualClock clock(kFloor + 3 * 86400000LL, 1000000000);
  std::atomic<bool> synced{false};
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.clock_sync = [&] { return synced ? ClockSync::kSynchronized : ClockSync::kUnsynchronized; };
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/temp", "20");
  ingest.OnMessage("sensors/d1/temp", R"({"v": 21, "t": 1800000000})");
  EXPECT_FALSE(ingest.clock_state().trusted);
  EXPECT_EQ(ingest.clock_state().last, ClockSync::kUnsynchronized);
  synced = true;
  ingest.OnMessage("sensors/d1/temp", "22");  // asked at most once a second: not yet
  clock.Advance(1000);
  ingest.OnMessage("sensors/d1/temp", "23");
  synced = false;  // the daemon stopped: the clock stays trusted in this boot
  clock.Advance(5000);
  ingest.OnMessage("sensors/d1/temp", "24");
  ASSERT_EQ(sink.count(), 5u);
  EXPECT_EQ(sink.all[0].quality, kQualityReceiveTime | kQualityUntrustedClock);
  EXPECT_EQ(sink.all[1].quality, 0u);
  EXPECT_EQ(sink.all[1].ts_ms, 1800000000000);
  EXPECT_EQ(sink.all[2].quality, kQualityReceiveTime | kQualityUntrustedClock);
  EXPECT_EQ(sink.all[3].quality, kQualityReceiveTime);
  EXPECT_EQ(sink.all[4].quality, kQualityReceiveTime);
  EXPECT_TRUE(ingest.clock_state().trusted);
  EXPECT_EQ(ingest.counters().untrusted_clock, 2);
  ingest.Stop();
}

TEST(Ingest, AnUnknownClockTrustSourceIsRefusedAtInit) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.clock_trust = "ntp";
  Ingest ingest(o, &sink);
  EXPECT_EQ(ingest.Init().code(), Status::Code::kInvalidArgument);
}

TEST(Ingest, StampsReceiveTimeAndFlagsAnUntrustedClock) {
  FakeSink sink;
  ManualClock clock(kFloor + 5000, 1);
  Ingest ingest(Options(AckMode::kAfterCommit), &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/temp", "20");
  ingest.OnMessage("sensors/d1/temp", R"({"v": 21, "t": 1800000000})");
  clock.SetWall(86400000);  // a board without RTC, back in 1970
  ingest.OnMessage("sensors/d1/temp", "22");
  ingest.OnMessage("sensors/d1", R"([{"n":"x","v":1,"t":-2}])");
  // After-commit: each OnMessage returned only once its reading was committed.
  ASSERT_EQ(sink.count(), 4u);
  EXPECT_EQ(sink.all[0].ts_ms, kFloor + 5000);
  EXPECT_EQ(sink.all[0].quality, kQualityReceiveTime);
  EXPECT_EQ(sink.all[1].ts_ms, 1800000000000);
  EXPECT_EQ(sink.all[1].quality, 0u);
  EXPECT_EQ(sink.all[2].ts_ms, 86400000);
  EXPECT_EQ(sink.all[2].quality, kQualityReceiveTime | kQualityUntrustedClock);
  EXPECT_EQ(sink.all[3].ts_ms, 86400000 - 2000);
  EXPECT_EQ(sink.all[3].quality, kQualityUntrustedClock);
  ingest.Stop();
}

TEST(Ingest, GroupCommitsOnReceiptAndStopCommitsTheBatchInHand) {
  FakeSink sink;
  sink.hold_dead_letters = true;
  IngestOptions o = Options(AckMode::kOnReceipt);
  // batch_max at the group a commit aims for below the busy rate
  // (commit_pacer.h), so only size or Stop can commit.
  o.batch_max = 16;
  o.batch_delay_ms = 60000;
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  // The committer is held in the sink (writing a dead letter) while 27
  // readings queue up: a slow committer (as under qemu) then finds more
  // than batch_max waiting. It must still commit batches of batch_max, not
  // the whole queue: otherwise 27 + 13 leaves 13 < batch_max that only
  // Stop would commit, and size alone would commit 27 of 40, not 32.
  ingest.OnMessage("sensors/d0/m", "abc");
  ASSERT_TRUE(test::WaitFor([&] { return sink.InDeadLetters(); }, 5000));
  int i = 0;
  for (; i < 27; ++i) ingest.OnMessage("sensors/d" + std::to_string(i % 10) + "/m", std::to_string(i));
  sink.Release();
  for (; i < 40; ++i) ingest.OnMessage("sensors/d" + std::to_string(i % 10) + "/m", std::to_string(i));
  // The last 8 commit once the pacer's wait (a tenth of a second: no rate
  // is known yet) has passed.
  ASSERT_TRUE(test::WaitFor([&] { return sink.count() >= 40; }, 5000));
  ASSERT_EQ(sink.batches.size(), 3u);
  EXPECT_EQ(sink.batches[0].size(), 16u);
  EXPECT_EQ(sink.batches[1].size(), 16u);
  EXPECT_EQ(sink.batches[2].size(), 8u);
  // Stop commits the batch in hand: 8 more queue while the committer is
  // held again, and Stop is called before it is let go.
  {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.hold_dead_letters = true;
    sink.in_dead_letters = false;
  }
  ingest.OnMessage("sensors/d0/m", "abc");
  ASSERT_TRUE(test::WaitFor([&] { return sink.InDeadLetters(); }, 5000));
  for (; i < 48; ++i) ingest.OnMessage("sensors/d" + std::to_string(i % 10) + "/m", std::to_string(i));
  std::thread release([&] {
    test::SleepMs(100);
    sink.Release();
  });
  ingest.Stop();
  release.join();
  EXPECT_EQ(sink.count(), 48u);
  ASSERT_EQ(sink.batches.size(), 4u);
  EXPECT_EQ(sink.batches[3].size(), 8u);
  for (int k = 0; k < 48; ++k) EXPECT_EQ(sink.all[static_cast<size_t>(k)].value, k);  // queue order kept
  EXPECT_EQ(ingest.counters().readings_committed, 48);
}

TEST(Ingest, AckAfterCommitCommitsOnTheCallingThreadAndSharesCommits) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.batch_max = 1000;
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  // Several receiving threads at once: each returns only once its own
  // reading is committed; none is lost or committed twice.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&ingest, &sink, t] {
      const std::string device = "t" + std::to_string(t);
      for (int i = 0; i < 200; ++i) {
        ingest.OnMessage("sensors/" + device + "/m", std::to_string(i));
        EXPECT_TRUE(sink.HasValue(device, i)) << device << " " << i;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(sink.count(), 800u);
  EXPECT_EQ(ingest.counters().readings_committed, 800);
  EXPECT_LE(ingest.counters().batches, 800);
  ingest.Stop();
  EXPECT_EQ(sink.count(), 800u);
}

TEST(Ingest, SkipsARedeliveryOfWhatIsStored) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kAfterCommit), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/temp", R"({"v": 1, "t": 1800000000})");
  ingest.OnMessage("sensors/d1/temp", R"({"v": 1, "t": 1800000000})", /*duplicate=*/true);
  ingest.OnMessage("sensors/d1/temp", R"({"v": 2, "t": 1800000001})", /*duplicate=*/true);
  EXPECT_EQ(sink.count(), 2u);
  EXPECT_EQ(ingest.counters().duplicates_skipped, 1);
}

// A bare number carries no time to find it by: its redelivery is known by
// its packet id. The same value again under a fresh id is a new reading, and
// a redelivery of a message not taken (cut off before it arrived) is stored.
TEST(Ingest, SkipsARedeliveredBareNumberByItsPacketId) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kAfterCommit), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/temp", "21.5", false, 7);
  ingest.OnMessage("sensors/d1/temp", "21.5", false, 8);
  ingest.OnMessage("sensors/d1/temp", "21.5", /*duplicate=*/true, 8);
  ingest.OnMessage("sensors/d1/temp", "21.5", /*duplicate=*/true, 9);
  ingest.Stop();
  EXPECT_EQ(sink.count(), 3u);
  EXPECT_EQ(ingest.counters().duplicates_skipped, 1);
}

// A local broker killed -9 restores its last saved state and sends again,
// without DUP, messages ingest already took: a reading with its own time is
// found in the store and skipped; a bare number cannot be told apart.
TEST(Ingest, SkipsATimedReadingARestoredBrokerSendsAgain) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kAfterCommit), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  auto timed = [](int i) { return "{\"v\":" + std::to_string(i) + ",\"t\":" + std::to_string(1800000000 + i) + "}"; };
  for (int id = 1; id <= 10; ++id) ingest.OnMessage("sensors/d1/m", timed(id), false, id);
  ingest.OnMessage("sensors/d1/bare", "21.5", false, 11);
  // Restored from the state saved after id 6: 7..11 again, then new ones.
  for (int id = 7; id <= 10; ++id) ingest.OnMessage("sensors/d1/m", timed(id), false, id);
  ingest.OnMessage("sensors/d1/bare", "21.5", false, 11);
  ingest.OnMessage("sensors/d1/m", timed(12), false, 12);
  ingest.OnMessage("sensors/d1/m", timed(12), false, 13);  // past the window: a new message, the same content
  ingest.Stop();
  EXPECT_EQ(ingest.counters().duplicates_skipped, 4);
  EXPECT_EQ(sink.count(), 10u + 1 + 1 + 1 + 1);  // the bare number twice, 12 twice
}

TEST(Ingest, APatternWithoutADeviceTakesItFromTheSenmlBaseName) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.patterns = {"senml"};
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("senml", R"([{"bn":"dev7:","n":"temp","v":21.5,"t":1800000000}])");
  ASSERT_EQ(sink.count(), 1u);
  EXPECT_EQ(sink.all[0].device_id, "dev7");
  EXPECT_EQ(sink.all[0].metric, "temp");
  EXPECT_EQ(sink.all[0].value, 21.5);
}

TEST(Ingest, RetriesAFailedCommit) {
  FakeSink sink;
  sink.fail_next = 3;
  Ingest ingest(Options(AckMode::kAfterCommit), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/temp", "1");
  EXPECT_EQ(sink.count(), 1u);
  EXPECT_EQ(ingest.counters().commit_failures, 3);
}

TEST(Ingest, RejectsBadInputWithReasonAndDeadLetter) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.max_payload_bytes = 100;
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/temp", std::string(200, '1'));
  ingest.OnMessage("sensors/d1/temp", "\xc3\x28");
  ingest.OnMessage("sensors/d1/temp", "inf");
  ingest.OnMessage("sensors/d1/temp", "abc");
  ingest.OnMessage("sensors/d1", "{\"a\":");
  ingest.OnMessage("sensors/d1", "[{\"n\":\"x\"}]");
  ingest.OnMessage("sensors/d1", "[{\"n\":\"a+b\",\"v\":1}]");
  ingest.OnMessage("sensors/d1", std::string("ESRD\x00\x00\x00\x00\x00", 9).insert(0, "\x0c\x00\x00\x00", 4));
  ingest.OnMessage("elsewhere/x", "1");
  ingest.OnMessage("sensors/d1/temp", R"({"v":1,"u":"this unit is far too long to be a unit at all"})");
  ingest.OnMessage("sensors/d1/temp", "5");  // the one good message
  ingest.Stop();
  IngestCounters c = ingest.counters();
  auto n = [&](RejectReason r) { return c.rejected[static_cast<size_t>(r)]; };
  EXPECT_EQ(n(RejectReason::kTooLarge), 1);
  EXPECT_EQ(n(RejectReason::kInvalidUtf8), 1);
  EXPECT_EQ(n(RejectReason::kNotFinite), 1);
  EXPECT_EQ(n(RejectReason::kUnknownFormat), 1);
  EXPECT_EQ(n(RejectReason::kMalformedJson), 1);
  EXPECT_EQ(n(RejectReason::kMalformedSenml), 1);
  EXPECT_EQ(n(RejectReason::kInvalidKey), 1);
  EXPECT_EQ(n(RejectReason::kFlatbuffersInvalid), 1);
  EXPECT_EQ(n(RejectReason::kNoTopicMatch), 1);
  EXPECT_EQ(n(RejectReason::kInvalidReading), 1);
  EXPECT_EQ(sink.all.size(), 1u);
  ASSERT_EQ(sink.dead.size(), 10u);
  EXPECT_EQ(sink.dead[0].topic, "sensors/d1/temp");
  EXPECT_EQ(sink.dead[0].head.size(), 64u);
  EXPECT_EQ(sink.dead[0].reason.rfind("too_large", 0), 0u);
  EXPECT_EQ(sink.dead[1].head, "\\xc3(");
}

TEST(Ingest, ADeviceDescriptionIsWrittenBeforeTheCallReturnsInEveryAckMode) {
  for (AckMode ack : {AckMode::kAfterJournal, AckMode::kAfterCommit, AckMode::kOnReceipt}) {
    SCOPED_TRACE(static_cast<int>(ack));
    test::TempDir dir;
    FakeSink sink;
    IngestOptions o = Options(ack);
    o.journal_dir = dir.path();
    Ingest ingest(o, &sink);
    ASSERT_OK(ingest.Init());
    std::vector<std::string> filters = ingest.Filters();
    EXPECT_NE(std::find(filters.begin(), filters.end(), "devices/+/meta"), filters.end());
    ASSERT_OK(ingest.Start());
    ingest.OnMessage("devices/boiler-1/meta", R"({"name": "Boiler", "location": "cellar", "unit": "C"})");
    {
      std::lock_guard<std::mutex> lock(sink.mu);
      ASSERT_EQ(sink.devices.count("boiler-1"), 1u);
      EXPECT_EQ(sink.devices["boiler-1"].name, "Boiler");
      EXPECT_EQ(sink.devices["boiler-1"].location, "cellar");
      EXPECT_EQ(sink.devices["boiler-1"].default_unit, "C");
      EXPECT_FALSE(sink.devices["boiler-1"].deleted);
    }
    EXPECT_EQ(sink.count(), 0u) << "a description is not a reading";
    ingest.Stop();
    EXPECT_EQ(ingest.counters().device_records, 1);
  }
}

TEST(Ingest, ADeviceDescriptionIsReplacedThenDeletedAndARepeatIsNotWrittenAgain) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kAfterCommit), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  const std::string topic = "devices/pump/meta";
  ingest.OnMessage(topic, R"({"name": "Pump", "location": "yard"})");
  ingest.OnMessage(topic, R"({"name": "Pump", "location": "yard"})");  // a retained one, delivered again
  EXPECT_EQ(sink.device_writes, 1);
  ingest.OnMessage(topic, R"({"name": "Pump 2"})");
  EXPECT_EQ(sink.device_writes, 2);
  EXPECT_EQ(sink.devices["pump"].name, "Pump 2");
  EXPECT_EQ(sink.devices["pump"].location, "") << "a description replaces the record whole";
  ingest.OnMessage(topic, "");  // the retained description cleared
  EXPECT_TRUE(sink.devices["pump"].deleted);
  ingest.OnMessage(topic, "");  // nothing left to delete: no error
  ingest.OnMessage("devices/valve/meta", R"({"name": "Valve"})");
  ingest.OnMessage("devices/valve/meta", R"({"deleted": true, "name": "ignored"})");
  EXPECT_TRUE(sink.devices["valve"].deleted);
  ingest.OnMessage("devices/ghost/meta", R"({"deleted": true})");  // never had a record
  EXPECT_EQ(sink.devices.count("ghost"), 0u);
  ingest.Stop();
  IngestCounters c = ingest.counters();
  EXPECT_EQ(c.device_records, 5);
  EXPECT_EQ(c.commit_failures, 0);
  EXPECT_TRUE(sink.dead.empty());
}

TEST(Ingest, ABadDeviceDescriptionIsDeadLetteredAndCounted) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kAfterCommit), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("devices/d1/meta", R"({"name": 5})");
  ingest.OnMessage("devices/d1/meta", R"({"colour": "red"})");
  ingest.OnMessage("devices/d1/meta", "{\"name\":");
  ingest.OnMessage("devices/d1/meta", "\xc3\x28");
  ingest.OnMessage("devices/a+b/meta", R"({"name": "x"})");
  ingest.OnMessage("devices/d1/meta", R"({"name": ")" + std::string(300, 'n') + R"("})");
  ingest.Stop();
  IngestCounters c = ingest.counters();
  auto n = [&](RejectReason r) { return c.rejected[static_cast<size_t>(r)]; };
  EXPECT_EQ(n(RejectReason::kInvalidDeviceRecord), 3);
  EXPECT_EQ(n(RejectReason::kMalformedJson), 1);
  EXPECT_EQ(n(RejectReason::kInvalidUtf8), 1);
  EXPECT_EQ(n(RejectReason::kInvalidKey), 1);
  EXPECT_EQ(c.device_records, 0);
  EXPECT_TRUE(sink.devices.empty());
  ASSERT_EQ(sink.dead.size(), 6u);
  EXPECT_EQ(sink.dead[0].topic, "devices/d1/meta");
  EXPECT_EQ(sink.dead[0].reason.rfind("invalid_device_record: ", 0), 0u) << sink.dead[0].reason;
  EXPECT_NE(sink.dead[1].reason.find("colour"), std::string::npos) << sink.dead[1].reason;
}

TEST(Ingest, ADeviceDescriptionTheStoreRefusesIsCountedAndNotRemembered) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kOnReceipt), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  sink.full = true;
  ingest.OnMessage("devices/d1/meta", R"({"name": "A"})");
  EXPECT_EQ(ingest.counters().commit_failures, 1);
  sink.full = false;
  ingest.OnMessage("devices/d1/meta", R"({"name": "A"})");  // the broker's retained copy, later
  EXPECT_EQ(sink.devices["d1"].name, "A");
  ingest.Stop();
  EXPECT_EQ(ingest.counters().device_records, 1);
}

TEST(Ingest, TheDeviceTopicMustNameTheDeviceAndNoMetric) {
  FakeSink sink;
  for (const char* bad : {"devices/meta", "devices/{deviceId}/{metric}", "devices/#"}) {
    IngestOptions o = Options(AckMode::kAfterCommit);
    o.device_topic = bad;
    Ingest ingest(o, &sink);
    EXPECT_FALSE(ingest.Init().ok()) << bad;
  }
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.device_topic = "";
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  EXPECT_EQ(ingest.Filters().size(), 2u);
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("devices/d1/meta", R"({"name": "A"})");
  ingest.Stop();
  EXPECT_TRUE(sink.devices.empty());
  EXPECT_EQ(ingest.counters().rejected[static_cast<size_t>(RejectReason::kNoTopicMatch)], 1);
}

TEST(Ingest, RateLimitsAFloodingDeviceOnly) {
  FakeSink sink;
  ManualClock clock(kFloor + 1, 1);
  IngestOptions o = Options(AckMode::kOnReceipt);
  o.device_rate = 10;
  o.device_burst = 20;
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.LinkUp(true);  // connected from the start: no time away to credit
  for (int i = 0; i < 1000; ++i) ingest.OnMessage("sensors/hot/m", "1");
  for (int d = 0; d < 50; ++d) ingest.OnMessage("sensors/cool" + std::to_string(d) + "/m", "1");
  clock.Advance(1000);  // ten more tokens for the hot device
  for (int i = 0; i < 100; ++i) ingest.OnMessage("sensors/hot/m", "1");
  ingest.Stop();
  EXPECT_EQ(sink.all.size(), 20u + 50u + 10u);
  IngestCounters c = ingest.counters();
  EXPECT_EQ(c.rejected[static_cast<size_t>(RejectReason::kRateLimited)], 1070);
  ASSERT_FALSE(c.top_rate_limited.empty());
  EXPECT_EQ(c.top_rate_limited[0].first, "hot");
  EXPECT_EQ(c.top_rate_limited[0].second, 1070);
}

TEST(Ingest, ABacklogDeliveredAtOnceIsNotRefusedWhenWithinTheRateInItsOwnTime) {
  FakeSink sink;
  const int64_t now = 1800000000000;
  ManualClock clock(now, 1);
  Ingest ingest(Options(AckMode::kOnReceipt), &sink, &clock);  // 100/s, burst 200
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  // 10 devices at 20 readings/s during a 30 s outage, replayed by the broker
  // in one go, interleaved as they were published.
  char payload[64];
  for (int i = 0; i < 600; ++i) {
    for (int d = 0; d < 10; ++d) {
      int64_t ts = now - 30000 + i * 50;
      std::snprintf(payload, sizeof payload, "{\"v\": %d, \"t\": %lld.%03lld}", i, (long long)(ts / 1000),
                    (long long)(ts % 1000));
      ingest.OnMessage("sensors/dev" + std::to_string(d) + "/m", payload);
    }
  }
  // And a device with the same backlog in arrival time only: it has no clock
  // of its own, so it meets the bucket as a flood.
  for (int i = 0; i < 600; ++i) ingest.OnMessage("sensors/noclock/m", std::to_string(i));
  ingest.Stop();
  IngestCounters c = ingest.counters();
  EXPECT_EQ(sink.count(), 6000u + 200u);
  EXPECT_EQ(c.readings_rate_limited, 400);
  ASSERT_EQ(c.top_rate_limited.size(), 1u);
  EXPECT_EQ(c.top_rate_limited[0].first, "noclock");
}

IngestOptions JournalOptions(const std::string& dir) {
  IngestOptions o = Options(AckMode::kAfterJournal);
  o.journal_dir = dir;
  o.batch_max = 1000;
  o.batch_delay_ms = 60000;  // only Stop commits
  return o;
}

// Bare numbers (no time of their own) from `devices` devices, `each` per
// device, interleaved as a broker replays a queue: all in one instant.
void OfferBare(Ingest* ingest, int devices, int each) {
  for (int i = 0; i < each; ++i) {
    for (int d = 0; d < devices; ++d) ingest->OnMessage("sensors/dev" + std::to_string(d) + "/m", std::to_string(i));
  }
}

// A gateway restarted after 30 s: the presence mark says when the previous
// run last took messages, on the monotonic clock, so the bare readings the
// broker queued meanwhile (600 per device, 20/s) are all taken, before the
// link says it is up (the broker delivers first). The wall clock jumping a
// day meanwhile changes nothing.
TEST(Ingest, ABareBacklogAfterARestartInThisBootIsTakenWhole) {
  test::TempDir dir;
  FakeSink sink;
  ManualClock clock(kFloor + 1000, 1);
  IngestOptions o = JournalOptions(dir.path());  // 100/s, burst 200
  {
    Ingest ingest(o, &sink, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    ingest.LinkUp(false);
    OfferBare(&ingest, 10, 20);
    clock.Advance(1000);
    ingest.KeepPresenceMark();
    ingest.Stop();  // the link went down just before
  }
  ASSERT_TRUE(FileExists(dir.File(PresenceMark::kFileName)));
  clock.Advance(30000);
  clock.SetWall(clock.WallMillis() + 86400000);
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  OfferBare(&ingest, 10, 300);
  ingest.LinkUp(true);
  OfferBare(&ingest, 10, 300);
  // A runaway beside them: 1,000/s during the 30 s loses what exceeds its
  // rate over the absence.
  for (int i = 0; i < 30000; ++i) ingest.OnMessage("sensors/hot/m", "1");
  ingest.Stop();
  IngestCounters c = ingest.counters();
  EXPECT_EQ(sink.count(), 10u * 20 + 10u * 600 + 3200);
  EXPECT_EQ(c.readings_rate_limited, 30000 - 3200);
  ASSERT_EQ(c.top_rate_limited.size(), 1u);
  EXPECT_EQ(c.top_rate_limited[0].first, "hot");
}

// The broker kept no session (it restarted without persistence): it queued
// nothing for us, so there is nothing to credit.
TEST(Ingest, NoCreditWhenTheBrokerKeptNoSession) {
  test::TempDir dir;
  FakeSink sink;
  ManualClock clock(kFloor + 1000, 1);
  IngestOptions o = JournalOptions(dir.path());
  {
    Ingest ingest(o, &sink, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    ingest.LinkUp(false);
    ingest.Stop();
  }
  clock.Advance(30000);
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.LinkUp(false);
  OfferBare(&ingest, 1, 600);
  ingest.Stop();
  EXPECT_EQ(ingest.counters().readings_rate_limited, 400);
}

// After a reboot the monotonic clock starts again: the mark of the earlier
// boot does not count, only the time since boot (2 s here) does.
TEST(Ingest, AfterARebootOnlyTheTimeSinceBootIsCredited) {
  test::TempDir dir;
  FakeSink sink;
  ManualClock clock(kFloor + 1000, 1);
  IngestOptions o = JournalOptions(dir.path());
  {
    Ingest ingest(o, &sink, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    ingest.LinkUp(false);
    clock.Advance(600000);
    ingest.Stop();
  }
  clock.Reboot("manual-boot-2", int64_t{2000} * 1000000);
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  OfferBare(&ingest, 1, 600);
  ingest.LinkUp(true);
  ingest.Stop();
  EXPECT_EQ(ingest.counters().readings_rate_limited, 600 - 200 - 200);
}

// The link lost and back within a run (a store that refused commits paused
// it; the broker restarted): what the broker queued meanwhile is taken.
TEST(Ingest, ABareBacklogAfterTheLinkWasDownIsTakenWhole) {
  FakeSink sink;
  ManualClock clock(kFloor + 1000, 1);
  Ingest ingest(Options(AckMode::kOnReceipt), &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.LinkUp(false);
  OfferBare(&ingest, 10, 100);
  ingest.LinkDown();
  clock.Advance(10000);
  OfferBare(&ingest, 10, 500);  // delivered before the link says it is up
  ingest.LinkUp(true);
  OfferBare(&ingest, 10, 500);
  ingest.Stop();
  EXPECT_EQ(ingest.counters().readings_rate_limited, 0);
  EXPECT_EQ(sink.count(), 10u * 1100);
}

TEST(Ingest, AfterJournalReturnsBeforeTheCommitAndStartCommitsWhatTheJournalHolds) {
  test::TempDir dir;
  const IngestOptions o = JournalOptions(dir.path());
  ManualClock clock(kFloor + 1000, 1);
  {
    FakeSink sink;
    sink.fail_always = true;  // nothing reaches the store, as with a kill before the commit
    Ingest ingest(o, &sink, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    for (int i = 0; i < 9; ++i) {
      ingest.OnMessage("sensors/d1/m", R"({"v": )" + std::to_string(i) + R"(, "t": 1800000000})");
    }
    ingest.OnMessage("sensors/d2/m", "9");  // stamped with the receive time
    EXPECT_EQ(sink.count(), 0u);          // every call returned before any commit
    ingest.Stop();                        // gives up the batch: the journal keeps it
    EXPECT_EQ(sink.count(), 0u);
  }
  clock.SetWall(kFloor + 99000);
  FakeSink sink;
  {
    Ingest ingest(o, &sink, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    // Start returned once the journal's readings were committed.
    ASSERT_EQ(sink.count(), 10u);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(sink.all[static_cast<size_t>(i)].value, i);
    EXPECT_EQ(sink.all[0].ts_ms, 1800000000000);
    EXPECT_EQ(sink.all[9].ts_ms, kFloor + 1000);  // the first receive time, not the replay's
    EXPECT_EQ(sink.all[9].quality, kQualityReceiveTime);
    EXPECT_EQ(sink.checkpoint, 10u);
    EXPECT_EQ(ingest.counters().replayed, 10);
    ingest.OnMessage("sensors/d1/m", "10");
    ingest.Stop();
    EXPECT_EQ(sink.count(), 11u);
    EXPECT_EQ(sink.checkpoint, 11u);  // sequence numbers go on from the journal's
  }
  // A clean stop left nothing to commit again.
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  EXPECT_EQ(ingest.counters().replayed, 0);
  ingest.Stop();
  EXPECT_EQ(sink.count(), 11u);
}

TEST(Ingest, AfterJournalSkipsWhatTheStoreAlreadyHolds) {
  test::TempDir dir;
  const IngestOptions o = JournalOptions(dir.path());
  FakeSink sink;
  {
    Ingest ingest(o, &sink);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    for (int i = 0; i < 5; ++i) ingest.OnMessage("sensors/d1/m", std::to_string(i));
    ingest.Stop();  // commits, and clears the journal
  }
  ASSERT_EQ(sink.count(), 5u);
  ASSERT_EQ(sink.checkpoint, 5u);
  // Put the records back as a kill -9 after the commit would have left them.
  IntakeRecovery rec;
  std::unique_ptr<IntakeJournal> journal;
  IntakeJournalOptions jo;
  jo.dir = dir.path();
  ASSERT_OK(IntakeJournal::Open(jo, 0, &journal, &rec));
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    ASSERT_OK(journal->Append(seq, {Reading{"d1", "m", kFloor, double(seq - 1), "", 0}}, 0));
  }
  journal.reset();
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  EXPECT_EQ(ingest.counters().replayed, 0);  // all at or below the checkpoint
  ingest.Stop();
  EXPECT_EQ(sink.count(), 5u);
}

// After a restart the journal names the messages taken: the broker's
// redelivery of the one whose PUBACK the stop cut off is skipped, the next
// message under the next id is stored.
TEST(Ingest, SkipsARedeliveredBareNumberAfterARestart) {
  test::TempDir dir;
  FakeSink sink;
  {
    Ingest ingest(JournalOptions(dir.path()), &sink);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    for (int id = 100; id < 110; ++id) ingest.OnMessage("sensors/d1/m", "21.5", false, id);
    ingest.Stop();
  }
  ASSERT_EQ(sink.count(), 10u);
  Ingest ingest(JournalOptions(dir.path()), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/m", "21.5", /*duplicate=*/true, 109);
  ingest.OnMessage("sensors/d1/m", "21.5", false, 110);
  ingest.Stop();
  EXPECT_EQ(sink.count(), 11u);
  EXPECT_EQ(ingest.counters().duplicates_skipped, 1);
}

TEST(Ingest, AnotherAckModeStillCommitsWhatTheJournalHolds) {
  test::TempDir dir;
  {
    FakeSink failing;
    failing.fail_always = true;
    Ingest ingest(JournalOptions(dir.path()), &failing);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    for (int i = 0; i < 3; ++i) ingest.OnMessage("sensors/d1/m", std::to_string(i));
    ingest.Stop();
  }
  // The gateway comes back configured with ack = on-receipt.
  IngestOptions o = JournalOptions(dir.path());
  o.ack = AckMode::kOnReceipt;
  FakeSink sink;
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  EXPECT_EQ(sink.count(), 3u);
  ingest.OnMessage("sensors/d1/m", "3");
  ingest.Stop();
  EXPECT_EQ(sink.count(), 4u);
  EXPECT_EQ(sink.checkpoint, 4u);
  // Nothing was journaled in on-receipt mode, and everything the journal
  // held is committed: the next start has nothing to commit again (the
  // records stay, naming the messages taken, for redeliveries).
  Ingest again(JournalOptions(dir.path()), &sink);
  ASSERT_OK(again.Init());
  ASSERT_OK(again.Start());
  EXPECT_EQ(again.counters().replayed, 0);
  again.Stop();
  EXPECT_EQ(sink.count(), 4u);
}

TEST(Ingest, AfterJournalWithoutADirectoryIsRefused) {
  FakeSink sink;
  Ingest ingest(Options(AckMode::kAfterJournal), &sink);
  ASSERT_OK(ingest.Init());
  EXPECT_EQ(ingest.Start().code(), Status::Code::kInvalidArgument);
}

TEST(Ingest, AJournalWriteThatFailsIsCommittedBeforeTheCallReturns) {
  test::TempDir dir;
  FakeSink sink;
  Ingest ingest(JournalOptions(dir.path()), &sink);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  // The journal's file may not grow: its writes fail with EFBIG.
  signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit none = old;
  none.rlim_cur = 0;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &none), 0);
  ingest.OnMessage("sensors/d1/m", "1");
  ingest.OnMessage("sensors/d1/m", "2");
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  EXPECT_EQ(sink.count(), 2u);  // committed, since the journal could not hold them
  EXPECT_EQ(ingest.counters().journal_failures, 2);
  ingest.OnMessage("sensors/d1/m", "3");
  EXPECT_EQ(sink.count(), 2u);  // journaled again: the commit waits for the batch
  ingest.Stop();
  EXPECT_EQ(sink.count(), 3u);
  EXPECT_EQ(sink.checkpoint, 3u);
}

// A commit queue of 4 x 5 readings, committed at once: a full store shows
// after a few messages.
IngestOptions SmallQueueOptions(const std::string& dir) {
  IngestOptions o = JournalOptions(dir);
  o.batch_max = 5;
  o.batch_delay_ms = 1;
  return o;
}

// Ingest, and the gate driving a fake link from its intake.
struct GatedIngest {
  GatedIngest(const IngestOptions& o, IngestSink* sink)
      : ingest(o, sink), link([](const std::string&, const std::string&, FakeLink*) {}), gate(&ingest, &link) {}
  // Starts ingest and the gate (which may pause the link before it starts).
  bool Start() {
    if (!ingest.Init().ok() || !ingest.Start().ok()) return false;
    gate.Start();
    return true;
  }
  Ingest ingest;
  FakeLink link;
  IntakeGate gate;
};

// A store full under reject-new: the caller (Paho's receive thread, which
// the uplink shares) is never held; intake closes, the gate pauses the link
// to the local broker, and once the store takes commits again everything
// accepted is committed, intake opens and the link resumes.
TEST(Ingest, AStoreThatRefusesClosesIntakeInsteadOfHoldingTheReceiveThread) {
  test::TempDir dir;
  FakeSink sink;
  GatedIngest g(SmallQueueOptions(dir.path()), &sink);
  Ingest& ingest = g.ingest;
  FakeLink& link = g.link;
  ASSERT_TRUE(g.Start());
  ASSERT_OK(link.Start());
  EXPECT_FALSE(link.paused());
  {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.full = true;
  }
  ingest.OnMessage("sensors/d1/m", "0");
  ASSERT_TRUE(test::WaitFor([&] { return !ingest.intake_open(); }, 10000));
  ASSERT_TRUE(test::WaitFor([&] { return link.paused(); }, 10000)) << "the gate did not pause the link";
  // Messages the broker had already sent keep coming until the link is
  // down: 100, five times the queue, are taken without waiting.
  std::atomic<int> delivered{0};
  std::thread receive([&] {
    for (int i = 1; i <= 100; ++i) {
      ingest.OnMessage("sensors/d1/m", R"({"v": )" + std::to_string(i) + R"(, "t": 1800000000})");
      ++delivered;
    }
  });
  const bool returned = test::WaitFor([&] { return delivered == 100; }, 30000);
  if (!returned) {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.full = false;  // let the thread go, then fail
  }
  receive.join();
  ASSERT_TRUE(returned) << "OnMessage waited for the full store (" << delivered << " of 100 returned)";
  IngestCounters c = ingest.counters();
  EXPECT_TRUE(c.paused);
  EXPECT_EQ(c.pause_reason, "store full");
  EXPECT_EQ(c.pauses, 1);
  EXPECT_EQ(c.overruns, 0);
  EXPECT_GT(c.commit_failures, 0);
  EXPECT_EQ(sink.count(), 0u);
  // Room again (the region acknowledged, retention pruned): all of it goes
  // in, in order, and the link comes back by itself.
  {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.full = false;
  }
  ASSERT_TRUE(test::WaitFor([&] { return ingest.intake_open(); }, 30000));
  ASSERT_TRUE(test::WaitFor([&] { return !link.paused(); }, 10000)) << "the gate did not resume the link";
  EXPECT_EQ(sink.count(), 101u);
  EXPECT_EQ(sink.checkpoint, 101u);
  for (size_t i = 0; i < sink.count(); ++i) EXPECT_EQ(sink.all[i].value, static_cast<double>(i));
  c = ingest.counters();
  EXPECT_FALSE(c.paused);
  EXPECT_EQ(c.pause_reason, "");
  EXPECT_EQ(c.pauses, 1);
  g.gate.Stop();
  ingest.Stop();
}

// Stopped while the store refuses: what was taken stays in the journal
// and the next start commits it, keeping the link down until it has.
TEST(Ingest, AStopWhileTheStoreRefusesKeepsEverythingForTheNextStart) {
  test::TempDir dir;
  IngestOptions o = SmallQueueOptions(dir.path());
  FakeSink sink;
  {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.full = true;
  }
  {
    Ingest ingest(o, &sink);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    for (int i = 0; i < 40; ++i) ingest.OnMessage("sensors/d1/m", std::to_string(i));
    ASSERT_TRUE(test::WaitFor([&] { return !ingest.intake_open(); }, 10000));
    ingest.Stop();
  }
  EXPECT_EQ(sink.count(), 0u);
  o.replay_wait_ms = 100;  // the store is still full: Start must not wait for it
  GatedIngest g(o, &sink);
  Ingest& ingest = g.ingest;
  FakeLink& link = g.link;
  ASSERT_TRUE(g.Start());
  EXPECT_TRUE(link.paused()) << "the link would connect before the journal's readings are committed";
  EXPECT_EQ(ingest.counters().pause_reason, "store full");
  {
    std::lock_guard<std::mutex> lock(sink.mu);
    sink.full = false;
  }
  ASSERT_TRUE(test::WaitFor([&] { return !link.paused(); }, 30000));
  EXPECT_EQ(sink.count(), 40u);
  for (size_t i = 0; i < sink.count(); ++i) EXPECT_EQ(sink.all[i].value, static_cast<double>(i));
  g.gate.Stop();
  ingest.Stop();
}

// uplink.priority_topics: the level of a message is 1 + the index of the
// first filter its topic matches (MQTT wildcards), 0 when none does.
TEST(Ingest, APriorityLevelIsTheFirstMatchingFiltersPlace) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.priority_topics = {"+/alarm/#", "sensors/+/temp", "sensors/#"};
  Ingest ingest(o, &sink);
  ASSERT_OK(ingest.Init());
  EXPECT_EQ(ingest.PriorityLevel("site/alarm/d1/smoke"), 1u);
  EXPECT_EQ(ingest.PriorityLevel("site/alarm"), 1u);  // '#' takes its parent level too
  EXPECT_EQ(ingest.PriorityLevel("sensors/d1/temp"), 2u);  // also fits "sensors/#": the first wins
  EXPECT_EQ(ingest.PriorityLevel("sensors/d1/hum"), 3u);
  EXPECT_EQ(ingest.PriorityLevel("sensors/d1"), 3u);
  EXPECT_EQ(ingest.PriorityLevel("site/alarms/d1"), 0u);
  EXPECT_EQ(ingest.PriorityLevel("a/b/alarm"), 0u);  // '+' fills one level only
  // The order of the list decides, not how narrow a filter is.
  o.priority_topics = {"sensors/#", "sensors/+/temp"};
  Ingest reordered(o, &sink);
  ASSERT_OK(reordered.Init());
  EXPECT_EQ(reordered.PriorityLevel("sensors/d1/temp"), 1u);
  o.priority_topics.clear();
  Ingest none(o, &sink);
  ASSERT_OK(none.Init());
  EXPECT_EQ(none.PriorityLevel("sensors/d1/temp"), 0u);
}

TEST(Ingest, MoreThanThreePriorityTopicsOrABadFilterAreRefusedAtInit) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.priority_topics = {"a", "b", "c", "d"};
  EXPECT_FALSE(Ingest(o, &sink).Init().ok());
  o.priority_topics = {"a/#/b"};
  EXPECT_FALSE(Ingest(o, &sink).Init().ok());
  o.priority_topics = {"a/b+"};
  EXPECT_FALSE(Ingest(o, &sink).Init().ok());
}

// Every reading of a matching message carries the level beside its other
// quality flags; readings of other topics carry none.
TEST(Ingest, StampsTheLevelOnEveryReadingOfAMatchingMessage) {
  FakeSink sink;
  IngestOptions o = Options(AckMode::kAfterCommit);
  o.patterns = {"sensors/{deviceId}/{metric}", "sensors/{deviceId}"};
  o.priority_topics = {"sensors/+/alarm", "sensors/d2"};
  ManualClock clock(kFloor + 5000, 1);
  Ingest ingest(o, &sink, &clock);
  ASSERT_OK(ingest.Init());
  ASSERT_OK(ingest.Start());
  ingest.OnMessage("sensors/d1/alarm", "1");                                      // bare: receive time
  ingest.OnMessage("sensors/d1/temp", "20");
  ingest.OnMessage("sensors/d2", R"([{"n":"a","v":1,"t":1800000000},{"n":"b","v":2,"t":1800000000}])");
  ingest.Stop();
  ASSERT_EQ(sink.count(), 4u);
  EXPECT_EQ(sink.all[0].quality, WithPriority(kQualityReceiveTime, 1));
  EXPECT_EQ(QualityPriority(sink.all[0].quality), 1u);
  EXPECT_EQ(QualityFlags(sink.all[0].quality) & kQualityReceiveTime, kQualityReceiveTime);
  EXPECT_EQ(QualityPriority(sink.all[1].quality), 0u);
  EXPECT_EQ(sink.all[1].quality, kQualityReceiveTime);
  EXPECT_EQ(QualityPriority(sink.all[2].quality), 2u);
  EXPECT_EQ(QualityPriority(sink.all[3].quality), 2u);
}

// The level is part of the entry the store commits (the uplink and the hub
// read it from there): through the intake journal of a run that committed
// nothing, then a real store, it comes back from the change log.
TEST(Ingest, TheLevelSurvivesTheJournalIntoTheStoredLogEntry) {
  test::TempDir dir;
  IngestOptions o = JournalOptions(dir.path());
  o.priority_topics = {"sensors/+/alarm"};
  ManualClock clock(kFloor + 1000, 1);
  {
    FakeSink refusing;
    refusing.fail_always = true;  // nothing reaches a store, as with a kill before the commit
    Ingest ingest(o, &refusing, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    ingest.OnMessage("sensors/d1/temp", "20");
    ingest.OnMessage("sensors/d1/alarm", "1");
    ingest.Stop();
  }
  // The next run no longer lists the filter: what the journal holds keeps
  // the level it was given when it was taken.
  o.priority_topics.clear();
  StoreOptions so;
  so.path = dir.File("gw.db");
  so.gateway_id = "gw-1";
  std::unique_ptr<Store> store;
  ASSERT_OK(Store::Open(so, &store));
  StoreSink sink(store.get());
  {
    Ingest ingest(o, &sink, &clock);
    ASSERT_OK(ingest.Init());
    ASSERT_OK(ingest.Start());
    EXPECT_EQ(ingest.counters().replayed, 2);
    ingest.OnMessage("sensors/d1/alarm", "2");  // taken now: no level
    ingest.Stop();
  }
  std::vector<ChangeEntry> log;
  ASSERT_OK(store->ReadLog(0, 10, &log));
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].reading.metric, "temp");
  EXPECT_EQ(QualityPriority(log[0].reading.quality), 0u);
  EXPECT_EQ(log[1].reading.metric, "alarm");
  EXPECT_EQ(QualityPriority(log[1].reading.quality), 1u);
  EXPECT_EQ(log[1].reading.quality, WithPriority(kQualityReceiveTime, 1));
  EXPECT_EQ(QualityPriority(log[2].reading.quality), 0u);
}

}  // namespace
}  // namespace edgesync

// Uplink against a scripted hub behind a fake MqttLink (the broker always
// acknowledges; the hub answers or not as the test says) and a real store:
// the checkpoint moves only on the region's answer, never more than `window`
// batches are unanswered, silence and refusals send it back to the
// checkpoint on its own timer, and every batch declares base = checkpoint.
#include "sync/uplink.h"

#include <gtest/gtest.h>

#include <mutex>

#include "tests/support/process.h"
#include "tests/support/workload.h"
#include "tests/unit/sync/fake_link.h"

namespace edgesync {
namespace {

struct ScriptedHub {
  enum class Mode { kSilent, kAnswer, kRefuseOnce };
  std::mutex mu;
  Mode mode = Mode::kSilent;
  uint64_t high_water = 0;
  std::vector<WireBatch> received;  // bounds and base only
  int refusals = 0;

  void OnPublish(const std::string&, const std::string& payload, FakeLink* link) {
    WireMessage m;
    ASSERT_TRUE(DecodeMessage(payload, {}, &m, nullptr).ok());
    if (m.kind == WireKind::kPing) {
      link->Deliver(EncodePong(m.correlation_id, "eu", m.ping_sent_ns));
      return;
    }
    ASSERT_EQ(m.kind, WireKind::kBatch);
    std::lock_guard<std::mutex> lock(mu);
    WireBatch b = m.batch;
    ASSERT_EQ(b.entries.size(), b.last_lsn - b.first_lsn + 1);
    b.entries.clear();
    received.push_back(b);
    if (mode == Mode::kSilent) return;
    WireAck ack{"eu", m.batch.origin, high_water, AckCode::kOk, ""};
    uint64_t start = std::max(high_water, m.batch.base_lsn);
    if (mode == Mode::kRefuseOnce && refusals == 0) {
      ++refusals;
      ack.code = AckCode::kGap;
    } else if (m.batch.first_lsn <= start + 1 && m.batch.last_lsn > high_water) {
      high_water = m.batch.last_lsn;
      ack.high_water = high_water;
    } else if (m.batch.first_lsn > start + 1) {
      ack.code = AckCode::kGap;
    }
    link->Deliver(EncodeAck(m.correlation_id, ack));
  }
};

class UplinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions so;
    so.path = tmp_.File("gw.db");
    so.gateway_id = "gw-1";
    ASSERT_TRUE(Store::Open(so, &store_).ok());
    test::SensorWorkload workload(100, 1780000000000);
    AppendResult r;
    ASSERT_TRUE(store_->AppendReadings(workload.Take(10000), &r).ok());
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
  auto uplink = Make();
  ASSERT_TRUE(uplink->Start().ok());
  // The broker took every publish, the hub says nothing: the window fills
  // and the checkpoint stays.
  ASSERT_TRUE(test::WaitFor([&] { return Received() >= 3; }, 5000));
  EXPECT_EQ(uplink->stats().inflight, 3u);
  EXPECT_EQ(Checkpoint(), 0u);
  // Silence past ack_timeout: it goes back to the checkpoint by itself.
  ASSERT_TRUE(test::WaitFor([&] { return uplink->stats().ack_timeouts >= 1 && Received() >= 6; }, 5000));
  EXPECT_EQ(Checkpoint(), 0u);
  {
    std::lock_guard<std::mutex> lock(hub_.mu);
    EXPECT_EQ(hub_.received[3].first_lsn, 1u) << "resend starts after the checkpoint";
    for (const WireBatch& b : hub_.received) EXPECT_EQ(b.base_lsn, 0u);
    hub_.mode = ScriptedHub::Mode::kAnswer;
  }
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 10000));
  UplinkStats s = uplink->stats();
  uplink->Stop();
  EXPECT_GE(s.resends, 1u);
  StoreStats st;
  ASSERT_TRUE(store_->Stats(&st).ok());
  EXPECT_EQ(st.acked_lsn, 10000u);
  uint64_t per_region = 0;
  store_->GetCheckpoint("upstream:eu", &per_region);
  EXPECT_EQ(per_region, 10000u);
}

TEST_F(UplinkTest, ARefusalSendsItBackToTheCheckpoint) {
  hub_.mode = ScriptedHub::Mode::kRefuseOnce;
  auto uplink = Make();
  ASSERT_TRUE(uplink->Start().ok());
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
    ASSERT_TRUE(uplink->Start().ok());
    ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10000; }, 10000));
    uplink->Stop();
  }
  test::SensorWorkload more(100, 1790000000000);
  AppendResult r;
  ASSERT_TRUE(store_->AppendReadings(more.Take(500), &r).ok());
  size_t before = Received();
  auto uplink = Make();
  ASSERT_TRUE(uplink->Start().ok());
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 10500; }, 10000));
  uplink->Stop();
  std::lock_guard<std::mutex> lock(hub_.mu);
  ASSERT_GT(hub_.received.size(), before);
  EXPECT_EQ(hub_.received[before].first_lsn, 10001u);
  EXPECT_EQ(hub_.received[before].base_lsn, 10000u);
}

// Latency without paying bytes: a reading alone on a quiet link goes at once;
// what follows soon after waits (up to batch_max_delay_ms) to share a batch.
TEST_F(UplinkTest, ALoneReadingGoesAtOnceAndTheNextOnesAreCoalesced) {
  StoreOptions so;
  so.path = tmp_.File("quiet.db");
  so.gateway_id = "gw-1";
  ASSERT_TRUE(Store::Open(so, &store_).ok());
  options_.batch_max_delay_ms = 60000;
  hub_.mode = ScriptedHub::Mode::kAnswer;
  auto uplink = Make();
  ASSERT_TRUE(uplink->Start().ok());
  test::SensorWorkload workload(100, 1780000000000);
  AppendResult r;
  ASSERT_TRUE(store_->AppendReadings(workload.Take(1), &r).ok());
  uplink->NotifyAppended();
  ASSERT_TRUE(test::WaitFor([&] { return Checkpoint() == 1; }, 30000)) << "not held for batch_max_delay_ms";
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store_->AppendReadings(workload.Take(1), &r).ok());
    uplink->NotifyAppended();
  }
  test::SleepMs(1000);
  EXPECT_EQ(Received(), 1u) << "readings right after a send wait to be coalesced";
  uplink->Stop();
}

}  // namespace
}  // namespace edgesync

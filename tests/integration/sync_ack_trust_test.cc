// Answers on a gateway's reply topic that it did not ask for: a real
// Mosquitto broker (anonymous, as a misconfigured region would be), a real
// uplink, and a scripted hub that answers probes and publishes acknowledgements
// on the reply topic: forged (no such batch), from another region, for
// another origin, replayed, overreaching (a mark past the batch) and stale
// (for a batch given up after a refusal). Each is counted and ignored; the
// checkpoint never moves past what was sent and acknowledged.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "sync/wire.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_assert.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

class ScriptedHub {
 public:
  explicit ScriptedHub(const std::string& uri) : client_(uri, "scripted-hub", true) {}
  ~ScriptedHub() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool Start() {
    if (!client_.Connect() || !client_.Subscribe("edgesync/region/eu/in/+/+", 1)) return false;
    thread_ = std::thread([this] { Run(); });
    return true;
  }
  std::vector<WireMessage> Batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }
  void Answer(uint64_t correlation_id, const WireAck& ack) {
    client_.Publish("edgesync/reply/gw-1/up", EncodeAck(correlation_id, ack), 1);
  }
  // Answers every batch from this index on (its index among those received)
  // truthfully, those already received included.
  void BeHonestFrom(size_t index, uint64_t held) {
    held_ = held;
    honest_from_ = index;
  }

 private:
  SeriesContextCache contexts_{size_t{64} << 20};  // Run's thread only
  void Run() {
    size_t seen = 0;
    while (!stop_) {
      auto received = client_.received();
      for (; seen < received.size(); ++seen) {
        WireMessage m;
        // Batches refer to the series context of the ones before, as a
        // hub keeps it for their sender (the topic's last level).
        const std::string& topic = received[seen].first;
        const std::string sender = topic.substr(topic.rfind('/') + 1);
        if (!DecodeMessage(received[seen].second, {}, &m, nullptr, &contexts_, &sender).ok()) continue;
        if (m.kind == WireKind::kPing) {
          client_.Publish(m.reply_to, EncodePong(m.correlation_id, "eu", m.ping_sent_ns), 0);
        } else if (m.kind == WireKind::kBatch) {
          std::lock_guard<std::mutex> lock(mu_);
          m.batch.entries.clear();
          batches_.push_back(m);
        }
      }
      std::vector<WireMessage> batches = Batches();
      if (honest_from_ != SIZE_MAX) answered_ = std::max<size_t>(answered_, honest_from_);
      for (; honest_from_ != SIZE_MAX && answered_ < batches.size(); ++answered_) {
        const WireMessage& m = batches[answered_];
        if (m.batch.first_lsn <= std::max<uint64_t>(held_, m.batch.base_lsn) + 1 && m.batch.last_lsn > held_) {
          held_ = m.batch.last_lsn;
        }
        Answer(m.correlation_id, WireAck{"eu", m.batch.origin, held_, AckCode::kOk, "", "", {}});
      }
      SleepMs(10);
    }
  }
  TestMqttClient client_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> honest_from_{SIZE_MAX};
  std::atomic<uint64_t> held_{0};
  size_t answered_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<WireMessage> batches_;
};

TEST(SyncAckTrustTest, ForgedReplayedAndStaleAnswersAreCountedAndIgnored) {
  TempDir tmp;
  Broker broker(tmp.path() + "/broker");
  ASSERT_TRUE(broker.Start());
  ScriptedHub hub(broker.uri());
  ASSERT_TRUE(hub.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(100, 1780000000000);
  Fill(store.get(), &workload, 3000);
  UplinkOptions o = FastUplinkOptions();
  o.batch_max_readings = 500;
  o.window = 4;
  o.ack_timeout_ms = 600000;  // nothing here may be resolved by a timeout
  o.regions.push_back(RegionAt("eu", broker.uri()));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  ASSERT_TRUE(WaitFor([&] { return hub.Batches().size() >= 4; }, 30000));
  std::vector<WireMessage> sent = hub.Batches();
  ASSERT_EQ(sent[0].batch.last_lsn, 500u);
  ASSERT_EQ(sent[1].batch.last_lsn, 1000u);
  const Origin me = store->origin();
  auto ack = [&](const std::string& region, const Origin& origin, uint64_t hw, AckCode code = AckCode::kOk) {
    return WireAck{region, origin, hw, code, "", "", {}};
  };
  auto ignored_reaches = [&](uint64_t n) { return WaitFor([&] { return uplink.stats().acks_ignored == n; }, 10000); };

  // Forged: no batch has that correlation id.
  hub.Answer(sent[3].correlation_id + 1000, ack("eu", me, 3000));
  ASSERT_TRUE(ignored_reaches(1));
  // From another region, for another origin.
  hub.Answer(sent[0].correlation_id, ack("us", me, 500));
  ASSERT_TRUE(ignored_reaches(2));
  hub.Answer(sent[0].correlation_id, ack("eu", Origin{"gw-other", me.epoch}, 500));
  ASSERT_TRUE(ignored_reaches(3));
  EXPECT_EQ(uplink.stats().acks_late, 0u) << "forged answers are not taken for late ones";
  EXPECT_EQ(Checkpoint(store.get()), 0u);
  // The real answer to the first batch.
  hub.Answer(sent[0].correlation_id, ack("eu", me, 500));
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == 500; }, 10000));
  // Replayed, and replayed with a bigger claim.
  hub.Answer(sent[0].correlation_id, ack("eu", me, 500));
  ASSERT_TRUE(ignored_reaches(4));
  hub.Answer(sent[0].correlation_id, ack("eu", me, 3000));
  ASSERT_TRUE(ignored_reaches(5));
  EXPECT_EQ(Checkpoint(store.get()), 500u);
  // An answer to the second batch claiming everything: the checkpoint moves
  // only as far as that batch went.
  hub.Answer(sent[1].correlation_id, ack("eu", me, 3000));
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == 1000; }, 10000));
  // A refusal of the third: the uplink gives up what is in flight; a late
  // answer to the fourth is stale.
  hub.Answer(sent[2].correlation_id, ack("eu", me, 1000, AckCode::kGap));
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().refusals == 1; }, 10000));
  hub.Answer(sent[3].correlation_id, ack("eu", me, 2000));
  ASSERT_TRUE(ignored_reaches(6));
  // The replays and the stale answer are late ones (routine after an outage).
  EXPECT_EQ(uplink.stats().acks_late, 3u);
  SleepMs(300);
  EXPECT_EQ(Checkpoint(store.get()), 1000u);
  EXPECT_EQ(uplink.stats().acks, 2u);

  // Honest answers from here: everything arrives, nothing was skipped.
  hub.BeHonestFrom(4, 1000);  // the resends after the refusal
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == 3000; }, 60000));
  // (Honest answers to resends the uplink had already given up count too.)
  EXPECT_GE(uplink.stats().acks_ignored, 6u);
  uplink.Stop();
  for (const WireMessage& m : hub.Batches()) EXPECT_LE(m.batch.last_lsn, 3000u);
}

}  // namespace
}  // namespace edgesync::test

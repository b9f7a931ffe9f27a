// Batches that refer to the series context the region holds (protocol 3),
// with real parts: Mosquitto brokers, `edgesync region` processes with their
// own hub stores, SIGKILL, and gateways' real SQLite stores and uplinks. A
// region that loses the context (hub killed and restarted, contexts evicted
// under a tiny bound by many gateways, writes failing over to another
// region and back) answers NoContext or never saw it; the gateway resends
// self-contained and every reading arrives exactly once. A hub of the
// previous protocol (scripted: it refuses the encoding it does not know,
// as `BadBatch`) gets self-contained batches and every reading.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "sync/wire.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/status_assert.h"
#include "tests/support/status_file.h"
#include "tests/support/sync_sites.h"

namespace edgesync::test {
namespace {

// A gateway writing its readings a few hundred at a time while the uplink
// runs, so batches are small and many refer to the context.
void Trickle(Store* store, SensorWorkload* workload, size_t n, size_t step, std::atomic<bool>* stop = nullptr) {
  for (size_t done = 0; done < n && !(stop && *stop); done += step) {
    Fill(store, workload, std::min(step, n - done));
    SleepMs(5);
  }
}

UplinkOptions ContextUplinkOptions(const std::string& gateway_id = "gw-1") {
  UplinkOptions o = FastUplinkOptions(gateway_id);
  o.batch_max_readings = 400;
  return o;
}

TEST(SyncContextTest, AHubRestartedMidStreamLosesTheContextAndNothingElse) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  ASSERT_TRUE(eu.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  UplinkOptions o = ContextUplinkOptions();
  o.regions.push_back(RegionAt("eu", eu.broker().uri()));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  Trickle(store.get(), &workload, 20000, 200);
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().context_batches > 10; }, 30000));
  // Killed with batches referring to its context still coming: the new hub
  // process holds none.
  std::atomic<bool> stop{false};
  std::thread writer([&] { Trickle(store.get(), &workload, 40000, 200, &stop); });
  SleepMs(200);
  eu.KillHub();
  SleepMs(300);
  ASSERT_TRUE(eu.StartHub());
  writer.join();
  const uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  const uint64_t sent_before = uplink.stats().context_batches;
  // After the restart batches refer to the new hub's context again.
  Trickle(store.get(), &workload, 4000, 200);
  const uint64_t end = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == end; }, 60000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  // The gateway went back to self-contained batches: on a NoContext answer
  // (a single hub on SQLite keeps its MQTT session, so what was sent while
  // it was down reaches the new process, which does not hold the context),
  // or on the answer timeout (hubs sharing a region on PostgreSQL start
  // clean and those batches are gone; under load the restart can also take
  // longer than uplink.ack_timeout_ms).
  EXPECT_GE(s.context_misses + s.ack_timeouts, 1u);
  EXPECT_GT(s.context_batches, sent_before);
  ExpectExactlyOnce({&eu}, store->origin(), end);
}

TEST(SyncContextTest, FailoverToAnotherRegionAndBackStartsTheContextAfresh) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu"), us(tmp.path(), "us");
  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(us.Start());
  TcpProxy far(us.broker().port());
  far.SetDelayMs(20);
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(1000, 1780000000000);
  UplinkOptions o = ContextUplinkOptions();
  o.window = 2;
  o.regions.push_back(RegionAt("eu", eu.broker().uri(), 0));
  o.regions.push_back(RegionAt("us", far.uri(), 1));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  Trickle(store.get(), &workload, 16000, 400);
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().write_region == "eu" && uplink.stats().context_batches > 5; },
                      30000));
  eu.KillHub();
  eu.broker().Kill9();
  Trickle(store.get(), &workload, 16000, 400);
  uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  EXPECT_EQ(uplink.stats().write_region, "us");
  const uint64_t before_failback = uplink.stats().context_batches;

  ASSERT_TRUE(eu.Start());
  ASSERT_TRUE(WaitFor([&] { return uplink.stats().write_region == "eu"; }, 20000));
  Trickle(store.get(), &workload, 16000, 400);
  last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000));
  UplinkStats s = uplink.stats();
  uplink.Stop();
  EXPECT_GE(s.region_switches, 3u);  // eu, us, eu
  EXPECT_GT(s.context_batches, before_failback);  // eu (a new hub process) took context batches again
  EXPECT_FALSE(us.Contents().empty());
  ExpectExactlyOnce({&eu, &us}, store->origin(), last);
}

TEST(SyncContextTest, AHubEvictingContextsUnderATinyBoundLosesNothing) {
  TempDir tmp;
  RegionSite eu(tmp.path(), "eu");
  // About one gateway's context of 1,000 series (~90 KB): four gateways
  // evict each other's in turn.
  ASSERT_TRUE(eu.Start("", "context_max_bytes = 120000\n"));
  constexpr int kGateways = 4;
  std::vector<std::unique_ptr<Store>> stores;
  std::vector<std::unique_ptr<Uplink>> uplinks;
  std::vector<SensorWorkload> workloads;
  for (int g = 0; g < kGateways; ++g) {
    const std::string id = "gw-" + std::to_string(g + 1);
    stores.push_back(OpenGatewayStore(tmp.File(id + ".db"), id));
    workloads.emplace_back(125, 1780000000000, 1000, g + 1);
    UplinkOptions o = ContextUplinkOptions(id);
    o.regions.push_back(RegionAt("eu", eu.broker().uri()));
    uplinks.push_back(std::make_unique<Uplink>(stores.back().get(), o));
    ASSERT_OK(uplinks.back()->Start());
  }
  std::vector<std::thread> writers;
  for (int g = 0; g < kGateways; ++g) {
    writers.emplace_back([&, g] { Trickle(stores[g].get(), &workloads[g], 12000, 200); });
  }
  for (auto& w : writers) w.join();
  uint64_t misses = 0, context_batches = 0;
  for (int g = 0; g < kGateways; ++g) {
    const uint64_t last = stores[g]->LastLsn();
    ASSERT_TRUE(WaitFor([&] { return Checkpoint(stores[g].get()) == last; }, 90000))
        << "gateway " << g + 1 << ": checkpoint " << Checkpoint(stores[g].get()) << " of " << last;
    UplinkStats s = uplinks[g]->stats();
    misses += s.context_misses;
    context_batches += s.context_batches;
  }
  nlohmann::json status;
  ASSERT_TRUE(WaitFor(
      [&] {
        status = ReadStatusFile(tmp.path() + "/eu/hub/status.json");
        return status.is_object() && status.contains("hub") && status["hub"].value("context_evictions", 0) > 0;
      },
      10000))
      << status.dump();
  EXPECT_LE(status["hub"].value("context_bytes", 0), 120000);
  EXPECT_GT(context_batches, 0u);
  EXPECT_GT(misses, 0u);
  for (int g = 0; g < kGateways; ++g) {
    uplinks[g]->Stop();
    ExpectExactlyOnce({&eu}, stores[g]->origin(), stores[g]->LastLsn());
  }
}

// A hub of protocol 2, as far as the uplink can tell: it decodes and holds
// self-contained batches and refuses the ColumnsContext encoding it does not
// know with BadBatch (what Admit of that revision answers an Unsupported
// decode). It also answers pings.
class PreviousProtocolHub {
 public:
  explicit PreviousProtocolHub(const std::string& uri) : client_(uri, "old-hub", true) {}
  ~PreviousProtocolHub() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool Start() {
    if (!client_.Connect() || !client_.Subscribe("edgesync/region/eu/in/+/+", 1)) return false;
    thread_ = std::thread([this] { Run(); });
    return true;
  }
  uint64_t refused() const { return refused_; }
  std::set<uint64_t> held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }

 private:
  void Run() {
    size_t seen = 0;
    uint64_t high_water = 0;
    while (!stop_) {
      auto received = client_.received();
      for (; seen < received.size(); ++seen) {
        WireMessage m;
        Status st = DecodeMessage(received[seen].second, {}, &m, nullptr);
        if (m.kind == WireKind::kPing && st.ok()) {
          client_.Publish(m.reply_to, EncodePong(m.correlation_id, "eu", m.ping_sent_ns), 0);
          continue;
        }
        if (m.kind != WireKind::kBatch) continue;
        WireAck ack{"eu", m.batch.origin, high_water, AckCode::kOk, "", "", {}};
        if (!st.ok()) {
          ack.code = AckCode::kBadBatch;
          ack.message = st.ToString();
          ++refused_;
          // As that revision's Admit: answered only at the payload's reply
          // address, for a batch naming its sender's origin (a lean context
          // batch names neither and goes unanswered until the timeout).
          if (m.reply_to == "edgesync/reply/gw-1/up" && m.batch.origin.gateway_id == "gw-1") {
            client_.Publish(m.reply_to, EncodeAck(m.correlation_id, ack), 1);
          }
          continue;
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          for (const ChangeEntry& e : m.batch.entries) {
            if (e.lsn > high_water) held_.insert(e.lsn);
          }
        }
        if (m.batch.first_lsn <= std::max(high_water, m.batch.base_lsn) + 1) {
          high_water = std::max(high_water, m.batch.last_lsn);
        } else {
          ack.code = AckCode::kGap;
        }
        ack.high_water = high_water;
        client_.Publish(m.reply_to, EncodeAck(m.correlation_id, ack), 1);
      }
      SleepMs(2);
    }
  }

  TestMqttClient client_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::mutex mu_;
  std::set<uint64_t> held_;
};

TEST(SyncContextTest, AHubOfThePreviousProtocolGetsSelfContainedBatches) {
  TempDir tmp;
  RegionSite::MakeDir(tmp.path() + "/broker");
  Broker broker(tmp.path() + "/broker");
  ASSERT_TRUE(broker.Start());
  PreviousProtocolHub hub(broker.uri());
  ASSERT_TRUE(hub.Start());
  auto store = OpenGatewayStore(tmp.File("gw.db"));
  SensorWorkload workload(100, 1780000000000);
  UplinkOptions o = ContextUplinkOptions();
  o.regions.push_back(RegionAt("eu", broker.uri()));
  Uplink uplink(store.get(), o);
  ASSERT_OK(uplink.Start());
  Trickle(store.get(), &workload, 8000, 200);
  const uint64_t last = store->LastLsn();
  ASSERT_TRUE(WaitFor([&] { return Checkpoint(store.get()) == last; }, 60000))
      << "checkpoint " << Checkpoint(store.get()) << " of " << last;
  UplinkStats s = uplink.stats();
  uplink.Stop();
  EXPECT_GE(hub.refused(), 1u);
  // One context batch (and those in flight with it) refused, then none.
  EXPECT_LE(s.context_batches, o.window);
  EXPECT_EQ(s.context_batches, hub.refused());
  std::set<uint64_t> held = hub.held();
  EXPECT_EQ(held.size(), last);
  EXPECT_EQ(*held.rbegin(), last);
}

}  // namespace
}  // namespace edgesync::test

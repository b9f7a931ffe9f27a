// agent/gateway.h: the gateway role's parts wired together: the store, the
// uplink to the nearest region, the feed puller that keeps the read view,
// the MQTT link to the local broker and ingest. Components start in
// dependency order and stop in reverse (the ingest link first, so no message
// arrives that could not be committed; then ingest commits the batch in
// hand; then the uplink and the feed puller; then the store closes). While
// ingest takes no more messages (a store that refuses commits), the intake
// gate keeps the ingest link disconnected; the local broker queues.
//
// Thread safety: Start/Stop from one thread; StatusJson from any (one at a
// time: it keeps the rate meters).
#ifndef EDGESYNC_AGENT_GATEWAY_H_
#define EDGESYNC_AGENT_GATEWAY_H_

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/ingest/ingest.h"
#include "agent/ingest/intake_gate.h"
#include "agent/status_board.h"
#include "agent/store_figures.h"
#include "firmware-config/config.h"
#include "platform/clock.h"
#include "platform/histogram.h"
#include "platform/mutex.h"
#include "platform/status.h"
#include "store/retention.h"
#include "store/store.h"
#include "sync/feed_puller.h"
#include "sync/mqtt_link.h"
#include "sync/uplink.h"

namespace edgesync {

class Gateway {
 public:
  explicit Gateway(Config config, Clock* clock = nullptr);
  ~Gateway();
  Status Start();
  void Stop();
  // The metrics snapshot (docs/STATUS.md): the store's figures, ingest,
  // uplink, read view, rates, recent errors, process.
  nlohmann::json StatusJson();
  // The figures the status page charts, from a snapshot.
  static std::map<std::string, double> ChartPoints(const nlohmann::json& snapshot);
  Store* store() { return store_.get(); }

 private:
  Config config_;
  Clock* clock_;
  int64_t started_ms_ = 0;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreSink> sink_;
  std::unique_ptr<Ingest> ingest_;
  std::unique_ptr<MqttLink> link_;
  std::unique_ptr<IntakeGate> gate_;  // after link_ and ingest_: destroyed before them
  std::unique_ptr<Uplink> uplink_;
  // The ingest once its clock trust is made (Init): the uplink asks it
  // whether commit times are trusted (UplinkOptions::clock_trusted_since).
  std::atomic<Ingest*> clock_source_{nullptr};
  // Read-view watermarks listed in the status (the oldest first): every
  // one while they are few, bounded for a large fleet.
  static constexpr size_t kListedWatermarks = 20;
  std::unique_ptr<FeedPuller> feed_puller_;
  std::unique_ptr<Retention> retention_;  // after store_: stopped and destroyed before it
  bool running_ = false;
  Histogram commit_latency_;
  Mutex status_mu_;
  RateMeter ingest_rate_ GUARDED_BY(status_mu_);
  RateMeter ack_rate_ GUARDED_BY(status_mu_);
  StoreCounts store_counts_ GUARDED_BY(status_mu_);
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_GATEWAY_H_

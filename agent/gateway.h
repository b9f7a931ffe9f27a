// agent/gateway.h: the gateway role's parts wired together: the store, the
// uplink to the nearest region, the feed puller that keeps the read view,
// the MQTT link to the local broker and ingest. Components start in
// dependency order and stop in reverse (the ingest link first, so no message
// arrives that could not be committed; then ingest commits the batch in
// hand; then the uplink and the feed puller; then the store closes).
//
// Thread safety: Start/Stop from one thread; StatusJson from any.
#ifndef EDGESYNC_AGENT_GATEWAY_H_
#define EDGESYNC_AGENT_GATEWAY_H_

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/ingest/ingest.h"
#include "firmware-config/config.h"
#include "platform/clock.h"
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
  nlohmann::json StatusJson();
  Store* store() { return store_.get(); }

 private:
  Config config_;
  Clock* clock_;
  int64_t started_ms_ = 0;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreSink> sink_;
  std::unique_ptr<Ingest> ingest_;
  std::unique_ptr<MqttLink> link_;
  std::unique_ptr<Uplink> uplink_;
  std::unique_ptr<FeedPuller> feed_puller_;
  std::unique_ptr<Retention> retention_;  // after store_: stopped and destroyed before it
  bool running_ = false;
  // The previous status sample, for rates (readings/s in and acknowledged).
  int64_t rate_at_ms_ = 0;
  uint64_t rate_committed_ = 0;
  uint64_t rate_acked_ = 0;
  double ingest_rate_ = 0;
  double ack_rate_ = 0;
  static constexpr int64_t kStoreCountsEveryMs = 30000;
  StoreStats store_stats_;
  int64_t store_stats_at_ms_ = 0;
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_GATEWAY_H_

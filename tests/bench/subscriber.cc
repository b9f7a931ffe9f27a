#include "tests/bench/subscriber.h"

#include <atomic>
#include <chrono>
#include <memory>

#include "sync/mqtt_link.h"
#include "tests/support/process.h"

namespace edgesync::bench {

double CountingSubscriberRate(const std::string& uri, int64_t total, const std::function<bool()>& start_publisher) {
  MqttLinkOptions o;
  o.uri = uri;
  o.client_id = "plain-subscriber";
  o.clean_start = true;
  std::unique_ptr<MqttLink> link;
  if (!NewPahoMqttLink(o, &link).ok()) return 0;
  std::atomic<int64_t> n{0};
  link->SetMessageHandler([&n](MqttMessage&&) { n++; });
  link->Subscribe("sensors/#", 1);
  if (!link->Connect(10000).ok()) return 0;
  auto t0 = std::chrono::steady_clock::now();
  if (!start_publisher()) return 0;
  if (!test::WaitFor([&] { return n.load() >= total; }, 600000)) return 0;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  link->Disconnect(2000);
  return static_cast<double>(total) / secs;
}

}  // namespace edgesync::bench

// tests/support/mqtt_client.h: a plain MQTT client for tests (Paho C++),
// playing sensors and observers. Records what it receives.
#ifndef EDGESYNC_TESTS_SUPPORT_MQTT_CLIENT_H_
#define EDGESYNC_TESTS_SUPPORT_MQTT_CLIENT_H_

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mqtt {
class async_client;
}

namespace edgesync::test {

class TestMqttClient {
 public:
  TestMqttClient(std::string uri, std::string client_id, bool clean_session, std::string ca_file = "",
                 int mqtt_version = 4);
  ~TestMqttClient();
  bool Connect(int64_t timeout_ms = 5000);
  void Disconnect();
  bool Subscribe(const std::string& filter, int qos);
  // Waits for the PUBACK at QoS 1.
  bool Publish(const std::string& topic, const std::string& payload, int qos, bool retained = false);
  // Publishes without waiting; at most `window` unacknowledged. Flush waits for all.
  bool PublishAsync(const std::string& topic, const std::string& payload, int qos);
  bool Flush(int64_t timeout_ms = 30000);
  std::vector<std::pair<std::string, std::string>> received();

 private:
  struct Callback;
  std::string uri_;
  std::string ca_file_;
  bool clean_;
  int version_;
  std::unique_ptr<mqtt::async_client> client_;
  std::unique_ptr<Callback> callback_;
  std::mutex mu_;
  std::vector<std::pair<std::string, std::string>> received_;
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_MQTT_CLIENT_H_

#include "tests/support/mqtt_client.h"

#include <mqtt/async_client.h>

#include <chrono>

namespace edgesync::test {

struct TestMqttClient::Callback : public virtual mqtt::callback {
  explicit Callback(TestMqttClient* owner) : owner(owner) {}
  void message_arrived(mqtt::const_message_ptr msg) override {
    std::lock_guard<std::mutex> lock(owner->mu_);
    owner->received_.emplace_back(msg->get_topic(), msg->to_string());
  }
  TestMqttClient* owner;
};

TestMqttClient::TestMqttClient(std::string uri, std::string client_id, bool clean_session, std::string ca_file,
                               int mqtt_version)
    : uri_(std::move(uri)), ca_file_(std::move(ca_file)), clean_(clean_session), version_(mqtt_version) {
  // Our own buffer cap: Paho's default of 100 fails fast publishers with -12.
  client_ = std::make_unique<mqtt::async_client>(uri_, client_id, mqtt::create_options(version_, 100000));
  callback_ = std::make_unique<Callback>(this);
  client_->set_callback(*callback_);
}

TestMqttClient::~TestMqttClient() { Disconnect(); }

bool TestMqttClient::Connect(int64_t timeout_ms) {
  try {
    auto builder = mqtt::connect_options_builder().connect_timeout(std::chrono::milliseconds(timeout_ms));
    if (version_ == 5) {
      builder.mqtt_version(MQTTVERSION_5).clean_start(clean_);
      if (!clean_) builder.properties({{mqtt::property::SESSION_EXPIRY_INTERVAL, 3600}});
    } else {
      builder.mqtt_version(version_).clean_session(clean_);
    }
    if (!ca_file_.empty()) {
      builder.ssl(mqtt::ssl_options_builder().trust_store(ca_file_).finalize());
    }
    return client_->connect(builder.finalize())->wait_for(std::chrono::milliseconds(timeout_ms + 1000));
  } catch (const mqtt::exception&) {
    return false;
  }
}

void TestMqttClient::Disconnect() {
  try {
    if (client_ && client_->is_connected()) client_->disconnect()->wait_for(std::chrono::seconds(5));
  } catch (const mqtt::exception&) {
  }
}

bool TestMqttClient::Subscribe(const std::string& filter, int qos) {
  try {
    return client_->subscribe(filter, qos)->wait_for(std::chrono::seconds(5));
  } catch (const mqtt::exception&) {
    return false;
  }
}

bool TestMqttClient::Publish(const std::string& topic, const std::string& payload, int qos, bool retained) {
  try {
    return client_->publish(topic, payload.data(), payload.size(), qos, retained)->wait_for(std::chrono::seconds(10));
  } catch (const mqtt::exception&) {
    return false;
  }
}

bool TestMqttClient::PublishAsync(const std::string& topic, const std::string& payload, int qos) {
  // Waits for the broker to take messages while 1,000 are unacknowledged,
  // by the clock rather than a count of tries: a broker on a loaded machine
  // (load average ~20) can stall for seconds and still be making progress.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (client_->get_pending_delivery_tokens().size() < 1000) {
        client_->publish(topic, payload.data(), payload.size(), qos, false);
        return true;
      }
    } catch (const mqtt::exception&) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

bool TestMqttClient::Flush(int64_t timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (client_->get_pending_delivery_tokens().empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> TestMqttClient::received() {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

}  // namespace edgesync::test

// MqttLink against a real Mosquitto (tests/support/broker.h): connect,
// subscribe, publish window, persistent sessions, reconnect with the
// subscription list restored, credentials, TLS, MQTT 3.1.1 and 5.
#include "sync/mqtt_link.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/broker.h"
#include "tests/support/mqtt_client.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

using test::Broker;
using test::BrokerOptions;
using test::TempDir;
using test::TestMqttClient;
using test::WaitFor;

struct Inbox {
  std::mutex mu;
  std::vector<MqttMessage> messages;
  void Add(MqttMessage&& m) {
    std::lock_guard<std::mutex> lock(mu);
    messages.push_back(std::move(m));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return messages.size();
  }
};

std::unique_ptr<MqttLink> MakeLink(MqttLinkOptions o, Inbox* inbox) {
  std::unique_ptr<MqttLink> link;
  Status s = NewPahoMqttLink(o, &link);
  EXPECT_OK(s);
  if (link && inbox) link->SetMessageHandler([inbox](MqttMessage&& m) { inbox->Add(std::move(m)); });
  return link;
}

class MqttLinkTest : public ::testing::TestWithParam<int> {};

TEST_P(MqttLinkTest, SubscribesReceivesAndPublishesWithWindow) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start());
  Inbox inbox;
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-a";
  o.mqtt_version = GetParam();
  o.max_inflight = 8;
  auto link = MakeLink(o, &inbox);
  ASSERT_OK(link->Subscribe("t/#", 1));
  ASSERT_OK(link->Connect(5000));
  std::atomic<int> done_ok{0};
  // 500 publishes through a window of 8: more than Paho's default buffer
  // cap (100) would allow without our own create_options.
  for (int i = 0; i < 500; ++i) {
    Status s = link->Publish("t/" + std::to_string(i % 5), std::to_string(i), 1, false, 5000,
                             [&done_ok](const Status& st) {
                               if (st.ok()) done_ok++;
                             });
    ASSERT_OK(s);
    EXPECT_LE(link->inflight(), 8);
  }
  ASSERT_OK(link->Flush(10000));
  EXPECT_EQ(done_ok.load(), 500);
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 500; }, 10000)) << inbox.size();
  EXPECT_EQ(link->counters().published, 500);
  EXPECT_OK(link->Disconnect(2000));
  EXPECT_FALSE(link->connected());
}

TEST_P(MqttLinkTest, PersistentSessionReceivesWhatWasPublishedWhileAway) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start());
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-persistent";
  o.mqtt_version = GetParam();
  {
    auto link = MakeLink(o, nullptr);
    ASSERT_OK(link->Subscribe("s/+", 1));
    ASSERT_OK(link->Connect(5000));
    ASSERT_OK(link->Disconnect(2000));
  }
  TestMqttClient pub(broker.uri(), "pub", true);
  ASSERT_TRUE(pub.Connect());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pub.Publish("s/x", std::to_string(i), 1));
  Inbox inbox;
  std::atomic<bool> resumed{false};  // set on the link's thread
  auto link = MakeLink(o, &inbox);
  link->SetStateHandler([&resumed](bool up, bool session_present, const std::string&) {
    if (up) resumed = session_present;
  });
  ASSERT_OK(link->Connect(5000));
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 50; }, 10000)) << inbox.size() << broker.log();
  EXPECT_TRUE(resumed.load());
  std::lock_guard<std::mutex> lock(inbox.mu);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(inbox.messages[i].payload, std::to_string(i));
}

TEST_P(MqttLinkTest, ReconnectsAfterBrokerRestartAndResubscribes) {
  TempDir dir;
  // Without persistence the restarted broker forgets the session: only the
  // link's own re-subscription brings the messages back.
  BrokerOptions bo;
  bo.persistence = false;
  Broker broker(dir.File("broker"), bo);
  ASSERT_TRUE(broker.Start());
  Inbox inbox;
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-reconnect";
  o.mqtt_version = GetParam();
  o.reconnect_min_ms = 50;
  o.reconnect_max_ms = 200;
  auto link = MakeLink(o, &inbox);
  std::atomic<int> ups{0}, downs{0};
  link->SetStateHandler([&](bool up, bool, const std::string&) { (up ? ups : downs)++; });
  ASSERT_OK(link->Connect(5000));
  ASSERT_OK(link->Subscribe("r/#", 1));
  broker.Kill9();
  ASSERT_TRUE(WaitFor([&] { return !link->connected(); }, 10000));
  EXPECT_EQ(link->Publish("r/1", "x", 1, false, 100).code(), Status::Code::kUnavailable);
  ASSERT_TRUE(broker.Start());
  ASSERT_TRUE(link->WaitConnected(10000));
  TestMqttClient pub(broker.uri(), "pub2", true);
  ASSERT_TRUE(pub.Connect());
  ASSERT_TRUE(pub.Publish("r/1", "after", 1));
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 1; }, 10000));
  EXPECT_GE(ups.load(), 2);
  EXPECT_GE(downs.load(), 1);
  EXPECT_GE(link->counters().connection_losses, 1);
}

// Pause: a clean disconnect; the broker queues for the persistent session
// what is published meanwhile, and Resume (same link, same process) gets it
// all, in order, with the subscription in place. Also while a paused link
// is started: it does not connect until resumed.
TEST_P(MqttLinkTest, PauseLeavesTheBrokerQueuingAndResumeDeliversTheQueue) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start());
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-pause";
  o.mqtt_version = GetParam();
  Inbox inbox;
  auto link = MakeLink(o, &inbox);
  ASSERT_OK(link->Subscribe("s/+", 1));
  ASSERT_OK(link->Connect(5000));
  TestMqttClient pub(broker.uri(), "pub", true);
  ASSERT_TRUE(pub.Connect());
  ASSERT_TRUE(pub.Publish("s/x", "before", 1));
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 1; }, 10000));

  link->Pause();
  EXPECT_TRUE(link->paused());
  ASSERT_TRUE(WaitFor([&] { return !link->connected(); }, 10000));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pub.Publish("s/x", std::to_string(i), 1));
  test::SleepMs(300);
  EXPECT_EQ(inbox.size(), 1u) << "a paused link received messages";
  EXPECT_EQ(link->counters().pauses, 1);
  EXPECT_EQ(link->counters().connection_losses, 0);  // a pause is no loss

  link->Resume();
  EXPECT_FALSE(link->paused());
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 51; }, 10000)) << inbox.size() << broker.log();
  {
    std::lock_guard<std::mutex> lock(inbox.mu);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(inbox.messages[static_cast<size_t>(i) + 1].payload, std::to_string(i));
  }
  ASSERT_OK(link->Disconnect(2000));

  // Paused before Start: no connection until Resume.
  Inbox later;
  auto second = MakeLink(o, &later);
  ASSERT_OK(second->Subscribe("s/+", 1));
  second->Pause();
  ASSERT_OK(second->Start());
  ASSERT_TRUE(pub.Publish("s/x", "while-paused", 1));
  test::SleepMs(500);
  EXPECT_FALSE(second->connected());
  EXPECT_EQ(later.size(), 0u);
  second->Resume();
  ASSERT_TRUE(WaitFor([&] { return later.size() == 1; }, 10000));
  EXPECT_EQ(later.messages[0].payload, "while-paused");
}

INSTANTIATE_TEST_SUITE_P(Versions, MqttLinkTest, ::testing::Values(4, 5),
                         [](const ::testing::TestParamInfo<int>& p) { return p.param == 5 ? "Mqtt5" : "Mqtt311"; });

TEST(MqttLinkStart, FirstConnectRetriesUntilTheBrokerComesUp) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-late";
  o.reconnect_min_ms = 50;
  o.reconnect_max_ms = 200;
  auto link = MakeLink(o, nullptr);
  Status s = link->Connect(300);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  ASSERT_TRUE(broker.Start());
  EXPECT_TRUE(link->WaitConnected(10000));
}

// Every method may be called from any thread (mqtt_link.h): Start and
// Disconnect racing from several threads each start or join the one
// supervisor, and the link works afterwards.
TEST(MqttLinkStart, StartAndDisconnectFromSeveralThreadsAtOnce) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start());
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-racing";
  o.reconnect_min_ms = 10;
  o.reconnect_max_ms = 50;
  Inbox inbox;
  auto link = MakeLink(o, &inbox);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 40; ++i) {
        if ((i + t) % 2 == 0) {
          EXPECT_OK(link->Start());
        } else {
          link->Disconnect(500);
        }
      }
    });
  }
  go = true;
  for (std::thread& t : threads) t.join();
  ASSERT_OK(link->Connect(10000));
  ASSERT_OK(link->Subscribe("race/t", 1));
  ASSERT_OK(link->Publish("race/t", "after the race", 1, false, 5000));
  EXPECT_TRUE(WaitFor([&] { return inbox.size() >= 1; }, 10000));
  EXPECT_OK(link->Disconnect(2000));
  EXPECT_FALSE(link->connected());
}

// TCP_NODELAY of each of this process's TCP connections to `port`.
std::vector<int> NoDelayTo(int port) {
  std::vector<int> flags;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return flags;
  while (dirent* d = readdir(dir)) {
    int fd = std::atoi(d->d_name);
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    if (d->d_name[0] == '.' || fd == dirfd(dir) || getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        peer.sin_family != AF_INET || ntohs(peer.sin_port) != port) {
      continue;
    }
    int flag = 0;
    socklen_t flag_len = sizeof flag;
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &flag, &flag_len) == 0) flags.push_back(flag);
  }
  closedir(dir);
  return flags;
}

// Small publishes (a partial batch, a hub's answer) must not wait for
// Nagle's algorithm; Paho never sets TCP_NODELAY itself.
TEST(MqttLinkSocket, SetsTcpNoDelayOnItsConnectionUnlessTurnedOff) {
  TempDir dir;
  Broker broker(dir.File("broker"));
  ASSERT_TRUE(broker.Start());
  for (bool nodelay : {false, true}) {
    MqttLinkOptions o;
    o.uri = broker.uri();
    o.client_id = nodelay ? "link-nodelay" : "link-nagle";
    o.tcp_nodelay = nodelay;
    auto link = MakeLink(o, nullptr);
    ASSERT_OK(link->Connect(10000));
    std::vector<int> flags = NoDelayTo(broker.port());
    ASSERT_EQ(flags.size(), 1u) << "one connection to the broker";
    EXPECT_EQ(flags[0] != 0, nodelay);
    // Still set after a reconnect (a new socket).
    if (nodelay) {
      broker.Kill9();
      ASSERT_TRUE(broker.Start());
      ASSERT_TRUE(WaitFor([&] { return link->counters().connects >= 2 && link->connected(); }, 30000));
      ASSERT_TRUE(WaitFor([&] { return NoDelayTo(broker.port()) == std::vector<int>{1}; }, 10000));
    }
    link->Disconnect(2000);
  }
}

// A scripted MQTT server: answers CONNECT with "session present" and
// PINGREQ, leaves every PUBLISH unacknowledged, answers SUBSCRIBE only from
// its second connection on, and closes its first connection a second after
// its SUBSCRIBE.
// It records the packet types each connection sent.
class StuckSessionServer {
 public:
  StuckSessionServer() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(listen_fd_, 8);
    thread_ = std::thread([this] { Loop(); });
  }
  ~StuckSessionServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  std::string uri() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  // Packet types (the fixed header's high nibble) the n-th connection that
  // sent CONNECT sent.
  std::vector<int> Sent(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    return n < sent_.size() ? sent_[n] : std::vector<int>{};
  }
  size_t connections() {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.size();
  }

 private:
  void Loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      servers_.emplace_back([this, fd] {
        Serve(fd);
        ::close(fd);
      });
    }
    for (std::thread& t : servers_) t.join();
  }
  // Connections that never send CONNECT (a port probe) are not counted.
  void Serve(int fd) {
    std::string buf;
    size_t n = 0;
    bool counted = false;
    bool subscribed = false;  // the first connection closes a second after its SUBSCRIBE
    auto subscribed_at = std::chrono::steady_clock::now();
    auto start = std::chrono::steady_clock::now();
    while (!stop_) {
      const auto age = std::chrono::steady_clock::now() - start;
      if (n == 0 && subscribed && std::chrono::steady_clock::now() - subscribed_at > std::chrono::seconds(1)) return;
      if (age > std::chrono::seconds(20)) return;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char chunk[4096];
      ssize_t got = ::recv(fd, chunk, sizeof chunk, 0);
      if (got <= 0) return;
      buf.append(chunk, static_cast<size_t>(got));
      for (;;) {
        size_t at = 1, length = 0, shift = 0;
        bool whole = false;
        while (at < buf.size() && at < 5) {
          const uint8_t b = static_cast<uint8_t>(buf[at++]);
          length |= static_cast<size_t>(b & 0x7f) << shift;
          shift += 7;
          if ((b & 0x80) == 0) {
            whole = true;
            break;
          }
        }
        if (!whole || buf.size() < at + length) break;
        const int type = static_cast<uint8_t>(buf[0]) >> 4;
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (!counted) {
            counted = true;
            n = sent_.size();
            sent_.emplace_back();
            start = std::chrono::steady_clock::now();
          }
          sent_[n].push_back(type);
        }
        if (type == 8 && !subscribed) {
          subscribed = true;
          subscribed_at = std::chrono::steady_clock::now();
        }
        std::string reply;
        if (type == 1) reply = std::string("\x20\x02\x01\x00", 4);  // CONNACK, session present
        if (type == 12) reply = std::string("\xd0\x00", 2);         // PINGRESP
        if (type == 8 && n > 0) reply = std::string("\x90\x03", 2) + buf.substr(at, 2) + std::string("\x01", 1);
        if (!reply.empty()) (void)!::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        buf.erase(0, at + length);
      }
    }
  }
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::vector<int>> sent_;
  std::vector<std::thread> servers_;  // one per connection
  std::thread thread_;
};

// A connection lost while its subscribe waits unanswered (seen: a broker
// that dropped every connection of a resumed session as malformed, each
// reconnect resending the publish still in flight) is followed by a fresh
// client, which has nothing in flight to resend.
TEST(MqttLinkStuckSession, AfterASubscribeNeverAnsweredTheNextConnectIsAFreshClient) {
  StuckSessionServer server;
  MqttLinkOptions o;
  o.uri = server.uri();
  o.client_id = "link-stuck";
  o.clean_start = false;
  o.connect_timeout_ms = 2000;  // the subscribe waits this + 5 s
  o.keep_alive_s = 10;
  o.reconnect_min_ms = 50;
  o.reconnect_max_ms = 200;
  auto link = MakeLink(o, nullptr);
  ASSERT_OK(link->Subscribe("replies", 1));
  testing::internal::CaptureStderr();
  ASSERT_OK(link->Start());
  // Connection 0 is up (CONNACK) and waits for its SUBACK: a publish goes
  // out on it and is never acknowledged.
  ASSERT_TRUE(WaitFor([&] { return server.Sent(0).size() >= 2; }, 10000))
      << server.connections() << " connections, the first sent " << server.Sent(0).size() << " packets";
  ASSERT_OK(link->Publish("batches", "one batch", 1, false, 1000));
  ASSERT_TRUE(WaitFor([&] { return server.Sent(0).size() >= 3; }, 5000));
  ASSERT_TRUE(WaitFor([&] { return server.connections() >= 2 && link->connected(); }, 20000));
  test::SleepMs(500);
  std::string log = testing::internal::GetCapturedStderr();
  const std::vector<int> first = server.Sent(0), second = server.Sent(1);
  EXPECT_EQ(std::count(first.begin(), first.end(), 3), 1) << "the publish went on the first connection";
  EXPECT_EQ(std::count(second.begin(), second.end(), 3), 0)
      << "the next connection resent what the first client had in flight";
  EXPECT_NE(log.find("the broker did not answer a subscribe; replaced the client"), std::string::npos) << log;
  EXPECT_GE(link->counters().publish_failures, 1) << "the publish is reported failed, for its sender to resend";
  link->Disconnect(1000);
}

// A subscribe waiting for an answer that will never come, because the link
// is being disconnected, gives up at once: a hub told to stop while it
// takes shards must not wait out the subscribe's timeout (7 s here) first.
TEST(MqttLinkStuckSession, ADisconnectEndsASubscribeWaitingForItsAnswer) {
  StuckSessionServer server;  // never answers the first connection's SUBSCRIBE
  MqttLinkOptions o;
  o.uri = server.uri();
  o.client_id = "link-stopping";
  o.connect_timeout_ms = 2000;  // the subscribe would wait this + 5 s
  o.keep_alive_s = 10;
  auto link = MakeLink(o, nullptr);
  ASSERT_OK(link->Subscribe("replies", 1));
  testing::internal::CaptureStderr();
  ASSERT_OK(link->Start());
  // The supervisor has sent SUBSCRIBE and waits for its SUBACK.
  ASSERT_TRUE(WaitFor([&] { return server.Sent(0).size() >= 2; }, 10000));
  link->Disconnect(1000);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("while subscribing to replies"), std::string::npos) << log;
  EXPECT_EQ(log.find("Timeout: subscribing to replies"), std::string::npos)
      << "the disconnect waited out the subscribe's timeout: " << log;
}

TEST(MqttLinkOptionsCheck, RejectsBadOptions) {
  std::unique_ptr<MqttLink> link;
  MqttLinkOptions o;
  o.client_id = "x";
  o.uri = "http://127.0.0.1:1";
  EXPECT_EQ(NewPahoMqttLink(o, &link).code(), Status::Code::kInvalidArgument);
  o.uri = "tcp://127.0.0.1:1";
  o.mqtt_version = 3;
  EXPECT_EQ(NewPahoMqttLink(o, &link).code(), Status::Code::kInvalidArgument);
  o.mqtt_version = 4;
  o.credentials_file = "/nonexistent/creds";
  EXPECT_EQ(NewPahoMqttLink(o, &link).code(), Status::Code::kInvalidArgument);
  o.credentials_file = "";
  o.ca_file = "/nonexistent/ca.crt";
  EXPECT_EQ(NewPahoMqttLink(o, &link).code(), Status::Code::kInvalidArgument);
}

TEST(Credentials, ParsesUserPasswordAndNeverEchoesTheSecret) {
  TempDir dir;
  std::string user, password;
  test::WriteAll(dir.File("ok"), "sensor:pa:ss\n");
  ASSERT_OK(ReadCredentialsFile(dir.File("ok"), &user, &password));
  EXPECT_EQ(user, "sensor");
  EXPECT_EQ(password, "pa:ss");
  test::WriteAll(dir.File("bad"), "secretvalue");
  Status s = ReadCredentialsFile(dir.File("bad"), &user, &password);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("secretvalue"), std::string::npos);
  test::WriteAll(dir.File("two"), "a:b\nc:d\n");
  EXPECT_FALSE(ReadCredentialsFile(dir.File("two"), &user, &password).ok());
}

TEST(MqttLinkAuth, UsesCredentialsFileAndFailsWithWrongPassword) {
  TempDir dir;
  std::string pw = dir.File("passwd");
  ASSERT_EQ(std::system(("mosquitto_passwd -c -b '" + pw + "' gw s3cret >/dev/null 2>&1").c_str()), 0);
  BrokerOptions bo;
  bo.password_file = pw;
  Broker broker(dir.File("broker"), bo);
  ASSERT_TRUE(broker.Start());
  MqttLinkOptions o;
  o.uri = broker.uri();
  o.client_id = "link-auth";
  o.credentials_file = dir.File("good");
  test::WriteAll(o.credentials_file, "gw:s3cret\n");
  auto good = MakeLink(o, nullptr);
  EXPECT_OK(good->Connect(5000));
  good->Disconnect(1000);
  o.credentials_file = dir.File("bad");
  o.client_id = "link-auth-bad";
  test::WriteAll(o.credentials_file, "gw:wrong\n");
  auto bad = MakeLink(o, nullptr);
  Status s = bad->Connect(1500);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message().find("wrong"), std::string::npos) << s.message();
}

TEST(MqttLinkTls, ConnectsWithMutualTls) {
  TempDir dir;
  ASSERT_TRUE(test::MakeTestPki(dir.path()));
  BrokerOptions bo;
  bo.tls_ca_file = dir.File("ca.crt");
  bo.tls_cert_file = dir.File("server.crt");
  bo.tls_key_file = dir.File("server.key");
  bo.tls_require_client_cert = true;
  Broker broker(dir.File("broker"), bo);
  ASSERT_TRUE(broker.Start());
  Inbox inbox;
  MqttLinkOptions o;
  o.uri = broker.tls_uri();
  o.client_id = "link-tls";
  o.ca_file = dir.File("ca.crt");
  o.cert_file = dir.File("client.crt");
  o.key_file = dir.File("client.key");
  auto link = MakeLink(o, &inbox);
  ASSERT_OK(link->Subscribe("tls/t", 1));
  ASSERT_OK(link->Connect(10000));
  ASSERT_OK(link->Publish("tls/t", "hello", 1, false, 1000));
  ASSERT_TRUE(WaitFor([&] { return inbox.size() == 1; }, 5000));
  // Without the client certificate the broker refuses us.
  o.client_id = "link-tls-nocert";
  o.cert_file.clear();
  o.key_file.clear();
  auto refused = MakeLink(o, nullptr);
  EXPECT_FALSE(refused->Connect(1500).ok());
}

}  // namespace
}  // namespace edgesync

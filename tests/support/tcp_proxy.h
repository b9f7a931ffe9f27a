// tests/support/tcp_proxy.h: a TCP proxy on loopback for fault injection
// (no tc netem in this kernel): everything between a client and a server
// port passes through it, and a test can, at any moment,
//   - delay every chunk by N ms in each direction (a far-away region),
//   - cut: close every connection and refuse new ones (link down),
//   - blackhole: keep connections open but silently drop every byte
//     (a silent link: no RST, no FIN, only timeouts notice),
//   - throttle: pass at most N bytes/s in each direction of a connection
//     (a congested link; what exceeds the rate waits in the proxy, which
//     stops reading past 8 MiB queued, so the sender feels TCP back-pressure),
//   - restore: pass traffic again.
// Counts bytes passed from client to server (bytes on the wire upstream).
//
// Thread safety: the control methods may be called from any thread; one
// internal thread moves the bytes (poll loop).
#ifndef EDGESYNC_TESTS_SUPPORT_TCP_PROXY_H_
#define EDGESYNC_TESTS_SUPPORT_TCP_PROXY_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace edgesync::test {

class TcpProxy {
 public:
  // Listens on a free loopback port and forwards to 127.0.0.1:target_port.
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  std::string uri() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

  void SetDelayMs(int64_t ms) { delay_ms_ = ms; }
  // 0 = unlimited (the default).
  void SetRateBytesPerSec(int64_t rate) { rate_bytes_per_s_ = rate; }
  void Cut();        // closes every connection; new ones are accepted and closed at once
  void Blackhole();  // connections stay, bytes vanish
  void Restore();    // back to passing traffic (connections cut earlier stay closed)
  // Points the proxy at another server port (a restarted broker).
  void SetTarget(int target_port) { target_port_ = target_port; }

  int64_t bytes_upstream() const { return bytes_up_; }
  int64_t bytes_downstream() const { return bytes_down_; }
  int connections() const { return open_connections_; }

 private:
  enum class Mode { kPass, kCut, kBlackhole };
  void Loop();

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> target_port_;
  std::atomic<int64_t> delay_ms_{0};
  std::atomic<int64_t> rate_bytes_per_s_{0};
  std::atomic<Mode> mode_{Mode::kPass};
  std::atomic<bool> cut_now_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> bytes_up_{0};
  std::atomic<int64_t> bytes_down_{0};
  std::atomic<int> open_connections_{0};
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_TCP_PROXY_H_

#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <list>
#include <vector>

namespace edgesync::test {
namespace {

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Tune(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct Chunk {
  int64_t due_ms;
  std::string data;
  size_t offset = 0;
};

struct Direction {
  std::deque<Chunk> queue;
  size_t queued_bytes = 0;
  int64_t last_due = 0;
};

struct Pair {
  int client = -1;
  int server = -1;
  Direction up;    // client -> server
  Direction down;  // server -> client
  bool dead = false;
};

constexpr size_t kMaxQueued = size_t{8} << 20;  // stop reading beyond this (back-pressure)

// Writes what is due; false on a write error.
bool Flush(int fd, Direction* d, int64_t now) {
  while (!d->queue.empty() && d->queue.front().due_ms <= now) {
    Chunk& c = d->queue.front();
    ssize_t n = ::send(fd, c.data.data() + c.offset, c.data.size() - c.offset, MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    c.offset += static_cast<size_t>(n);
    d->queued_bytes -= static_cast<size_t>(n);
    if (c.offset < c.data.size()) return true;
    d->queue.pop_front();
  }
  return true;
}

}  // namespace

// Every socket and pipe is close-on-exec: a process the test starts later
// (a broker, a gateway) must not inherit a copy, or a cut would close only
// the proxy's copy and the peer would never see the connection end.
TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  ::listen(listen_fd_, 64);
  fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) wake_pipe_[0] = wake_pipe_[1] = -1;
  thread_ = std::thread([this] { Loop(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], "x", 1);
  thread_.join();
  ::close(listen_fd_);
  if (wake_pipe_[0] >= 0) ::close(wake_pipe_[0]);
  if (wake_pipe_[1] >= 0) ::close(wake_pipe_[1]);
}

void TcpProxy::Cut() {
  mode_ = Mode::kCut;
  cut_now_ = true;
  if (wake_pipe_[1] >= 0) (void)!::write(wake_pipe_[1], "x", 1);
}

void TcpProxy::Blackhole() { mode_ = Mode::kBlackhole; }

void TcpProxy::Restore() { mode_ = Mode::kPass; }

void TcpProxy::Loop() {
  std::list<Pair> pairs;
  auto close_pair = [this](Pair& p) {
    if (p.dead) return;
    ::close(p.client);
    ::close(p.server);
    p.dead = true;
    --open_connections_;
  };
  std::vector<pollfd> fds;
  std::vector<Pair*> owners;
  char buf[65536];
  while (!stop_) {
    if (cut_now_.exchange(false)) {
      for (Pair& p : pairs) close_pair(p);
    }
    pairs.remove_if([](const Pair& p) { return p.dead; });
    int64_t now = Now();
    int64_t timeout = 50;
    fds.clear();
    owners.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    owners.push_back(nullptr);
    fds.push_back({listen_fd_, POLLIN, 0});
    owners.push_back(nullptr);
    for (Pair& p : pairs) {
      short cev = p.up.queued_bytes < kMaxQueued ? POLLIN : 0;
      short sev = p.down.queued_bytes < kMaxQueued ? POLLIN : 0;
      if (!p.down.queue.empty()) {
        if (p.down.queue.front().due_ms <= now) cev |= POLLOUT;
        else timeout = std::min(timeout, p.down.queue.front().due_ms - now);
      }
      if (!p.up.queue.empty()) {
        if (p.up.queue.front().due_ms <= now) sev |= POLLOUT;
        else timeout = std::min(timeout, p.up.queue.front().due_ms - now);
      }
      fds.push_back({p.client, cev, 0});
      owners.push_back(&p);
      fds.push_back({p.server, sev, 0});
      owners.push_back(&p);
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(timeout, 1)));
    now = Now();
    if (fds[0].revents & POLLIN) {
      char drain[64];
      (void)!::read(wake_pipe_[0], drain, sizeof drain);
    }
    if (fds[1].revents & POLLIN) {
      while (true) {
        int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) break;
        if (mode_ == Mode::kCut) {
          ::close(c);
          continue;
        }
        int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(target_port_.load()));
        if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
          ::close(s);
          ::close(c);
          continue;
        }
        Tune(c);
        Tune(s);
        Pair p;
        p.client = c;
        p.server = s;
        pairs.push_back(std::move(p));
        ++open_connections_;
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      Pair* p = owners[i];
      if (p->dead) continue;
      bool from_client = fds[i].fd == p->client;
      Direction& out = from_client ? p->up : p->down;
      Direction& in = from_client ? p->down : p->up;  // what this fd receives
      if (fds[i].revents & POLLOUT) {
        if (!Flush(fds[i].fd, &in, now)) {
          close_pair(*p);
          continue;
        }
      }
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
          close_pair(*p);
          continue;
        }
        if (n < 0) continue;
        if (mode_ == Mode::kBlackhole) continue;
        (from_client ? bytes_up_ : bytes_down_) += n;
        int64_t due = std::max(now + delay_ms_.load(), out.last_due);
        // Throttled: this chunk leaves once the ones before it had their time.
        if (int64_t rate = rate_bytes_per_s_.load(); rate > 0) due += n * 1000 / rate;
        out.last_due = due;
        out.queue.push_back(Chunk{due, std::string(buf, static_cast<size_t>(n))});
        out.queued_bytes += static_cast<size_t>(n);
      }
    }
  }
  for (Pair& p : pairs) close_pair(p);
}

}  // namespace edgesync::test

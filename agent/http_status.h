// agent/http_status.h: the HTTP views of a role's metrics snapshot, on
// [metrics] listen (loopback by default):
//   /              the status page: the snapshot's figures and live charts
//                  (ingest rate, backlog, round trip per region; for a hub,
//                  batches and readings applied per second), every file
//                  served from the binary (agent/status_page.html and
//                  Debian's dygraphs, embedded at build time)
//   /metrics       Prometheus text format (agent/prometheus.h)
//   /status.json   the snapshot itself (what `edgesync status --json` shows)
//   /history.json  the chart history (agent/status_board.h)
// Read-only GETs; no login (the default address is loopback for that reason).
//
// Served by cpp-httplib (Debian libcpp-httplib-dev, used header-only, plain
// HTTP) on its own thread with a pool of two workers: a gateway is a small
// board, and the page polls once every two seconds.
//
// Thread safety: Start/Stop from one thread; requests read the board, which
// is safe from any thread.
#ifndef EDGESYNC_AGENT_HTTP_STATUS_H_
#define EDGESYNC_AGENT_HTTP_STATUS_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "agent/status_board.h"
#include "platform/status.h"

namespace httplib {
class Server;
}

namespace edgesync {

class HttpStatusServer {
 public:
  explicit HttpStatusServer(const StatusBoard* board);
  ~HttpStatusServer();
  HttpStatusServer(const HttpStatusServer&) = delete;
  HttpStatusServer& operator=(const HttpStatusServer&) = delete;

  // listen: "host:port" (port 0 = any free port, see port()). Unavailable
  // when the address cannot be bound.
  Status Start(const std::string& listen);
  void Stop();
  int port() const { return port_; }

 private:
  const StatusBoard* board_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::shared_ptr<std::atomic<bool>> listen_ended_;  // set by thread_ when listening returns
  int port_ = 0;
};

// Splits "host:port"; false when it is not of that form.
bool SplitHostPort(const std::string& listen, std::string* host, int* port);

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_HTTP_STATUS_H_

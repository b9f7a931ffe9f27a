#include "agent/http_status.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "agent/prometheus.h"
#include "agent/status_assets.h"
#include "platform/log.h"

namespace edgesync {

bool SplitHostPort(const std::string& listen, std::string* host, int* port) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= listen.size() || listen.size() - colon > 6) {
    return false;
  }
  std::string digits = listen.substr(colon + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return false;
  int p = std::stoi(digits);
  if (p > 65535) return false;
  *host = listen.substr(0, colon);
  // [::1]:9464
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  *port = p;
  return true;
}

namespace {

// httplib's default socket options add SO_REUSEPORT, with which a second
// process binds the same address and the kernel splits requests between the
// two. SO_REUSEADDR alone still lets a restarted process bind while the old
// connections linger in TIME_WAIT, and a taken address fails to bind.
void ExclusiveSocketOptions(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Why host:port cannot be bound, as the kernel says it (httplib only says
// that it could not): binds a socket of the same options once more.
std::string BindFailure(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) return gai_strerror(rc);
  std::string why = "cannot bind";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    ExclusiveSocketOptions(fd);
    int bound = bind(fd, a->ai_addr, a->ai_addrlen);
    int err = errno;
    close(fd);
    if (bound != 0) {
      why = std::strerror(err);
      break;
    }
  }
  freeaddrinfo(found);
  return why;
}

}  // namespace

HttpStatusServer::HttpStatusServer(const StatusBoard* board) : board_(board) {}

HttpStatusServer::~HttpStatusServer() { Stop(); }

Status HttpStatusServer::Start(const std::string& listen) {
  std::string host;
  int port = 0;
  if (!SplitHostPort(listen, &host, &port)) return Status::InvalidArgument("metrics.listen: expected host:port");
  server_ = std::make_unique<httplib::Server>();
  server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  server_->set_socket_options(ExclusiveSocketOptions);
  const StatusBoard* board = board_;
  auto text = [](std::string_view body, const char* type) {
    return [body, type](const httplib::Request&, httplib::Response& res) {
      res.set_content(body.data(), body.size(), type);
    };
  };
  server_->Get("/", text(kStatusPageHtml, "text/html; charset=utf-8"));
  server_->Get("/dygraph.min.js", text(kDygraphJs, "application/javascript"));
  server_->Get("/dygraph.min.css", text(kDygraphCss, "text/css"));
  server_->Get("/metrics", [board](const httplib::Request&, httplib::Response& res) {
    res.set_content(PrometheusText(board->Latest()), "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/status.json", [board](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(board->Latest().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json");
  });
  server_->Get("/history.json", [board](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(board->HistoryJson().dump(), "application/json");
  });
  try {
    port_ = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  } catch (const std::exception&) {  // httplib may throw from socket setup
    port_ = -1;
  }
  if (port_ <= 0) {
    server_.reset();
    std::string why = BindFailure(host, port);
    if (why.find("in use") != std::string::npos) why += ": another process (a second gateway or hub?) serves it";
    return Status::Unavailable("metrics.listen " + listen + ": " + why);
  }
  httplib::Server* server = server_.get();
  listen_ended_ = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([server, ended = listen_ended_] {
    server->listen_after_bind();
    ended->store(true);
  });
  ES_LOG(kInfo, "status page http://{}:{}/ (metrics at /metrics)", host, port_);
  return Status::Ok();
}

void HttpStatusServer::Stop() {
  if (!server_) return;
  // httplib's stop() does nothing until the listening thread has marked the
  // server running, and that thread would then listen forever: a role told
  // to stop right after it started hung here. Wait for it to get there (or
  // to have ended) first.
  while (!server_->is_running() && !listen_ended_->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace edgesync

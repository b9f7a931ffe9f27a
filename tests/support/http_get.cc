#include "tests/support/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/support/process.h"

namespace edgesync::test {

std::string HttpGet(int port, const std::string& path, int* status) {
  if (status) *status = -1;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  size_t body = reply.find("\r\n\r\n");
  if (body == std::string::npos) return "";
  if (status && reply.rfind("HTTP/1.", 0) == 0 && reply.size() > 12) *status = std::atoi(reply.c_str() + 9);
  return reply.substr(body + 4);
}

int PromtoolCheck(const std::string& metrics, const std::string& file, std::string* out) {
  WriteAll(file, metrics);
  Process p;
  if (!p.Start({"/bin/sh", "-c", "promtool check metrics < " + file}, file + ".promtool")) return -1;
  int rc = p.Wait(120000);
  *out = ReadAll(file + ".promtool");
  return rc;
}

}  // namespace edgesync::test

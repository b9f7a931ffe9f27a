// tests/support/http_get.h: what a test asks of an edgesync process's HTTP
// endpoint ([metrics] listen): a plain GET on loopback, and the Prometheus
// text checked by `promtool check metrics` (Debian prometheus).
//
// Thread safety: free functions, no shared state.
#ifndef EDGESYNC_TESTS_SUPPORT_HTTP_GET_H_
#define EDGESYNC_TESTS_SUPPORT_HTTP_GET_H_

#include <string>

namespace edgesync::test {

// A plain HTTP/1.0 GET of 127.0.0.1:port: the body ("" when nothing
// answered), and the status code in *status (-1 then).
std::string HttpGet(int port, const std::string& path, int* status = nullptr);

// Writes the metrics text to `file` and runs `promtool check metrics` on
// it: its exit code (0 = accepted; -1 = it did not run), its output in *out.
int PromtoolCheck(const std::string& metrics, const std::string& file, std::string* out);

}  // namespace edgesync::test

#endif  // EDGESYNC_TESTS_SUPPORT_HTTP_GET_H_

#include "firmware-config/transport.h"

#include <cstdio>

namespace edgesync {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The host of scheme://host:port[/...], brackets of an IPv6 literal removed.
std::string HostOf(const std::string& uri) {
  size_t start = uri.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t at = uri.find('@', start);  // user:password@host
  if (at != std::string::npos && at < uri.find('/', start)) start = at + 1;
  if (start < uri.size() && uri[start] == '[') {
    size_t close = uri.find(']', start);
    return close == std::string::npos ? "" : uri.substr(start + 1, close - start - 1);
  }
  size_t end = uri.find_first_of(":/", start);
  return uri.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool IsLoopbackV4(const std::string& host) {
  unsigned a, b, c, d;
  char tail;
  if (std::sscanf(host.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4) return false;
  return a == 127 && b < 256 && c < 256 && d < 256;
}

}  // namespace

std::string EffectiveBrokerUri(const std::string& uri, const TlsConfig& tls) {
  if (tls.ca_file.empty() && tls.cert_file.empty()) return uri;
  if (StartsWith(uri, "tcp://")) return "ssl://" + uri.substr(6);
  if (StartsWith(uri, "mqtt://")) return "mqtts://" + uri.substr(7);
  return uri;
}

bool IsTlsUri(const std::string& uri) { return StartsWith(uri, "ssl://") || StartsWith(uri, "mqtts://"); }

bool IsLoopbackUri(const std::string& uri) {
  std::string host = HostOf(uri);
  return host == "localhost" || host == "::1" || IsLoopbackV4(host);
}

std::vector<TransportProblem> TransportProblems(const Config& c) {
  std::vector<TransportProblem> out;
  auto check = [&out](const std::string& key, const std::string& uri, const TlsConfig& tls, bool allow_insecure,
                      const std::string& allow_key) {
    std::string effective = EffectiveBrokerUri(uri, tls);
    if (uri.empty() || IsTlsUri(effective) || IsLoopbackUri(effective) || allow_insecure) return;
    out.push_back({key, uri + " is neither TLS nor loopback: readings and credentials would cross the network in "
                         "clear. Use ssl:// (or set ca_file), or set " +
                            allow_key + " = true to accept that"});
  };
  for (size_t i = 0; i < c.regions.size(); ++i) {
    const RegionConfig& r = c.regions[i];
    std::string prefix = "region[" + std::to_string(i) + "].";
    check(prefix + "uri", r.uri, r.tls, r.allow_insecure, prefix + "allow_insecure");
  }
  check("hub.broker_uri", c.hub_broker_uri, c.hub_tls, c.hub_allow_insecure, "hub.allow_insecure");
  return out;
}

Status CheckTransport(const Config& config) {
  std::string all;
  for (const TransportProblem& p : TransportProblems(config)) all += (all.empty() ? "" : "; ") + p.key + ": " + p.message;
  return all.empty() ? Status::Ok() : Status::InvalidArgument(all);
}

}  // namespace edgesync

// firmware-config/transport.h: the one rule for how edgesync reaches a
// broker, for ingest, regions and the hub alike.
//
//  1. TLS is what the config says, everywhere: a URI scheme ssl:// or
//     mqtts://, or a ca_file or cert_file beside a tcp:// / mqtt:// URI (the
//     URI is then used as ssl:// / mqtts://). A CA file never sits beside a
//     plaintext connection.
//  2. Off loopback, a region or hub link is TLS unless the operator writes
//     allow_insecure = true for it: readings and credentials otherwise cross
//     the network in clear. The local (ingest) broker is exempt from rule 2:
//     it is the board's own broker, its URI the operator's choice.
//
// `config check` reports violations with file, line and key; the roles refuse
// to start with the same message (CheckTransport), so a Config built in code
// gets no way around it.
//
// Thread safety: pure functions.
#ifndef EDGESYNC_FIRMWARE_CONFIG_TRANSPORT_H_
#define EDGESYNC_FIRMWARE_CONFIG_TRANSPORT_H_

#include <string>
#include <vector>

#include "firmware-config/config.h"
#include "platform/status.h"

namespace edgesync {

// The URI a link connects to under rule 1.
std::string EffectiveBrokerUri(const std::string& uri, const TlsConfig& tls);
// True for ssl:// and mqtts:// (after EffectiveBrokerUri).
bool IsTlsUri(const std::string& uri);
// True when the URI's host is localhost, 127.0.0.0/8 or ::1.
bool IsLoopbackUri(const std::string& uri);

// Violations of rule 2 as (dotted key, message); key is "region[i].uri" or
// "hub.broker_uri".
struct TransportProblem {
  std::string key;
  std::string message;
};
std::vector<TransportProblem> TransportProblems(const Config& config);
// InvalidArgument listing every problem; Ok when there is none.
Status CheckTransport(const Config& config);

}  // namespace edgesync

#endif  // EDGESYNC_FIRMWARE_CONFIG_TRANSPORT_H_

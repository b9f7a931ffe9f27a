// sync/mqtt_link_pool.h: one MQTT connection per (broker, client id), shared
// by the parts of a process that talk to that broker under one identity.
//
// A region broker binds every connection's client id to the identity it
// authenticated (use_username_as_clientid, firmware-config/region/): a
// credential can connect only as its own client id, so nobody holding
// another gateway's credential can take over its session. A gateway then
// has one client id per region broker, while its uplink and its feed puller
// each want a link there: two connections under one client id would close
// each other in turn. MqttLinkPool::Open hands out MqttLink views of one
// shared connection instead: each view subscribes its own filters and gets
// only the messages matching them (MQTT wildcard rules; from its Subscribe
// on, until it disconnects), and the state
// events of the shared connection (a view started while it is up gets a
// "connected" of its own). Publish, Flush, inflight and counters are the
// shared connection's (one in-flight window); Pause and Resume pause it for
// every view; the connection is disconnected when its last started view
// disconnects.
//
// Thread safety: Open and every view method may be called from any thread.
// Handlers run on the MQTT receive thread, under the pool's lock of that
// connection: they must not call into a view of the same connection.
#ifndef EDGESYNC_SYNC_MQTT_LINK_POOL_H_
#define EDGESYNC_SYNC_MQTT_LINK_POOL_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "platform/mutex.h"
#include "platform/status.h"
#include "sync/mqtt_link.h"

namespace edgesync {

// Whether an MQTT topic filter (with + and #) matches a topic name.
bool TopicMatchesFilter(const std::string& filter, const std::string& topic);
// "" if filter is a valid MQTT topic filter (1..65535 bytes of UTF-8
// without NUL; '+' fills a whole level; '#' fills the last level), else
// what is wrong with it.
std::string TopicFilterError(const std::string& filter);

// The client id a region broker gives a connection with these options
// (firmware-config/region/mosquitto-region.conf: use_username_as_clientid):
// the user of the credentials file; else, with a client certificate,
// certificate_identity (the CN, which use_identity_as_username makes the
// username); else "" (no identity: the caller's own client id stands).
std::string BoundClientId(const MqttLinkOptions& options, const std::string& certificate_identity);

class MqttLinkPool {
 public:
  using Factory = std::function<Status(const MqttLinkOptions&, std::unique_ptr<MqttLink>*)>;
  explicit MqttLinkPool(Factory factory = nullptr);  // nullptr: NewPahoMqttLink
  ~MqttLinkPool();

  // A view of the connection to options.uri as options.client_id, created
  // with these options by the first Open (later ones share it as it is).
  Status Open(const MqttLinkOptions& options, std::unique_ptr<MqttLink>* link);

  struct Shared;

 private:
  Factory factory_;
  Mutex mu_;
  std::map<std::string, std::weak_ptr<Shared>> shared_ GUARDED_BY(mu_);
};

// A link factory (the shape of MqttLinkFactory, sync/uplink.h) for the
// links of one identity: each link's client id becomes BoundClientId (when
// there is one), and links with the same broker and client id share one
// connection through a pool of their own.
std::function<Status(const MqttLinkOptions&, std::unique_ptr<MqttLink>*)> IdentityBoundLinks(
    const std::string& certificate_identity, MqttLinkPool::Factory factory = nullptr);

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_MQTT_LINK_POOL_H_

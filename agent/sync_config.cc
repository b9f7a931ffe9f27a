#include "agent/sync_config.h"

namespace edgesync {
namespace {

std::vector<UplinkRegion> Regions(const Config& c) {
  std::vector<UplinkRegion> out;
  for (const RegionConfig& r : c.regions) {
    UplinkRegion u;
    u.name = r.name;
    u.preference = r.preference;
    u.link.uri = r.uri;
    u.link.credentials_file = r.credentials_file;
    u.link.ca_file = r.tls.ca_file;
    u.link.cert_file = r.tls.cert_file;
    u.link.key_file = r.tls.key_file;
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace

UplinkOptions MakeUplinkOptions(const Config& c) {
  UplinkOptions o;
  o.gateway_id = c.gateway_id;
  o.topic_prefix = c.uplink_topic_prefix;
  o.regions = Regions(c);
  o.batch_max_readings = static_cast<size_t>(c.uplink_batch_max_readings);
  o.batch_max_delay_ms = c.uplink_batch_max_delay_ms;
  o.window = static_cast<size_t>(c.uplink_window);
  o.ack_timeout_ms = c.uplink_ack_timeout_ms;
  o.backoff_base_ms = c.uplink_backoff_base_ms;
  o.backoff_max_ms = c.uplink_backoff_max_ms;
  o.probe_interval_ms = c.uplink_probe_interval_ms;
  o.failback_after_ms = c.uplink_failback_after_s * 1000;
  return o;
}

FeedPullerOptions MakeFeedPullerOptions(const Config& c) {
  FeedPullerOptions o;
  o.gateway_id = c.gateway_id;
  o.topic_prefix = c.uplink_topic_prefix;
  o.regions = Regions(c);
  o.answer_timeout_ms = c.uplink_ack_timeout_ms;
  o.backoff_base_ms = c.uplink_backoff_base_ms;
  o.backoff_max_ms = c.uplink_backoff_max_ms;
  return o;
}

RegionHubOptions MakeRegionHubOptions(const Config& c) {
  RegionHubOptions o;
  o.region = c.hub_region;
  o.topic_prefix = c.uplink_topic_prefix;
  o.link.uri = c.hub_broker_uri;
  o.link.credentials_file = c.hub_credentials_file;
  o.link.ca_file = c.hub_tls.ca_file;
  o.link.cert_file = c.hub_tls.cert_file;
  o.link.key_file = c.hub_tls.key_file;
  return o;
}

}  // namespace edgesync

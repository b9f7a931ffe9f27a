#include "firmware-config/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "firmware-config/transport.h"
#include "platform/files.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

std::vector<ConfigError> ParseErrors(const std::string& text, ConfigRole role = ConfigRole::kGateway) {
  Config c;
  std::vector<ConfigError> errors;
  Status s = ParseConfig(text, "t.toml", role, &c, &errors);
  EXPECT_EQ(s.ok(), errors.empty());
  return errors;
}

TEST(ConfigTest, DefaultsWhenOnlyIdIsGiven) {
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig("[gateway]\nid = \"gw-1\"\n", "t.toml", ConfigRole::kGateway, &c, &errors));
  EXPECT_EQ(c.gateway_id, "gw-1");
  EXPECT_EQ(c.store_sync, "normal");
  EXPECT_EQ(c.StorePath(), "/var/lib/edgesync/store.db");
  EXPECT_EQ(c.StatusPath(), "/var/lib/edgesync/status.json");
  EXPECT_EQ(c.ClientId(), "edgesync-gw-1");
  EXPECT_EQ(c.subscriptions.size(), 2u);
}

TEST(ConfigTest, UnknownKeyReportsFileLineAndKey) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n\n[store]\nsinc = \"full\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].file, "t.toml");
  EXPECT_EQ(errors[0].line, 5);
  EXPECT_EQ(errors[0].key, "store.sinc");
  EXPECT_EQ(errors[0].message, "unknown key");
  EXPECT_EQ(errors[0].ToString(), "t.toml:5: store.sinc: unknown key");
}

// A retired option an older file still sets loads with a warning, never
// stops a gateway after an upgrade; any other unknown key stays an error.
TEST(ConfigTest, RetiredOptionsLoadWithAWarning) {
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig("[gateway]\nid = \"gw\"\n[ingest]\nbusy_rate = 2000\nbatch_delay_busy_ms = 250\n"
                        "[store]\ncompact_span_readings = 1000\ncompact_always = true\n",
                        "t.toml", ConfigRole::kGateway, &c, &errors));
  EXPECT_TRUE(errors.empty());
  std::vector<std::string> retired = c.retired_options;
  std::sort(retired.begin(), retired.end());
  ASSERT_EQ(retired.size(), 4u);
  EXPECT_EQ(retired[0].rfind("ingest.batch_delay_busy_ms: no longer used", 0), 0u) << retired[0];
  EXPECT_EQ(retired[1].rfind("ingest.busy_rate: no longer used", 0), 0u) << retired[1];
  EXPECT_EQ(retired[2].rfind("store.compact_always: no longer used: the store sizes compacted spans itself", 0), 0u)
      << retired[2];
  EXPECT_EQ(retired[3].rfind("store.compact_span_readings: no longer used", 0), 0u) << retired[3];
  EXPECT_EQ(ParseErrors("[gateway]\nid = \"gw\"\n[ingest]\nbusy_rat = 2000\n").size(), 1u);
  EXPECT_EQ(ParseErrors("[gateway]\nid = \"gw\"\n[store]\ncompact_span = 1000\n").size(), 1u);
}

TEST(ConfigTest, UnknownSection) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[stroe]\nsync = \"full\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "stroe");
  EXPECT_EQ(errors[0].message, "unknown section");
}

TEST(ConfigTest, WrongTypeAndOutOfRangeAndBadChoice) {
  auto errors = ParseErrors(
      "[gateway]\nid = \"gw\"\n[store]\ninitial_ranges = \"four\"\nsync = \"sometimes\"\n"
      "[ingest]\nbatch_max = 0\ndevice_rate = -1.0\n");
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(errors[0].key, "store.initial_ranges");
  EXPECT_EQ(errors[0].line, 4);
  EXPECT_NE(errors[0].message.find("expected an integer"), std::string::npos);
  EXPECT_EQ(errors[1].key, "store.sync");
  EXPECT_NE(errors[1].message.find("not one of: full, commit, normal"), std::string::npos);
  EXPECT_EQ(errors[2].key, "ingest.batch_max");
  EXPECT_NE(errors[2].message.find("out of range [1, 100000]"), std::string::npos);
  EXPECT_EQ(errors[3].key, "ingest.device_rate");
}

TEST(ConfigTest, MissingGatewayIdForGatewayRoleOnly) {
  auto errors = ParseErrors("[store]\nsync = \"full\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "gateway.id");
  EXPECT_TRUE(ParseErrors("[store]\nsync = \"full\"\n", ConfigRole::kAny).empty());
}

TEST(ConfigTest, GatewayIdMustBeTopicSafe) {
  auto errors = ParseErrors("[gateway]\nid = \"gw/1\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 2);
}

TEST(ConfigTest, RegionWithoutUriIsAnError) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://127.0.0.1:1883\"\n"
                            "[[region]]\nname = \"us\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "region[1].uri");
  EXPECT_NE(errors[0].message.find("needs a broker URI"), std::string::npos);
}

TEST(ConfigTest, RegionsParsed) {
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://a:1\"\npreference = 2\n"
                          "ca_file = \"/ca\"\n[[region]]\nname = \"us\"\nuri = \"ssl://b:2\"\n",
                          "t.toml", ConfigRole::kGateway, &c, &errors));
  ASSERT_EQ(c.regions.size(), 2u);
  EXPECT_EQ(c.regions[0].name, "eu");
  EXPECT_EQ(c.regions[0].preference, 2);
  EXPECT_EQ(c.regions[0].tls.ca_file, "/ca");
  EXPECT_EQ(c.regions[1].uri, "ssl://b:2");
}

TEST(ConfigTest, DuplicateRegionNames) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://127.0.0.1:1\"\n"
                            "[[region]]\nname = \"eu\"\nuri = \"tcp://127.0.0.2:1\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("duplicate"), std::string::npos);
}

TEST(ConfigTest, SyntaxErrorIsReportedNotThrown) {
  auto errors = ParseErrors("[gateway\nid = \n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("syntax error"), std::string::npos);
}

TEST(ConfigTest, SubscriptionsNeedDeviceId) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[ingest]\nsubscriptions = [\"sensors/{metric}\"]\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "ingest.subscriptions");
}

TEST(ConfigTest, DeviceTopicNamesTheDeviceAndNoMetric) {
  Config c;
  EXPECT_EQ(c.ingest_device_topic, "devices/{deviceId}/meta");
  for (const char* bad : {"devices/meta", "devices/{deviceId}/{metric}"}) {
    auto errors = ParseErrors(std::string("[gateway]\nid = \"gw\"\n[ingest]\ndevice_topic = \"") + bad + "\"\n");
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_EQ(errors[0].key, "ingest.device_topic");
  }
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[ingest]\ndevice_topic = \"\"\n").empty());
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[ingest]\ndevice_topic = \"site/{deviceId}/about\"\n").empty());
}

// uplink.priority_topics: an ordered list of MQTT topic filters, each one
// a filter the broker accepts, at most three (one per priority level).
TEST(ConfigTest, PriorityTopicsAreCheckedFiltersInOrderAtMostThree) {
  EXPECT_TRUE(Config().uplink_priority_topics.empty());
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig("[gateway]\nid = \"gw\"\n[uplink]\npriority_topics = [\"+/alarm/#\", \"sensors/+/temp\", \"#\"]\n",
                        "t.toml", ConfigRole::kGateway, &c, &errors));
  EXPECT_EQ(c.uplink_priority_topics, (std::vector<std::string>{"+/alarm/#", "sensors/+/temp", "#"}));
  Config again;
  ASSERT_OK(ParseConfig(DumpConfig(c), "dump.toml", ConfigRole::kGateway, &again, &errors));
  EXPECT_EQ(again.uplink_priority_topics, c.uplink_priority_topics);
  for (const char* bad : {R"(["a", "b", "c", "d"])", R"([""])", R"(["a/#/b"])", R"(["a/b+"])", R"(["x#"])",
                          R"(["a/+", "a/+"])", R"([1])", R"("a/#")"}) {
    auto errors = ParseErrors(std::string("[gateway]\nid = \"gw\"\n[uplink]\npriority_topics = ") + bad + "\n");
    ASSERT_EQ(errors.size(), 1u) << bad;
    EXPECT_EQ(errors[0].key, "uplink.priority_topics") << bad;
  }
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[uplink]\npriority_topics = []\n").empty());
}

TEST(ConfigTest, DeepNestingIsAnErrorNotACrash) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\nx = " + std::string(20000, '[') + "\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 3);
  EXPECT_NE(errors[0].message.find("nested more than"), std::string::npos) << errors[0].message;
  // Brackets in strings and comments are not nesting.
  std::string deep(40, '[');
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\" # " + deep + "\ndata_dir = \"" + deep + "\"\nstatus_file = '" + deep +
                          "'\nlog_level = \"\"\"info\"\"\"\n")
                  .empty());
}

TEST(ConfigTest, RegionRoleNeedsHubRegion) {
  auto errors = ParseErrors("[hub]\nbroker_uri = \"tcp://127.0.0.1:1\"\n", ConfigRole::kRegion);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "hub.region");
}

// A gateway and a hub on one machine, both at their defaults, do not reach
// for the same status address; a set address is kept whatever the role.
TEST(ConfigTest, TheStatusAddressDefaultsDifferByRole) {
  Config gateway, hub, any, set;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig("[gateway]\nid = \"gw\"\n", "g.toml", ConfigRole::kGateway, &gateway, &errors));
  ASSERT_OK(ParseConfig("[hub]\nregion = \"eu\"\n", "h.toml", ConfigRole::kRegion, &hub, &errors));
  EXPECT_EQ(gateway.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(hub.metrics_listen, "127.0.0.1:9465");
  EXPECT_NE(gateway.metrics_listen, hub.metrics_listen);
  ASSERT_OK(ParseConfig("[hub]\nregion = \"eu\"\n[metrics]\nlisten = \"127.0.0.1:9464\"\n", "s.toml",
                          ConfigRole::kRegion, &set, &errors));
  EXPECT_EQ(set.metrics_listen, "127.0.0.1:9464");
  ASSERT_OK(ParseConfig("[hub]\nregion = \"eu\"\n[metrics]\nlisten = \"\"\n", "o.toml", ConfigRole::kRegion, &set,
                          &errors));
  EXPECT_EQ(set.metrics_listen, "") << "off stays off";
}

TEST(ConfigTest, TheHubStoreIsSqliteOrAPostgresqlUri) {
  const std::string head = "[hub]\nregion = \"eu\"\n";
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig(head + "store = \"postgresql://edgesync@db.example:5432/eu\"\npassword_file = \"/etc/pw\"\n",
                          "t.toml", ConfigRole::kRegion, &c, &errors));
  EXPECT_EQ(c.hub_store, "postgresql://edgesync@db.example:5432/eu");
  EXPECT_EQ(c.hub_password_file, "/etc/pw");
  EXPECT_TRUE(ParseErrors(head + "store = \"postgres://db/eu\"\n", ConfigRole::kRegion).empty());
  auto bad = ParseErrors(head + "store = \"/var/lib/hub.db\"\n", ConfigRole::kRegion);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].key, "hub.store");
  EXPECT_GT(bad[0].line, 0);
}

TEST(ConfigTest, DumpRoundTripsThroughTheParser) {
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_OK(ParseConfig("[gateway]\nid = \"gw\"\n[store]\nsync = \"full\"\n[[region]]\nname = \"eu\"\n"
                          "uri = \"tcp://127.0.0.1:1\"\n",
                          "t.toml", ConfigRole::kGateway, &c, &errors));
  Config again;
  ASSERT_OK(ParseConfig(DumpConfig(c), "dump.toml", ConfigRole::kGateway, &again, &errors))
      << (errors.empty() ? "" : errors[0].ToString());
  EXPECT_EQ(DumpConfig(again).substr(DumpConfig(again).find('\n')), DumpConfig(c).substr(DumpConfig(c).find('\n')));
}

// The shipped example lists exactly the options an operator decides, each at
// its default (gateway.id shown set, so it checks clean): it is the
// generated example, byte for byte, and it checks clean. Every option, also
// the tuning ones left out here, is in docs/CONFIG.md
// (ConfigReferenceTest.EveryOptionIsInTheDocsPage).
TEST(ConfigTest, ShippedExampleListsTheOperatorOptionsAtTheirDefaults) {
  std::string shipped;
  ASSERT_OK(ReadFile(std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/edgesync.example.toml", &shipped));
  EXPECT_EQ(shipped, ExampleConfig())
      << "regenerate with: build/edgesync config example > firmware-config/edgesync.example.toml";

  // What the file sets or shows commented out, by dotted key, as a reader
  // (or a script uncommenting lines) sees it.
  std::map<std::string, std::string> listed;
  const std::regex section_line(R"(^#?\[\[?([a-z]+)\]\]?$)");
  const std::regex option_line(R"(^(# )?([a-z_]+) = (.*)$)");
  std::istringstream lines(shipped);
  std::string line, section;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, m, section_line)) {
      section = m[1];
    } else if (std::regex_match(line, m, option_line)) {
      std::string key = section + "." + m[2].str();
      EXPECT_EQ(listed.count(key), 0u) << key << " listed twice";
      listed[key] = m[3];
    }
  }

  std::map<std::string, std::string> expected;
  size_t all = 0;
  for (const auto& o : ListOptions()) {
    ++all;
    if (o.in_example) expected[o.key] = o.key == "gateway.id" ? "\"gateway-1\"" : o.default_toml;
  }
  for (const auto& [key, value] : expected) {
    auto it = listed.find(key);
    if (it == listed.end()) {
      ADD_FAILURE() << key << " is an operator option but the example does not list it";
    } else {
      EXPECT_EQ(it->second, value) << key << " is not shown at its default";
    }
  }
  for (const auto& [key, value] : listed) {
    EXPECT_EQ(expected.count(key), 1u) << key << " = " << value << " is in the example but not an operator option";
  }

  // The decisions the example is for are among them; tuning is not, and the
  // example stays short.
  for (const char* key : {"gateway.id", "ingest.broker_uri", "region.uri", "region.ca_file", "region.credentials_file",
                          "store.retention_age_s", "store.sync", "ingest.batch_delay_ms", "store.max_bytes",
                          "ingest.device_rate", "uplink.max_bytes_per_s"}) {
    EXPECT_EQ(expected.count(key), 1u) << key;
  }
  for (const char* key : {"uplink.window", "store.split_max_entries", "ingest.batch_max", "hub.lease_ttl_s"}) {
    EXPECT_EQ(expected.count(key), 0u) << key;
  }
  EXPECT_LT(expected.size() * 2, all);

  Config c;
  std::vector<ConfigError> errors;
  EXPECT_OK(ParseConfig(shipped, "example", ConfigRole::kGateway, &c, &errors));
}

}  // namespace
}  // namespace edgesync

namespace edgesync {
namespace {

TEST(ConfigTest, ParseUtcMillis) {
  int64_t ms = 0;
  ASSERT_TRUE(ParseUtcMillis("2026-01-01T00:00:00Z", &ms));
  EXPECT_EQ(ms, 1767225600000);
  ASSERT_TRUE(ParseUtcMillis("1970-01-01T00:00:01Z", &ms));
  EXPECT_EQ(ms, 1000);
  EXPECT_FALSE(ParseUtcMillis("2026-01-01", &ms));
  EXPECT_FALSE(ParseUtcMillis("2026-13-01T00:00:00Z", &ms));
  EXPECT_FALSE(ParseUtcMillis("2026-01-01T00:00:00Z trailing", &ms));
  Config c;
  std::vector<ConfigError> errors;
  EXPECT_FALSE(ParseConfig("[ingest]\nepoch_floor = \"yesterday\"\n", "t.toml", ConfigRole::kAny, &c, &errors).ok());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "ingest.epoch_floor");
  EXPECT_EQ(errors[0].line, 2);
}

// The transport rule (firmware-config/transport.h): TLS is what the config
// says for every link, and plaintext off loopback needs allow_insecure.
TEST(TransportTest, ACaFileOrClientCertificateMeansTlsForEveryScheme) {
  TlsConfig none, ca{"/ca.crt", "", ""}, cert{"", "/c.crt", "/c.key"};
  EXPECT_EQ(EffectiveBrokerUri("tcp://h:1883", none), "tcp://h:1883");
  EXPECT_EQ(EffectiveBrokerUri("tcp://h:1883", ca), "ssl://h:1883");
  EXPECT_EQ(EffectiveBrokerUri("mqtt://h:1883", cert), "mqtts://h:1883");
  EXPECT_EQ(EffectiveBrokerUri("ssl://h:8883", ca), "ssl://h:8883");
  EXPECT_TRUE(IsTlsUri("ssl://h:8883"));
  EXPECT_TRUE(IsTlsUri("mqtts://h:8883"));
  EXPECT_FALSE(IsTlsUri("tcp://h:1883"));
}

TEST(TransportTest, LoopbackHosts) {
  for (const char* uri : {"tcp://127.0.0.1:1883", "tcp://localhost:1883", "tcp://[::1]:1883", "mqtt://127.3.4.5",
                          "tcp://user@127.0.0.1:1"}) {
    EXPECT_TRUE(IsLoopbackUri(uri)) << uri;
  }
  for (const char* uri : {"tcp://10.0.0.1:1883", "tcp://127.example.com:1883", "tcp://localhost.example:1",
                          "tcp://[::2]:1883", "tcp://128.0.0.1:1", "tcp://127.0.0.256:1", "tcp://:1883"}) {
    EXPECT_FALSE(IsLoopbackUri(uri)) << uri;
  }
}

TEST(TransportTest, PlaintextRegionOffLoopbackIsRefusedWithItsLine) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://eu.example:1883\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "region[0].uri");
  EXPECT_EQ(errors[0].line, 5);
  EXPECT_NE(errors[0].message.find("neither TLS nor loopback"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("region[0].allow_insecure = true"), std::string::npos) << errors[0].message;
}

TEST(TransportTest, TlsOrLoopbackOrAllowInsecurePass) {
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"ssl://eu.example:8883\"\n").empty());
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://eu.example:8883\"\nca_file = \"/ca.crt\"\n").empty());
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://127.0.0.1:1883\"\n").empty());
  EXPECT_TRUE(ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://eu.example:1883\"\nallow_insecure = true\n").empty());
  // Consent is per link: the second region is still refused.
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://eu.example:1883\"\nallow_insecure = true\n"
                       "[[region]]\nname = \"us\"\nuri = \"tcp://us.example:1883\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "region[1].uri");
  errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://eu.example:1883\"\nallow_insecure = \"yes\"\n");
  ASSERT_EQ(errors.size(), 2u);  // still insecure (line 3), and the wrong type (line 4)
  EXPECT_EQ(errors[0].key, "region[0].uri");
  EXPECT_EQ(errors[1].key, "region[0].allow_insecure");
}

TEST(TransportTest, TheHubFollowsTheSameRule) {
  auto errors = ParseErrors("[hub]\nregion = \"eu\"\nbroker_uri = \"tcp://broker.eu.example:1883\"\n", ConfigRole::kRegion);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "hub.broker_uri");
  EXPECT_EQ(errors[0].line, 3);
  EXPECT_TRUE(ParseErrors("[hub]\nregion = \"eu\"\nbroker_uri = \"tcp://broker.eu.example:1883\"\nallow_insecure = true\n",
                     ConfigRole::kRegion)
                  .empty());
  EXPECT_TRUE(ParseErrors("[hub]\nregion = \"eu\"\nbroker_uri = \"tcp://broker.eu.example:1883\"\nca_file = \"/ca\"\n",
                     ConfigRole::kRegion)
                  .empty());
}

TEST(TransportTest, CheckTransportRefusesAConfigBuiltInCode) {
  Config c;
  RegionConfig r;
  r.name = "eu";
  r.uri = "tcp://192.0.2.10:1883";
  c.regions.push_back(r);
  Status s = CheckTransport(c);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(s.message().find("region[0].uri"), std::string::npos) << s.message();
  c.regions[0].allow_insecure = true;
  EXPECT_OK(CheckTransport(c));
  c.hub_broker_uri = "tcp://192.0.2.11:1883";
  EXPECT_NE(CheckTransport(c).message().find("hub.broker_uri"), std::string::npos);
}

}  // namespace
}  // namespace edgesync

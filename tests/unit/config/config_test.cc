#include "firmware-config/config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/files.h"

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
  ASSERT_TRUE(ParseConfig("[gateway]\nid = \"gw-1\"\n", "t.toml", ConfigRole::kGateway, &c, &errors).ok());
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
  EXPECT_NE(errors[1].message.find("not one of: full, normal"), std::string::npos);
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
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://a:1883\"\n"
                            "[[region]]\nname = \"us\"\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "region[1].uri");
  EXPECT_NE(errors[0].message.find("needs a broker URI"), std::string::npos);
}

TEST(ConfigTest, RegionsParsed) {
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_TRUE(ParseConfig("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://a:1\"\npreference = 2\n"
                          "ca_file = \"/ca\"\n[[region]]\nname = \"us\"\nuri = \"ssl://b:2\"\n",
                          "t.toml", ConfigRole::kGateway, &c, &errors)
                  .ok());
  ASSERT_EQ(c.regions.size(), 2u);
  EXPECT_EQ(c.regions[0].name, "eu");
  EXPECT_EQ(c.regions[0].preference, 2);
  EXPECT_EQ(c.regions[0].tls.ca_file, "/ca");
  EXPECT_EQ(c.regions[1].uri, "ssl://b:2");
}

TEST(ConfigTest, DuplicateRegionNames) {
  auto errors = ParseErrors("[gateway]\nid = \"gw\"\n[[region]]\nname = \"eu\"\nuri = \"tcp://a:1\"\n"
                            "[[region]]\nname = \"eu\"\nuri = \"tcp://b:1\"\n");
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

TEST(ConfigTest, RegionRoleNeedsHubRegion) {
  auto errors = ParseErrors("[hub]\nbroker_uri = \"tcp://127.0.0.1:1\"\n", ConfigRole::kRegion);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "hub.region");
}

TEST(ConfigTest, DumpRoundTripsThroughTheParser) {
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_TRUE(ParseConfig("[gateway]\nid = \"gw\"\n[store]\nsync = \"full\"\n[[region]]\nname = \"eu\"\n"
                          "uri = \"tcp://a:1\"\n",
                          "t.toml", ConfigRole::kGateway, &c, &errors)
                  .ok());
  Config again;
  ASSERT_TRUE(ParseConfig(DumpConfig(c), "dump.toml", ConfigRole::kGateway, &again, &errors).ok())
      << (errors.empty() ? "" : errors[0].ToString());
  EXPECT_EQ(DumpConfig(again).substr(DumpConfig(again).find('\n')), DumpConfig(c).substr(DumpConfig(c).find('\n')));
}

// The shipped example must list every option at its default: it is the
// generated example, byte for byte, and it checks clean.
TEST(ConfigTest, ShippedExampleListsEveryOptionAtItsDefault) {
  std::string shipped;
  ASSERT_TRUE(ReadFile(std::string(EDGESYNC_SOURCE_DIR) + "/firmware-config/edgesync.example.toml", &shipped).ok());
  EXPECT_EQ(shipped, ExampleConfig())
      << "regenerate with: build/edgesync config example > firmware-config/edgesync.example.toml";
  for (const auto& o : ListOptions()) {
    std::string key = o.key.substr(o.key.find('.') + 1);
    bool listed = shipped.find("# " + key + " = " + o.default_toml + "\n") != std::string::npos ||
                  shipped.find("\n" + key + " = ") != std::string::npos;
    EXPECT_TRUE(listed) << o.key;
  }
  Config c;
  std::vector<ConfigError> errors;
  EXPECT_TRUE(ParseConfig(shipped, "example", ConfigRole::kGateway, &c, &errors).ok());
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

}  // namespace
}  // namespace edgesync

#include "agent/ingest/decoders.h"

#include <gtest/gtest.h>

#include "agent/ingest/readings_generated.h"
#include "agent/ingest/topic_pattern.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

RejectReason ReasonOfDevice(const std::string& payload, const std::string& device = "d1") {
  std::vector<DecodedReading> out;
  DecodeError e;
  EXPECT_FALSE(DecodeDevicePayload(payload, device, &out, &e)) << payload;
  return e.reason;
}

RejectReason ReasonOfMetric(const std::string& payload) {
  std::vector<DecodedReading> out;
  DecodeError e;
  EXPECT_FALSE(DecodeMetricPayload(payload, "d1", "temp", &out, &e)) << payload;
  return e.reason;
}

DeviceRecord DeviceOf(const std::string& payload) {
  DeviceRecord r;
  DecodeError e;
  EXPECT_TRUE(DecodeDeviceRecord(payload, "d1", &r, &e)) << payload << ": " << e.message;
  return r;
}

RejectReason ReasonOfDescription(const std::string& payload) {
  DeviceRecord r;
  DecodeError e;
  EXPECT_FALSE(DecodeDeviceRecord(payload, "d1", &r, &e)) << payload;
  EXPECT_FALSE(e.message.empty());
  return e.reason;
}

TEST(DeviceRecordDecoder, TakesTheDescribedFieldsAllOptional) {
  DeviceRecord r = DeviceOf(R"( {"name": "Boiler", "location": "cellar, Kämpfelbach", "unit": "°C"} )");
  EXPECT_EQ(r.device_id, "d1");
  EXPECT_EQ(r.name, "Boiler");
  EXPECT_EQ(r.location, "cellar, Kämpfelbach");
  EXPECT_EQ(r.default_unit, "°C");
  EXPECT_FALSE(r.deleted);
  r = DeviceOf(R"({"location": "roof"})");
  EXPECT_EQ(r.name, "");
  EXPECT_EQ(r.location, "roof");
  r = DeviceOf("{}");
  EXPECT_FALSE(r.deleted);
  EXPECT_EQ(r.name, "");
  r = DeviceOf(R"({"deleted": false, "name": "kept"})");
  EXPECT_FALSE(r.deleted);
  EXPECT_EQ(r.name, "kept");
  // At the bounds exactly.
  r = DeviceOf(R"({"name": ")" + std::string(kMaxDeviceFieldBytes, 'n') + R"(", "unit": ")" +
               std::string(kMaxUnitBytes, 'u') + R"("})");
  EXPECT_EQ(r.name.size(), kMaxDeviceFieldBytes);
  EXPECT_EQ(r.default_unit.size(), kMaxUnitBytes);
}

TEST(DeviceRecordDecoder, AnEmptyPayloadOrDeletedTrueDeletes) {
  DeviceRecord r = DeviceOf("");
  EXPECT_TRUE(r.deleted);
  EXPECT_EQ(r.device_id, "d1");
  r = DeviceOf(R"({"deleted": true, "name": "ignored"})");
  EXPECT_TRUE(r.deleted);
  EXPECT_EQ(r.name, "");
}

TEST(DeviceRecordDecoder, RefusesWhatIsNotADescription) {
  EXPECT_EQ(ReasonOfDescription("{\"name\":"), RejectReason::kMalformedJson);
  EXPECT_EQ(ReasonOfDescription(" "), RejectReason::kMalformedJson);
  EXPECT_EQ(ReasonOfDescription("\xc3\x28"), RejectReason::kInvalidUtf8);
  EXPECT_EQ(ReasonOfDescription(R"(["Boiler"])"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription("42"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"name": 5})"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"name": null})"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"name": "a", "colour": "red"})"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"deleted": "yes"})"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"location": "a\nb"})"), RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"name": "a\u0000b"})"), RejectReason::kInvalidDeviceRecord);
}

TEST(DeviceRecordDecoder, RefusesFieldsOverTheirBounds) {
  EXPECT_EQ(ReasonOfDescription(R"({"name": ")" + std::string(kMaxDeviceFieldBytes + 1, 'n') + R"("})"),
            RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"location": ")" + std::string(kMaxDeviceFieldBytes + 1, 'l') + R"("})"),
            RejectReason::kInvalidDeviceRecord);
  EXPECT_EQ(ReasonOfDescription(R"({"unit": ")" + std::string(kMaxUnitBytes + 1, 'u') + R"("})"),
            RejectReason::kInvalidDeviceRecord);
  // What the decoder takes, the store takes (its own rule, ValidateChangeEntry).
  ChangeEntry e;
  e.lsn = 1;
  e.kind = ChangeEntry::Kind::kDeviceUpsert;
  e.device = DeviceOf(R"({"name": ")" + std::string(kMaxDeviceFieldBytes, 'n') + R"("})");
  EXPECT_OK(ValidateChangeEntry(e));
}

TEST(TopicPattern, MatchesAndBuildsFilter) {
  TopicPattern p;
  ASSERT_OK(TopicPattern::Parse("sensors/{deviceId}/{metric}", &p));
  EXPECT_EQ(p.Filter(), "sensors/+/+");
  std::string d, m;
  EXPECT_TRUE(p.Match("sensors/dev-1/temp", &d, &m));
  EXPECT_EQ(d, "dev-1");
  EXPECT_EQ(m, "temp");
  EXPECT_FALSE(p.Match("sensors/dev-1", &d, &m));
  EXPECT_FALSE(p.Match("sensors/dev-1/temp/x", &d, &m));
  EXPECT_FALSE(p.Match("other/dev-1/temp", &d, &m));
  EXPECT_FALSE(TopicPattern::Parse("sensors/{deviceId}x", &p).ok());
  EXPECT_FALSE(TopicPattern::Parse("sensors/#", &p).ok());
  EXPECT_FALSE(TopicPattern::Parse("a/{deviceId}/{deviceId}", &p).ok());
  EXPECT_FALSE(TopicPattern::Parse("a//b", &p).ok());
  EXPECT_FALSE(TopicPattern::Parse("sensors/{metric}", &p).ok());
  ASSERT_OK(TopicPattern::Parse("senml", &p));  // the device comes from the payload
  EXPECT_FALSE(p.has_device());
}

TEST(Decoders, BareNumberAndValueJson) {
  std::vector<DecodedReading> out;
  DecodeError e;
  ASSERT_TRUE(DecodeMetricPayload(" 21.5\n", "d1", "temp", &out, &e));
  EXPECT_EQ(out[0].value, 21.5);
  EXPECT_FALSE(out[0].has_time);
  ASSERT_TRUE(DecodeMetricPayload(R"({"v": 3, "t": 1800000000.25, "u": "Cel", "q": 1})", "d1", "temp", &out, &e));
  EXPECT_EQ(out[1].value, 3);
  EXPECT_EQ(out[1].ts_ms, 1800000000250);
  EXPECT_EQ(out[1].unit, "Cel");
  EXPECT_TRUE(out[1].sensor_flagged);
  EXPECT_EQ(ReasonOfMetric("nan"), RejectReason::kNotFinite);
  EXPECT_EQ(ReasonOfMetric("-inf"), RejectReason::kNotFinite);
  EXPECT_EQ(ReasonOfMetric("1e999"), RejectReason::kNotFinite);
  EXPECT_EQ(ReasonOfMetric("0x10"), RejectReason::kUnknownFormat);
  EXPECT_EQ(ReasonOfMetric("hello"), RejectReason::kUnknownFormat);
  EXPECT_EQ(ReasonOfMetric(""), RejectReason::kUnknownFormat);
  EXPECT_EQ(ReasonOfMetric("{\"v\": 1"), RejectReason::kMalformedJson);
  EXPECT_EQ(ReasonOfMetric("{\"v\": \"1\"}"), RejectReason::kMalformedJson);
  // nlohmann-json refuses a number that overflows a double as invalid JSON.
  EXPECT_EQ(ReasonOfMetric("{\"v\": 1e999}"), RejectReason::kMalformedJson);
  EXPECT_EQ(ReasonOfMetric("{\"v\": 1, \"t\": -5}"), RejectReason::kInvalidReading);
  EXPECT_EQ(ReasonOfMetric(std::string("\xff\xfe", 2)), RejectReason::kInvalidUtf8);
}

TEST(Decoders, SenmlResolvesBaseValuesAndRelativeTimes) {
  std::vector<DecodedReading> out;
  DecodeError e;
  const char* pack = R"([{"bn":"room1:","bt":1800000000,"bu":"Cel","bv":10,"n":"temp","v":11.5,"t":1},
                         {"n":"hum","u":"%RH","v":30},
                         {"n":"door","vb":true,"t":-1}])";
  ASSERT_TRUE(DecodeDevicePayload(pack, "d1", &out, &e)) << e.message;
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].device_id, "d1");
  EXPECT_EQ(out[0].metric, "room1:temp");
  EXPECT_EQ(out[0].value, 21.5);
  EXPECT_EQ(out[0].ts_ms, 1800000001000);
  EXPECT_EQ(out[0].unit, "Cel");
  EXPECT_EQ(out[1].unit, "%RH");
  EXPECT_EQ(out[1].ts_ms, 1800000000000);
  EXPECT_EQ(out[2].value, 11);  // vb true + bv 10
  // Relative time: no base time, t = -5 s means five seconds ago.
  out.clear();
  ASSERT_TRUE(DecodeDevicePayload(R"([{"n":"x","v":1,"t":-5}])", "d1", &out, &e));
  EXPECT_TRUE(out[0].relative_time);
  EXPECT_EQ(out[0].ts_ms, -5000);
  // No device in the topic: bn names it.
  out.clear();
  ASSERT_TRUE(DecodeDevicePayload(R"([{"bn":"dev7:","n":"x","v":1}])", "", &out, &e));
  EXPECT_EQ(out[0].device_id, "dev7");
  EXPECT_EQ(out[0].metric, "x");
  EXPECT_EQ(ReasonOfDevice("[]"), RejectReason::kMalformedSenml);
  EXPECT_EQ(ReasonOfDevice("[1,2]"), RejectReason::kMalformedSenml);
  EXPECT_EQ(ReasonOfDevice(R"([{"n":"x","vs":"text"}])"), RejectReason::kMalformedSenml);
  EXPECT_EQ(ReasonOfDevice(R"([{"n":"x"}])"), RejectReason::kMalformedSenml);
  EXPECT_EQ(ReasonOfDevice(R"([{"n":"x","v":1,"foo_":2}])"), RejectReason::kMalformedSenml);
  EXPECT_EQ(ReasonOfDevice(R"([{"n":"x","v":1e999}])"), RejectReason::kMalformedSenml);
  EXPECT_EQ(ReasonOfDevice(R"([{"n":"x","v":1)"), RejectReason::kMalformedSenml);
}

TEST(Decoders, FlatJsonObject) {
  std::vector<DecodedReading> out;
  DecodeError e;
  ASSERT_TRUE(DecodeDevicePayload(R"({"temp": 20.5, "hum": 41, "t": 1800000000})", "d1", &out, &e));
  ASSERT_EQ(out.size(), 2u);
  for (const auto& r : out) EXPECT_EQ(r.ts_ms, 1800000000000);
  EXPECT_EQ(ReasonOfDevice(R"({"temp": "warm"})"), RejectReason::kMalformedJson);
  EXPECT_EQ(ReasonOfDevice(R"({"t": 5})"), RejectReason::kMalformedJson);
  EXPECT_EQ(ReasonOfDevice("12"), RejectReason::kUnknownFormat);
}

std::string BuildFb(const std::string& device, double value, int64_t ts) {
  flatbuffers::FlatBufferBuilder b;
  auto s = ingest::fb::CreateSample(b, b.CreateString("temp"), ts, value, b.CreateString("Cel"));
  auto v = b.CreateVector(std::vector<flatbuffers::Offset<ingest::fb::Sample>>{s});
  auto root = ingest::fb::CreateReadings(b, device.empty() ? 0 : b.CreateString(device), v);
  ingest::fb::FinishReadingsBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

TEST(Decoders, FlatbuffersVerifiedBeforeUse) {
  std::vector<DecodedReading> out;
  DecodeError e;
  ASSERT_TRUE(DecodeDevicePayload(BuildFb("", 4.5, 1800000000123), "d1", &out, &e)) << e.message;
  EXPECT_EQ(out[0].value, 4.5);
  EXPECT_EQ(out[0].ts_ms, 1800000000123);
  EXPECT_EQ(out[0].unit, "Cel");
  out.clear();
  ASSERT_TRUE(DecodeDevicePayload(BuildFb("d9", 1, 0), "", &out, &e));
  EXPECT_EQ(out[0].device_id, "d9");
  EXPECT_FALSE(out[0].has_time);
  EXPECT_EQ(ReasonOfDevice(BuildFb("other", 1, 0)), RejectReason::kInvalidKey);
  EXPECT_EQ(ReasonOfDevice(BuildFb("", std::numeric_limits<double>::quiet_NaN(), 0)), RejectReason::kNotFinite);
  std::string broken = BuildFb("", 1, 0);
  broken.resize(broken.size() - 6);
  EXPECT_EQ(ReasonOfDevice(broken), RejectReason::kFlatbuffersInvalid);
  std::string garbage = BuildFb("", 1, 0);
  garbage[0] = '\x7f';  // root offset now points outside
  garbage[1] = '\x7f';
  EXPECT_EQ(ReasonOfDevice(garbage), RejectReason::kFlatbuffersInvalid);
}

}  // namespace
}  // namespace edgesync

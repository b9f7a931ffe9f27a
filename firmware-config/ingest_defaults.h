// firmware-config/ingest_defaults.h: the defaults of [ingest], each written
// once.
//
// Ingest is part of the program (agent/), above firmware-config, so its
// defaults cannot live beside IngestOptions the way store/store_defaults.h
// and sync/sync_defaults.h live beside theirs: here the option table
// (config.cc) and IngestOptions (agent/ingest/ingest.h) both take them from
// this header. Values are in the unit the config file uses.
//
// Thread safety: constants only.
#ifndef EDGESYNC_FIRMWARE_CONFIG_INGEST_DEFAULTS_H_
#define EDGESYNC_FIRMWARE_CONFIG_INGEST_DEFAULTS_H_

#include <algorithm>
#include <cstdint>

#include "sync/sync_defaults.h"

namespace edgesync {
namespace ingest_options {

// "YYYY-MM-DDTHH:MM:SSZ" to Unix ms at compile time, for the epoch floor's
// default (ParseUtcMillis in config.h reads what a config file gives; a
// test holds the two equal). Leap seconds are not counted, as in timegm.
constexpr int64_t UtcMillisOf(const char* t) {
  auto num = [t](int at, int digits) {
    int64_t n = 0;
    for (int i = 0; i < digits; ++i) n = n * 10 + (t[at + i] - '0');
    return n;
  };
  int64_t y = num(0, 4), m = num(5, 2), d = num(8, 2);
  // Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's
  // days_from_civil).
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return ((days * 24 + num(11, 2)) * 60 + num(14, 2)) * 60 * 1000 + num(17, 2) * 1000;
}

// Topic patterns subscribed to; {deviceId} and {metric} name topic levels.
inline constexpr const char* kSubscriptions[] = {"sensors/{deviceId}/{metric}", "sensors/{deviceId}"};
// Where devices publish their descriptions (docs/INGEST.md).
inline constexpr char kDeviceTopic[] = "devices/{deviceId}/meta";
inline constexpr int64_t kMqttVersion = 5;  // towards the local broker: 4 = MQTT 3.1.1, 5 = MQTT 5
inline constexpr int64_t kBatchMax = 2000;
// The cap of the adaptive commit groups (agent/ingest/commit_pacer.h).
inline constexpr int64_t kBatchDelayMs = 500;
inline constexpr int64_t kMaxPayloadBytes = 65536;
inline constexpr double kDeviceRate = 100.0;
inline constexpr int64_t kDeviceBurst = 200;
inline constexpr int64_t kDeviceBacklogS = int64_t{7} * 86400;
// The longest absence a device is credited its rate for at the defaults:
// what the broker queues for (its MQTT 5 session) and a backlog counts.
inline constexpr int64_t kMaxAwayS = std::min(mqtt_link_options::kSessionExpiryS, kDeviceBacklogS);
// Wall times before this are untrusted (platform/clock_trust.h).
inline constexpr char kEpochFloor[] = "2026-01-01T00:00:00Z";
inline constexpr int64_t kEpochFloorMs = UtcMillisOf(kEpochFloor);
inline constexpr char kClockTrust[] = "kernel";
// 4 MiB: each segment starts its series dictionary again (~25 bytes a
// series, ~200 KB for the reference workload's 8,000 series).
inline constexpr int64_t kJournalSegmentBytes = int64_t{4} << 20;

}  // namespace ingest_options
}  // namespace edgesync

#endif  // EDGESYNC_FIRMWARE_CONFIG_INGEST_DEFAULTS_H_

// The eight columns of a remote entry (store/remote_entry_columns.h), written
// and read back directly: every kind of entry round-trips with the running
// sums of series and time (also across int64's ends, where the deltas wrap),
// and every damaged column is named, never read past.
#include "store/remote_entry_columns.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "store/column_coding.h"
#include "store/types.h"

namespace edgesync {
namespace {

constexpr int kKind = 0, kSeries = 1, kTs = 2, kQuality = 3, kText = 7;

RemoteChunkEntry ReadingEntry(uint64_t olsn, int64_t series, int64_t ts, double value, uint32_t quality = 0) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.kind = static_cast<uint8_t>(ChangeEntry::Kind::kReading);
  e.series = series;
  e.ts_ms = ts;
  e.value = value;
  e.quality = quality;
  return e;
}

RemoteChunkEntry DeviceEntry(uint64_t olsn, int64_t series, ChangeEntry::Kind kind, std::string name,
                             std::string location, std::string unit) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.kind = static_cast<uint8_t>(kind);
  e.series = series;
  e.name = std::move(name);
  e.location = std::move(location);
  e.default_unit = std::move(unit);
  return e;
}

RemoteChunkEntry CorrectionEntry(uint64_t olsn, int64_t series, uint32_t period, int64_t delta, int64_t from,
                                 int64_t to) {
  RemoteChunkEntry e;
  e.olsn = olsn;
  e.kind = static_cast<uint8_t>(ChangeEntry::Kind::kTimeCorrection);
  e.series = series;
  e.ts_ms = from;
  e.to_ms = to;
  e.value = static_cast<double>(delta);
  e.quality = period;
  return e;
}

// The columns of entries written in order, as a block holds them.
struct Columns {
  std::string cols[kRemoteEntryColumns];
  explicit Columns(const std::vector<RemoteChunkEntry>& entries) {
    int64_t prev_series = 0, prev_ts = 0;
    for (const RemoteChunkEntry& e : entries) {
      PutRemoteEntryColumns(e, prev_series, prev_ts, cols);
      prev_series = e.series;
      prev_ts = e.ts_ms;
    }
  }
  Columns() = default;
  std::vector<VarintReader> Readers() const {
    std::vector<VarintReader> r;
    for (const std::string& c : cols) {
      const auto* p = reinterpret_cast<const uint8_t*>(c.data());
      r.emplace_back(p, p + c.size());
    }
    return r;
  }
};

// Reads n entries back; the first failure's reason, or "" when all read.
std::string ReadBack(const Columns& c, const std::vector<uint64_t>& olsns, std::vector<RemoteChunkEntry>* out) {
  std::vector<VarintReader> r = c.Readers();
  uint64_t series = 0, ts = 0;
  for (uint64_t olsn : olsns) {
    RemoteChunkEntry e;
    if (const char* why = GetRemoteEntryColumns(r.data(), olsn, &series, &ts, &e)) return why;
    out->push_back(e);
  }
  return "";
}

void ExpectSame(const RemoteChunkEntry& want, const RemoteChunkEntry& got) {
  EXPECT_EQ(got.olsn, want.olsn);
  EXPECT_EQ(got.kind, want.kind);
  EXPECT_EQ(got.series, want.series);
  EXPECT_EQ(got.ts_ms, want.ts_ms);
  EXPECT_EQ(got.value, want.value);
  EXPECT_EQ(got.quality, want.quality);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.location, want.location);
  EXPECT_EQ(got.default_unit, want.default_unit);
  EXPECT_EQ(got.to_ms, want.to_ms);
}

TEST(RemoteEntryColumnsTest, EveryKindOfEntryRoundTrips) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::vector<RemoteChunkEntry> entries = {
      ReadingEntry(10, 7, 1780000000000, 21.5, 3),
      ReadingEntry(11, 7, 1780000000250, 21.25),
      ReadingEntry(12, 2, 1779999999000, -0.001),         // series and time go back
      ReadingEntry(13, 9, 1780000000000, 3.141592653589793),  // not a short decimal: raw
      ReadingEntry(14, 9, kMin, 1e300),                    // the deltas wrap around
      ReadingEntry(15, kMax, kMax, -1e-300, UINT32_MAX),
      DeviceEntry(20, 4, ChangeEntry::Kind::kDeviceUpsert, "boiler", "basement \xc3\xa9", "C"),
      DeviceEntry(21, 4, ChangeEntry::Kind::kDeviceDelete, "", "", ""),
      DeviceEntry(22, 5, ChangeEntry::Kind::kDeviceUpsert, std::string(256, 'n'), "", std::string(256, 'u')),
      CorrectionEntry(30, 0, 1, -3600000, 1780000000000, 1780000360000),
      CorrectionEntry(31, 0, kMaxClockPeriod, int64_t{1} << 53, 0, 0),
      ReadingEntry(40, 7, 0, 0),
  };
  Columns c(entries);
  std::vector<uint64_t> olsns;
  for (const auto& e : entries) olsns.push_back(e.olsn);
  std::vector<RemoteChunkEntry> back;
  ASSERT_EQ(ReadBack(c, olsns, &back), "");
  ASSERT_EQ(back.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSame(entries[i], back[i]);
  }
  // Past the last entry the columns are at their ends: a read fails rather
  // than inventing an entry.
  std::vector<VarintReader> r = c.Readers();
  uint64_t series = 0, ts = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    RemoteChunkEntry e;
    ASSERT_EQ(GetRemoteEntryColumns(r.data(), olsns[i], &series, &ts, &e), nullptr);
  }
  RemoteChunkEntry extra;
  EXPECT_NE(GetRemoteEntryColumns(r.data(), 99, &series, &ts, &extra), nullptr) << "read past the last entry";
}

TEST(RemoteEntryColumnsTest, AReadingWritesNoText) {
  Columns c({ReadingEntry(1, 3, 1000, 1.5)});
  EXPECT_TRUE(c.cols[kText].empty());
  for (int i : {kKind, kSeries, kTs, kQuality}) EXPECT_FALSE(c.cols[i].empty()) << "column " << i;
}

TEST(RemoteEntryColumnsTest, EachDamagedColumnIsNamed) {
  const RemoteChunkEntry device = DeviceEntry(5, 4, ChangeEntry::Kind::kDeviceUpsert, "n", "l", "u");
  struct Case {
    const char* what;
    std::vector<RemoteChunkEntry> entries;
    void (*damage)(Columns*);
    const char* why;
  } cases[] = {
      {"a kind past the last", {ReadingEntry(1, 3, 1000, 1.5)},
       [](Columns* c) { c->cols[kKind] = std::string(1, static_cast<char>(kMaxEntryKind + 1)); },
       "column kind bad"},
      {"no kind at all", {ReadingEntry(1, 3, 1000, 1.5)}, [](Columns* c) { c->cols[kKind].clear(); },
       "column kind bad"},
      {"the series column cut", {ReadingEntry(1, 3, 1000, 1.5)}, [](Columns* c) { c->cols[kSeries].clear(); },
       "column series truncated"},
      {"the time column cut", {ReadingEntry(1, 3, 1000, 1.5)}, [](Columns* c) { c->cols[kTs] = "\x80"; },
       "column ts truncated"},
      {"a quality past 32 bits", {ReadingEntry(1, 3, 1000, 1.5)},
       [](Columns* c) {
         c->cols[kQuality].clear();
         PutVarint(uint64_t{1} << 32, &c->cols[kQuality]);
       },
       "column quality bad"},
      {"a device record's text cut", {device}, [](Columns* c) { c->cols[kText].pop_back(); }, "column text bad"},
      {"a text longer than 256 bytes", {device},
       [](Columns* c) {
         c->cols[kText].clear();
         PutVarint(257, &c->cols[kText]);
         c->cols[kText] += std::string(257, 'x');
       },
       "column text bad"},
      {"a correction without its span", {CorrectionEntry(1, 0, 1, 5, 100, 200)},
       [](Columns* c) { c->cols[kText].clear(); }, "column text bad"},
      {"a correction of period 0", {CorrectionEntry(1, 0, 1, 5, 100, 200)},
       [](Columns* c) {
         c->cols[kQuality].clear();
         PutVarint(0, &c->cols[kQuality]);
       },
       "time correction bad"},
      {"a correction ending before it starts", {CorrectionEntry(1, 0, 1, 5, 100, 200)},
       [](Columns* c) {
         c->cols[kText].clear();
         PutVarint(ZigZag(-1), &c->cols[kText]);
       },
       "time correction bad"},
  };
  for (const Case& k : cases) {
    Columns c(k.entries);
    k.damage(&c);
    std::vector<RemoteChunkEntry> back;
    EXPECT_EQ(ReadBack(c, {1}, &back), k.why) << k.what;
  }
  // A correction whose delta is no whole number of milliseconds.
  Columns c({ReadingEntry(1, 0, 100, 0.5)});
  c.cols[kKind].clear();
  PutVarint(static_cast<uint64_t>(ChangeEntry::Kind::kTimeCorrection), &c.cols[kKind]);
  c.cols[kQuality].clear();
  PutVarint(1, &c.cols[kQuality]);
  PutVarint(ZigZag(10), &c.cols[kText]);
  std::vector<RemoteChunkEntry> back;
  EXPECT_EQ(ReadBack(c, {1}, &back), "time correction bad");
}

}  // namespace
}  // namespace edgesync

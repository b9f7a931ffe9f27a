// The intake journal on real files: records back in order after a reopen,
// torn and damaged tails cut off, segments that take turns without losing
// an uncommitted record.
#include "agent/ingest/intake_journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmath>

#include "platform/files.h"
#include "tests/support/process.h"
#include "tests/support/status_assert.h"

namespace edgesync {
namespace {

std::vector<Reading> Readings(uint64_t seq, int n) {
  std::vector<Reading> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(Reading{"dev-" + std::to_string(seq), "m" + std::to_string(i), 1800000000000 + int64_t(seq),
                          double(seq) + 0.25 * i, i % 2 ? "Cel" : "", uint32_t(i)});
  }
  return out;
}

IntakeJournalOptions Opts(const std::string& dir, int64_t segment = 1 << 20) {
  IntakeJournalOptions o;
  o.dir = dir;
  o.segment_bytes = segment;
  return o;
}

int64_t FileSize(const std::string& path) {
  std::string data;
  return ReadFile(path, &data).ok() ? static_cast<int64_t>(data.size()) : -1;
}

TEST(IntakeJournal, RecordsAfterTheCheckpointComeBackInOrder) {
  test::TempDir dir;
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  EXPECT_TRUE(rec.pending.empty());
  for (uint64_t seq = 1; seq <= 20; ++seq) ASSERT_OK(j->Append(seq, Readings(seq, int(seq % 4) + 1), 0));
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 12, &j, &rec));
  EXPECT_EQ(rec.last_seq, 20u);
  EXPECT_EQ(rec.cut_bytes, 0);
  ASSERT_EQ(rec.pending.size(), 8u);
  for (size_t i = 0; i < rec.pending.size(); ++i) {
    const uint64_t seq = 13 + i;
    EXPECT_EQ(rec.pending[i].seq, seq);
    const std::vector<Reading> want = Readings(seq, int(seq % 4) + 1);
    ASSERT_EQ(rec.pending[i].readings.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const Reading& got = rec.pending[i].readings[k];
      EXPECT_EQ(got.device_id, want[k].device_id);
      EXPECT_EQ(got.metric, want[k].metric);
      EXPECT_EQ(got.unit, want[k].unit);
      EXPECT_EQ(got.ts_ms, want[k].ts_ms);
      EXPECT_EQ(got.value, want[k].value);
      EXPECT_EQ(got.quality, want[k].quality);
    }
  }
}

TEST(IntakeJournal, ATornTailIsCutAndWritingGoesOnAfterIt) {
  test::TempDir dir;
  const std::string seg = dir.path() + "/intake-a.journal";
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  for (uint64_t seq = 1; seq <= 3; ++seq) ASSERT_OK(j->Append(seq, Readings(seq, 2), 0));
  j.reset();
  const int64_t full = FileSize(seg);
  ASSERT_GT(full, 0);
  ASSERT_EQ(truncate(seg.c_str(), full - 5), 0);  // the last record torn by a kill
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 2u);
  EXPECT_GT(rec.cut_bytes, 0);
  EXPECT_EQ(rec.last_seq, 2u);
  ASSERT_OK(j->Append(3, Readings(3, 1), 0));
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 3u);
  EXPECT_EQ(rec.pending[2].seq, 3u);
  EXPECT_EQ(rec.cut_bytes, 0);
}

TEST(IntakeJournal, ADamagedRecordEndsItsSegment) {
  test::TempDir dir;
  const std::string seg = dir.path() + "/intake-a.journal";
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_OK(j->Append(1, Readings(1, 1), 0));
  const int64_t first = j->bytes();
  ASSERT_OK(j->Append(2, Readings(2, 1), 0));
  ASSERT_OK(j->Append(3, Readings(3, 1), 0));
  j.reset();
  // One flipped byte in the second record's body.
  int fd = ::open(seg.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char c = 0;
  ASSERT_EQ(pread(fd, &c, 1, first + 12), 1);
  c = static_cast<char>(c ^ 0x40);
  ASSERT_EQ(pwrite(fd, &c, 1, first + 12), 1);
  ::close(fd);
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 1u);
  EXPECT_EQ(rec.pending[0].seq, 1u);
  EXPECT_EQ(FileSize(seg), first);
}

TEST(IntakeJournal, SegmentsTakeTurnsOnlyOverCommittedRecords) {
  test::TempDir dir;
  const int64_t segment = 512;
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path(), segment), 0, &j, &rec));
  // The store keeps up (committed = seq - 1): disk use stays near two segments.
  int64_t most = 0;
  for (uint64_t seq = 1; seq <= 500; ++seq) {
    ASSERT_OK(j->Append(seq, Readings(seq, 1), seq - 1));
    most = std::max(most, j->bytes());
  }
  EXPECT_LE(most, 2 * segment + 200);
  // Then the store stops committing at 500: nothing after it may go.
  for (uint64_t seq = 501; seq <= 700; ++seq) ASSERT_OK(j->Append(seq, Readings(seq, 1), 500));
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path(), segment), 500, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 200u);
  for (size_t i = 0; i < rec.pending.size(); ++i) EXPECT_EQ(rec.pending[i].seq, 501 + i);
  // Appends go on in the segment holding the newest records.
  ASSERT_OK(j->Append(701, Readings(701, 1), 700));
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path(), segment), 700, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 1u);
  EXPECT_EQ(rec.pending[0].seq, 701u);
  EXPECT_OK(j->Clear());
  EXPECT_EQ(j->bytes(), 0);
  EXPECT_EQ(FileSize(dir.path() + "/intake-a.journal") + FileSize(dir.path() + "/intake-b.journal"), 0);
}

TEST(IntakeJournal, DecodeRefusesWhatIsNotOneWholeBody) {
  std::string body;
  IntakeJournal::EncodeBody(7, Readings(7, 3), &body);
  IntakeRecord r;
  ASSERT_TRUE(IntakeJournal::DecodeBody(body.data(), body.size(), &r));
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.readings.size(), 3u);
  for (size_t cut = 0; cut < body.size(); ++cut) EXPECT_FALSE(IntakeJournal::DecodeBody(body.data(), cut, &r)) << cut;
  std::string longer = body + "x";
  EXPECT_FALSE(IntakeJournal::DecodeBody(longer.data(), longer.size(), &r));
  // A count far beyond the bytes present is refused before any allocation.
  std::string huge = body;
  huge[8] = huge[9] = huge[10] = huge[11] = '\xff';
  EXPECT_FALSE(IntakeJournal::DecodeBody(huge.data(), huge.size(), &r));
}

// The reference workload's readings, one per record as single-reading
// messages arrive: a dozen or so bytes each, not the first format's ~60.
TEST(IntakeJournal, CompactRecordsTakeAFewBytesPerReading) {
  test::TempDir dir;
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path(), 64 << 20), 0, &j, &rec));
  std::vector<Reading> all;
  for (int tick = 0; tick < 20; ++tick) {
    for (int d = 0; d < 100; ++d) {
      for (int m = 0; m < 8; ++m) {
        all.push_back(Reading{"dev-" + std::to_string(d), "metric" + std::to_string(m),
                              1780000000000 + tick * 1000, 20 + 0.1 * ((d * 7 + m + tick) % 50), "Cel", 0});
      }
    }
  }
  for (size_t i = 0; i < all.size(); ++i) ASSERT_OK(j->Append(i + 1, {all[i]}, 0));
  EXPECT_LT(static_cast<double>(j->bytes()) / static_cast<double>(all.size()), 16.0) << j->bytes();
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path(), 64 << 20), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    ASSERT_EQ(rec.pending[i].seq, i + 1);
    ASSERT_EQ(rec.pending[i].readings.size(), 1u);
    const Reading& got = rec.pending[i].readings[0];
    EXPECT_EQ(got.device_id, all[i].device_id);
    EXPECT_EQ(got.metric, all[i].metric);
    EXPECT_EQ(got.unit, all[i].unit);
    EXPECT_EQ(got.ts_ms, all[i].ts_ms);
    EXPECT_EQ(got.value, all[i].value);
  }
}

// Appends after a reopen go on with the segment's dictionary (rebuilt from
// the file); a torn record leaves the dictionary as it was before it.
TEST(IntakeJournal, AReopenedSegmentGoesOnWithItsDictionary) {
  test::TempDir dir;
  const std::string seg = dir.path() + "/intake-a.journal";
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_OK(j->Append(1, Readings(1, 2), 0));
  ASSERT_OK(j->Append(2, Readings(2, 2), 0));
  j.reset();
  ASSERT_EQ(truncate(seg.c_str(), FileSize(seg) - 3), 0);  // record 2 (new series) torn
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 1u);
  ASSERT_OK(j->Append(2, Readings(2, 2), 0));
  ASSERT_OK(j->Append(3, Readings(1, 2), 0));  // record 1's series again: dictionary references
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 3u);
  EXPECT_EQ(rec.cut_bytes, 0);
  EXPECT_EQ(rec.pending[1].readings[1].device_id, "dev-2");
  EXPECT_EQ(rec.pending[2].seq, 3u);
  EXPECT_EQ(rec.pending[2].readings[1].device_id, "dev-1");
  EXPECT_EQ(rec.pending[2].readings[1].metric, "m1");
  EXPECT_EQ(rec.pending[2].readings[1].unit, "Cel");
}

// A journal left by a version writing the first format is read as such and
// appended to in that format until its segment turns.
TEST(IntakeJournal, AFirstFormatJournalIsReadAndGoesOn) {
  test::TempDir dir;
  const std::string seg = dir.path() + "/intake-a.journal";
  std::string file;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    std::string body;
    IntakeJournal::EncodeBody(seq, Readings(seq, 2), &body);
    const uint32_t len = static_cast<uint32_t>(body.size());
    const uint32_t sum = static_cast<uint32_t>(XXH3_64bits(body.data(), body.size()));
    for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
    file += body;
  }
  ASSERT_OK(WriteFileAtomic(seg, file));
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 1, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 2u);
  EXPECT_EQ(rec.pending[0].seq, 2u);
  EXPECT_EQ(rec.pending[1].readings[1].value, 3.25);
  ASSERT_OK(j->Append(4, Readings(4, 1), 1));
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 1, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 3u);
  EXPECT_EQ(rec.pending[2].seq, 4u);
  EXPECT_EQ(rec.cut_bytes, 0);
}

// Each record names the MQTT message it came from, so a restart can still
// recognise the broker's redelivery of it; every record's message comes
// back in sequence order, committed or not.
TEST(IntakeJournal, RecordsKeepTheirMessagesIds) {
  test::TempDir dir;
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  const std::vector<IntakeMessageId> ids = {{65534, false, 7}, {65535, false, 0}, {1, false, 255},
                                            {65535, true, 9},  {0, false, 0},     {2, false, 3}};
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_OK(j->Append(i + 1, Readings(i + 1, 1), 0, ids[i]));
  j.reset();
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 4, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 2u);
  EXPECT_EQ(rec.pending[0].id.packet_id, 0) << "a record without a message id";
  EXPECT_EQ(rec.pending[1].id.packet_id, 2);
  EXPECT_EQ(rec.pending[1].readings[0].device_id, "dev-6");
  ASSERT_EQ(rec.taken.size(), 5u);
  size_t k = 0;
  for (const IntakeMessageId& want : ids) {
    if (want.packet_id == 0) continue;
    EXPECT_EQ(rec.taken[k].packet_id, want.packet_id) << k;
    EXPECT_EQ(rec.taken[k].duplicate, want.duplicate) << k;
    EXPECT_EQ(rec.taken[k].fingerprint, want.fingerprint) << k;
    ++k;
  }
}

// A compact segment written before records carried message ids (magic
// ESJ2) is read, and appended to in its own format until it turns.
TEST(IntakeJournal, ACompactSegmentWithoutIdsIsReadAndGoesOn) {
  test::TempDir dir;
  const std::string seg = dir.path() + "/intake-a.journal";
  auto varint = [](uint64_t v, std::string* out) {
    while (v >= 0x80) {
      out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out->push_back(static_cast<char>(v));
  };
  auto str = [&](const std::string& v, std::string* out) {
    varint(v.size(), out);
    *out += v;
  };
  std::string file("ESJ2\r\n\x1a\n", 8);
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    std::string body;
    varint(1, &body);  // seq delta
    varint(1, &body);  // one reading
    if (seq == 1) {
      varint(0, &body);  // a new series
      str("dev-a", &body);
      str("temp", &body);
      str("Cel", &body);
      varint(2 * 1800000000000ULL, &body);  // zigzag ts delta from 0
    } else {
      varint(1, &body);  // series 1
      varint(2 * 1000, &body);
    }
    body.push_back(1);               // scale 1
    varint(2 * (210 + seq), &body);  // zigzag mantissa: 21.1, 21.2
    varint(2, &body);                // quality: receive time
    varint(body.size(), &file);
    const uint32_t sum = static_cast<uint32_t>(XXH3_64bits(body.data(), body.size()));
    for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
    file += body;
  }
  ASSERT_OK(WriteFileAtomic(seg, file));
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 2u);
  EXPECT_EQ(rec.cut_bytes, 0);
  EXPECT_EQ(rec.pending[1].readings[0].device_id, "dev-a");
  EXPECT_EQ(rec.pending[1].readings[0].ts_ms, 1800000001000);
  EXPECT_DOUBLE_EQ(rec.pending[1].readings[0].value, 21.2);
  EXPECT_TRUE(rec.taken.empty());
  ASSERT_OK(j->Append(3, Readings(3, 1), 0, IntakeMessageId{5, false, 1}));
  j.reset();
  std::string data;
  ASSERT_OK(ReadFile(seg, &data));
  EXPECT_EQ(data.substr(0, 4), "ESJ2") << "the segment keeps its format";
  ASSERT_OK(IntakeJournal::Open(Opts(dir.path()), 0, &j, &rec));
  ASSERT_EQ(rec.pending.size(), 3u);
  EXPECT_EQ(rec.cut_bytes, 0);
  EXPECT_EQ(rec.pending[2].readings[0].device_id, "dev-3");
}

TEST(IntakeJournal, AnUnwritableDirectoryIsAnError) {
  std::unique_ptr<IntakeJournal> j;
  IntakeRecovery rec;
  Status s = IntakeJournal::Open(Opts("/proc/edgesync-no-such-dir"), 0, &j, &rec);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace edgesync

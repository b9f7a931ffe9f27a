// agent/ingest/intake_journal.h: accepted readings written to an append-only
// file before the PUBACK, so a kill -9 loses nothing the broker was told we
// have, while the store still commits in groups.
//
// Paho sends a message's PUBACK when the message callback returns. Holding
// the callback until a store commit costs one commit per message; one
// write(2) of the readings to this journal costs a few microseconds and is
// as durable against a process kill (the data is in the kernel's page
// cache). With sync on (store.sync = "full") every record is also
// fdatasync'ed, matching what a commit would give against power loss.
//
// Each record carries the message's intake sequence number; the store
// commits batches together with the checkpoint of the last sequence number
// in them (Store::AppendReadingsMarked), so at start the records after the
// checkpoint are exactly the ones to commit again.
//
// Two segment files take turns: appends go to the active one; once it
// holds segment_bytes and every record of the other one is committed, the
// other is truncated and becomes the active one. Disk use is therefore
// about 2 x segment_bytes; the committed prefix is dropped without copying.
//
// A segment written by this version opens with the 8-byte magic
// "ESJ2\r\n\x1a\n" and holds compact records, each leaning on the ones
// before it in the segment: varint body length | u32 checksum (XXH3 low 32
// bits of the body) | body: varint seq delta (from the previous record's) |
// varint count | count x (varint series: its index in the segment's
// dictionary, or 0 followed by varint-length device id, metric and unit,
// which become the next index | zig-zag varint ts delta from the previous
// reading | u8 decimal scale + zig-zag varint mantissa, or scale 16 + 8
// raw IEEE bytes (store/column_coding.h) | varint quality). A reading of the
// reference workload takes ~14 bytes where the first format took ~60: the
// journal is written for every reading before its PUBACK, so its bytes are
// a large part of what the SD card is written per reading
// (tests/bench/storage_bench.cc). The dictionary starts empty in each
// segment, so a segment decodes on its own from its start.
//
// A segment without the magic is of the first format (an older version's
// journal): u32 body length | u32 checksum | body: u64 seq | u32 count |
// count x (u16 len + device id, u16 len + metric, u16 len + unit, i64 ts_ms,
// f64 value, u32 quality), little endian. It is read as such, and appended
// to in its own format until it turns.
//
// Either way a torn or damaged record ends its segment: it and anything
// after it are cut off at open (a torn record was never acknowledged).
//
// Thread safety: none; the owner serialises calls.
#ifndef EDGESYNC_AGENT_INGEST_INTAKE_JOURNAL_H_
#define EDGESYNC_AGENT_INGEST_INTAKE_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/status.h"
#include "store/types.h"

namespace edgesync {

struct IntakeJournalOptions {
  std::string dir;                    // holds intake-a.journal and intake-b.journal
  int64_t segment_bytes = 1 << 20;
  bool sync = false;                  // fdatasync every record
};

struct IntakeRecord {
  uint64_t seq = 0;
  std::vector<Reading> readings;
};

struct IntakeRecovery {
  std::vector<IntakeRecord> pending;  // seq > the committed checkpoint, in seq order
  uint64_t last_seq = 0;              // highest sequence number in either segment
  int64_t cut_bytes = 0;              // torn or damaged bytes cut off
};

class IntakeJournal {
 public:
  // Opens (creating) both segments, cuts torn tails, and returns the records
  // after committed_seq.
  static Status Open(const IntakeJournalOptions& options, uint64_t committed_seq,
                     std::unique_ptr<IntakeJournal>* journal, IntakeRecovery* recovery);
  ~IntakeJournal();
  IntakeJournal(const IntakeJournal&) = delete;
  IntakeJournal& operator=(const IntakeJournal&) = delete;

  // Appends one record; committed_seq (what the store holds) lets the
  // segments turn. On failure nothing of the record stays in the file.
  Status Append(uint64_t seq, const std::vector<Reading>& readings, uint64_t committed_seq);
  // Empties both segments; only when everything appended is committed.
  Status Clear();

  int64_t bytes() const { return sizes_[0] + sizes_[1]; }

  // The first format's record encoding, for tests and the fuzzer: Decode
  // returns false on anything that is not exactly one well-formed body.
  static void EncodeBody(uint64_t seq, const std::vector<Reading>& readings, std::string* out);
  static bool DecodeBody(const char* data, size_t size, IntakeRecord* record);
  // A whole segment's bytes (either format), for tests and the fuzzer: the
  // well-formed records from its start, in order; returns the length of
  // that prefix (what Open keeps of the file).
  static size_t ParseSegment(const std::string& data, std::vector<IntakeRecord>* records);

  // What the compact format carries from one record to the next in a
  // segment (the writer's copy; Open rebuilds it from the file).
  struct SegmentState {
    bool compact = true;              // false: a first-format segment
    uint64_t prev_seq = 0;
    int64_t prev_ts = 0;
    std::unordered_map<std::string, uint64_t> series;  // device \0 metric \0 unit -> index (from 1)
  };

 private:
  IntakeJournal() = default;
  Status Turn(uint64_t committed_seq);
  // Appends one compact record for `readings` to buffer_; new dictionary
  // keys go to added (kept only once the write succeeds).
  void EncodeCompact(uint64_t seq, const std::vector<Reading>& readings, std::vector<std::string>* added);

  IntakeJournalOptions options_;
  int fds_[2] = {-1, -1};
  std::string paths_[2];
  int64_t sizes_[2] = {0, 0};
  uint64_t last_seqs_[2] = {0, 0};    // highest seq in each segment (0 = none)
  int active_ = 0;
  std::string buffer_;                // reused record buffer
  SegmentState state_;                // of the active segment
};

}  // namespace edgesync

#endif  // EDGESYNC_AGENT_INGEST_INTAKE_JOURNAL_H_

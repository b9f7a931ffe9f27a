// agent/ingest/intake_journal.h: accepted readings written to an append-only
// file before the PUBACK, so a kill -9 loses nothing the broker was told we
// have, while the store still commits in groups.
//
// Paho sends a message's PUBACK when the message callback returns. Holding
// the callback until a store commit costs one commit per message; one
// write(2) of the readings to this journal costs a few microseconds and is
// as durable against a process kill (the data is in the kernel's page
// cache). With store.sync = "full" every record is also fdatasync'ed.
//
// Contract: each record carries the message's intake sequence number; the
// store commits batches with the checkpoint of the last sequence number in
// them, so at start the records after the checkpoint are exactly the ones to
// commit again. Two segments take turns (disk use about 2 x segment_bytes).
// A torn or damaged record ends its segment and is cut off at open (a torn
// record was never acknowledged). Each compact record also names the MQTT
// message it came from (packet id, DUP flag, a fingerprint byte), so a
// restart can still recognise a redelivery. The record formats (compact with
// message ids; the earlier ones, still read): docs/FORMATS.md, "Intake
// journal".
//
// Thread safety: none; the owner serialises calls.
#ifndef EDGESYNC_AGENT_INGEST_INTAKE_JOURNAL_H_
#define EDGESYNC_AGENT_INGEST_INTAKE_JOURNAL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "firmware-config/ingest_defaults.h"
#include "platform/status.h"
#include "store/types.h"

namespace edgesync {

struct IntakeJournalOptions {
  std::string dir;                    // holds intake-a.journal and intake-b.journal
  int64_t segment_bytes = ingest_options::kJournalSegmentBytes;
  bool sync = false;                  // fdatasync every record
};

// Which MQTT message a record came from, so that a redelivery after a
// restart is recognised (redelivery_filter.h). packet_id 0 = none.
struct IntakeMessageId {
  int packet_id = 0;
  bool duplicate = false;    // the message had the DUP flag
  uint8_t fingerprint = 0;   // low byte of RedeliveryFilter::Fingerprint
};

struct IntakeRecord {
  uint64_t seq = 0;
  std::vector<Reading> readings;
  IntakeMessageId id;
};

struct IntakeRecovery {
  std::vector<IntakeRecord> pending;  // seq > the committed checkpoint, in seq order
  std::vector<IntakeMessageId> taken; // every record's message (with an id), in seq order
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
  Status Append(uint64_t seq, const std::vector<Reading>& readings, uint64_t committed_seq,
                const IntakeMessageId& id = IntakeMessageId{});
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
    bool with_ids = true;             // false: a compact segment without message ids (ESJ2)
    int prev_packet_id = 0;
    uint64_t prev_seq = 0;
    int64_t prev_ts = 0;
    std::unordered_map<std::string, uint64_t> series;  // device \0 metric \0 unit -> index (from 1)
  };

 private:
  IntakeJournal() = default;
  Status Turn(uint64_t committed_seq);
  // Appends one compact record for `readings` to buffer_; new dictionary
  // keys go to added (kept only once the write succeeds).
  void EncodeCompact(uint64_t seq, const std::vector<Reading>& readings, const IntakeMessageId& id,
                     std::vector<std::string>* added);

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

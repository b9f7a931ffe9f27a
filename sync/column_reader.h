// sync/column_reader.h: the pieces both column codecs (sync/columns.cc,
// sync/columns_context.cc) share: one varint column of an `Entries` table
// (sync/batch.fbs) read with its name in its errors, the escaped raw values,
// and device records. Internal to those codecs.
//
// Thread safety: values.
#ifndef EDGESYNC_SYNC_COLUMN_READER_H_
#define EDGESYNC_SYNC_COLUMN_READER_H_

#include <flatbuffers/flatbuffers.h>

#include <string>
#include <vector>

#include "platform/status.h"
#include "store/column_coding.h"
#include "store/types.h"
#include "sync/batch_generated.h"

namespace edgesync {

class ColumnReader {
 public:
  // zeros_when_absent: a column the encoder left out because every value
  // in it was 0 (ColumnsContext) reads as zeros.
  ColumnReader(const flatbuffers::Vector<uint8_t>* v, const char* name, bool zeros_when_absent = false)
      : in_(v ? v->data() : nullptr, v ? v->data() + v->size() : nullptr),
        name_(name),
        zeros_(v == nullptr && zeros_when_absent) {}
  bool Next(uint64_t* out) {
    if (zeros_) {
      *out = 0;
      return true;
    }
    return in_.Next(out);
  }
  bool AtEnd() const { return in_.AtEnd(); }
  Status Error(const std::string& what) const {
    return Status::Corruption(std::string("batch column ") + name_ + ": " + what);
  }

 private:
  VarintReader in_;
  const char* name_;
  bool zeros_;
};

// Values that are not exact decimals travel as raw IEEE bits: `escaped`
// holds the gaps between their reading numbers, `raw_values` the bits.
class EscapedValuesWriter {
 public:
  void Add(uint64_t reading_no, double value);
  std::string escaped;
  std::vector<uint64_t> raw;

 private:
  uint64_t last_ = 0;
  bool any_ = false;
};

class EscapedValuesReader {
 public:
  EscapedValuesReader(const flatbuffers::Vector<uint8_t>* escaped, const flatbuffers::Vector<uint64_t>* raw)
      : escaped_(escaped, "escaped"), raw_(raw) {}
  Status Start() { return Advance(true); }
  // Whether reading `n` is escaped; if so, *value gets it.
  Status Take(uint64_t n, double* value, bool* taken);
  // After the last reading: every index and raw value was used.
  Status Finish() const;

 private:
  Status Advance(bool first);
  ColumnReader escaped_;
  const flatbuffers::Vector<uint64_t>* raw_;
  size_t used_ = 0;
  bool have_ = false;
  uint64_t next_ = 0;
};

// Device record entries carry their fields in `device_records`, in order.
flatbuffers::Offset<wire::DeviceFields> PutDeviceRecord(flatbuffers::FlatBufferBuilder* fbb, const DeviceRecord& r);
// The next record into e->device (its id given); *used counts them.
Status TakeDeviceRecord(const flatbuffers::Vector<flatbuffers::Offset<wire::DeviceFields>>* records, size_t* used,
                        const std::string& device_id, ChangeEntry* e);

// Time correction entries (protocol 6) carry their fields in
// `corrections`, in order; no device, no reading column.
flatbuffers::Offset<wire::TimeCorrectionFields> PutCorrection(flatbuffers::FlatBufferBuilder* fbb,
                                                              const TimeCorrection& c);
// The next correction into e->correction, validated (ValidateChangeEntry);
// *used counts them.
Status TakeCorrection(const flatbuffers::Vector<flatbuffers::Offset<wire::TimeCorrectionFields>>* corrections,
                      size_t* used, ChangeEntry* e);
// After the last entry: one correction per entry of kind 3, no more.
Status CheckCorrectionsUsed(const flatbuffers::Vector<flatbuffers::Offset<wire::TimeCorrectionFields>>* corrections,
                            size_t used);

// Each entry's kind and LSN, the first two columns of both layouts. An LSN
// travels as its gap after the one before, so a batch's LSNs only rise.
inline Status ReadKindAndLsn(ColumnReader* kinds, ColumnReader* lsns, uint64_t* prev_lsn, ChangeEntry* e) {
  uint64_t kind, gap;
  if (!kinds->Next(&kind)) return kinds->Error("truncated or bad varint");
  if (kind > kMaxEntryKind) return kinds->Error("unknown entry kind " + std::to_string(kind));
  e->kind = static_cast<ChangeEntry::Kind>(kind);
  if (!lsns->Next(&gap)) return lsns->Error("truncated or bad varint");
  e->lsn = *prev_lsn + static_cast<uint64_t>(UnZigZag(gap)) + 1;
  *prev_lsn = e->lsn;
  if (e->lsn == 0) return lsns->Error("LSN 0");
  return Status::Ok();
}

}  // namespace edgesync

#define ES_READ(reader, var)                                      \
  uint64_t var;                                                   \
  if (!(reader).Next(&var)) return (reader).Error("truncated or bad varint")

#endif  // EDGESYNC_SYNC_COLUMN_READER_H_

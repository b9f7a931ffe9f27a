// sync/column_reader.h: reads one varint column of an `Entries` table
// (sync/batch.fbs), naming the column in its errors. Internal to the column
// codecs (sync/columns.cc, sync/columns_context.cc).
//
// Thread safety: a value.
#ifndef EDGESYNC_SYNC_COLUMN_READER_H_
#define EDGESYNC_SYNC_COLUMN_READER_H_

#include <flatbuffers/flatbuffers.h>

#include <string>

#include "platform/status.h"
#include "store/column_coding.h"

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

}  // namespace edgesync

#define ES_READ(reader, var)                                      \
  uint64_t var;                                                   \
  if (!(reader).Next(&var)) return (reader).Error("truncated or bad varint")

#endif  // EDGESYNC_SYNC_COLUMN_READER_H_

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
  ColumnReader(const flatbuffers::Vector<uint8_t>* v, const char* name)
      : in_(v ? v->data() : nullptr, v ? v->data() + v->size() : nullptr), name_(name) {}
  bool Next(uint64_t* out) { return in_.Next(out); }
  bool AtEnd() const { return in_.AtEnd(); }
  Status Error(const std::string& what) const {
    return Status::Corruption(std::string("batch column ") + name_ + ": " + what);
  }

 private:
  VarintReader in_;
  const char* name_;
};

}  // namespace edgesync

#define ES_READ(reader, var)                                      \
  uint64_t var;                                                   \
  if (!(reader).Next(&var)) return (reader).Error("truncated or bad varint")

#endif  // EDGESYNC_SYNC_COLUMN_READER_H_

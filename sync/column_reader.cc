#include "sync/column_reader.h"

#include <cstring>

namespace edgesync {

void EscapedValuesWriter::Add(uint64_t reading_no, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  raw.push_back(bits);
  PutVarint(any_ ? reading_no - last_ - 1 : reading_no, &escaped);
  last_ = reading_no;
  any_ = true;
}

Status EscapedValuesReader::Advance(bool first) {
  uint64_t gap;
  if (escaped_.AtEnd()) {
    have_ = false;
    return Status::Ok();
  }
  if (!escaped_.Next(&gap)) return escaped_.Error("bad varint");
  next_ = first ? gap : next_ + 1 + gap;
  have_ = true;
  return Status::Ok();
}

Status EscapedValuesReader::Take(uint64_t n, double* value, bool* taken) {
  *taken = have_ && next_ == n;
  if (!*taken) return Status::Ok();
  if (!raw_ || used_ >= raw_->size()) return Status::Corruption("batch column raw_values: too short");
  uint64_t bits = raw_->Get(static_cast<flatbuffers::uoffset_t>(used_++));
  std::memcpy(value, &bits, sizeof bits);
  return Advance(false);
}

Status EscapedValuesReader::Finish() const {
  if (have_) return escaped_.Error("index beyond the readings");
  if (raw_ && used_ != raw_->size()) return Status::Corruption("batch column raw_values: longer than the escapes");
  return Status::Ok();
}

flatbuffers::Offset<wire::DeviceFields> PutDeviceRecord(flatbuffers::FlatBufferBuilder* fbb, const DeviceRecord& r) {
  return wire::CreateDeviceFields(*fbb, fbb->CreateString(r.name), fbb->CreateString(r.location),
                                  fbb->CreateString(r.default_unit), r.deleted);
}

Status TakeDeviceRecord(const flatbuffers::Vector<flatbuffers::Offset<wire::DeviceFields>>* records, size_t* used,
                        const std::string& device_id, ChangeEntry* e) {
  if (!records || *used >= records->size()) return Status::Corruption("batch: missing device record");
  const wire::DeviceFields* f = records->Get(static_cast<flatbuffers::uoffset_t>((*used)++));
  e->device.device_id = device_id;
  e->device.name = f->name() ? f->name()->str() : "";
  e->device.location = f->location() ? f->location()->str() : "";
  e->device.default_unit = f->default_unit() ? f->default_unit()->str() : "";
  e->device.deleted = f->deleted() || e->kind == ChangeEntry::Kind::kDeviceDelete;
  return Status::Ok();
}

flatbuffers::Offset<wire::TimeCorrectionFields> PutCorrection(flatbuffers::FlatBufferBuilder* fbb,
                                                              const TimeCorrection& c) {
  return wire::CreateTimeCorrectionFields(*fbb, c.period, c.delta_ms, c.from_ms, c.to_ms);
}

Status TakeCorrection(const flatbuffers::Vector<flatbuffers::Offset<wire::TimeCorrectionFields>>* corrections,
                      size_t* used, ChangeEntry* e) {
  if (!corrections || *used >= corrections->size()) {
    return Status::Corruption("batch column corrections: fewer time corrections than entries of kind 3");
  }
  const wire::TimeCorrectionFields* f = corrections->Get(static_cast<flatbuffers::uoffset_t>((*used)++));
  e->correction = TimeCorrection{f->period(), f->delta_ms(), f->from_ms(), f->to_ms()};
  Status st = ValidateChangeEntry(*e);
  if (!st.ok()) {
    return Status::Corruption("batch column corrections: entry at LSN " + std::to_string(e->lsn) + ": " +
                              st.message());
  }
  return Status::Ok();
}

Status CheckCorrectionsUsed(const flatbuffers::Vector<flatbuffers::Offset<wire::TimeCorrectionFields>>* corrections,
                            size_t used) {
  if (corrections && used != corrections->size()) {
    return Status::Corruption("batch column corrections: " + std::to_string(corrections->size()) +
                              " time corrections for " + std::to_string(used) + " entries of kind 3");
  }
  return Status::Ok();
}

}  // namespace edgesync

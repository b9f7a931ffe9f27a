// The ColumnsContext layout (sync/columns.h, sync/PROTOCOL.md "Series
// context"): entries coded against an origin's SeriesContext, which both
// sides move reading by reading in the same order.
#include <cmath>
#include <cstring>

#include "sync/batch_generated.h"
#include "sync/column_reader.h"
#include "sync/columns.h"

namespace edgesync {
namespace {

constexpr int64_t kMaxMantissa = int64_t{1} << 53;
constexpr size_t kReserveEntries = 4096;

}  // namespace

std::string EncodeEntriesWithContext(const std::vector<ChangeEntry>& entries, uint64_t lsn_base,
                                     SeriesContext* ctx) {
  SeriesContext::Dictionary& devices = ctx->devices();
  SeriesContext::Dictionary& metrics = ctx->metrics();
  SeriesContext::Dictionary& units = ctx->units();
  const size_t devices_before = devices.size(), metrics_before = metrics.size(), units_before = units.size();

  // Pass 1: the strings and series new to the context, in order of first
  // use, and each metric's scale (the largest its values here need).
  std::vector<uint32_t> reading_series;
  std::vector<int> metric_scale;
  std::string new_series;
  for (const ChangeEntry& e : entries) {
    // A time correction names no device: nothing to intern (the decoder,
    // and SeriesContext::Advance, skip it alike).
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) continue;
    uint32_t d = devices.Intern(e.device_id());
    if (e.kind != ChangeEntry::Kind::kReading) continue;
    uint32_t m = metrics.Intern(e.reading.metric), u = units.Intern(e.reading.unit);
    bool added;
    uint32_t id = ctx->InternSeries(d, m, u, &added);
    if (added) {
      PutVarint(d, &new_series);
      PutVarint(m, &new_series);
      PutVarint(u, &new_series);
    }
    reading_series.push_back(id);
    if (m >= metric_scale.size()) metric_scale.resize(m + 1, 0);
    metric_scale[m] = std::max(metric_scale[m], MinimalScale(e.reading.value));
  }
  metric_scale.resize(metrics.size(), 0);

  std::string kinds, lsns, device_index, series, timestamps, quality, mantissas;
  EscapedValuesWriter escapes;
  flatbuffers::FlatBufferBuilder fbb(1024 + entries.size() * 4);
  std::vector<flatbuffers::Offset<wire::DeviceFields>> records;
  std::vector<flatbuffers::Offset<wire::TimeCorrectionFields>> corrections;
  uint64_t prev_lsn = lsn_base, reading_no = 0;
  int64_t prev_series = -1, prev_ts = 0;
  for (const ChangeEntry& e : entries) {
    PutVarint(static_cast<uint64_t>(e.kind), &kinds);
    PutVarint(ZigZag(static_cast<int64_t>(e.lsn - prev_lsn - 1)), &lsns);
    prev_lsn = e.lsn;
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) {
      corrections.push_back(PutCorrection(&fbb, e.correction));
      continue;
    }
    if (e.kind != ChangeEntry::Kind::kReading) {
      PutVarint(devices.Intern(e.device_id()), &device_index);
      const DeviceRecord& r = e.device;
      records.push_back(PutDeviceRecord(&fbb, r));
      continue;
    }
    const Reading& r = e.reading;
    uint32_t id = reading_series[reading_no];
    PutVarint(ZigZag(static_cast<int64_t>(id) - prev_series - 1), &series);
    prev_series = id;
    int64_t ts_prediction = ctx->PredictTs(id, prev_ts);
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.ts_ms) - static_cast<uint64_t>(ts_prediction))),
              &timestamps);
    ctx->ObserveTs(id, r.ts_ms);
    prev_ts = r.ts_ms;
    PutVarint(r.quality, &quality);
    const int scale = metric_scale[ctx->series(id).metric];
    int64_t mantissa;
    if (MantissaAt(r.value, scale, &mantissa)) {
      PutVarint(ZigZag(mantissa - ctx->PredictMantissa(id, scale)), &mantissas);
      ctx->ObserveValue(id, mantissa, scale);
    } else {
      escapes.Add(reading_no, r.value);
    }
    ++reading_no;
  }
  std::string scales;
  for (int s : metric_scale) PutVarint(static_cast<uint64_t>(s), &scales);

  auto strings = [&fbb](const SeriesContext::Dictionary& dict, size_t from) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> out;
    for (size_t i = from; i < dict.size(); ++i) out.push_back(fbb.CreateString(dict[i]));
    return fbb.CreateVector(out);
  };
  auto bytes = [&fbb](const std::string& s) {
    return fbb.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  // A per-entry column of zeros only (all readings, consecutive LSNs,
  // timestamps as predicted, quality 0, series in id order) is left out:
  // ~10 bytes of vector each, measured 40 bytes a batch of 200.
  auto zeros_or_bytes = [&bytes](const std::string& s) {
    return s.find_first_not_of('\0') == std::string::npos ? flatbuffers::Offset<flatbuffers::Vector<uint8_t>>()
                                                           : bytes(s);
  };
  auto dev = strings(devices, devices_before), met = strings(metrics, metrics_before), uni = strings(units, units_before);
  auto k = zeros_or_bytes(kinds), l = zeros_or_bytes(lsns), di = bytes(device_index), ts = zeros_or_bytes(timestamps),
       q = zeros_or_bytes(quality), sc = bytes(scales), ma = bytes(mantissas), es = bytes(escapes.escaped),
       se = zeros_or_bytes(series), ns = bytes(new_series);
  auto raw = fbb.CreateVector(escapes.raw);
  auto rec = fbb.CreateVector(records);
  auto cor = corrections.empty() ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TimeCorrectionFields>>>()
                                 : fbb.CreateVector(corrections);
  wire::EntriesBuilder b(fbb);
  b.add_count(static_cast<uint32_t>(entries.size()));
  b.add_devices(dev);
  b.add_metrics(met);
  b.add_units(uni);
  b.add_kinds(k);
  b.add_lsns(l);
  b.add_device_index(di);
  b.add_timestamps(ts);
  b.add_quality(q);
  b.add_metric_scale(sc);
  b.add_mantissas(ma);
  b.add_escaped(es);
  b.add_raw_values(raw);
  b.add_device_records(rec);
  b.add_series(se);
  b.add_new_series(ns);
  if (!corrections.empty()) b.add_corrections(cor);
  fbb.Finish(b.Finish());
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

Status DecodeEntriesWithContext(std::string_view bytes, uint64_t lsn_base, size_t max_entries, SeriesContext* ctx,
                                std::vector<ChangeEntry>* entries) {
  entries->clear();
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  flatbuffers::Verifier verifier(data, bytes.size(), 16, 4 * max_entries + 1024);
  if (!verifier.VerifyBuffer<wire::Entries>(nullptr)) return Status::Corruption("batch entries: not a valid buffer");
  const wire::Entries* in = flatbuffers::GetRoot<wire::Entries>(data);
  const size_t count = in->count();
  if (count > max_entries) return Status::Corruption("batch entries: more entries than the header's count");
  // The header's count is a claim: entries are allocated as they decode,
  // and each takes a byte of some column (its series, mantissa, device
  // index or raw value), so a count beyond them is refused up front.
  const size_t held = (in->kinds() ? in->kinds()->size() : 0) + (in->series() ? in->series()->size() : 0) +
                      (in->mantissas() ? in->mantissas()->size() : 0) +
                      (in->device_index() ? in->device_index()->size() : 0) +
                      (in->raw_values() ? in->raw_values()->size() : 0);
  if (count > held) return Status::Corruption("batch: more entries claimed than the columns hold");
  if (in->origins() || in->origin_index() || in->seqs()) return Status::Corruption("batch: feed columns in a batch");

  // The strings new to the context: checked, then appended to its own. A
  // batch adds at most one string of each kind per entry.
  auto append = [&](const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v, const char* what,
                    bool key, SeriesContext::Dictionary* dict) -> Status {
    if (!v) return Status::Ok();
    if (v->size() > count || !ctx->HasRoom(v->size())) {
      return Status::Corruption(std::string("batch dictionary ") + what + ": too many new entries");
    }
    for (const auto* s : *v) {
      std::string value = s->str();
      if (key) {
        ES_RETURN_IF_ERROR(ValidateKey(what, value).Annotate("batch dictionary"));
      } else if (value.size() > 32 || !IsValidUtf8(value)) {
        return Status::Corruption(std::string("batch dictionary ") + what + ": invalid entry");
      }
      bool added;
      dict->Intern(value, &added);
      if (!added) return Status::Corruption(std::string("batch dictionary ") + what + ": already in the context");
    }
    return Status::Ok();
  };
  ES_RETURN_IF_ERROR(append(in->devices(), "deviceId", true, &ctx->devices()));
  ES_RETURN_IF_ERROR(append(in->metrics(), "metric", true, &ctx->metrics()));
  ES_RETURN_IF_ERROR(append(in->units(), "unit", false, &ctx->units()));
  if (!ctx->HasRoom(count)) return Status::Corruption("batch: the context would pass its series limit");

  std::vector<int> scales;
  ColumnReader scale_reader(in->metric_scale(), "metric_scale");
  for (size_t i = 0; i < ctx->metrics().size(); ++i) {
    ES_READ(scale_reader, s);
    if (s > static_cast<uint64_t>(kMaxDecimalScale)) return scale_reader.Error("scale out of range");
    scales.push_back(static_cast<int>(s));
  }
  if (!scale_reader.AtEnd()) return scale_reader.Error("more scales than metrics");

  ColumnReader kinds(in->kinds(), "kinds", true), lsns(in->lsns(), "lsns", true),
      device_index(in->device_index(), "device_index"), series(in->series(), "series", true),
      new_series(in->new_series(), "new_series"), timestamps(in->timestamps(), "timestamps", true),
      quality(in->quality(), "quality", true),
      mantissas(in->mantissas(), "mantissas");
  const auto* records = in->device_records();
  size_t records_used = 0;
  const auto* corrections = in->corrections();
  size_t corrections_used = 0;
  EscapedValuesReader escapes(in->escaped(), in->raw_values());
  ES_RETURN_IF_ERROR(escapes.Start());

  uint64_t prev_lsn = lsn_base, reading_no = 0;
  int64_t prev_series = -1, prev_ts = 0;
  entries->reserve(std::min<size_t>(count, kReserveEntries));
  for (size_t i = 0; i < count; ++i) {
    ChangeEntry e;
    ES_RETURN_IF_ERROR(ReadKindAndLsn(&kinds, &lsns, &prev_lsn, &e));
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) {
      ES_RETURN_IF_ERROR(TakeCorrection(corrections, &corrections_used, &e));
      entries->push_back(std::move(e));
      continue;
    }
    if (e.kind != ChangeEntry::Kind::kReading) {
      ES_READ(device_index, d);
      if (d >= ctx->devices().size()) return device_index.Error("index out of range");
      ES_RETURN_IF_ERROR(TakeDeviceRecord(records, &records_used, ctx->devices()[d], &e));
      entries->push_back(std::move(e));
      continue;
    }
    ES_READ(series, ds);
    int64_t id;
    if (__builtin_add_overflow(prev_series + 1, UnZigZag(ds), &id) || id < 0 ||
        static_cast<uint64_t>(id) > ctx->series_count()) {
      return series.Error("id out of range");
    }
    if (static_cast<uint64_t>(id) == ctx->series_count()) {
      ES_READ(new_series, d);
      ES_READ(new_series, m);
      ES_READ(new_series, u);
      if (d >= ctx->devices().size() || m >= ctx->metrics().size() || u >= ctx->units().size()) {
        return new_series.Error("index out of range");
      }
      if (!ctx->AddSeries(static_cast<uint32_t>(d), static_cast<uint32_t>(m), static_cast<uint32_t>(u))) {
        return new_series.Error("series already in the context");
      }
    }
    prev_series = id;
    const uint32_t sid = static_cast<uint32_t>(id);
    const SeriesContext::Series& s = ctx->series(sid);
    Reading& r = e.reading;
    r.device_id = ctx->devices()[s.device];
    r.metric = ctx->metrics()[s.metric];
    r.unit = ctx->units()[s.unit];
    ES_READ(timestamps, dt);
    r.ts_ms = static_cast<int64_t>(static_cast<uint64_t>(ctx->PredictTs(sid, prev_ts)) +
                                   static_cast<uint64_t>(UnZigZag(dt)));
    ctx->ObserveTs(sid, r.ts_ms);
    prev_ts = r.ts_ms;
    ES_READ(quality, qv);
    if (qv > UINT32_MAX) return quality.Error("out of range");
    r.quality = static_cast<uint32_t>(qv);
    bool escaped;
    ES_RETURN_IF_ERROR(escapes.Take(reading_no, &r.value, &escaped));
    if (!escaped) {
      ES_READ(mantissas, zm);
      const int scale = scales[s.metric];
      int64_t mantissa;
      if (__builtin_add_overflow(ctx->PredictMantissa(sid, scale), UnZigZag(zm), &mantissa) ||
          mantissa >= kMaxMantissa || mantissa <= -kMaxMantissa) {
        return mantissas.Error("mantissa out of range");
      }
      ctx->ObserveValue(sid, mantissa, scale);
      r.value = FromMantissa(mantissa, scale);
    }
    ++reading_no;
    if (!std::isfinite(r.value)) return Status::Corruption("batch: reading value is not finite");
    entries->push_back(std::move(e));
  }
  ES_RETURN_IF_ERROR(escapes.Finish());
  if (!kinds.AtEnd() || !lsns.AtEnd() || !device_index.AtEnd() || !series.AtEnd() || !new_series.AtEnd() ||
      !timestamps.AtEnd() || !quality.AtEnd() || !mantissas.AtEnd() ||
      (records && records_used != records->size())) {
    return Status::Corruption("batch: columns longer than the entry count");
  }
  return CheckCorrectionsUsed(corrections, corrections_used);
}

}  // namespace edgesync

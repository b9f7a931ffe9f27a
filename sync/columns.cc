#include "sync/columns.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "store/feed_cursor.h"
#include "sync/batch_generated.h"
#include "sync/column_reader.h"

namespace edgesync {
namespace {

constexpr int kMaxScale = kMaxDecimalScale;
constexpr int64_t kMaxMantissa = int64_t{1} << 53;
// Entries reserved up front at most (~1 MB); beyond it the vector grows as
// entries decode.
constexpr size_t kReserveEntries = 4096;

uint64_t SeriesKey(uint32_t device, uint32_t metric) { return (uint64_t{device} << 32) | metric; }

class Dictionary {
 public:
  uint32_t Index(const std::string& s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    uint32_t i = static_cast<uint32_t>(values_.size());
    index_.emplace(s, i);
    values_.push_back(s);
    return i;
  }
  const std::vector<std::string>& values() const { return values_; }

 private:
  std::unordered_map<std::string, uint32_t> index_;
  std::vector<std::string> values_;
};

}  // namespace

std::string EncodeEntries(const std::vector<ChangeEntry>& entries, uint64_t lsn_base, const FeedColumns* feed) {
  Dictionary devices, metrics, units;
  std::string kinds, lsns, device_index, metric_index, unit_index, timestamps, quality, mantissas, seqs,
      origin_index;
  EscapedValuesWriter escapes;

  // Pass 1: the metric dictionary and the decimal scale of each metric (the
  // largest any of its values needs), so mantissas of one series share a
  // scale. Each reading's metric index is kept for pass 2.
  std::vector<int> metric_scale;
  std::vector<uint32_t> reading_metric;
  for (const ChangeEntry& e : entries) {
    if (e.kind != ChangeEntry::Kind::kReading) continue;
    uint32_t m = metrics.Index(e.reading.metric);
    if (m >= metric_scale.size()) metric_scale.resize(m + 1, 0);
    int s = MinimalScale(e.reading.value);
    if (s > metric_scale[m]) metric_scale[m] = s;
    reading_metric.push_back(m);
  }

  std::unordered_map<uint64_t, int64_t> last_of_series;
  std::vector<int64_t> last_of_metric(metric_scale.size(), 0);
  std::vector<bool> metric_seen(metric_scale.size(), false);
  uint64_t prev_lsn = lsn_base;
  uint32_t prev_device = 0;
  int64_t prev_ts = 0;
  uint64_t reading_no = 0;
  std::vector<flatbuffers::Offset<wire::DeviceFields>> records;
  flatbuffers::FlatBufferBuilder fbb(1024 + entries.size() * 8);

  std::vector<flatbuffers::Offset<wire::TimeCorrectionFields>> corrections;
  for (const ChangeEntry& e : entries) {
    PutVarint(static_cast<uint64_t>(e.kind), &kinds);
    PutVarint(ZigZag(static_cast<int64_t>(e.lsn - prev_lsn - 1)), &lsns);
    prev_lsn = e.lsn;
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) {
      // The origin's, not a device's: no device index.
      corrections.push_back(PutCorrection(&fbb, e.correction));
      continue;
    }
    uint32_t d = devices.Index(e.device_id());
    PutVarint(ZigZag(static_cast<int64_t>(d) - static_cast<int64_t>(prev_device)), &device_index);
    prev_device = d;
    if (e.kind != ChangeEntry::Kind::kReading) {
      const DeviceRecord& r = e.device;
      records.push_back(PutDeviceRecord(&fbb, r));
      continue;
    }
    const Reading& r = e.reading;
    uint32_t m = reading_metric[reading_no];
    PutVarint(m, &metric_index);
    PutVarint(units.Index(r.unit), &unit_index);
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.ts_ms) - static_cast<uint64_t>(prev_ts))),
              &timestamps);
    prev_ts = r.ts_ms;
    PutVarint(r.quality, &quality);
    int64_t mantissa;
    if (MantissaAt(r.value, metric_scale[m], &mantissa)) {
      uint64_t key = SeriesKey(d, m);
      auto it = last_of_series.find(key);
      int64_t prediction = it != last_of_series.end() ? it->second : (metric_seen[m] ? last_of_metric[m] : 0);
      PutVarint(ZigZag(mantissa - prediction), &mantissas);
      last_of_series[key] = mantissa;
      last_of_metric[m] = mantissa;
      metric_seen[m] = true;
    } else {
      escapes.Add(reading_no, r.value);
    }
    ++reading_no;
  }

  std::string scales;
  for (int s : metric_scale) PutVarint(static_cast<uint64_t>(s), &scales);

  std::vector<flatbuffers::Offset<wire::WireOrigin>> origins;
  if (feed) {
    for (const Origin& o : feed->origins) {
      origins.push_back(wire::CreateWireOrigin(fbb, fbb.CreateString(o.gateway_id), fbb.CreateString(o.epoch)));
    }
    for (uint32_t i : feed->origin_index) PutVarint(i, &origin_index);
    std::vector<int> shard_of;
    for (const Origin& o : feed->origins) shard_of.push_back(RegionShardOf(o.gateway_id));
    ShardPositions prev{};
    for (size_t i = 0; i < feed->seqs.size(); ++i) {
      uint64_t& p = prev[shard_of[feed->origin_index[i]]];
      PutVarint(ZigZag(static_cast<int64_t>(feed->seqs[i] - p - 1)), &seqs);
      p = feed->seqs[i];
    }
  }

  auto bytes = [&fbb](const std::string& s) {
    return fbb.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  auto dev = fbb.CreateVectorOfStrings(devices.values());
  auto met = fbb.CreateVectorOfStrings(metrics.values());
  auto uni = fbb.CreateVectorOfStrings(units.values());
  auto k = bytes(kinds), l = bytes(lsns), di = bytes(device_index), mi = bytes(metric_index), ui = bytes(unit_index),
       ts = bytes(timestamps), q = bytes(quality), sc = bytes(scales), ma = bytes(mantissas), es = bytes(escapes.escaped);
  auto raw = fbb.CreateVector(escapes.raw);
  auto rec = fbb.CreateVector(records);
  auto ori = fbb.CreateVector(origins);
  auto oi = bytes(origin_index), sq = bytes(seqs);
  // Left out when there are none: a batch without corrections is byte for
  // byte what a sender of protocol 5 made.
  auto cor = corrections.empty() ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::TimeCorrectionFields>>>()
                                 : fbb.CreateVector(corrections);
  fbb.Finish(wire::CreateEntries(fbb, static_cast<uint32_t>(entries.size()), dev, met, uni, k, l, di, mi, ui, ts, q,
                                 sc, ma, es, raw, rec, ori, oi, sq, 0, 0, cor));
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

Status DecodeEntries(std::string_view bytes, uint64_t lsn_base, size_t max_entries, std::vector<ChangeEntry>* entries,
                     FeedColumns* feed) {
  entries->clear();
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  flatbuffers::Verifier verifier(data, bytes.size(), 16, 4 * max_entries + 1024);
  if (!verifier.VerifyBuffer<wire::Entries>(nullptr)) return Status::Corruption("batch entries: not a valid buffer");
  const wire::Entries* in = flatbuffers::GetRoot<wire::Entries>(data);
  size_t count = in->count();
  if (count > max_entries) {
    return Status::Corruption("batch entries: " + std::to_string(count) + " entries, limit " +
                              std::to_string(max_entries));
  }

  // Dictionaries are validated once; every reading then refers to them.
  auto load = [](const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v, const char* what,
                 bool key, std::vector<std::string>* out) -> Status {
    if (!v) return Status::Ok();
    for (const auto* s : *v) {
      std::string value = s->str();
      if (key) {
        ES_RETURN_IF_ERROR(ValidateKey(what, value));
      } else if (value.size() > 32 || !IsValidUtf8(value)) {
        return Status::Corruption(std::string("batch dictionary ") + what + ": invalid entry");
      }
      out->push_back(std::move(value));
    }
    return Status::Ok();
  };
  std::vector<std::string> devices, metrics, units;
  Status st = load(in->devices(), "deviceId", true, &devices);
  if (st.ok()) st = load(in->metrics(), "metric", true, &metrics);
  if (st.ok()) st = load(in->units(), "unit", false, &units);
  if (!st.ok()) return Status::Corruption("batch dictionary: " + st.message());

  std::vector<int> scales;
  ColumnReader scale_reader(in->metric_scale(), "metric_scale");
  for (size_t i = 0; i < metrics.size(); ++i) {
    ES_READ(scale_reader, s);
    if (s > static_cast<uint64_t>(kMaxScale)) return scale_reader.Error("scale out of range");
    scales.push_back(static_cast<int>(s));
  }

  ColumnReader kinds(in->kinds(), "kinds"), lsns(in->lsns(), "lsns"), device_index(in->device_index(), "device_index"),
      metric_index(in->metric_index(), "metric_index"), unit_index(in->unit_index(), "unit_index"),
      timestamps(in->timestamps(), "timestamps"), quality(in->quality(), "quality"),
      mantissas(in->mantissas(), "mantissas");
  const auto* records = in->device_records();
  size_t records_used = 0;
  const auto* corrections = in->corrections();
  size_t corrections_used = 0;
  EscapedValuesReader escapes(in->escaped(), in->raw_values());
  ES_RETURN_IF_ERROR(escapes.Start());

  // Each (device, metric)'s last mantissa: a flat table when the batch's
  // dictionaries are small (the usual case; a hashed node per series and
  // batch was an allocation per reading at a hub), else hashed.
  constexpr size_t kFlatSeries = size_t{1} << 16;
  const bool flat = devices.size() * metrics.size() <= kFlatSeries;
  std::vector<int64_t> flat_last(flat ? devices.size() * metrics.size() : 0);
  std::vector<bool> flat_seen(flat_last.size(), false);
  std::unordered_map<uint64_t, int64_t> last_of_series;
  std::vector<int64_t> last_of_metric(metrics.size(), 0);
  std::vector<bool> metric_seen(metrics.size(), false);
  uint64_t prev_lsn = lsn_base, reading_no = 0;
  int64_t prev_device = 0, prev_ts = 0;
  // The header's count is a claim; memory follows the bytes. Every entry
  // takes at least one byte of the kinds column, so a count beyond it is a
  // lie refused before anything is allocated, and the vector grows with the
  // entries actually decoded (a ChangeEntry is ~270 bytes: reserving a
  // claimed million of them took 270 MB for a 100-byte batch).
  if (count > (in->kinds() ? in->kinds()->size() : 0)) {
    return kinds.Error(std::to_string(count) + " entries claimed, the column holds fewer");
  }
  entries->reserve(std::min<size_t>(count, kReserveEntries));
  for (size_t i = 0; i < count; ++i) {
    ChangeEntry e;
    ES_RETURN_IF_ERROR(ReadKindAndLsn(&kinds, &lsns, &prev_lsn, &e));
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) {
      ES_RETURN_IF_ERROR(TakeCorrection(corrections, &corrections_used, &e));
      entries->push_back(std::move(e));
      continue;
    }
    ES_READ(device_index, dd);
    int64_t d = prev_device + UnZigZag(dd);
    if (d < 0 || static_cast<uint64_t>(d) >= devices.size()) return device_index.Error("index out of range");
    prev_device = d;
    if (e.kind != ChangeEntry::Kind::kReading) {
      ES_RETURN_IF_ERROR(TakeDeviceRecord(records, &records_used, devices[d], &e));
      entries->push_back(std::move(e));
      continue;
    }
    Reading& r = e.reading;
    r.device_id = devices[d];
    ES_READ(metric_index, m);
    if (m >= metrics.size()) return metric_index.Error("index out of range");
    r.metric = metrics[m];
    ES_READ(unit_index, u);
    if (u >= units.size()) return unit_index.Error("index out of range");
    r.unit = units[u];
    ES_READ(timestamps, dt);
    r.ts_ms = static_cast<int64_t>(static_cast<uint64_t>(prev_ts) + static_cast<uint64_t>(UnZigZag(dt)));
    prev_ts = r.ts_ms;
    ES_READ(quality, qv);
    if (qv > UINT32_MAX) return quality.Error("out of range");
    r.quality = static_cast<uint32_t>(qv);
    bool escaped;
    ES_RETURN_IF_ERROR(escapes.Take(reading_no, &r.value, &escaped));
    if (!escaped) {
      ES_READ(mantissas, zm);
      const size_t slot = static_cast<size_t>(d) * metrics.size() + m;
      const uint64_t key = SeriesKey(static_cast<uint32_t>(d), static_cast<uint32_t>(m));
      int64_t prediction = metric_seen[m] ? last_of_metric[m] : 0;
      if (flat) {
        if (flat_seen[slot]) prediction = flat_last[slot];
      } else {
        auto it = last_of_series.find(key);
        if (it != last_of_series.end()) prediction = it->second;
      }
      int64_t mantissa;
      if (__builtin_add_overflow(prediction, UnZigZag(zm), &mantissa) || mantissa >= kMaxMantissa ||
          mantissa <= -kMaxMantissa) {
        return mantissas.Error("mantissa out of range");
      }
      if (flat) {
        flat_last[slot] = mantissa;
        flat_seen[slot] = true;
      } else {
        last_of_series[key] = mantissa;
      }
      last_of_metric[m] = mantissa;
      metric_seen[m] = true;
      r.value = FromMantissa(mantissa, static_cast<int>(scales[m]));
    }
    ++reading_no;
    if (!std::isfinite(r.value)) return Status::Corruption("batch: reading value is not finite");
    entries->push_back(std::move(e));
  }
  ES_RETURN_IF_ERROR(escapes.Finish());
  if (!kinds.AtEnd() || !lsns.AtEnd() || !device_index.AtEnd() || !metric_index.AtEnd() || !mantissas.AtEnd() ||
      (records && records_used != records->size())) {
    return Status::Corruption("batch: columns longer than the entry count");
  }
  ES_RETURN_IF_ERROR(CheckCorrectionsUsed(corrections, corrections_used));

  if (feed) {
    feed->origins.clear();
    feed->origin_index.clear();
    feed->seqs.clear();
    if (in->origins()) {
      for (const auto* o : *in->origins()) {
        Origin origin{o->gateway_id() ? o->gateway_id()->str() : "", o->epoch() ? o->epoch()->str() : ""};
        if (origin.gateway_id.empty() || origin.epoch.empty()) return Status::Corruption("feed page: empty origin");
        feed->origins.push_back(std::move(origin));
      }
    }
    ColumnReader oi(in->origin_index(), "origin_index"), sq(in->seqs(), "seqs");
    std::vector<int> shard_of;
    for (const Origin& o : feed->origins) shard_of.push_back(RegionShardOf(o.gateway_id));
    ShardPositions prev{};
    for (size_t i = 0; i < count; ++i) {
      ES_READ(oi, o);
      if (o >= feed->origins.size()) return oi.Error("index out of range");
      feed->origin_index.push_back(static_cast<uint32_t>(o));
      ES_READ(sq, ds);
      uint64_t& prev_seq = prev[shard_of[o]];
      uint64_t seq = prev_seq + static_cast<uint64_t>(UnZigZag(ds)) + 1;
      if (seq <= prev_seq) return sq.Error("not increasing in its shard");
      feed->seqs.push_back(seq);
      prev_seq = seq;
    }
  }
  return Status::Ok();
}

}  // namespace edgesync

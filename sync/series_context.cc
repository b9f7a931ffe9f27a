#include "sync/series_context.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdlib>

#include "store/column_coding.h"

namespace edgesync {
namespace {

constexpr int64_t kMaxMantissa = int64_t{1} << 53;

int64_t Pow10(int n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// trunc(m / 10^from * 10^to), 0 when it reaches 2^53: the same number
// whatever scale the value was kept at, so a prediction does not depend on
// how a side happened to store it.
int64_t Rescale(int64_t m, int from, int to) {
  if (to == from) return m;
  if (to < from) return m / Pow10(from - to);
  int64_t out;
  if (__builtin_mul_overflow(m, Pow10(to - from), &out) || out >= kMaxMantissa || out <= -kMaxMantissa) return 0;
  return out;
}

// A hash node of the unordered maps, for the memory estimate.
constexpr size_t kNodeBytes = 32;

}  // namespace

uint32_t SeriesContext::Dictionary::Intern(const std::string& s, bool* added) {
  auto [it, fresh] = index_.try_emplace(s, static_cast<uint32_t>(values_.size()));
  if (fresh) {
    values_.push_back(&it->first);
    bytes_ += s.capacity() + sizeof(std::string) + kNodeBytes + sizeof(void*);
  }
  if (added) *added = fresh;
  return it->second;
}

void SeriesContext::Dictionary::Clear() {
  index_.clear();
  values_.clear();
  bytes_ = 0;
}

void SeriesContext::Reset() {
  lsn_ = 0;
  hash_ = 0;
  devices_.Clear();
  metrics_.Clear();
  units_.Clear();
  series_.clear();
  series_index_.clear();
  metric_last_.clear();
}

uint32_t SeriesContext::InternSeries(uint32_t device, uint32_t metric, uint32_t unit, bool* added) {
  auto [it, fresh] = series_index_.try_emplace(Key(device, metric, unit), static_cast<uint32_t>(series_.size()));
  *added = fresh;
  if (fresh) {
    Series s;
    s.device = device;
    s.metric = metric;
    s.unit = unit;
    series_.push_back(s);
    if (metric >= metric_last_.size()) metric_last_.resize(metric + 1);
  }
  return it->second;
}

bool SeriesContext::HasRoom(size_t more) const {
  size_t largest = std::max({series_.size(), devices_.size(), metrics_.size(), units_.size()});
  return largest <= kMaxContextSeries && more <= kMaxContextSeries - largest;
}

bool SeriesContext::AddSeries(uint32_t device, uint32_t metric, uint32_t unit) {
  bool added;
  InternSeries(device, metric, unit, &added);
  return added;
}

int64_t SeriesContext::PredictMantissa(uint32_t id, int scale) const {
  const Series& s = series_[id];
  if (s.scale >= 0) return Rescale(s.mantissa, s.scale, scale);
  const MetricLast& m = metric_last_[s.metric];
  return m.scale >= 0 ? Rescale(m.mantissa, m.scale, scale) : 0;
}

int64_t SeriesContext::PredictTs(uint32_t id, int64_t fallback) const {
  const Series& s = series_[id];
  if (!s.has_ts) return fallback;
  return static_cast<int64_t>(static_cast<uint64_t>(s.ts_ms) + static_cast<uint64_t>(s.interval_ms));
}

void SeriesContext::ObserveTs(uint32_t id, int64_t ts_ms) {
  Series& s = series_[id];
  s.interval_ms = s.has_ts ? static_cast<int64_t>(static_cast<uint64_t>(ts_ms) - static_cast<uint64_t>(s.ts_ms)) : 0;
  s.ts_ms = ts_ms;
  s.has_ts = true;
}

void SeriesContext::ObserveValue(uint32_t id, int64_t mantissa, int scale) {
  Series& s = series_[id];
  s.mantissa = mantissa;
  s.scale = scale;
  metric_last_[s.metric] = {scale, mantissa};
}

void SeriesContext::Advance(const std::vector<ChangeEntry>& entries) {
  for (const ChangeEntry& e : entries) {
    if (e.kind == ChangeEntry::Kind::kTimeCorrection) continue;  // no device (its id is "")
    uint32_t d = devices_.Intern(e.device_id());
    if (e.kind != ChangeEntry::Kind::kReading) continue;
    const Reading& r = e.reading;
    bool added;
    uint32_t id = InternSeries(d, metrics_.Intern(r.metric), units_.Intern(r.unit), &added);
    ObserveTs(id, r.ts_ms);
    int scale = MinimalScale(r.value);
    int64_t m;
    if (scale >= 0 && MantissaAt(r.value, scale, &m)) ObserveValue(id, m, scale);
  }
}

void SeriesContext::Seal(uint64_t last_lsn, std::string_view raw_entries) {
  hash_ = XXH3_64bits_withSeed(raw_entries.data(), raw_entries.size(), hash_ ^ last_lsn);
  lsn_ = last_lsn;
}

size_t SeriesContext::bytes() const {
  return sizeof(*this) + origin.gateway_id.capacity() + origin.epoch.capacity() + devices_.bytes() + metrics_.bytes() + units_.bytes() +
         series_.capacity() * sizeof(Series) + series_index_.size() * kNodeBytes +
         series_index_.bucket_count() * sizeof(void*) + metric_last_.capacity() * sizeof(MetricLast);
}

SeriesContext* SeriesContextCache::Find(const std::string& gateway_id) {
  auto it = index_.find(gateway_id);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->context;
}

std::string ContextKey(const std::string& gateway_id, bool live) {
  // A gateway id never holds a newline (store/types.h's key rule).
  return live ? gateway_id + "\nlive" : gateway_id;
}

SeriesContext* SeriesContextCache::Start(const Origin& origin, const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) {
    lru_.push_front(Entry{key, {}, 0});
    it = index_.emplace(key, lru_.begin()).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second);
    it->second->context.Reset();
  }
  it->second->context.origin = origin;
  return &it->second->context;
}

void SeriesContextCache::Erase(const std::string& gateway_id) {
  auto it = index_.find(gateway_id);
  if (it == index_.end()) return;
  bytes_ -= it->second->bytes;
  lru_.erase(it->second);
  index_.erase(it);
}

void SeriesContextCache::Trim(const std::string& gateway_id) {
  auto it = index_.find(gateway_id);
  if (it != index_.end()) {
    Entry& e = *it->second;
    bytes_ -= e.bytes;
    e.bytes = e.context.bytes() + e.origin.capacity() + 3 * kNodeBytes;
    bytes_ += e.bytes;
  }
  while (bytes_ > max_bytes_ && !lru_.empty()) {
    Entry& victim = lru_.back();
    bytes_ -= victim.bytes;
    index_.erase(victim.origin);
    lru_.pop_back();
    ++evictions_;
  }
}

}  // namespace edgesync

#include "agent/ingest/intake_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/files.h"
#include "store/column_coding.h"

namespace edgesync {
namespace {

constexpr size_t kHeaderBytes = 8;
// A body larger than this is damage, not a record: ingest refuses payloads
// over max_payload_bytes long before.
constexpr uint32_t kMaxBodyBytes = 64u << 20;
constexpr size_t kMaxField = 0xffff;

// Little endian, whatever the board.
template <typename T>
void StoreLe(char* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
}

template <typename T>
void PutLe(std::string* out, T v) {
  char b[sizeof(T)];
  StoreLe(b, v);
  out->append(b, sizeof(T));
}

void PutField(std::string* out, const std::string& s) {
  size_t n = std::min(s.size(), kMaxField);  // keys and units are validated far shorter
  PutLe(out, static_cast<uint16_t>(n));
  out->append(s.data(), n);
}

uint32_t Checksum(const char* data, size_t size) { return static_cast<uint32_t>(XXH3_64bits(data, size)); }


class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), end_(data + size) {}
  template <typename T>
  bool Le(T* v) {
    if (left() < sizeof(T)) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) x |= static_cast<uint64_t>(static_cast<unsigned char>(p_[i])) << (8 * i);
    *v = static_cast<T>(x);
    p_ += sizeof(T);
    return true;
  }
  bool Field(std::string* s) {
    uint16_t n = 0;
    if (!Le(&n) || left() < n) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  bool done() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

constexpr char kMagicNoIds[8] = {'E', 'S', 'J', '2', '\r', '\n', '\x1a', '\n'};
constexpr char kMagic[8] = {'E', 'S', 'J', '3', '\r', '\n', '\x1a', '\n'};
constexpr uint8_t kRawScale = kMaxDecimalScale + 1;
// A compact reading takes at least 5 bytes (series, ts, scale, mantissa,
// quality): a count beyond that is damage.
constexpr uint64_t kMinCompactReading = 5;

std::string SeriesKey(const Reading& r) {
  std::string key;
  key.reserve(r.device_id.size() + r.metric.size() + r.unit.size() + 2);
  key.append(r.device_id).push_back('\0');
  key.append(r.metric).push_back('\0');
  key.append(r.unit);
  return key;
}

void PutString(std::string* out, const std::string& s) {
  size_t n = std::min(s.size(), kMaxField);
  PutVarint(n, out);
  out->append(s.data(), n);
}

bool GetString(VarintReader* in, std::string* s) {
  uint64_t n = 0;
  const uint8_t* p = nullptr;
  if (!in->Next(&n) || n > kMaxField || !in->Bytes(static_cast<size_t>(n), &p)) return false;
  s->assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  return true;
}

struct SeriesFields {
  std::string device_id, metric, unit;
};

// One compact body, against the segment's state so far; the state moves on
// only if the whole body is well formed.
bool DecodeCompactBody(const char* data, size_t size, IntakeJournal::SegmentState* state,
                       std::vector<SeriesFields>* dictionary, IntakeRecord* record) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  VarintReader in(p, p + size);
  uint64_t dseq = 0, count = 0;
  if (!in.Next(&dseq) || !in.Next(&count)) return false;
  int packet_id = state->prev_packet_id;
  record->id = IntakeMessageId{};
  if (state->with_ids) {
    const uint64_t head = count;
    count = head >> 2;
    if (head & 1) {
      uint64_t zid = 0;
      const uint8_t* fp = nullptr;
      if (!in.Next(&zid) || zid > 2 * 65535 || !in.Bytes(1, &fp)) return false;
      const int64_t id = static_cast<int64_t>(packet_id) + UnZigZag(zid);
      if (id < 1 || id > 65535) return false;
      packet_id = static_cast<int>(id);
      record->id = IntakeMessageId{packet_id, (head & 2) != 0, *fp};
    } else if (head & 2) {
      return false;
    }
  }
  if (count > in.left() / kMinCompactReading) return false;
  const size_t known = dictionary->size();
  int64_t ts = state->prev_ts;
  record->seq = state->prev_seq + dseq;
  record->readings.clear();
  record->readings.resize(static_cast<size_t>(count));
  for (Reading& r : record->readings) {
    uint64_t ref = 0, dts = 0, q = 0;
    if (!in.Next(&ref)) return false;
    if (ref == 0) {
      SeriesFields f;
      if (!GetString(&in, &f.device_id) || !GetString(&in, &f.metric) || !GetString(&in, &f.unit)) return false;
      dictionary->push_back(std::move(f));
      ref = dictionary->size();
    }
    if (ref > dictionary->size()) return false;
    const SeriesFields& f = (*dictionary)[static_cast<size_t>(ref - 1)];
    r.device_id = f.device_id;
    r.metric = f.metric;
    r.unit = f.unit;
    if (!in.Next(&dts)) return false;
    ts = static_cast<int64_t>(static_cast<uint64_t>(ts) + static_cast<uint64_t>(UnZigZag(dts)));
    r.ts_ms = ts;
    const uint8_t* scale = nullptr;
    if (!in.Bytes(1, &scale) || *scale > kRawScale) return false;
    if (*scale == kRawScale) {
      const uint8_t* b = nullptr;
      if (!in.Bytes(8, &b)) return false;
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(b[i]) << (8 * i);
      std::memcpy(&r.value, &bits, sizeof bits);
    } else {
      uint64_t zm = 0;
      if (!in.Next(&zm)) return false;
      int64_t m = UnZigZag(zm);
      if (m >= (int64_t{1} << 53) || m <= -(int64_t{1} << 53)) return false;
      r.value = FromMantissa(m, *scale);
    }
    if (!in.Next(&q) || q > UINT32_MAX) return false;
    r.quality = static_cast<uint32_t>(q);
  }
  if (!in.AtEnd()) {
    dictionary->resize(known);
    return false;
  }
  state->prev_seq = record->seq;
  state->prev_ts = ts;
  state->prev_packet_id = packet_id;
  return true;
}

// The records of a segment and the state after the last good one; returns
// the length of the good prefix.
size_t ParseSegmentState(const std::string& data, std::vector<IntakeRecord>* records,
                         IntakeJournal::SegmentState* state) {
  *state = IntakeJournal::SegmentState{};
  size_t pos = 0;
  const bool ids = data.size() >= sizeof kMagic && std::memcmp(data.data(), kMagic, sizeof kMagic) == 0;
  if (ids || (data.size() >= sizeof kMagicNoIds && std::memcmp(data.data(), kMagicNoIds, sizeof kMagicNoIds) == 0)) {
    pos = sizeof kMagic;
    state->with_ids = ids;
    std::vector<SeriesFields> dictionary;
    while (pos < data.size()) {
      const auto* p = reinterpret_cast<const uint8_t*>(data.data() + pos);
      VarintReader head(p, reinterpret_cast<const uint8_t*>(data.data() + data.size()));
      uint64_t len = 0;
      const uint8_t* sum_bytes = nullptr;
      if (!head.Next(&len) || len > kMaxBodyBytes || !head.Bytes(4, &sum_bytes) || head.left() < len) break;
      uint32_t sum = 0;
      for (int i = 0; i < 4; ++i) sum |= static_cast<uint32_t>(sum_bytes[i]) << (8 * i);
      const size_t body_at = data.size() - head.left();
      const char* body = data.data() + body_at;
      IntakeRecord record;
      const size_t known = dictionary.size();
      if (Checksum(body, len) != sum || !DecodeCompactBody(body, len, state, &dictionary, &record)) {
        dictionary.resize(known);
        break;
      }
      pos = body_at + len;
      records->push_back(std::move(record));
    }
    for (size_t i = 0; i < dictionary.size(); ++i) {
      Reading r{dictionary[i].device_id, dictionary[i].metric, 0, 0, dictionary[i].unit, 0};
      state->series.emplace(SeriesKey(r), i + 1);
    }
    return pos;
  }
  if (!data.empty()) state->compact = false;
  while (data.size() - pos >= kHeaderBytes) {
    Reader header(data.data() + pos, kHeaderBytes);
    uint32_t len = 0, sum = 0;
    header.Le(&len);
    header.Le(&sum);
    if (len > kMaxBodyBytes || data.size() - pos - kHeaderBytes < len) break;
    const char* body = data.data() + pos + kHeaderBytes;
    IntakeRecord record;
    if (Checksum(body, len) != sum || !IntakeJournal::DecodeBody(body, len, &record)) break;
    pos += kHeaderBytes + len;
    records->push_back(std::move(record));
  }
  return pos;
}

}  // namespace

void IntakeJournal::EncodeBody(uint64_t seq, const std::vector<Reading>& readings, std::string* out) {
  PutLe(out, seq);
  PutLe(out, static_cast<uint32_t>(readings.size()));
  for (const Reading& r : readings) {
    PutField(out, r.device_id);
    PutField(out, r.metric);
    PutField(out, r.unit);
    PutLe(out, static_cast<uint64_t>(r.ts_ms));
    uint64_t bits = 0;
    std::memcpy(&bits, &r.value, sizeof bits);
    PutLe(out, bits);
    PutLe(out, r.quality);
  }
}

bool IntakeJournal::DecodeBody(const char* data, size_t size, IntakeRecord* record) {
  Reader in(data, size);
  uint32_t count = 0;
  if (!in.Le(&record->seq) || !in.Le(&count)) return false;
  // Each reading takes at least 26 bytes: a count beyond that is damage.
  if (count > in.left() / 26) return false;
  record->readings.clear();
  record->readings.resize(count);
  for (Reading& r : record->readings) {
    uint64_t ts = 0, bits = 0;
    if (!in.Field(&r.device_id) || !in.Field(&r.metric) || !in.Field(&r.unit) || !in.Le(&ts) || !in.Le(&bits) ||
        !in.Le(&r.quality)) {
      return false;
    }
    r.ts_ms = static_cast<int64_t>(ts);
    std::memcpy(&r.value, &bits, sizeof bits);
  }
  return in.done();
}

Status IntakeJournal::Open(const IntakeJournalOptions& options, uint64_t committed_seq,
                           std::unique_ptr<IntakeJournal>* journal, IntakeRecovery* recovery) {
  std::unique_ptr<IntakeJournal> j(new IntakeJournal());
  j->options_ = options;
  *recovery = IntakeRecovery{};
  ES_RETURN_IF_ERROR(MakePrivateDir(options.dir));
  std::string data;
  bool created = false;
  SegmentState states[2];
  std::vector<std::pair<uint64_t, IntakeMessageId>> taken;
  for (int k = 0; k < 2; ++k) {
    j->paths_[k] = options.dir + (k == 0 ? "/intake-a.journal" : "/intake-b.journal");
    created = created || !FileExists(j->paths_[k]);
    j->fds_[k] = OpenPrivateFile(j->paths_[k], O_RDWR);
    if (j->fds_[k] < 0) return ErrnoStatus("opening", j->paths_[k]);
    ES_RETURN_IF_ERROR(ReadFile(j->paths_[k], &data));
    std::vector<IntakeRecord> records;
    SegmentState state;
    size_t pos = ParseSegmentState(data, &records, &state);
    if (state.compact && pos < sizeof kMagic) pos = 0;  // a torn magic: the segment starts over
    for (IntakeRecord& record : records) {
      j->last_seqs_[k] = std::max(j->last_seqs_[k], record.seq);
      if (record.id.packet_id != 0) taken.emplace_back(record.seq, record.id);
      if (record.seq > committed_seq) recovery->pending.push_back(std::move(record));
    }
    states[k] = std::move(state);
    if (pos < data.size()) {
      recovery->cut_bytes += static_cast<int64_t>(data.size() - pos);
      if (::ftruncate(j->fds_[k], static_cast<off_t>(pos)) != 0) return ErrnoStatus("truncating", j->paths_[k]);
    }
    j->sizes_[k] = static_cast<int64_t>(pos);
  }
  // A new segment's name is durable only once its directory is synced: a
  // power cut before that takes the file, and every record fdatasync'ed
  // into it, back (tests/integration/power_cut_test.cc lost acknowledged
  // readings so on a first start).
  if (created && options.sync) ES_RETURN_IF_ERROR(SyncPath(options.dir));
  std::sort(recovery->pending.begin(), recovery->pending.end(),
            [](const IntakeRecord& a, const IntakeRecord& b) { return a.seq < b.seq; });
  // A record may sit in both segments only if a turn was cut short; keep one.
  recovery->pending.erase(std::unique(recovery->pending.begin(), recovery->pending.end(),
                                      [](const IntakeRecord& a, const IntakeRecord& b) { return a.seq == b.seq; }),
                          recovery->pending.end());
  std::stable_sort(taken.begin(), taken.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < taken.size(); ++i) {
    if (i > 0 && taken[i].first == taken[i - 1].first) continue;
    recovery->taken.push_back(taken[i].second);
  }
  recovery->last_seq = std::max(j->last_seqs_[0], j->last_seqs_[1]);
  // Go on writing where the newest records are.
  j->active_ = j->last_seqs_[1] > j->last_seqs_[0] ? 1 : 0;
  j->state_ = std::move(states[j->active_]);
  if (j->sizes_[j->active_] == 0) j->state_ = SegmentState{};
  *journal = std::move(j);
  return Status::Ok();
}

IntakeJournal::~IntakeJournal() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

Status IntakeJournal::Turn(uint64_t committed_seq) {
  const int other = 1 - active_;
  if (sizes_[active_] < options_.segment_bytes || last_seqs_[other] > committed_seq) return Status::Ok();
  if (sizes_[other] > 0) {
    if (::ftruncate(fds_[other], 0) != 0) return ErrnoStatus("truncating", paths_[other]);
    sizes_[other] = 0;
  }
  last_seqs_[other] = 0;
  active_ = other;
  state_ = SegmentState{};  // a new segment: compact, its own dictionary
  return Status::Ok();
}

size_t IntakeJournal::ParseSegment(const std::string& data, std::vector<IntakeRecord>* records) {
  SegmentState state;
  return ParseSegmentState(data, records, &state);
}

void IntakeJournal::EncodeCompact(uint64_t seq, const std::vector<Reading>& readings, const IntakeMessageId& id,
                                  std::vector<std::string>* added) {
  std::string& out = buffer_;
  PutVarint(seq - state_.prev_seq, &out);
  if (state_.with_ids) {
    const bool has_id = id.packet_id >= 1 && id.packet_id <= 65535;
    PutVarint((static_cast<uint64_t>(readings.size()) << 2) | (has_id && id.duplicate ? 2u : 0u) | (has_id ? 1u : 0u),
              &out);
    if (has_id) {
      PutVarint(ZigZag(static_cast<int64_t>(id.packet_id) - state_.prev_packet_id), &out);
      out.push_back(static_cast<char>(id.fingerprint));
    }
  } else {
    PutVarint(readings.size(), &out);
  }
  int64_t ts = state_.prev_ts;
  const uint64_t known = state_.series.size();
  for (const Reading& r : readings) {
    std::string key = SeriesKey(r);
    auto it = state_.series.find(key);
    uint64_t ref = 0;
    if (it != state_.series.end()) {
      ref = it->second;
    } else {
      for (size_t i = 0; i < added->size(); ++i) {
        if ((*added)[i] == key) ref = known + i + 1;
      }
    }
    PutVarint(ref, &out);
    if (ref == 0) {
      PutString(&out, r.device_id);
      PutString(&out, r.metric);
      PutString(&out, r.unit);
      added->push_back(std::move(key));
    }
    PutVarint(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(r.ts_ms) - static_cast<uint64_t>(ts))), &out);
    ts = r.ts_ms;
    int scale = MinimalScale(r.value);
    int64_t m = 0;
    if (scale >= 0 && MantissaAt(r.value, scale, &m)) {
      out.push_back(static_cast<char>(scale));
      PutVarint(ZigZag(m), &out);
    } else {
      out.push_back(static_cast<char>(kRawScale));
      uint64_t bits = 0;
      std::memcpy(&bits, &r.value, sizeof bits);
      PutLe(&out, bits);
    }
    PutVarint(r.quality, &out);
  }
}

Status IntakeJournal::Append(uint64_t seq, const std::vector<Reading>& readings, uint64_t committed_seq,
                             const IntakeMessageId& id) {
  ES_RETURN_IF_ERROR(Turn(committed_seq));
  const int k = active_;
  std::vector<std::string> added;
  if (state_.compact) {
    // Header: the magic when the segment starts, then varint length and
    // checksum, written once the body's length is known.
    std::string body_holder;
    buffer_.clear();
    EncodeCompact(seq, readings, id, &added);
    body_holder.swap(buffer_);
    if (body_holder.size() > kMaxBodyBytes) return Status::InvalidArgument("intake record too large");
    if (sizes_[k] == 0) buffer_.assign(state_.with_ids ? kMagic : kMagicNoIds, sizeof kMagic);
    PutVarint(body_holder.size(), &buffer_);
    PutLe(&buffer_, Checksum(body_holder.data(), body_holder.size()));
    buffer_ += body_holder;
  } else {
    buffer_.assign(kHeaderBytes, '\0');
    EncodeBody(seq, readings, &buffer_);
    const size_t len = buffer_.size() - kHeaderBytes;
    if (len > kMaxBodyBytes) return Status::InvalidArgument("intake record too large");
    StoreLe(&buffer_[0], static_cast<uint32_t>(len));
    StoreLe(&buffer_[4], Checksum(buffer_.data() + kHeaderBytes, len));
  }
  Status written = WriteAllAt(fds_[k], paths_[k], buffer_, sizes_[k]);
  if (!written.ok()) {
    // A partial record would end the segment at the next open and hide
    // every record after it: take it back (the dictionary never saw it).
    while (::ftruncate(fds_[k], static_cast<off_t>(sizes_[k])) != 0 && errno == EINTR) {
    }
    return written;
  }
  if (options_.sync && ::fdatasync(fds_[k]) != 0) return ErrnoStatus("syncing", paths_[k]);
  sizes_[k] += static_cast<int64_t>(buffer_.size());
  last_seqs_[k] = std::max(last_seqs_[k], seq);
  if (state_.compact) {
    for (std::string& key : added) {
      const uint64_t index = state_.series.size() + 1;
      state_.series.emplace(std::move(key), index);
    }
    state_.prev_seq = seq;
    if (!readings.empty()) state_.prev_ts = readings.back().ts_ms;
    if (state_.with_ids && id.packet_id >= 1 && id.packet_id <= 65535) state_.prev_packet_id = id.packet_id;
  }
  return Status::Ok();
}

Status IntakeJournal::Clear() {
  for (int k = 0; k < 2; ++k) {
    if (sizes_[k] > 0 && ::ftruncate(fds_[k], 0) != 0) return ErrnoStatus("truncating", paths_[k]);
    sizes_[k] = 0;
    last_seqs_[k] = 0;
  }
  active_ = 0;
  state_ = SegmentState{};
  return Status::Ok();
}

}  // namespace edgesync

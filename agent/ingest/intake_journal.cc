#include "agent/ingest/intake_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "platform/files.h"

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
  for (int k = 0; k < 2; ++k) {
    j->paths_[k] = options.dir + (k == 0 ? "/intake-a.journal" : "/intake-b.journal");
    created = created || !FileExists(j->paths_[k]);
    j->fds_[k] = OpenPrivateFile(j->paths_[k], O_RDWR);
    if (j->fds_[k] < 0) return ErrnoStatus("opening", j->paths_[k]);
    ES_RETURN_IF_ERROR(ReadFile(j->paths_[k], &data));
    size_t pos = 0;
    while (data.size() - pos >= kHeaderBytes) {
      Reader header(data.data() + pos, kHeaderBytes);
      uint32_t len = 0, sum = 0;
      header.Le(&len);
      header.Le(&sum);
      if (len > kMaxBodyBytes || data.size() - pos - kHeaderBytes < len) break;
      const char* body = data.data() + pos + kHeaderBytes;
      IntakeRecord record;
      if (Checksum(body, len) != sum || !DecodeBody(body, len, &record)) break;
      pos += kHeaderBytes + len;
      j->last_seqs_[k] = std::max(j->last_seqs_[k], record.seq);
      if (record.seq > committed_seq) recovery->pending.push_back(std::move(record));
    }
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
  recovery->last_seq = std::max(j->last_seqs_[0], j->last_seqs_[1]);
  // Go on writing where the newest records are.
  j->active_ = j->last_seqs_[1] > j->last_seqs_[0] ? 1 : 0;
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
  return Status::Ok();
}

Status IntakeJournal::Append(uint64_t seq, const std::vector<Reading>& readings, uint64_t committed_seq) {
  ES_RETURN_IF_ERROR(Turn(committed_seq));
  buffer_.assign(kHeaderBytes, '\0');
  EncodeBody(seq, readings, &buffer_);
  const size_t len = buffer_.size() - kHeaderBytes;
  if (len > kMaxBodyBytes) return Status::InvalidArgument("intake record too large");
  StoreLe(&buffer_[0], static_cast<uint32_t>(len));
  StoreLe(&buffer_[4], Checksum(buffer_.data() + kHeaderBytes, len));
  const int k = active_;
  Status written = WriteAllAt(fds_[k], paths_[k], buffer_, sizes_[k]);
  if (!written.ok()) {
    // A partial record would end the segment at the next open and hide
    // every record after it: take it back.
    while (::ftruncate(fds_[k], static_cast<off_t>(sizes_[k])) != 0 && errno == EINTR) {
    }
    return written;
  }
  if (options_.sync && ::fdatasync(fds_[k]) != 0) return ErrnoStatus("syncing", paths_[k]);
  sizes_[k] += static_cast<int64_t>(buffer_.size());
  last_seqs_[k] = std::max(last_seqs_[k], seq);
  return Status::Ok();
}

Status IntakeJournal::Clear() {
  for (int k = 0; k < 2; ++k) {
    if (sizes_[k] > 0 && ::ftruncate(fds_[k], 0) != 0) return ErrnoStatus("truncating", paths_[k]);
    sizes_[k] = 0;
    last_seqs_[k] = 0;
  }
  active_ = 0;
  return Status::Ok();
}

}  // namespace edgesync

// sync/series_context.h: the series context of one origin's batch stream,
// which lets a batch refer to what the region already holds (protocol 3,
// sync/PROTOCOL.md "Series context").
//
// A batch encoded on its own carries the dictionaries of every device,
// metric and unit it uses and predicts each value from the previous one of
// the same series in the batch: with 8,000 series and ~210-reading batches
// (the reference workload online) a series appears about once per batch, so
// ~660 bytes of a batch were its own dictionaries and most values fell back
// to another device's (4.76 B/reading on the link). A context keeps, across
// batches, the dictionaries (each string interned once), the series (device,
// metric, unit) -> id, and per series its last value and timestamp, so a
// batch sends only new strings, series ids in their order of first use and
// residues against the series' own history.
//
// Contract: the gateway (encoder) and the hub (decoder) advance a context by
// the same function of each batch, in the order the batches were sent: a
// self-contained batch starts a context (Reset, then Advance with its
// entries); a context batch (sync/columns.h EncodeEntriesWithContext) moves
// it while it is coded. Seal then folds the batch's raw `Entries` bytes into
// a chained 64-bit hash, and the context is named by (last LSN, hash): a
// batch names the context it was encoded against, and a hub decodes it only
// against exactly that one, so a lost, reordered or foreign batch makes a
// mismatch (answered NoContext), never wrong readings. Only integers move
// predictions (no floating point), so a gateway and a hub of different
// architectures agree bit for bit.
//
// Memory: per series 48 bytes plus ~32 bytes of hash index; 8,000 series
// 0.82 MB with their strings, measured (bytes() estimates it for the hub's
// bound; series_context_test.cc).
//
// Thread safety: a SeriesContext and a SeriesContextCache are values; the
// caller serialises access (one uplink worker; one hub decode stage).
#ifndef EDGESYNC_SYNC_SERIES_CONTEXT_H_
#define EDGESYNC_SYNC_SERIES_CONTEXT_H_

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/types.h"

namespace edgesync {

// Series, and strings per dictionary, per context at most: a sender cannot
// grow a hub's context without bound one batch at a time (a decoder refuses
// a batch that would pass it); an encoder starts afresh before reaching it.
// Also keeps the three indexes of a series key in disjoint bits.
constexpr size_t kMaxContextSeries = size_t{1} << 20;

class SeriesContext {
 public:
  struct Series {
    uint32_t device = 0;
    uint32_t metric = 0;
    uint32_t unit = 0;
    int32_t scale = -1;       // of `mantissa`; -1 = no decimal value seen yet
    int64_t mantissa = 0;
    int64_t ts_ms = 0;
    int64_t interval_ms = 0;  // between its last two timestamps (0 until it has two)
    bool has_ts = false;
  };

  // Names the context: the last LSN of the batch it was advanced by (0 =
  // empty) and the chained hash of the batches since its start.
  // The origin whose batches moved it (a hub's; a batch that refers to the
  // context need not name it again). Reset leaves it.
  Origin origin;

  uint64_t lsn() const { return lsn_; }
  uint64_t hash() const { return hash_; }
  bool empty() const { return lsn_ == 0; }
  void Reset();

  // Each dictionary grows in order of first use.
  class Dictionary {
   public:
    uint32_t Intern(const std::string& s, bool* added = nullptr);
    const std::string& operator[](size_t i) const { return *values_[i]; }
    size_t size() const { return values_.size(); }
    size_t bytes() const { return bytes_; }
    void Clear();

   private:
    std::unordered_map<std::string, uint32_t> index_;  // owns the strings
    std::vector<const std::string*> values_;           // into index_'s nodes (stable)
    size_t bytes_ = 0;
  };
  Dictionary& devices() { return devices_; }
  Dictionary& metrics() { return metrics_; }
  Dictionary& units() { return units_; }
  const Dictionary& devices() const { return devices_; }
  const Dictionary& metrics() const { return metrics_; }
  const Dictionary& units() const { return units_; }

  size_t series_count() const { return series_.size(); }
  // Room for `more` series and strings of each kind (kMaxContextSeries).
  bool HasRoom(size_t more) const;
  const Series& series(uint32_t id) const { return series_[id]; }
  // The id of (device, metric, unit) (indexes into the dictionaries); a new
  // one is appended (*added set).
  uint32_t InternSeries(uint32_t device, uint32_t metric, uint32_t unit, bool* added);
  // Appends a series the caller checked is new (a decoder reading a batch's
  // definitions); false if it already exists.
  bool AddSeries(uint32_t device, uint32_t metric, uint32_t unit);

  // The prediction of a series' next mantissa at `scale`: its last decimal
  // value, else the last of its metric, else 0, as trunc(value * 10^scale)
  // (0 if that is 2^53 or more). Integer arithmetic only.
  int64_t PredictMantissa(uint32_t id, int scale) const;
  // The prediction of a series' next timestamp: last + last interval; for a
  // series without one, `fallback` (the batch's previous reading's).
  int64_t PredictTs(uint32_t id, int64_t fallback) const;
  // Records a reading of series `id`: its timestamp, and its value when it
  // is a decimal (mantissa at scale); a raw value leaves the prediction.
  void ObserveTs(uint32_t id, int64_t ts_ms);
  void ObserveValue(uint32_t id, int64_t mantissa, int scale);

  // Advances by the entries of a self-contained (ColumnsV1) batch, as their
  // decoder sees them: every entry's device id (a time correction has
  // none and is skipped), every reading's series,
  // timestamp and decimal value, in entry order.
  void Advance(const std::vector<ChangeEntry>& entries);
  // After a batch was coded against (or advanced into) this context: names
  // the context by the batch's last LSN and the chained hash of its raw
  // `Entries` bytes.
  void Seal(uint64_t last_lsn, std::string_view raw_entries);

  // An estimate of the memory held (the hub's bound counts it).
  size_t bytes() const;

 private:
  struct MetricLast {
    int32_t scale = -1;
    int64_t mantissa = 0;
  };
  static uint64_t Key(uint32_t device, uint32_t metric, uint32_t unit) {
    return (uint64_t{device} << 40) ^ (uint64_t{metric} << 20) ^ unit;
  }

  uint64_t lsn_ = 0;
  uint64_t hash_ = 0;
  Dictionary devices_, metrics_, units_;
  std::vector<Series> series_;
  std::unordered_map<uint64_t, uint32_t> series_index_;
  std::vector<MetricLast> metric_last_;  // by metric index
};

// The hub's contexts, one per gateway and lane (the authenticated sender: one origin
// at a time, the one of its latest self-contained batch), bounded by bytes:
// the least recently used are evicted first (hub.context_max_bytes).
// Evicting is safe: the gateway's next context batch is answered NoContext
// and it resends self-contained.
// Where a gateway's context is kept: its id, or for its live lane's
// batches (protocol 7, Batch.live) a second context beside the backlog's.
std::string ContextKey(const std::string& gateway_id, bool live);

class SeriesContextCache {
 public:
  explicit SeriesContextCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // The gateway's context, made the most recently used; nullptr if none.
  SeriesContext* Find(const std::string& gateway_id);
  // The context of origin's gateway (under `key`, ContextKey), emptied and
  // given to `origin` (a self-contained batch starts one).
  SeriesContext* Start(const Origin& origin, const std::string& key);
  void Erase(const std::string& gateway_id);
  // After a context changed: re-counts it and evicts the least recently
  // used until within the bound (this one too, if it alone exceeds it).
  void Trim(const std::string& gateway_id);

  size_t bytes() const { return bytes_; }
  size_t size() const { return index_.size(); }
  uint64_t evictions() const { return evictions_; }
  size_t max_bytes() const { return max_bytes_; }

 private:
  struct Entry {
    std::string origin;
    SeriesContext context;
    size_t bytes = 0;
  };
  using List = std::list<Entry>;  // front = most recently used
  size_t max_bytes_;
  size_t bytes_ = 0;
  uint64_t evictions_ = 0;
  List lru_;
  std::unordered_map<std::string, List::iterator> index_;
};

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_SERIES_CONTEXT_H_

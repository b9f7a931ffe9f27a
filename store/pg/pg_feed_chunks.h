// store/pg/pg_feed_chunks.h: the PostgreSQL region feed's chunk rows.
//
// Schema 4 keeps the feed as es_feed_chunks, one row per origin per apply
// (per run of an old per-entry feed, after the upgrade): the shard, the
// shard number of its last entry and its count (its entries are numbered
// last_seq - n + 1 .. last_seq in their shard), its place in apply order
// (seq, from es_feed_seq), the origin, its origin LSN range, when it was
// applied, and the entries as one remote chunk block
// (store/remote_chunk_codec.h), whose series ids are those of es_series
// (device_id, metric, unit; a device record's metric and unit are "").
// The row per entry it replaces cost the server three unique index entries
// and 244 bytes on disk per reading (docs/REGION.md has the figures).
//
// PgFeedDictionary caches what never changes once committed: series ids
// and origin names by id, so a busy hub sends no dictionary statements at
// all. New series are inserted in a statement of their own, outside the
// apply's transaction, so an id is cached only once it is committed (a
// series row nobody uses is harmless, a cached id whose row rolled back
// would not be).
//
// Thread safety: none; the store's connection mutex serialises use.
#ifndef EDGESYNC_STORE_PG_PG_FEED_CHUNKS_H_
#define EDGESYNC_STORE_PG_PG_FEED_CHUNKS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "platform/status.h"
#include "store/hub_store.h"
#include "store/pg/pg_conn.h"
#include "store/remote_chunk_codec.h"
#include "store/store.h"
#include "store/types.h"

namespace edgesync {

class PgFeedDictionary {
 public:
  // Gives every series of `entries` an id, inserting the new ones in the
  // connection's current transaction or, outside one, in their own
  // statement (a caller whose transaction rolls back must Forget()).
  // ids: each entry's series id, in the entries' order (each series looked
  // up once per entry, with no key built: a busy hub interns every entry it
  // applies).
  // runs (optional): the entries as runs of one sender's batch each, named
  // by its gateway id. A run is first matched against the series of that
  // sender's last batch, in order (a gateway sends the same series batch
  // after batch): a comparison of bytes held together instead of a lookup
  // in a map of every series of the region per entry, which cost a busy
  // PostgreSQL hub ~8% of its CPU in cache misses. Only a hint: a mismatch
  // looks the series up as without it.
  struct Run {
    const std::string* sender;
    size_t begin, end;  // [begin, end) of entries
  };
  Status Intern(PgConn* conn, const std::vector<const ChangeEntry*>& entries, std::vector<int64_t>* ids,
                const std::vector<Run>* runs = nullptr);
  // The entry as a chunk holds it, its series' id given (from Intern).
  static void ToChunkEntry(const ChangeEntry& e, int64_t series_id, RemoteChunkEntry* c);

  // Loads the series and origins these chunks name that are not cached yet
  // (in the caller's snapshot: a committed chunk's series and origin are).
  Status Resolve(PgConn* conn, const std::vector<int64_t>& series_ids, const std::vector<int64_t>& origin_ids);
  // Corruption for an id Resolve did not find.
  Status FromChunkEntry(const RemoteChunkEntry& c, ChangeEntry* e) const;
  Status OriginOf(int64_t origin_id, Origin* origin) const;

  void Forget();

 private:
  struct Series {
    std::string device_id, metric, unit;
  };
  // (device, metric, unit) of a series, viewed: the dictionary's keys view
  // the strings of series_'s nodes (stable until Forget), a lookup views
  // the entry's own.
  struct SeriesKey {
    std::string_view device, metric, unit;
    bool operator==(const SeriesKey& o) const { return device == o.device && metric == o.metric && unit == o.unit; }
  };
  struct SeriesKeyHash {
    size_t operator()(const SeriesKey& k) const;
  };
  static SeriesKey KeyOf(const ChangeEntry& e);
  // Caches a committed series (a known id is kept as it is).
  void Add(int64_t id, Series s);
  // A sender's last batch's series: each key as (u16 length, bytes) x 3, in
  // entry order, and their ids.
  struct Layout {
    std::string keys;
    std::vector<int64_t> ids;
  };
  static constexpr size_t kMaxLayouts = 200000;  // senders remembered; all are forgotten past it
  static void AppendKeyPart(std::string_view part, std::string* out);
  static bool MatchKeyPart(std::string_view part, const std::string& keys, size_t* at);
  std::unordered_map<SeriesKey, int64_t, SeriesKeyHash> series_ids_;
  std::unordered_map<std::string, Layout> layouts_;  // by sender
  std::unordered_map<int64_t, Series> series_;
  std::unordered_map<int64_t, Origin> origins_;
};

// One chunk row to write. seq 0 = drawn from es_feed_seq by the row's
// DEFAULT, in the order the rows are given.
struct PgChunkRow {
  int shard = 0;
  uint64_t last_seq = 0;
  int64_t seq = 0;
  int64_t origin_id = 0;
  int64_t applied_ms = 0;
  std::vector<RemoteChunkEntry> entries;  // increasing olsn, at most kMaxRemoteChunkEntries
};

// COPYs the rows into es_feed_chunks, each encoded as one block.
Status WriteChunkRows(PgConn* conn, const std::vector<PgChunkRow>& rows);

// A bytea column's text form (\x + hex) as bytes.
Status DecodeByteaHex(std::string_view text, std::string* bytes);

// A page (store/hub_store.h ReadFeed) from the chunks of the given shards
// ({s,...} and their positions {p,...}) after their positions:
// each shard's chunks that can hold its next max_entries entries (its
// numbers run on without holes, so those ending within max_entries of the
// position and the one after), merged in apply order and cut where
// max_entries is reached, in one statement.
// Holes in a shard's numbers (rows of a schema-2 feed kept theirs) end a
// page early rather than out of apply order. In the caller's snapshot.
Status ReadChunkPage(PgConn* conn, PgFeedDictionary* dict, const ShardPositions& after, size_t max_entries,
                     const std::string& shards, const std::string& afters, FeedRead* page);

// Schema 4's data step: the rows of the per-entry es_region_feed become
// chunks (runs of one origin's entries applied together: consecutive seq
// and shard numbers, one applied time), each keeping its shard numbers and
// its first row's seq, so every reader's position and the feed's order
// stay what they were; then the old table goes. Inside the caller's
// transaction; `dict` is forgotten if it fails.
Status MigrateFeedToChunks(PgConn* conn, PgFeedDictionary* dict);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_PG_PG_FEED_CHUNKS_H_

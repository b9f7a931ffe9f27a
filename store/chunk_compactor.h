// store/chunk_compactor.h: compaction of a gateway store's log, older
// commit chunks rewritten as one block per series, and the reading of a
// chunk row of either kind (commit chunk or compacted span).
//
// Why: a commit chunk mixes every series written in one group commit, so a
// query of one series over a day decodes every chunk of that day (8 s over
// 24 h in a 50M-reading store, tests/bench/storage_bench.cc), and at low
// rates each tiny commit's chunk costs its row and zstd frame (~71 bytes
// per reading at 100 readings/s). Like Prometheus' TSDB cutting blocks from
// its head, compaction takes the oldest span of commit chunks and writes one
// block per series (store/chunk_codec.h, series blocks) indexed by (series,
// time), each reading keeping its LSN.
//
// What is compacted: chunks whose readings the uplink's target acknowledged
// (acks) and that were written more than compact_after_ms ago, oldest first,
// in spans of consecutive LSNs (a device record's LSN between two chunks
// ends a span: a span's row in `chunks` then still covers exactly its LSNs,
// which entry counts and retention rely on) of up to compact_span_readings
// readings. A span is cut only once it is full or closed by a gap, so spans
// stay large. What reads by LSN stays on cheap commit chunks: the uplink
// replays only unacknowledged readings, which are never compacted. Other
// readers by LSN (feed, feed leases, `feed --follow` from the beginning)
// get a span decoded whole (DecodeChunkRow), like a large chunk.
//
// Crash safety: the step reads and encodes without the write lock, then in
// one transaction checks that the chunks it read are still exactly there
// (retention may have pruned or trimmed them meanwhile), inserts the blocks,
// replaces the chunk rows by the span's row and moves compacted_upto. A
// kill -9 or power cut leaves the chunks or the span, never both, never
// neither (tests/integration/store_compact_kill_test.cc).
//
// The store runs a step in three parts, so that no lock is held while
// blocks are encoded: FindRun inside a read snapshot (under the read
// connection's mutex), Encode without a lock, Swap under the writer's mutex.
//
// Thread safety: no state of its own; each call runs on the connection it
// is given, and the caller holds that connection's mutex.
#ifndef EDGESYNC_STORE_CHUNK_COMPACTOR_H_
#define EDGESYNC_STORE_CHUNK_COMPACTOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "store/chunk_codec.h"
#include "store/sqlite_util.h"
#include "store/store.h"

namespace edgesync {
namespace chunk_compactor {

// Every reading of a `chunks` row (commit chunk or span marker) in LSN
// order, checked to hold exactly the LSNs first..last (Corruption otherwise).
Status DecodeChunkRow(Db* db, std::string_view data, int64_t first, int64_t last, std::vector<ChunkReading>* readings);

// The last LSN compacted: chunks at or below it are spans.
Status CompactedUpTo(Db* db, int64_t* upto);

struct Options {
  int64_t span_readings = 0;  // the most readings in one span (clamped to a chunk's bound)
  int64_t after_ms = 0;       // chunks written longer ago than this are due
  bool only_smaller = true;   // a span whose blocks would not be smaller stays as commit chunks
};

// One step's work, carried from FindRun through Encode to Swap.
struct Plan {
  struct Source {
    int64_t first = 0, last = 0, written_at = 0;
    std::string data;
  };
  struct Block {
    int64_t series = 0, min_ts = 0, max_ts = 0;
    std::string data;
  };
  std::vector<Source> run;  // the commit chunks of the span, in LSN order
  int64_t upto = 0;         // compacted_upto when they were read
  std::vector<Block> blocks;
  int64_t written_at = INT64_MIN, min_ts = INT64_MAX, max_ts = INT64_MIN;
  bool keep = false;        // leave them as commit chunks, only move compacted_upto
  CompactResult result;
};

// Inside a read transaction on db: the oldest whole span due at now_ms
// (plan->run empty when none is: nothing acknowledged past compacted_upto,
// or the run is still growing).
Status FindRun(Db* db, const Options& options, int64_t now_ms, Plan* plan);
// Decodes the run and encodes its series blocks (no connection, no lock).
Status Encode(const Options& options, Plan* plan);
// On the writer's connection, in one transaction of its own: when the run's
// chunks are still exactly there (*swapped false when retention got there
// first), replaces them by the span's blocks and marker and moves
// compacted_upto. On an error the transaction is rolled back.
Status Swap(Db* db, Plan* plan, bool* swapped);

}  // namespace chunk_compactor
}  // namespace edgesync

#endif  // EDGESYNC_STORE_CHUNK_COMPACTOR_H_

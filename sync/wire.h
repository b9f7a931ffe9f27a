// sync/wire.h: encoding and decoding of every edgesync MQTT payload (the
// `Message` of sync/batch.fbs; protocol in sync/PROTOCOL.md) and the topics
// they travel on.
//
// Decoders treat input as hostile: the payload size is bounded, the
// FlatBuffers buffer is verified, the zstd frame must declare its content
// size, which must match the batch header and stay under a hard cap, and the
// columns are checked entry by entry. A rejection is a Status naming the
// reason plus a counter in WireCounters.
//
// Thread safety: functions are stateless; WireCounters are atomics.
#ifndef EDGESYNC_SYNC_WIRE_H_
#define EDGESYNC_SYNC_WIRE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platform/status.h"
#include "platform/topic_id.h"
#include "store/feed_cursor.h"
#include "store/store.h"
#include "store/types.h"
#include "sync/series_context.h"
#include "sync/sync_defaults.h"

namespace edgesync {

// 2: the region feed's continuation is per shard (FeedRequest.positions,
// FeedPage.after/next/head, FeedHead.heads).
// 3: uplink batches may refer to the origin's series context (Encoding
// ColumnsContext, Batch.context_lsn/context_hash/keep_context, AckStatus
// NoContext; sync/series_context.h).
// 4: a gateway tells a region what it knows of its store (Batch.region_epoch,
// region_held, base_lost; AckStatus Regressed; BatchAck.epoch, Pong.epoch)
// and refills a region that lost what it acknowledged.
// 5: batches carry the origin's completeness watermark
// (Batch.complete_through_ms; sync/PROTOCOL.md, "Completeness watermarks").
// 6: change entries of kind 3, time corrections (Entries.corrections;
// sync/PROTOCOL.md, "Time corrections"), sent only to a peer whose messages
// carry 6 or more.
// 7: two uplink lanes (Batch.live, BatchAck.held; sync/PROTOCOL.md, "Two
// lanes"): a gateway opens a live lane only towards a peer of 7 or more.
// 8: priority batches (Batch.priority, BatchAck.priority_held;
// sync/PROTOCOL.md, "Priority by topic"): sent only to a peer whose answers
// carry 8 or more; a hub of 8 answers older gateways as before.
constexpr uint16_t kWireVersion = 8;
// The first protocol whose decoders take time correction entries.
constexpr uint16_t kTimeCorrectionVersion = 6;
// The first protocol whose hubs hold a live lane's spans above the mark.
constexpr uint16_t kLiveLaneVersion = 7;
// The first protocol whose hubs take priority batches and keep priority marks.
constexpr uint16_t kPriorityVersion = 8;

struct DecodeLimits {
  size_t max_payload_bytes = size_t{16} << 20;  // compressed MQTT payload
  size_t max_raw_bytes = size_t{64} << 20;      // after decompression
  size_t max_entries = kMaxBatchEntries;
};

struct EncodeOptions {
  int zstd_level = 3;
  // A batch referring to a context leaves out the origin, the reply address
  // and first_lsn (the hub has them from the context and the topic) unless
  // this is set: for a region not yet known to decode such batches, so that
  // a hub of protocol 2 can answer its refusal (BadBatch) to the origin.
  bool context_names_origin = false;
};

// Why payloads were refused (and how many were fine).
struct WireCounters {
  std::atomic<uint64_t> decoded{0};
  std::atomic<uint64_t> too_large{0};       // payload or declared raw size over the limits
  std::atomic<uint64_t> bad_buffer{0};      // FlatBuffers verification failed, wrong identifier
  std::atomic<uint64_t> unsupported{0};     // unknown body kind, codec or encoding
  std::atomic<uint64_t> bad_compression{0};
  std::atomic<uint64_t> bad_entries{0};     // columns inconsistent, invalid readings
  // Context batches whose context was not held (not counted as rejected:
  // the sender resends self-contained).
  std::atomic<uint64_t> no_context{0};
  uint64_t rejected() const {
    return too_large + bad_buffer + unsupported + bad_compression + bad_entries;
  }
};

enum class WireKind { kBatch, kAck, kPing, kPong, kFeedRequest, kFeedPage, kFeedHead };

enum class AckCode : uint8_t { kOk = 0, kGap = 1, kBadBatch = 2, kStoreError = 3, kNoContext = 4, kRegressed = 5 };

struct WireBatch {
  Origin origin;
  uint64_t first_lsn = 0;
  uint64_t last_lsn = 0;
  uint64_t base_lsn = 0;
  // Decoded only (EncodeBatch takes them from its context): the context the
  // batch was encoded against (0 = self-contained), and whether the sender
  // refers to the context it leaves.
  uint64_t context_lsn = 0;
  uint64_t context_hash = 0;
  bool keep_context = false;
  // Protocol 4: the sender's record of the receiving region's store
  // (EpochTag of its epoch, 0 = any; the mark it acknowledged, 0 = none)
  // and whether the jump to base_lsn is over a span the sender lost.
  uint64_t region_epoch = 0;
  uint64_t region_held = 0;
  bool base_lost = false;
  // The sender's log held more than this batch when it was sent.
  bool more = false;
  // Every reading the sender committed before this wall time (Unix ms) has
  // an LSN at or below last_lsn; 0 = unknown. Decoded negative as 0.
  int64_t complete_through_ms = 0;
  // Protocol 7: a live lane's batch (may lie above the region's mark; sent
  // self-contained, leaves the series context alone).
  bool live = false;
  // Protocol 8: 0 = a lane batch; k in 1..kMaxPriorityLevel = a priority
  // batch of level k. It declares it carries every level-k entry of the
  // origin in first_lsn..last_lsn and only those (so entries may be empty,
  // and last_lsn need not be its last entry's); never live. It is encoded
  // self-contained and leaves EncodeBatch's context as it is. The decoder
  // refuses (counted in bad_entries) a level above kMaxPriorityLevel, one
  // that is live or refers to a context, and any entry not a reading of
  // level k.
  uint8_t priority = 0;
  std::vector<ChangeEntry> entries;
};

struct WireAck {
  std::string region;
  Origin origin;
  uint64_t high_water = 0;
  AckCode code = AckCode::kOk;
  std::string message;
  std::string epoch;  // the hub store's epoch ("" from a hub of protocol 3)
  // Protocol 7: the spans the region holds above high_water + 1 (ascending).
  std::vector<LsnSpan> held;
  // Protocol 8: the region's priority marks of origin (index 0 = level 1);
  // empty from an older hub. The decoder refuses more than kMaxPriorityLevel.
  std::vector<uint64_t> priority_held = {};
};

struct WireFeedPage {
  std::string region;
  // The request's position, the continuation and the head, per shard.
  ShardPositions after{};
  ShardPositions next{};
  ShardPositions head{};
  // Decoded: the page carried them (a hub of the single-sequence feed
  // sends none; such a page is not to be applied).
  bool per_shard = true;
  bool reset = false;
  std::string epoch;  // the hub store's epoch the sequences belong to
  // Each entry's seq is its shard's sequence; its shard is its origin's.
  std::vector<RegionFeedEntry> entries;
  // Protocol 5: watermarks valid once the page is applied (seq unused).
  std::vector<OriginWatermark> watermarks;
};

// One decoded message; only the member matching `kind` is filled.
struct WireMessage {
  uint16_t version = kWireVersion;
  std::string reply_to;
  uint64_t correlation_id = 0;
  WireKind kind = WireKind::kPing;
  WireBatch batch;
  WireAck ack;
  int64_t ping_sent_ns = 0;     // kPing, kPong
  std::string pong_region;      // kPong
  std::string pong_epoch;       // kPong: the hub store's epoch ("" from a hub of protocol 3)
  ShardPositions feed_after{};  // kFeedRequest
  // A request without per-shard positions (a reader of the single-sequence
  // feed) and its position there.
  bool feed_per_shard = true;
  uint64_t feed_after_seq = 0;
  uint32_t feed_max_entries = 0;
  std::string feed_epoch;       // kFeedRequest: the epoch of feed_after
  WireFeedPage feed_page;       // kFeedPage
  std::string head_region;      // kFeedHead
  ShardPositions head_shards{};
  bool head_per_shard = true;   // false: a notice without per-shard heads
  std::string head_epoch;
};

// Encoders. A batch's entries must be of its origin, in LSN order; the batch
// covers the LSN span first_lsn..last_lsn (last_lsn = the last entry's LSN;
// first_lsn = the LSN after the previous batch, which may lie before the
// first entry when the log compacted the LSNs in between).
// With `context`, the batch refers to it (ColumnsContext) unless it is
// empty (or full), in which case it is self-contained (ColumnsV1, which any
// hub decodes) and starts it afresh; either way the context then stands
// after this batch. Without, a self-contained batch and nothing kept.
Status EncodeBatch(const std::string& reply_to, uint64_t correlation_id, const WireBatch& batch,
                   const EncodeOptions& options, std::string* out, SeriesContext* context = nullptr);
std::string EncodeAck(uint64_t correlation_id, const WireAck& ack);
std::string EncodePing(const std::string& reply_to, uint64_t correlation_id, int64_t sent_ns);
std::string EncodePong(uint64_t correlation_id, const std::string& region, int64_t sent_ns,
                       const std::string& epoch = "");
// A 63-bit tag of a hub store's epoch (64-bit FNV-1a of its bytes, the top
// bit cleared; never 0): what a
// gateway keeps of a region's epoch beside its acknowledged mark.
uint64_t EpochTag(const std::string& epoch);
std::string EncodeFeedRequest(const std::string& reply_to, uint64_t correlation_id, const ShardPositions& after,
                              uint32_t max_entries, const std::string& epoch);
Status EncodeFeedPage(uint64_t correlation_id, const WireFeedPage& page, const EncodeOptions& options,
                      std::string* out);
std::string EncodeFeedHead(const std::string& region, const ShardPositions& head, const std::string& epoch);

// Verifies the buffer and tells its kind without decoding the body (cheap:
// no decompression). False if it is not a valid message.
bool PeekKind(std::string_view payload, const DecodeLimits& limits, WireKind* kind);

// Decodes any message. counters may be null. A hub passes its `contexts`
// and the message's authenticated `sender`: a batch of the sender's own
// origin then starts, moves or drops that origin's context (a batch naming
// another origin neither reads nor changes one). A ColumnsContext batch
// whose context is not held (or not given) is NotFound, its header decoded
// in message->batch, counted in no_context: answer it NoContext. Any other
// failure drops the origin's context.
Status DecodeMessage(std::string_view payload, const DecodeLimits& limits, WireMessage* message,
                     WireCounters* counters, SeriesContextCache* contexts = nullptr,
                     const std::string* sender = nullptr);

// Topics (every level [A-Za-z0-9_-], safe on Mosquitto and nats-server). The
// gateway id is a level of its own everywhere, so a broker ACL can confine an
// identity with one substitution pattern (Mosquitto's %u must be a whole level):
//   <prefix>/region/<region>/in/<shard>/<gatewayId>   requests to a hub (batches, pings, feed requests)
//   <prefix>/region/<region>/head             the hub's retained FeedHead notice
//   <prefix>/reply/<gatewayId>/<role>         answers to one client of a gateway ("up", "feed")
// <shard> = RegionShardOf(gatewayId): the hubs of a region share it by
// shards, each subscribing only to the shards it holds a lease on.
std::string HubInboxTopic(const std::string& prefix, const std::string& region, const std::string& sender);
// One shard's inbox: <prefix>/region/<region>/in/<shard>/+.
std::string HubInboxFilter(const std::string& prefix, const std::string& region, int shard);
// Every shard's inbox (observers, the bench's do-nothing subscriber).
std::string HubInboxAllFilter(const std::string& prefix, const std::string& region);
std::string HeadTopic(const std::string& prefix, const std::string& region);
std::string ReplyTopic(const std::string& prefix, const std::string& gateway_id, const std::string& role);

// kRegionShards and RegionShardOf live in store/feed_cursor.h: the feed's
// continuation is one position per shard.

// The sender level of a hub inbox topic of this region and its shard; false
// if the topic is not <prefix>/region/<region>/in/<shard>/<level> with
// <shard> = RegionShardOf(<level>). The broker's ACL lets an identity
// publish only on its own level, so this names who sent a message.
bool InboxSender(const std::string& prefix, const std::string& region, const std::string& topic,
                 std::string* sender, int* shard = nullptr);
// A reply address a hub may answer to for `sender`: <prefix>/reply/<sender>/<level>,
// nothing else (a hub must not be talked into publishing on arbitrary topics,
// nor on another gateway's reply topics).
bool IsReplyTopic(const std::string& prefix, const std::string& sender, const std::string& topic);

}  // namespace edgesync

#endif  // EDGESYNC_SYNC_WIRE_H_

#include "sync/wire.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "store/hub_store.h"
#include "sync/batch_generated.h"
#include "sync/columns.h"

namespace edgesync {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

std::string Finish(FlatBufferBuilder& fbb, const std::string& reply_to, uint64_t correlation_id, wire::Body type,
                   Offset<void> body) {
  auto rt = fbb.CreateString(reply_to);
  wire::FinishMessageBuffer(fbb, wire::CreateMessage(fbb, kWireVersion, rt, correlation_id, type, body));
  return std::string(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
}

Offset<wire::WireOrigin> MakeOrigin(FlatBufferBuilder& fbb, const Origin& o) {
  return wire::CreateWireOrigin(fbb, fbb.CreateString(o.gateway_id), fbb.CreateString(o.epoch));
}

Origin ReadOrigin(const wire::WireOrigin* o) {
  if (!o) return {};
  return {o->gateway_id() ? o->gateway_id()->str() : "", o->epoch() ? o->epoch()->str() : ""};
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }
std::string_view Bytes(const flatbuffers::Vector<uint8_t>* v) {
  return v ? std::string_view(reinterpret_cast<const char*>(v->data()), v->size()) : std::string_view();
}
flatbuffers::Offset<flatbuffers::Vector<uint8_t>> PositionsVector(flatbuffers::FlatBufferBuilder& fbb,
                                                                  const ShardPositions& positions) {
  std::string bytes = EncodeShardPositions(positions);
  return fbb.CreateVector(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

Status Compress(const std::string& raw, int level, std::string* out) {
  out->resize(ZSTD_compressBound(raw.size()));
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> ctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, level);
  // 4 bytes per batch: a damaged body is refused instead of decoding into
  // plausible but wrong readings.
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_checksumFlag, 1);
  size_t n = ZSTD_compress2(ctx.get(), out->data(), out->size(), raw.data(), raw.size());
  if (ZSTD_isError(n)) return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(n));
  out->resize(n);
  return Status::Ok();
}

// Decompresses a body whose size the header declares; the frame must declare
// the same size, so no hostile frame makes us allocate more than the cap.
Status Decompress(const flatbuffers::Vector<uint8_t>* body, wire::Codec codec, uint32_t raw_size,
                  const DecodeLimits& limits, std::string* raw, WireCounters* counters) {
  if (!body) {
    if (counters) ++counters->bad_buffer;
    return Status::Corruption("message: missing body");
  }
  if (raw_size > limits.max_raw_bytes) {
    if (counters) ++counters->too_large;
    return Status::Corruption("message: declared body size " + std::to_string(raw_size) + " over the limit " +
                              std::to_string(limits.max_raw_bytes));
  }
  if (codec == wire::Codec::None) {
    if (body->size() != raw_size) {
      if (counters) ++counters->bad_compression;
      return Status::Corruption("message: body size differs from the declared size");
    }
    raw->assign(reinterpret_cast<const char*>(body->data()), body->size());
    return Status::Ok();
  }
  if (codec != wire::Codec::Zstd) {
    if (counters) ++counters->unsupported;
    return Status::Unsupported("message: unknown codec " + std::to_string(static_cast<int>(codec)));
  }
  unsigned long long declared = ZSTD_getFrameContentSize(body->data(), body->size());
  if (declared == ZSTD_CONTENTSIZE_ERROR || declared == ZSTD_CONTENTSIZE_UNKNOWN || declared != raw_size) {
    if (counters) ++counters->bad_compression;
    return Status::Corruption("message: zstd frame does not declare the body size");
  }
  // The declared size is a claim: the buffer grows with what the frame
  // really produces (an RLE block can still expand, but only as far as it
  // decodes), so a 100-byte message declaring 64 MiB allocates little.
  // One context per thread, kept: creating one per message was an
  // allocation of its tables and buffers for every batch a hub decodes.
  // A frame ends its session (or an error leaves it part-way): reset first.
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(nullptr, ZSTD_freeDCtx);
  if (ctx == nullptr) {
    ctx.reset(ZSTD_createDCtx());
    if (ctx == nullptr) return Status::Corruption("message: zstd: out of memory");
    // Bounds the window too: a frame may not ask for more memory than its content.
    ZSTD_DCtx_setParameter(ctx.get(), ZSTD_d_windowLogMax, 27);
  }
  ZSTD_DCtx_reset(ctx.get(), ZSTD_reset_session_only);
  // One byte past the declared size makes a frame that produces more visible.
  const size_t cap = size_t{raw_size} + 1;
  raw->clear();
  raw->resize(std::min<size_t>(cap, std::max<size_t>(size_t{64} << 10, body->size() * 8)));
  ZSTD_inBuffer in{body->data(), body->size(), 0};
  ZSTD_outBuffer out{raw->data(), raw->size(), 0};
  for (;;) {
    size_t left = ZSTD_decompressStream(ctx.get(), &out, &in);
    if (ZSTD_isError(left)) {
      if (counters) ++counters->bad_compression;
      return Status::Corruption(std::string("message: zstd: ") + ZSTD_getErrorName(left));
    }
    if (left == 0) break;  // frame complete
    if (out.pos < out.size) {
      if (in.pos == in.size) {
        if (counters) ++counters->bad_compression;
        return Status::Corruption("message: zstd: truncated frame");
      }
      continue;
    }
    if (raw->size() >= cap) {  // more output than declared
      if (counters) ++counters->bad_compression;
      return Status::Corruption("message: zstd frame larger than its declared size");
    }
    raw->resize(std::min<size_t>(cap, raw->size() * 2));
    out.dst = raw->data();
    out.size = raw->size();
  }
  if (out.pos != raw_size || in.pos != in.size) {
    if (counters) ++counters->bad_compression;
    return Status::Corruption("message: zstd: body size differs from the declared size");
  }
  raw->resize(out.pos);
  return Status::Ok();
}

Status CheckEncoding(wire::Encoding encoding, WireCounters* counters) {
  if (encoding == wire::Encoding::ColumnsV1) return Status::Ok();
  if (counters) ++counters->unsupported;
  return Status::Unsupported("message: unknown entry encoding " + std::to_string(static_cast<int>(encoding)));
}

// The entries of a batch, against the origin's context when it is coded
// so (`ctx`, found by the caller); with `contexts`, the batch then moves the
// context or starts (or drops) one.
Status DecodeBatchEntries(const wire::Batch* b, const DecodeLimits& limits, WireBatch* out, WireCounters* counters,
                          SeriesContext* ctx, SeriesContextCache* contexts) {
  // ColumnsPriority is ColumnsV1 under another name (DecodeBatch checked it
  // goes with a priority level).
  if (ctx == nullptr && b->encoding() != wire::Encoding::ColumnsPriority) {
    ES_RETURN_IF_ERROR(CheckEncoding(b->encoding(), counters));
  }
  // Kept per thread: a hub decodes batch after batch, and the body is only
  // read here (the context's Seal hashes it).
  thread_local std::string raw;
  if (raw.capacity() > (size_t{4} << 20)) std::string().swap(raw);  // not kept after an outsized batch
  ES_RETURN_IF_ERROR(Decompress(b->body(), b->codec(), b->raw_size(), limits, &raw, counters));
  Status st = ctx ? DecodeEntriesWithContext(raw, out->first_lsn - 1, b->count(), ctx, &out->entries)
                  : DecodeEntries(raw, out->first_lsn - 1, b->count(), &out->entries, nullptr);
  if (!st.ok()) {
    if (counters) ++counters->bad_entries;
    return st;
  }
  auto bad = [counters](const std::string& why) {
    if (counters) ++counters->bad_entries;
    return Status::Corruption("batch: " + why);
  };
  if (out->entries.size() != b->count()) return bad("entry count differs from the header");
  uint64_t prev = 0;
  for (const ChangeEntry& e : out->entries) {
    if (e.lsn <= prev) return bad("LSNs not increasing");
    prev = e.lsn;
  }
  // first_lsn starts the span the batch covers; the first entry may come
  // later when the log compacted the LSNs before it (device records). A
  // priority batch's span runs as far as its sender scanned: its last entry
  // may lie below last_lsn.
  if (out->entries.front().lsn < out->first_lsn ||
      (out->priority == 0 ? out->entries.back().lsn != out->last_lsn : out->entries.back().lsn > out->last_lsn)) {
    return bad("entries outside first_lsn..last_lsn");
  }
  if (out->priority != 0) {
    for (const ChangeEntry& e : out->entries) {
      if (e.kind != ChangeEntry::Kind::kReading || QualityPriority(e.reading.quality) != out->priority) {
        return bad("entry " + std::to_string(e.lsn) + " of a priority " + std::to_string(out->priority) +
                   " batch is not a reading of that level");
      }
    }
  }
  if (contexts == nullptr) return Status::Ok();
  // A live lane's batches keep their own context beside the backlog's.
  const std::string key = ContextKey(out->origin.gateway_id, b->live());
  if (ctx == nullptr && !b->keep_context()) {
    contexts->Erase(key);  // the sender no longer refers to one
    return Status::Ok();
  }
  if (ctx == nullptr) {
    ctx = contexts->Start(out->origin, key);
    ctx->Advance(out->entries);
  }
  ctx->Seal(out->last_lsn, raw);
  contexts->Trim(key);
  return Status::Ok();
}

Status DecodeBatch(const wire::Batch* b, const DecodeLimits& limits, WireBatch* out, WireCounters* counters,
                   SeriesContextCache* contexts, const std::string* sender) {
  out->origin = ReadOrigin(b->origin());
  out->first_lsn = b->first_lsn();
  out->last_lsn = b->last_lsn();
  out->base_lsn = b->base_lsn();
  out->context_lsn = b->context_lsn();
  out->context_hash = b->context_hash();
  out->keep_context = b->keep_context();
  out->region_epoch = b->region_epoch();
  out->region_held = b->region_held();
  out->base_lost = b->base_lost();
  out->more = b->more();
  // A negative time means nothing: read as unknown, so it never lowers or
  // sets a watermark.
  out->complete_through_ms = std::max<int64_t>(0, b->complete_through_ms());
  out->live = b->live();
  out->priority = b->priority();
  out->entries.clear();
  auto bad = [counters](const std::string& why) {
    if (counters) ++counters->bad_entries;
    return Status::Corruption("batch: " + why);
  };
  if (out->priority != 0) {
    // Self-contained, beside both lanes: it neither reads nor moves (nor,
    // refused, drops) a series context.
    contexts = nullptr;
    if (out->priority > kMaxPriorityLevel) {
      return bad("priority level " + std::to_string(out->priority) + " above " + std::to_string(kMaxPriorityLevel));
    }
    if (b->live()) return bad("a priority batch marked live");
    if (b->encoding() == wire::Encoding::ColumnsContext) return bad("a priority batch refers to a series context");
    // Its own encoding is what makes a decoder before protocol 8 refuse it:
    // one that does not carry it was not written by a sender of 8.
    if (b->encoding() != wire::Encoding::ColumnsPriority) {
      return bad("a priority batch of encoding " + std::to_string(static_cast<int>(b->encoding())) +
                 ", not ColumnsPriority");
    }
  } else if (b->encoding() == wire::Encoding::ColumnsPriority) {
    return bad("a ColumnsPriority batch without a priority level");
  }
  // Only the origin's own sender reads or moves its context: a batch
  // naming another origin (refused later as such) must not disturb it.
  const bool with_context = b->encoding() == wire::Encoding::ColumnsContext;
  if (contexts && sender == nullptr) contexts = nullptr;
  if (contexts && !(with_context && b->origin() == nullptr) && out->origin.gateway_id != *sender) contexts = nullptr;
  SeriesContext* ctx = nullptr;
  if (with_context) {
    // It names no origin (it is the context's) and starts right after it.
    ctx = contexts ? contexts->Find(ContextKey(*sender, b->live())) : nullptr;
    if (b->origin() == nullptr) out->origin = ctx ? ctx->origin : Origin{sender ? *sender : "", ""};
    if (out->first_lsn == 0) out->first_lsn = out->context_lsn + 1;
    if (ctx == nullptr || b->context_lsn() == 0 || ctx->lsn() != b->context_lsn() ||
        ctx->hash() != b->context_hash() || ctx->origin != out->origin) {
      if (counters) ++counters->no_context;
      return Status::NotFound("batch: the context it was encoded against (after LSN " +
                              std::to_string(b->context_lsn()) + ") is not held here");
    }
  }
  if (!IsValidUtf8(out->origin.gateway_id) || out->origin.gateway_id.empty() || out->origin.epoch.empty() ||
      out->origin.gateway_id.size() > 128 || out->origin.epoch.size() > 64) {
    return bad("missing or invalid origin");
  }
  Status st;
  // A priority batch may carry nothing: it then only declares its span
  // free of entries of its level.
  if ((b->count() == 0 && out->priority == 0) || out->first_lsn == 0 || out->first_lsn > out->last_lsn) {
    st = bad("empty or inverted LSN range");
  } else if (b->count() > limits.max_entries) {
    if (counters) ++counters->too_large;
    st = Status::Corruption("batch: " + std::to_string(b->count()) + " entries over the limit");
  } else if (b->count() > 0) {
    st = DecodeBatchEntries(b, limits, out, counters, ctx, contexts);
  }
  if (!st.ok() && contexts) contexts->Erase(ContextKey(out->origin.gateway_id, b->live()));
  return st;
}

Status DecodeFeedPage(const wire::FeedPage* p, const DecodeLimits& limits, WireFeedPage* out,
                      WireCounters* counters) {
  out->region = Str(p->region());
  out->reset = p->reset();
  out->epoch = Str(p->epoch());
  out->entries.clear();
  out->per_shard = p->after() != nullptr && p->next() != nullptr && p->head() != nullptr;
  if (out->per_shard) {
    Status st = DecodeShardPositions(Bytes(p->after()), &out->after);
    if (st.ok()) st = DecodeShardPositions(Bytes(p->next()), &out->next);
    if (st.ok()) st = DecodeShardPositions(Bytes(p->head()), &out->head);
    if (!st.ok()) {
      if (counters) ++counters->bad_entries;
      return st.Annotate("feed page");
    }
  }
  out->watermarks.clear();
  if (p->watermarks() != nullptr) {
    if (p->watermarks()->size() > kMaxPageWatermarks) {
      if (counters) ++counters->too_large;
      return Status::Corruption("feed page: " + std::to_string(p->watermarks()->size()) + " watermarks, more than " +
                                std::to_string(kMaxPageWatermarks));
    }
    out->watermarks.reserve(p->watermarks()->size());
    for (const wire::OriginWatermark* w : *p->watermarks()) {
      OriginWatermark kept{ReadOrigin(w->origin()), w->complete_through_ms(), 0};
      Status v = ValidateOrigin(kept.origin);
      if (v.ok() && kept.complete_through_ms <= 0) v = Status::InvalidArgument("a watermark at or before 1970");
      if (!v.ok()) {
        if (counters) ++counters->bad_entries;
        return Status::Corruption("feed page: watermark " + std::to_string(out->watermarks.size()) + ": " +
                                  v.message());
      }
      out->watermarks.push_back(std::move(kept));
    }
  }
  if (p->count() == 0) return Status::Ok();
  if (p->count() > limits.max_entries) {
    if (counters) ++counters->too_large;
    return Status::Corruption("feed page: too many entries");
  }
  ES_RETURN_IF_ERROR(CheckEncoding(p->encoding(), counters));
  std::string raw;
  ES_RETURN_IF_ERROR(Decompress(p->body(), p->codec(), p->raw_size(), limits, &raw, counters));
  std::vector<ChangeEntry> entries;
  FeedColumns feed;
  Status st = DecodeEntries(raw, 0, p->count(), &entries, &feed);
  if (st.ok() && entries.size() != p->count()) st = Status::Corruption("feed page: entry count differs");
  if (!st.ok()) {
    if (counters) ++counters->bad_entries;
    return st;
  }
  out->entries.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    RegionFeedEntry f;
    f.seq = feed.seqs[i];
    f.remote.origin = feed.origins[feed.origin_index[i]];
    f.shard = RegionShardOf(f.remote.origin.gateway_id);
    f.remote.origin_lsn = entries[i].lsn;
    f.remote.entry = std::move(entries[i]);
    out->entries.push_back(std::move(f));
  }
  return Status::Ok();
}

// A priority batch (protocol 8): self-contained, possibly without entries
// (then without a body), its span declared by first_lsn..last_lsn. It
// leaves the sender's series contexts as they are, like the hub does. Its
// encoding is ColumnsPriority, even without entries: a hub before protocol
// 8 ignores Batch.priority and would otherwise take the batch for a lane
// batch covering its whole span, and lose the other entries of that span.
Status EncodePriorityBatch(const std::string& reply_to, uint64_t correlation_id, const WireBatch& batch,
                           const EncodeOptions& options, std::string* out) {
  auto refuse = [](const std::string& why) { return Status::InvalidArgument("encode priority batch: " + why); };
  if (batch.priority > kMaxPriorityLevel) return refuse("level " + std::to_string(batch.priority) + " too high");
  if (batch.live) return refuse("it is never live");
  if (batch.first_lsn == 0 || batch.first_lsn > batch.last_lsn) return refuse("empty or inverted LSN range");
  for (const ChangeEntry& e : batch.entries) {
    if (e.lsn < batch.first_lsn || e.lsn > batch.last_lsn) return refuse("entry outside first_lsn..last_lsn");
    if (e.kind != ChangeEntry::Kind::kReading || QualityPriority(e.reading.quality) != batch.priority) {
      return refuse("entry " + std::to_string(e.lsn) + " is not a reading of its level");
    }
  }
  std::string raw, compressed;
  if (!batch.entries.empty()) {
    raw = EncodeEntries(batch.entries, batch.first_lsn - 1, nullptr);
    ES_RETURN_IF_ERROR(Compress(raw, options.zstd_level, &compressed));
  }
  FlatBufferBuilder fbb(compressed.size() + 256);
  auto origin = MakeOrigin(fbb, batch.origin);
  auto body = fbb.CreateVector(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size());
  auto b = wire::CreateBatch(fbb, origin, batch.first_lsn, batch.last_lsn, batch.base_lsn,
                             static_cast<uint32_t>(batch.entries.size()),
                             batch.entries.empty() ? wire::Codec::None : wire::Codec::Zstd,
                             wire::Encoding::ColumnsPriority,
                             static_cast<uint32_t>(raw.size()), body, 0, 0, false, batch.region_epoch,
                             batch.region_held, false, batch.more, 0, false, batch.priority);
  *out = Finish(fbb, reply_to, correlation_id, wire::Body::Batch, b.Union());
  return Status::Ok();
}

}  // namespace

Status EncodeBatch(const std::string& reply_to, uint64_t correlation_id, const WireBatch& batch,
                   const EncodeOptions& options, std::string* out, SeriesContext* context) {
  if (batch.priority != 0) return EncodePriorityBatch(reply_to, correlation_id, batch, options, out);
  if (batch.entries.empty()) return Status::InvalidArgument("encode batch: no entries");
  if (context && !context->HasRoom(batch.entries.size())) context->Reset();
  const bool with_context = context && !context->empty();
  const uint64_t context_lsn = with_context ? context->lsn() : 0;
  const uint64_t context_hash = with_context ? context->hash() : 0;
  std::string raw;
  if (with_context && batch.first_lsn != context_lsn + 1) {
    return Status::InvalidArgument("encode batch: a batch referring to a context starts right after it");
  }
  if (with_context) {
    raw = EncodeEntriesWithContext(batch.entries, batch.first_lsn - 1, context);
  } else {
    raw = EncodeEntries(batch.entries, batch.first_lsn - 1, nullptr);
    if (context) context->Advance(batch.entries);
  }
  if (context) context->Seal(batch.last_lsn, raw);
  std::string compressed;
  ES_RETURN_IF_ERROR(Compress(raw, options.zstd_level, &compressed));
  FlatBufferBuilder fbb(compressed.size() + 256);
  // A batch that refers to a context leaves out what the hub knows from it
  // and from the topic: the origin (the context's), the reply address (the
  // sender's own "up" topic, the only one a hub answers on) and first_lsn
  // (the context's LSN + 1): ~90 bytes a batch, measured.
  const bool lean = with_context && !options.context_names_origin;
  auto origin = lean ? Offset<wire::WireOrigin>() : MakeOrigin(fbb, batch.origin);
  auto body = fbb.CreateVector(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size());
  auto b = wire::CreateBatch(fbb, origin, lean ? 0 : batch.first_lsn, batch.last_lsn, batch.base_lsn,
                             static_cast<uint32_t>(batch.entries.size()), wire::Codec::Zstd,
                             with_context ? wire::Encoding::ColumnsContext : wire::Encoding::ColumnsV1,
                             static_cast<uint32_t>(raw.size()), body, context_lsn, context_hash, context != nullptr,
                             batch.region_epoch, batch.region_held, batch.base_lost, batch.more,
                             batch.complete_through_ms, batch.live);
  *out = Finish(fbb, lean ? std::string() : reply_to, correlation_id, wire::Body::Batch, b.Union());
  return Status::Ok();
}

std::string EncodeAck(uint64_t correlation_id, const WireAck& ack) {
  FlatBufferBuilder fbb(256);
  auto region = fbb.CreateString(ack.region);
  auto origin = MakeOrigin(fbb, ack.origin);
  auto message = fbb.CreateString(ack.message);
  auto epoch = ack.epoch.empty() ? Offset<flatbuffers::String>() : fbb.CreateString(ack.epoch);
  Offset<flatbuffers::Vector<const wire::LsnSpan*>> held;
  if (!ack.held.empty()) {
    std::vector<wire::LsnSpan> spans;
    spans.reserve(ack.held.size());
    for (const LsnSpan& h : ack.held) spans.emplace_back(h.first, h.last);
    held = fbb.CreateVectorOfStructs(spans);
  }
  // All zero says nothing a hub before protocol 8 would not: left out.
  Offset<flatbuffers::Vector<uint64_t>> priority_held;
  if (std::any_of(ack.priority_held.begin(), ack.priority_held.end(), [](uint64_t p) { return p != 0; })) {
    priority_held = fbb.CreateVector(ack.priority_held);
  }
  auto a = wire::CreateBatchAck(fbb, region, origin, ack.high_water, static_cast<wire::AckStatus>(ack.code), message,
                                epoch, held, priority_held);
  return Finish(fbb, "", correlation_id, wire::Body::BatchAck, a.Union());
}

uint64_t EpochTag(const std::string& epoch) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : epoch) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // 63 bits: the gateway keeps it as a store checkpoint (a SQLite integer).
  h &= 0x7fffffffffffffffull;
  return h == 0 ? 1 : h;
}

std::string EncodePing(const std::string& reply_to, uint64_t correlation_id, int64_t sent_ns) {
  FlatBufferBuilder fbb(128);
  auto p = wire::CreatePing(fbb, sent_ns);
  return Finish(fbb, reply_to, correlation_id, wire::Body::Ping, p.Union());
}

std::string EncodePong(uint64_t correlation_id, const std::string& region, int64_t sent_ns,
                       const std::string& epoch) {
  FlatBufferBuilder fbb(128);
  auto r = fbb.CreateString(region);
  auto e = epoch.empty() ? Offset<flatbuffers::String>() : fbb.CreateString(epoch);
  auto p = wire::CreatePong(fbb, r, sent_ns, e);
  return Finish(fbb, "", correlation_id, wire::Body::Pong, p.Union());
}

std::string EncodeFeedRequest(const std::string& reply_to, uint64_t correlation_id, const ShardPositions& after,
                              uint32_t max_entries, const std::string& epoch) {
  FlatBufferBuilder fbb(128);
  auto e = fbb.CreateString(epoch);
  auto positions = PositionsVector(fbb, after);
  auto r = wire::CreateFeedRequest(fbb, 0, max_entries, e, positions);
  return Finish(fbb, reply_to, correlation_id, wire::Body::FeedRequest, r.Union());
}

Status EncodeFeedPage(uint64_t correlation_id, const WireFeedPage& page, const EncodeOptions& options,
                      std::string* out) {
  std::string compressed;
  uint32_t raw_size = 0;
  if (!page.entries.empty()) {
    std::vector<ChangeEntry> entries;
    FeedColumns feed;
    entries.reserve(page.entries.size());
    for (const RegionFeedEntry& f : page.entries) {
      uint32_t index = 0;
      while (index < feed.origins.size() && feed.origins[index] != f.remote.origin) ++index;
      if (index == feed.origins.size()) feed.origins.push_back(f.remote.origin);
      feed.origin_index.push_back(index);
      feed.seqs.push_back(f.seq);
      entries.push_back(f.remote.entry);
      entries.back().lsn = f.remote.origin_lsn;
    }
    std::string raw = EncodeEntries(entries, 0, &feed);
    raw_size = static_cast<uint32_t>(raw.size());
    ES_RETURN_IF_ERROR(Compress(raw, options.zstd_level, &compressed));
  }
  FlatBufferBuilder fbb(compressed.size() + 256);
  auto region = fbb.CreateString(page.region);
  auto body = fbb.CreateVector(reinterpret_cast<const uint8_t*>(compressed.data()), compressed.size());
  auto epoch = fbb.CreateString(page.epoch);
  // per_shard = false writes a page as a hub of the single-sequence feed
  // did (tests of the readers' refusal).
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> after, next, head;
  if (page.per_shard) {
    after = PositionsVector(fbb, page.after);
    next = PositionsVector(fbb, page.next);
    head = PositionsVector(fbb, page.head);
  }
  Offset<flatbuffers::Vector<Offset<wire::OriginWatermark>>> watermarks;
  if (!page.watermarks.empty()) {
    std::vector<Offset<wire::OriginWatermark>> w;
    w.reserve(page.watermarks.size());
    for (const OriginWatermark& m : page.watermarks) {
      w.push_back(wire::CreateOriginWatermark(fbb, MakeOrigin(fbb, m.origin), m.complete_through_ms));
    }
    watermarks = fbb.CreateVector(w);
  }
  auto p = wire::CreateFeedPage(fbb, region, 0, 0, 0, page.reset, static_cast<uint32_t>(page.entries.size()),
                                wire::Codec::Zstd, wire::Encoding::ColumnsV1, raw_size, body, epoch, after, next,
                                head, watermarks);
  *out = Finish(fbb, "", correlation_id, wire::Body::FeedPage, p.Union());
  return Status::Ok();
}

std::string EncodeFeedHead(const std::string& region, const ShardPositions& head, const std::string& epoch) {
  FlatBufferBuilder fbb(128);
  auto r = fbb.CreateString(region);
  auto e = fbb.CreateString(epoch);
  auto heads = PositionsVector(fbb, head);
  auto h = wire::CreateFeedHead(fbb, r, 0, e, heads);
  return Finish(fbb, "", 0, wire::Body::FeedHead, h.Union());
}

namespace {

// The message in payload once verified, or null. FlatBuffers verification
// checks alignment: a misaligned payload is copied into *aligned first.
const wire::Message* VerifiedMessage(std::string_view payload, std::unique_ptr<uint64_t[]>* aligned) {
  if (payload.size() < 8) return nullptr;
  const uint8_t* data = reinterpret_cast<const uint8_t*>(payload.data());
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) {
    aligned->reset(new uint64_t[payload.size() / 8 + 1]);
    std::memcpy(aligned->get(), payload.data(), payload.size());
    data = reinterpret_cast<const uint8_t*>(aligned->get());
  }
  flatbuffers::Verifier verifier(data, payload.size(), 16, 10000);
  if (!wire::MessageBufferHasIdentifier(data) || !wire::VerifyMessageBuffer(verifier)) return nullptr;
  return wire::GetMessage(data);
}

}  // namespace

bool PeekKind(std::string_view payload, const DecodeLimits& limits, WireKind* kind) {
  if (payload.size() > limits.max_payload_bytes) return false;
  std::unique_ptr<uint64_t[]> aligned;
  const wire::Message* m = VerifiedMessage(payload, &aligned);
  if (m == nullptr) return false;
  switch (m->body_type()) {
    case wire::Body::Batch: *kind = WireKind::kBatch; return true;
    case wire::Body::BatchAck: *kind = WireKind::kAck; return true;
    case wire::Body::Ping: *kind = WireKind::kPing; return true;
    case wire::Body::Pong: *kind = WireKind::kPong; return true;
    case wire::Body::FeedRequest: *kind = WireKind::kFeedRequest; return true;
    case wire::Body::FeedPage: *kind = WireKind::kFeedPage; return true;
    case wire::Body::FeedHead: *kind = WireKind::kFeedHead; return true;
    default: return false;
  }
}

Status DecodeMessage(std::string_view payload, const DecodeLimits& limits, WireMessage* message,
                     WireCounters* counters, SeriesContextCache* contexts, const std::string* sender) {
  if (payload.size() > limits.max_payload_bytes) {
    if (counters) ++counters->too_large;
    return Status::Corruption("message: " + std::to_string(payload.size()) + " bytes over the limit " +
                              std::to_string(limits.max_payload_bytes));
  }
  std::unique_ptr<uint64_t[]> aligned;
  const wire::Message* m = VerifiedMessage(payload, &aligned);
  if (m == nullptr) {
    if (counters) ++counters->bad_buffer;
    return Status::Corruption("message: not an edgesync message (FlatBuffers verification failed)");
  }
  if (m->body_type() != wire::Body::NONE && m->body() == nullptr) {
    if (counters) ++counters->bad_buffer;
    return Status::Corruption("message: body missing");
  }
  message->version = m->version();
  message->reply_to = Str(m->reply_to());
  message->correlation_id = m->correlation_id();
  Status st;
  switch (m->body_type()) {
    case wire::Body::Batch:
      message->kind = WireKind::kBatch;
      st = DecodeBatch(m->body_as_Batch(), limits, &message->batch, counters, contexts, sender);
      break;
    case wire::Body::BatchAck: {
      const auto* a = m->body_as_BatchAck();
      message->kind = WireKind::kAck;
      message->ack.region = Str(a->region());
      message->ack.origin = ReadOrigin(a->origin());
      message->ack.high_water = a->high_water();
      message->ack.code = static_cast<AckCode>(a->status());
      message->ack.message = Str(a->message());
      message->ack.epoch = Str(a->epoch());
      message->ack.held.clear();
      if (a->held() != nullptr) {
        // At most kMaxHeldRanges are meaningful; anything more, unordered or
        // at or below the mark is not an answer of a hub of this protocol.
        if (a->held()->size() > kMaxHeldSpansOnWire) {
          if (counters) ++counters->bad_entries;
          return Status::Corruption("ack: too many held spans");
        }
        uint64_t prev = a->high_water() + 1;
        for (const wire::LsnSpan* h : *a->held()) {
          if (h->first() <= prev || h->last() < h->first()) {
            if (counters) ++counters->bad_entries;
            return Status::Corruption("ack: held spans not ascending above the mark");
          }
          message->ack.held.push_back(LsnSpan{h->first(), h->last()});
          prev = h->last() + 1;
        }
      }
      message->ack.priority_held.clear();
      if (a->priority_held() != nullptr) {
        if (a->priority_held()->size() > kMaxPriorityLevel) {
          if (counters) ++counters->bad_entries;
          return Status::Corruption("ack: " + std::to_string(a->priority_held()->size()) +
                                    " priority marks, more than the " + std::to_string(kMaxPriorityLevel) +
                                    " levels");
        }
        message->ack.priority_held.assign(a->priority_held()->begin(), a->priority_held()->end());
      }
      if (static_cast<uint8_t>(a->status()) > static_cast<uint8_t>(AckCode::kRegressed)) {
        if (counters) ++counters->unsupported;
        return Status::Unsupported("ack: unknown status");
      }
      break;
    }
    case wire::Body::Ping:
      message->kind = WireKind::kPing;
      message->ping_sent_ns = m->body_as_Ping()->sent_ns();
      break;
    case wire::Body::Pong:
      message->kind = WireKind::kPong;
      message->ping_sent_ns = m->body_as_Pong()->sent_ns();
      message->pong_region = Str(m->body_as_Pong()->region());
      message->pong_epoch = Str(m->body_as_Pong()->epoch());
      break;
    case wire::Body::FeedRequest: {
      const wire::FeedRequest* r = m->body_as_FeedRequest();
      message->kind = WireKind::kFeedRequest;
      message->feed_after_seq = r->after_seq();
      message->feed_max_entries = r->max_entries();
      message->feed_epoch = Str(r->epoch());
      message->feed_per_shard = r->positions() != nullptr;
      message->feed_after.fill(0);
      if (message->feed_per_shard) st = DecodeShardPositions(Bytes(r->positions()), &message->feed_after);
      if (!st.ok()) {
        if (counters) ++counters->bad_entries;
        return st.Annotate("feed request");
      }
      break;
    }
    case wire::Body::FeedPage:
      message->kind = WireKind::kFeedPage;
      st = DecodeFeedPage(m->body_as_FeedPage(), limits, &message->feed_page, counters);
      break;
    case wire::Body::FeedHead:
      message->kind = WireKind::kFeedHead;
      message->head_region = Str(m->body_as_FeedHead()->region());
      message->head_epoch = Str(m->body_as_FeedHead()->epoch());
      message->head_per_shard = m->body_as_FeedHead()->heads() != nullptr;
      message->head_shards.fill(0);
      if (message->head_per_shard) {
        st = DecodeShardPositions(Bytes(m->body_as_FeedHead()->heads()), &message->head_shards);
      }
      if (!st.ok()) {
        if (counters) ++counters->bad_entries;
        return st.Annotate("feed head");
      }
      break;
    default:
      if (counters) ++counters->unsupported;
      return Status::Unsupported("message: unknown body kind " + std::to_string(static_cast<int>(m->body_type())));
  }
  if (st.ok() && counters) ++counters->decoded;
  return st;
}

std::string HubInboxTopic(const std::string& prefix, const std::string& region, const std::string& sender) {
  return prefix + "/region/" + region + "/in/" + std::to_string(RegionShardOf(sender)) + "/" + sender;
}
std::string HubInboxFilter(const std::string& prefix, const std::string& region, int shard) {
  return prefix + "/region/" + region + "/in/" + std::to_string(shard) + "/+";
}
std::string HubInboxAllFilter(const std::string& prefix, const std::string& region) {
  return prefix + "/region/" + region + "/in/+/+";
}

std::string HeadTopic(const std::string& prefix, const std::string& region) {
  return prefix + "/region/" + region + "/head";
}
std::string ReplyTopic(const std::string& prefix, const std::string& gateway_id, const std::string& role) {
  return prefix + "/reply/" + gateway_id + "/" + role;
}

namespace {

// If topic is head + <one level>, that level; else "".
std::string LastLevelAfter(const std::string& head, const std::string& topic) {
  if (topic.size() <= head.size() || topic.compare(0, head.size(), head) != 0) return "";
  std::string level = topic.substr(head.size());
  return IsTopicId(level) ? level : "";
}

}  // namespace

bool InboxSender(const std::string& prefix, const std::string& region, const std::string& topic,
                 std::string* sender, int* shard) {
  sender->clear();
  const std::string head = prefix + "/region/" + region + "/in/";
  if (topic.size() <= head.size() || topic.compare(0, head.size(), head) != 0) return false;
  const size_t slash = topic.find('/', head.size());
  if (slash == std::string::npos) return false;
  std::string level = LastLevelAfter(topic.substr(0, slash + 1), topic);
  const std::string shard_text = topic.substr(head.size(), slash - head.size());
  // The shard level must be exactly what the sender's id hashes to: one
  // spelling per shard, so a hub's subscription is all it needs to look at.
  if (level.empty() || shard_text != std::to_string(RegionShardOf(level))) return false;
  if (shard != nullptr) *shard = RegionShardOf(level);
  *sender = std::move(level);
  return true;
}

bool IsReplyTopic(const std::string& prefix, const std::string& sender, const std::string& topic) {
  return IsTopicId(sender) && !LastLevelAfter(prefix + "/reply/" + sender + "/", topic).empty();
}

}  // namespace edgesync

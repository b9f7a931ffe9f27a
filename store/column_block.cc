#include "store/column_block.h"

#include <zstd.h>

namespace edgesync {

void SealBlock(const BlockFormat& format, const std::string& raw, std::string* out) {
  out->clear();
  out->push_back(static_cast<char>(format.format));
  PutVarint(raw.size(), out);
  const size_t head = out->size();
  out->resize(head + ZSTD_compressBound(raw.size()));
  // One context per thread, kept: creating one costs more than compressing
  // a small batch.
  struct Ctx {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ~Ctx() { ZSTD_freeCCtx(c); }
  };
  thread_local Ctx ctx;
  ZSTD_CCtx_reset(ctx.c, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(ctx.c, ZSTD_c_compressionLevel, kBlockZstdLevel);
  ZSTD_CCtx_setParameter(ctx.c, ZSTD_c_checksumFlag, format.checksum ? 1 : 0);
  size_t n = ZSTD_compress2(ctx.c, &(*out)[head], out->size() - head, raw.data(), raw.size());
  // Compressing into a ZSTD_compressBound buffer cannot fail.
  out->resize(head + (ZSTD_isError(n) ? 0 : n));
  if (format.plain_format != 0 && out->size() >= raw.size() + 1) {
    out->assign(1, static_cast<char>(format.plain_format));
    *out += raw;
  }
}

std::string OpenBlock(std::string_view block, const BlockFormat& format, uint64_t max_raw, std::string* raw) {
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  VarintReader head(p, p + block.size());
  const uint8_t* found = nullptr;
  if (!head.Bytes(1, &found)) return "empty block";
  if (format.plain_format != 0 && *found == format.plain_format) {
    if (head.left() > max_raw) return "raw size " + std::to_string(head.left()) + " too large";
    raw->assign(block.substr(1));
    return "";
  }
  if (*found != format.format) return "unknown format " + std::to_string(*found);
  uint64_t raw_size = 0;
  if (!head.Next(&raw_size)) return "truncated header";
  if (raw_size > max_raw) return "raw size " + std::to_string(raw_size) + " too large";
  const size_t frame_size = head.left();
  const char* frame = block.data() + (block.size() - frame_size);
  if (ZSTD_getFrameContentSize(frame, frame_size) != raw_size) return "frame size does not match the header";
  raw->assign(raw_size, '\0');
  // One context per thread, kept, as in SealBlock: ZSTD_decompress makes
  // and frees a ~95 KB context per call, which a query decoding a day of
  // one series (~390 blocks) paid on every block.
  struct Ctx {
    ZSTD_DCtx* d = ZSTD_createDCtx();
    ~Ctx() { ZSTD_freeDCtx(d); }
  };
  thread_local Ctx ctx;
  size_t got = ctx.d != nullptr ? ZSTD_decompressDCtx(ctx.d, raw->data(), raw->size(), frame, frame_size)
                                 : ZSTD_decompress(raw->data(), raw->size(), frame, frame_size);
  if (ZSTD_isError(got) || got != raw_size) return "zstd frame damaged";
  return "";
}

void PutColumn(const std::string& column, std::string* raw) {
  PutVarint(column.size(), raw);
  *raw += column;
}

std::string GetColumns(VarintReader* in, int n, const char* const* names, VarintReader* cols) {
  for (int c = 0; c < n; ++c) {
    uint64_t len = 0;
    const uint8_t* start = nullptr;
    if (!in->Next(&len) || len > in->left() || !in->Bytes(static_cast<size_t>(len), &start)) {
      return std::string("column ") + names[c] + " truncated";
    }
    cols[c] = VarintReader(start, start + len);
  }
  return "";
}

std::string ColumnsAllRead(const VarintReader* cols, int n, const char* const* names) {
  for (int c = 0; c < n; ++c) {
    if (!cols[c].AtEnd()) return std::string("column ") + names[c] + " has trailing bytes";
  }
  return "";
}

}  // namespace edgesync

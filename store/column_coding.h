// store/column_coding.h: the small integer codings shared by the store's
// chunks and the sync wire format (sync/columns.h): LEB128 varints, zig-zag
// signed integers, and doubles as decimal-scaled integer mantissas.
//
// Sensor values are mostly decimals quantised to the sensor's resolution
// (21.37, 1013.2): as an integer mantissa and a decimal scale they become a
// small varint that zstd squeezes to a few bits, where their IEEE bits would
// not compress at all. A double that is not an exact decimal (MinimalScale
// -1) is carried as its raw bits by the caller, so every value round-trips
// bit for bit.
//
// Thread safety: stateless functions; a VarintReader is a value.
#ifndef EDGESYNC_STORE_COLUMN_CODING_H_
#define EDGESYNC_STORE_COLUMN_CODING_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace edgesync {

// Decimal scales up to 10^15 keep mantissas of real sensor values below
// 2^53, where a double still holds every integer exactly.
constexpr int kMaxDecimalScale = 15;

void PutVarint(uint64_t value, std::string* out);
inline uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

// *m / 10^scale reproduces value bit for bit. -0.0, NaN and infinities never
// qualify. scale in [0, kMaxDecimalScale].
bool MantissaAt(double value, int scale, int64_t* m);
// The smallest scale MantissaAt accepts, or -1.
int MinimalScale(double value);
// m / 10^scale (scale in [0, kMaxDecimalScale]).
double FromMantissa(int64_t m, int scale);

// Reads LEB128 varints from [p, end); Next fails (false) on a truncated
// varint or one longer than 64 bits.
class VarintReader {
 public:
  VarintReader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool Next(uint64_t* out) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = *p_++;
      if (shift == 63 && b > 1) return false;  // more than 64 bits
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = result;
        return true;
      }
    }
    return false;
  }
  // n raw bytes; false if fewer are left.
  bool Bytes(size_t n, const uint8_t** out) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    *out = p_;
    p_ += n;
    return true;
  }
  bool AtEnd() const { return p_ == end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// A value as three columns: its scale byte (kRawValueScale = raw bits),
// then a zig-zag mantissa varint or 8 little-endian IEEE bytes. The one
// value coding of every stored block (commit chunks, series blocks, remote
// chunks).
//
// prev_mantissa selects how a mantissa is written, and both ways are on
// disk: nullptr, the mantissa itself (commit chunks and remote chunks hold
// many series side by side, so a value's neighbour tells nothing about
// it); else the change from *prev_mantissa, the previous decimal value's
// mantissa, which the call then updates (series blocks hold one series,
// which moves by a few steps of its resolution: the change takes a byte
// where the mantissa takes all its digits). A raw value leaves
// *prev_mantissa as it was.
constexpr uint8_t kRawValueScale = kMaxDecimalScale + 1;
void PutValue(double value, std::string* scale, std::string* mantissa, std::string* raw,
              int64_t* prev_mantissa = nullptr);
// PutValue's inverse, with the same prev_mantissa. nullptr on success, else
// what was wrong (a column's name and fault).
const char* GetValue(VarintReader* scale, VarintReader* mantissa, VarintReader* raw, double* value,
                     int64_t* prev_mantissa = nullptr);

}  // namespace edgesync

#endif  // EDGESYNC_STORE_COLUMN_CODING_H_

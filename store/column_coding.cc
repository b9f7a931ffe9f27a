#include "store/column_coding.h"

#include <cmath>
#include <cstring>

namespace edgesync {
namespace {

constexpr int64_t kMaxMantissa = int64_t{1} << 53;

const double kPow10[kMaxDecimalScale + 1] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

}  // namespace

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// IEEE division of two exact numbers is correctly rounded, so m / 10^scale
// is also what strtod gives for the decimal text.
bool MantissaAt(double value, int scale, int64_t* m) {
  if (!std::isfinite(value)) return false;
  double scaled = std::nearbyint(value * kPow10[scale]);
  if (!(std::fabs(scaled) < static_cast<double>(kMaxMantissa))) return false;
  int64_t candidate = static_cast<int64_t>(scaled);
  double back = static_cast<double>(candidate) / kPow10[scale];
  if (std::memcmp(&back, &value, sizeof back) != 0) return false;
  *m = candidate;
  return true;
}

int MinimalScale(double value) {
  int64_t m;
  for (int s = 0; s <= kMaxDecimalScale; ++s) {
    if (MantissaAt(value, s, &m)) return s;
  }
  return -1;
}

double FromMantissa(int64_t m, int scale) { return static_cast<double>(m) / kPow10[scale]; }

void PutValue(double value, std::string* scale, std::string* mantissa, std::string* raw, int64_t* prev_mantissa) {
  const int s = MinimalScale(value);
  int64_t m = 0;
  if (s >= 0 && MantissaAt(value, s, &m)) {
    scale->push_back(static_cast<char>(s));
    // Wrapping arithmetic: both mantissas are below 2^53, the change fits.
    const int64_t coded =
        prev_mantissa ? static_cast<int64_t>(static_cast<uint64_t>(m) - static_cast<uint64_t>(*prev_mantissa)) : m;
    PutVarint(ZigZag(coded), mantissa);
    if (prev_mantissa) *prev_mantissa = m;
    return;
  }
  scale->push_back(static_cast<char>(kRawValueScale));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  for (int i = 0; i < 8; ++i) raw->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

const char* GetValue(VarintReader* scale, VarintReader* mantissa, VarintReader* raw, double* value,
                     int64_t* prev_mantissa) {
  const uint8_t* s = nullptr;
  if (!scale->Bytes(1, &s) || *s > kRawValueScale) return "column scale bad";
  if (*s == kRawValueScale) {
    const uint8_t* b = nullptr;
    if (!raw->Bytes(8, &b)) return "column raw truncated";
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits |= static_cast<uint64_t>(b[i]) << (8 * i);
    std::memcpy(value, &bits, sizeof bits);
    return nullptr;
  }
  uint64_t zm = 0;
  if (!mantissa->Next(&zm)) return "column mantissa truncated";
  int64_t m = UnZigZag(zm);
  if (prev_mantissa) m = static_cast<int64_t>(static_cast<uint64_t>(*prev_mantissa) + static_cast<uint64_t>(m));
  if (m >= kMaxMantissa || m <= -kMaxMantissa) return "mantissa out of range";
  if (prev_mantissa) *prev_mantissa = m;
  *value = FromMantissa(m, *s);
  return nullptr;
}

}  // namespace edgesync

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

}  // namespace edgesync

// An independent model of the narrow float formats for tests, written differently from
// mixprec's bit-level codec: values are doubles, rounding is std::nearbyint under the default
// round-to-nearest-even mode, and exponents come from std::frexp / std::ldexp.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mixprec::test {

struct reference_format {
  int exponent_bits;
  int mantissa_bits;
  bool has_infinity;
  double max_finite;  // largest finite value
};

inline constexpr reference_format ref_binary16{5, 10, true, 65504.0};
inline constexpr reference_format ref_bfloat16{8, 7, true, 0x1.FEp127};
inline constexpr reference_format ref_e4m3fn{4, 3, false, 448.0};
inline constexpr reference_format ref_e5m2{5, 2, true, 57344.0};

inline int ref_min_exponent(const reference_format& f) { return 2 - (1 << (f.exponent_bits - 1)); }

/// The value of x rounded to the format (ties to even). Overflow gives ±inf when `saturate`
/// is false (the caller maps inf to NaN for formats without infinities), ±max otherwise.
inline double reference_round(const reference_format& f, double x, bool saturate = false) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return saturate ? std::copysign(f.max_finite, x) : x;
  if (x == 0) return x;
  int exponent;
  std::frexp(std::fabs(x), &exponent);  // |x| = m * 2^exponent, m in [0.5, 1)
  const int unit_exponent = std::max(exponent - 1, ref_min_exponent(f)) - f.mantissa_bits;
  const double unit = std::ldexp(1.0, unit_exponent);
  const double rounded = std::nearbyint(std::fabs(x) / unit) * unit;
  if (rounded > f.max_finite)
    return saturate ? std::copysign(f.max_finite, x) : std::copysign(std::numeric_limits<double>::infinity(), x);
  return std::copysign(rounded, x);
}

/// The value of an encoding, computed from its fields.
inline double reference_decode(const reference_format& f, std::uint32_t bits) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = (bits >> (total - 1)) & 1u;
  const std::uint32_t exponent_field = (bits >> f.mantissa_bits) & ((1u << f.exponent_bits) - 1u);
  const std::uint32_t mantissa = bits & ((1u << f.mantissa_bits) - 1u);
  const std::uint32_t all_ones = (1u << f.exponent_bits) - 1u;
  double value;
  if (f.has_infinity && exponent_field == all_ones) {
    value = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.has_infinity && exponent_field == all_ones && mantissa == (1u << f.mantissa_bits) - 1u) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (exponent_field == 0) {
    value = std::ldexp(static_cast<double>(mantissa), ref_min_exponent(f) - f.mantissa_bits);
  } else {
    const int bias = (1 << (f.exponent_bits - 1)) - 1;
    value = std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissa_bits),
                       static_cast<int>(exponent_field) - bias);
  }
  return negative ? -value : value;
}

}  // namespace mixprec::test

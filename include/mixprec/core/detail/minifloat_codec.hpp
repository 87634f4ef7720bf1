// Bit-exact, constexpr conversions between IEEE binary32/binary64 and the narrow
// floating formats (binary16, bfloat16, OCP float8 E4M3FN and E5M2).
//
// One generic routine serves every format, so the rounding rule (round to nearest,
// ties to even) is written once. The SIMD kernels must agree with it bit for bit.
#pragma once

#include <bit>
#include <cstdint>

namespace mixprec {

/// What a narrowing conversion does with a finite value beyond the format's range
/// (and with an infinity, for formats that have none).
enum class overflow_mode {
  ieee,      ///< infinity where the format has one, NaN otherwise (float8_e4m3fn)
  saturate,  ///< clamp to the largest finite value of the same sign
};

namespace detail {

/// Describes a binary floating format with an implicit leading bit.
struct minifloat_format {
  int exponent_bits;
  int mantissa_bits;
  /// IEEE-like formats reserve the top exponent for inf/NaN. E4M3FN instead uses it
  /// for finite values and keeps only the all-ones pattern as NaN.
  bool has_infinity;

  constexpr int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  constexpr int min_exponent() const { return 1 - bias(); }  // of the smallest normal
  constexpr std::uint32_t exponent_mask() const {
    return ((1u << exponent_bits) - 1u) << mantissa_bits;
  }
  constexpr std::uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
  constexpr std::uint32_t max_finite() const {
    return has_infinity ? exponent_mask() - 1u : sign_bit() - 2u;
  }
  constexpr std::uint32_t infinity() const { return exponent_mask(); }
  constexpr std::uint32_t quiet_nan() const {
    return has_infinity ? exponent_mask() | (1u << (mantissa_bits - 1)) : sign_bit() - 1u;
  }
};

inline constexpr minifloat_format binary16_format{5, 10, true};
inline constexpr minifloat_format bfloat16_format{8, 7, true};
inline constexpr minifloat_format e4m3fn_format{4, 3, false};
inline constexpr minifloat_format e5m2_format{5, 2, true};

/// A finite, non-zero magnitude `significand * 2^lsb_exponent` (significand < 2^53).
struct exact_magnitude {
  std::uint64_t significand;
  int lsb_exponent;
};

/// Rounds a finite magnitude to the format, ties to even; returns the encoding without
/// the sign. Results beyond the largest finite value are resolved by `overflow`.
constexpr std::uint32_t round_magnitude(minifloat_format f, exact_magnitude v, overflow_mode overflow) {
  const int top_bit = static_cast<int>(std::bit_width(v.significand)) - 1;
  const int exponent = top_bit + v.lsb_exponent;  // floor(log2(value))
  // Exponent of the format's unit in the last place at this magnitude.
  const int target_lsb = (exponent < f.min_exponent() ? f.min_exponent() : exponent) - f.mantissa_bits;
  const int shift = target_lsb - v.lsb_exponent;

  std::uint64_t units;  // value / 2^target_lsb, rounded
  if (shift <= 0) {
    units = v.significand << -shift;
  } else if (shift > top_bit + 1) {
    units = 0;  // below half an ulp
  } else {
    units = v.significand >> shift;
    const std::uint64_t remainder = v.significand & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (remainder > half || (remainder == half && (units & 1u))) ++units;
  }
  // One formula covers normals and subnormals; a rounding carry moves into the exponent.
  const std::int64_t encoding =
      (static_cast<std::int64_t>(target_lsb + f.mantissa_bits + f.bias() - 1) << f.mantissa_bits) +
      static_cast<std::int64_t>(units);
  if (encoding > static_cast<std::int64_t>(f.max_finite())) {
    if (overflow == overflow_mode::saturate) return f.max_finite();
    return f.has_infinity ? f.infinity() : f.quiet_nan();
  }
  return static_cast<std::uint32_t>(encoding);
}

/// NaN payloads keep their top bits; the result is always a quiet NaN.
constexpr std::uint32_t encode_nan(minifloat_format f, std::uint64_t payload, int payload_bits) {
  if (!f.has_infinity) return f.quiet_nan();
  return f.quiet_nan() | static_cast<std::uint32_t>(payload >> (payload_bits - f.mantissa_bits));
}

constexpr std::uint32_t encode_infinity(minifloat_format f, overflow_mode overflow) {
  if (overflow == overflow_mode::saturate) return f.max_finite();
  return f.has_infinity ? f.infinity() : f.quiet_nan();
}

constexpr std::uint32_t encode_from_float(minifloat_format f, float value,
                                          overflow_mode overflow = overflow_mode::ieee) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (bits >> 31) ? f.sign_bit() : 0u;
  const std::uint32_t exponent_field = (bits >> 23) & 0xFFu;
  const std::uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent_field == 0xFFu) {
    return sign | (mantissa ? encode_nan(f, mantissa, 23) : encode_infinity(f, overflow));
  }
  if (exponent_field == 0 && mantissa == 0) return sign;
  const exact_magnitude magnitude{
      exponent_field ? (mantissa | 0x800000u) : mantissa,
      static_cast<int>(exponent_field ? exponent_field : 1u) - 127 - 23};
  return sign | round_magnitude(f, magnitude, overflow);
}

constexpr std::uint32_t encode_from_double(minifloat_format f, double value,
                                           overflow_mode overflow = overflow_mode::ieee) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(value);
  const std::uint32_t sign = (bits >> 63) ? f.sign_bit() : 0u;
  const std::uint64_t exponent_field = (bits >> 52) & 0x7FFu;
  const std::uint64_t mantissa = bits & 0xFFFFFFFFFFFFFull;
  if (exponent_field == 0x7FFu) {
    return sign | (mantissa ? encode_nan(f, mantissa, 52) : encode_infinity(f, overflow));
  }
  if (exponent_field == 0 && mantissa == 0) return sign;
  const exact_magnitude magnitude{
      exponent_field ? (mantissa | (std::uint64_t{1} << 52)) : mantissa,
      static_cast<int>(exponent_field ? exponent_field : 1u) - 1023 - 52};
  return sign | round_magnitude(f, magnitude, overflow);
}

/// Exact widening to binary32 (every narrow format here is a subset of it).
constexpr float decode_to_float(minifloat_format f, std::uint32_t encoding) {
  const std::uint32_t sign = (encoding & f.sign_bit()) ? 0x80000000u : 0u;
  const std::uint32_t magnitude = encoding & (f.sign_bit() - 1u);
  const std::uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1u);
  const std::uint32_t exponent_field = magnitude >> f.mantissa_bits;
  if (f.has_infinity ? exponent_field == (1u << f.exponent_bits) - 1u : magnitude == f.quiet_nan()) {
    const std::uint32_t payload = f.has_infinity ? mantissa << (23 - f.mantissa_bits) : 0x400000u;
    return std::bit_cast<float>(sign | 0x7F800000u | payload);
  }
  if (magnitude == 0) return std::bit_cast<float>(sign);
  const std::uint32_t significand = exponent_field ? (mantissa | (1u << f.mantissa_bits)) : mantissa;
  const int lsb_exponent = static_cast<int>(exponent_field ? exponent_field : 1u) - f.bias() - f.mantissa_bits;
  const int top_bit = static_cast<int>(std::bit_width(significand)) - 1;
  const int exponent = top_bit + lsb_exponent;
  if (exponent >= -126) {
    const std::uint32_t fraction = (significand << (23 - top_bit)) & 0x7FFFFFu;
    return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(exponent + 127) << 23) | fraction);
  }
  return std::bit_cast<float>(sign | (significand << (lsb_exponent + 149)));  // binary32 subnormal
}

}  // namespace detail
}  // namespace mixprec

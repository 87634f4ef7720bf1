// OCP 8-bit floats.
//
// float8_e4m3fn: 4 exponent bits (bias 7), 3 mantissa bits, max 448, no infinities,
//   NaN = 0x7F/0xFF. Out-of-range values become NaN, or ±448 with overflow_mode::saturate
//   (what quantization wants: `float8_e4m3fn(x, overflow_mode::saturate)`).
// float8_e5m2: 5 exponent bits (bias 15), 2 mantissa bits, max 57344, IEEE inf and NaN.
#pragma once

#include <cstdint>

#include <mixprec/core/detail/narrow_float.hpp>

namespace mixprec {

struct float8_e4m3fn : detail::narrow_float<float8_e4m3fn, detail::e4m3fn_format, std::uint8_t> {
  using narrow_float::narrow_float;
};

struct float8_e5m2 : detail::narrow_float<float8_e5m2, detail::e5m2_format, std::uint8_t> {
  using narrow_float::narrow_float;
};

static_assert(sizeof(float8_e4m3fn) == 1 && std::is_trivially_copyable_v<float8_e4m3fn>);
static_assert(sizeof(float8_e5m2) == 1 && std::is_trivially_copyable_v<float8_e5m2>);

}  // namespace mixprec

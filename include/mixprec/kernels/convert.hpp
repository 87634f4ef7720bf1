// kernels::convert: vectorized, correctly rounded dtype conversion of a whole span, the dtypes
// deduced from the arguments (or named: convert<float, bfloat16>(x, y)).
//
//   std::vector<float> x(n);  std::vector<bfloat16> y(n);
//   kernels::convert(x, y);
//   kernels::convert(x, q, overflow_mode::saturate);   // q: std::vector<float8_e4m3fn>
//
// Pairs with a Highway kernel (dispatched to the best target): float <-> bfloat16, float16,
// float8_e4m3fn, float8_e5m2; double -> float; bfloat16 <-> float16. Every other pair of dtypes
// runs a scalar loop of cast<To>, which rounds the same way. Results are bit-identical to
// cast<To> on every target.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/kernels/detail/argument_checks.hpp>
#include <mixprec/kernels/detail/convert_entry_points.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec {

namespace kernels {

template <class From, class To>
  requires DType<From> && DType<To>
void convert(std::span<const From> from, std::span<To> to, overflow_mode overflow = overflow_mode::ieee) {
  mixprec::detail::check_same_size(from.size(), to.size(), "convert");
  namespace k = kernels::detail;
  const std::size_t n = from.size();
  const bool saturate = overflow == overflow_mode::saturate;
  if constexpr (std::is_same_v<From, To>) {
    std::copy(from.begin(), from.end(), to.begin());
  } else if constexpr (k::has_saturating_convert_kernel<From, To>) {
    k::convert(from.data(), to.data(), n, saturate);
  } else if constexpr (k::has_convert_kernel<From, To>) {
    // These kernels overflow to inf: saturating to bfloat16 or float16 from a wider range runs the
    // cast instead (float16's finite range fits in bfloat16's: its infinities are fixed up below).
    if constexpr (std::is_constructible_v<To, float, overflow_mode> &&
                  !(std::is_same_v<From, float16> && std::is_same_v<To, bfloat16>)) {
      if (saturate) {
        for (std::size_t i = 0; i < n; ++i) to[i] = To(static_cast<float>(from[i]), overflow);
        return;
      }
    }
    k::convert(from.data(), to.data(), n);
    if constexpr (std::is_same_v<From, float16> && std::is_same_v<To, bfloat16>) {
      if (saturate)  // every finite float16 fits: only the infinities saturate, as the cast does
        for (To& v : to)
          if (std::isinf(static_cast<float>(v))) v = To(static_cast<float>(v), overflow);
    }
    if constexpr (std::is_same_v<From, double> && std::is_same_v<To, float>) {
      if (saturate)  // beyond float's range, infinities included: the largest float of the sign, as every pair does
        for (float& v : to)
          if (std::isinf(v)) v = std::copysign(std::numeric_limits<float>::max(), v);
    }
  } else if constexpr (std::is_constructible_v<To, double, overflow_mode>) {
    for (std::size_t i = 0; i < n; ++i) to[i] = To(static_cast<double>(cast<double>(from[i])), overflow);
  } else {
    for (std::size_t i = 0; i < n; ++i) to[i] = cast<To>(from[i]);
  }
}

/// convert of any contiguous ranges (std::vector, std::array, spans), their dtypes deduced.
template <detail::input_range From, detail::output_range To>
  requires DType<detail::range_element_t<From>> && DType<detail::range_element_t<To>>
void convert(const From& from, To&& to, overflow_mode overflow = overflow_mode::ieee) {
  kernels::convert(detail::input_span(from), detail::output_span(std::forward<To>(to)), overflow);
}

/// Keras' int8 quantization of a span: to[i] = clamp(round_half_even(from[i] * scale), -127, 127).
/// NaN gives 0.
// (A template only so that a TU compiles its kernel, for every target, where it calls it.)
template <class Deferred = void>
void quantize_int8(std::span<const float> from, float scale, std::span<std::int8_t> to) {
  mixprec::detail::check_same_size(from.size(), to.size(), "quantize_int8");
  detail::quantize_f32_to_i8(from.data(), scale, to.data(), from.size());
}

}  // namespace kernels

// The names of the previous release, kept for one more: mixprec::convert is now kernels::convert.
template <class From, class To>
  requires DType<From> && DType<To>
[[deprecated("use mixprec::kernels::convert")]] void convert(std::span<const From> from, std::span<To> to,
                                                            overflow_mode overflow = overflow_mode::ieee) {
  kernels::convert(from, to, overflow);
}
template <class Deferred = void>
[[deprecated("use mixprec::kernels::quantize_int8")]] void quantize_int8(std::span<const float> from, float scale,
                                                                        std::span<std::int8_t> to) {
  kernels::quantize_int8(from, scale, to);
}

}  // namespace mixprec

#include <mixprec/kernels/detail/default_implementation.hpp>

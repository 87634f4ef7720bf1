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
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/kernels/detail/convert_entry_points.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec {

namespace detail {
inline void check_same_size(std::size_t from, std::size_t to, const char* what) {
  if (from != to)
    throw std::invalid_argument(std::string(what) + ": the input has " + std::to_string(from) +
                                " elements but the output has " + std::to_string(to) + "; they must match.");
}

/// rows x cols layouts: cols > 0 and the size a multiple of it.
inline void check_rows(std::size_t size, std::size_t cols, const char* what) {
  if (cols == 0) throw std::invalid_argument(std::string(what) + ": cols must be positive, got 0.");
  if (size % cols != 0)
    throw std::invalid_argument(std::string(what) + ": the size " + std::to_string(size) +
                                " is not a multiple of cols = " + std::to_string(cols) + ".");
}

/// `rows` rows of `row_length` elements, each starting `row_stride` after the previous one, lie
/// inside `size` elements (checked without overflow): row_length > 0, and rows > 1 needs
/// row_stride >= row_length (rows apart).
inline void check_strided_rows(std::size_t size, std::size_t rows, std::size_t row_length, std::size_t row_stride,
                               const char* what, const char* name) {
  if (rows > 1 && row_stride < row_length)
    throw std::invalid_argument(std::string(what) + ": " + name + "'s row stride " + std::to_string(row_stride) +
                                " is shorter than a row (" + std::to_string(row_length) + ").");
  const bool fits = rows == 0 || (size >= row_length && (rows == 1 || (size - row_length) / (rows - 1) >= row_stride));
  if (!fits)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(rows) + " rows of " +
                                std::to_string(row_length) + " elements, " + std::to_string(row_stride) +
                                " apart, do not fit in " + name + "'s " + std::to_string(size) + " elements.");
}

/// Whether the memory of `a` and `b` shares a byte (an empty span overlaps nothing).
template <class A, class B>
bool overlap(std::span<A> a, std::span<B> b) {
  const auto a_bytes = std::as_bytes(a);
  const auto b_bytes = std::as_bytes(b);
  const std::less<const std::byte*> before;
  return !a_bytes.empty() && !b_bytes.empty() && before(a_bytes.data(), b_bytes.data() + b_bytes.size()) &&
         before(b_bytes.data(), a_bytes.data() + a_bytes.size());
}

/// Throws unless the memory of `a` and `b` lies apart: a kernel would read an input after
/// writing an output over it.
template <class A, class B>
void check_disjoint(std::span<A> a, std::span<B> b, const char* what, const char* a_name, const char* b_name) {
  if (overlap(a, b))
    throw std::invalid_argument(std::string(what) + ": " + a_name + " and " + b_name + " overlap; they must lie apart.");
}
}  // namespace detail

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
inline void quantize_int8(std::span<const float> from, float scale, std::span<std::int8_t> to) {
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
[[deprecated("use mixprec::kernels::quantize_int8")]] inline void quantize_int8(std::span<const float> from,
                                                                               float scale,
                                                                               std::span<std::int8_t> to) {
  kernels::quantize_int8(from, scale, to);
}

}  // namespace mixprec

#include <mixprec/kernels/detail/default_implementation.hpp>

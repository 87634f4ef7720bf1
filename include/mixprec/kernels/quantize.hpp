// The kernels of quantized Dense layers: int8 (Keras 3's Dense.quantize("int8")) and the float8
// quantize-dequantize of delayed scaling (Dense.quantize("float8")):
//
//   // y (batch x units) = x (batch x inputs) * w^T, w stored units x inputs, quantized per unit:
//   kernels::quantize_rows(w, units, inputs, w_q, w_scales);                // once
//   kernels::quantize_rows(x, batch, inputs, x_q, x_scales);                // every call
//   kernels::gemm(transpose::no, transpose::yes, batch, units, inputs, x_q.data(), inputs,
//                 w_q.data(), inputs, acc.data(), units);                   // exact int32
//   kernels::dequantize_rows(acc, batch, units, x_scales, w_scales, bias, y);
//
// quantize_rows is Keras' abs_max_quantize along the last axis; dequantize_rows divides by both
// scales and adds the bias. Both are Highway kernels with the same bits on every target. The
// int8 GEMM is exact: vpdpbusd where the CPU has AVX-512 VNNI or AVX-VNNI, pmaddwd on int16
// (Highway) on other x86 targets; all of them, and any thread count, give the same int32 result.
//
// Header-only mode compiles this family only in translation units that include this header (it
// is not part of the other kernel headers' implementation); single-TU mode compiles it with the
// rest in kernels/implementation.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/core/float8.hpp>
#include <mixprec/kernels/config.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/detail/int8_entry_points.hpp>
#include <mixprec/kernels/detail/quantize_rule.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec::kernels {

namespace detail {

inline void check_int8_depth(std::size_t k) {
  if (k > gemm_int8_max_depth)
    throw std::invalid_argument("gemm (int8): k = " + std::to_string(k) + " is too large: an int8 GEMM's sums fit " +
                                "in int32 only for k <= " + std::to_string(gemm_int8_max_depth) + ".");
}

/// rows x cols without overflow, for size checks.
inline std::size_t int8_elements(std::size_t rows, std::size_t cols, const char* what) {
  if (cols != 0 && rows > static_cast<std::size_t>(-1) / cols)
    throw std::invalid_argument(std::string(what) + ": rows x cols = " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " overflows std::size_t.");
  return rows * cols;
}

inline void check_int8_size(std::size_t size, std::size_t expected, const char* what, const char* name,
                            const char* shape) {
  if (size != expected)
    throw std::invalid_argument(std::string(what) + ": " + name + " has " + std::to_string(size) +
                                " elements but must have " + shape + " = " + std::to_string(expected) + ".");
}

}  // namespace detail

/// C = op(A) op(B) for int8 A and B, exactly, in int32: C is overwritten (not accumulated into).
/// Row-major like the float gemm: op(A) is m x k (A is m x k with leading dimension lda, or
/// k x m when transposed), op(B) is k x n, C is m x n with leading dimension ldc. Every int8
/// value (-128 included) gives the exact result, identical on every target and for any number
/// of threads. k == 0 sets C to zero without reading A or B. Throws std::invalid_argument
/// before anything is written if a leading dimension is shorter than its row, or if
/// k > 131071 (= detail::gemm_int8_max_depth: beyond it a sum of k products (-128)(-128) no
/// longer fits in int32).
// (The int8 overloads are templates only so that a TU compiles the int8 GEMM, for every target,
// where it calls it.)
template <class Deferred = void>
void gemm(transpose trans_a, transpose trans_b, std::size_t m, std::size_t n, std::size_t k, const std::int8_t* a,
          std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c, std::size_t ldc) {
  detail::gemm_operands(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  detail::check_int8_depth(k);
  detail::gemm_int8({trans_a == transpose::yes, trans_b == transpose::yes, m, n, k, a, lda, b, ldb, c, ldc});
}

/// The same on spans, which must hold every element gemm touches, A and B apart from C (else
/// std::invalid_argument).
template <class Deferred = void>
void gemm(transpose trans_a, transpose trans_b, std::size_t m, std::size_t n, std::size_t k,
          std::span<const std::int8_t> a, std::size_t lda, std::span<const std::int8_t> b, std::size_t ldb,
          std::span<std::int32_t> c, std::size_t ldc) {
  const detail::gemm_operands operands(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  detail::check_extent(operands.a, a.size());
  detail::check_extent(operands.b, b.size());
  detail::check_extent(operands.c, c.size());
  detail::check_apart_from_c(operands.a, a, operands.c, c);
  detail::check_apart_from_c(operands.b, b, operands.c, c);
  gemm<Deferred>(trans_a, trans_b, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
}

/// Keras' abs-max int8 quantization of each row of x (rows x cols, row-major, contiguous), as
/// keras.quantizers.abs_max_quantize(x, axis=-1) computes it:
///     amax_r    = max_j |x[r, j]|          exactly: in float for float and bfloat16, in double
///                                          for double; a NaN anywhere in the row makes it NaN
///     scales[r] = 127 / (amax_r + 1e-7)    float arithmetic (127.0f / (amax_r + 1e-7f)); for
///                                          double computed in double (1e-7 a double) and
///                                          rounded to float once
///     q[r, j]   = clamp(round_half_even(x[r, j] * scales[r]), -127, 127)
///                                          the product in float (double for double, the scale
///                                          widened); NaN gives 0
/// So a row with a NaN gets scale NaN (the canonical quiet NaN) and zeros; a row with an
/// infinity gets scale 0 and zeros; an all-zero row (or cols == 0) gets 127 / 1e-7 and zeros.
/// T is float, bfloat16 or double. Bit-identical on every target; large inputs are split by
/// rows across the GEMM thread pool. Throws std::invalid_argument (naming the sizes) unless x
/// and q hold rows x cols elements and scales rows, or if q or scales overlap x.
template <class T>
void quantize_rows(std::span<const T> x, std::size_t rows, std::size_t cols, std::span<std::int8_t> q,
                   std::span<float> scales) {
  static_assert(detail::has_int8_rows_kernel<T>,
                "mixprec::kernels::quantize_rows takes float, bfloat16 or double rows; convert the others first");
  const std::size_t elements = detail::int8_elements(rows, cols, "quantize_rows");
  detail::check_int8_size(x.size(), elements, "quantize_rows", "x", "rows x cols");
  detail::check_int8_size(q.size(), elements, "quantize_rows", "q", "rows x cols");
  detail::check_int8_size(scales.size(), rows, "quantize_rows", "scales", "rows");
  mixprec::detail::check_disjoint(x, std::span<const std::int8_t>(q), "quantize_rows", "x", "q");
  mixprec::detail::check_disjoint(x, std::span<const float>(scales), "quantize_rows", "x", "scales");
  mixprec::detail::check_disjoint(std::span<const std::int8_t>(q), std::span<const float>(scales), "quantize_rows",
                                  "q", "scales");
  if (rows == 0) return;
  detail::quantize_rows(x.data(), rows, cols, q.data(), scales.data());
}

/// The int8 Dense epilogue: from the int32 products acc = q_x q_w^T (rows x cols, row-major),
///     out[r, c] = T(float(acc[r, c]) / (row_scales[r] * col_scales[c]) + float(bias[c]))
/// in float32: the product of the scales rounded to float, then a true division (no
/// reciprocal), then the bias added (no fused multiply-add anywhere), then one rounding to T,
/// to nearest even. T is float or bfloat16; for double the same formula runs in double (the
/// scales widened). An empty `bias` means no bias term (nothing is added, so -0 stays -0). A
/// NaN result is the canonical quiet NaN. Bit-identical on every target; large inputs are split
/// by rows across the GEMM thread pool. Throws std::invalid_argument (naming the sizes) unless
/// acc and out hold rows x cols elements, row_scales rows, col_scales cols and bias cols or
/// none, or if out overlaps an input.
template <class T>
void dequantize_rows(std::span<const std::int32_t> acc, std::size_t rows, std::size_t cols,
                     std::span<const float> row_scales, std::span<const float> col_scales, std::span<const T> bias,
                     std::span<T> out) {
  static_assert(detail::has_int8_rows_kernel<T>, "mixprec::kernels::dequantize_rows writes float, bfloat16 or double");
  const std::size_t elements = detail::int8_elements(rows, cols, "dequantize_rows");
  detail::check_int8_size(acc.size(), elements, "dequantize_rows", "acc", "rows x cols");
  detail::check_int8_size(out.size(), elements, "dequantize_rows", "out", "rows x cols");
  detail::check_int8_size(row_scales.size(), rows, "dequantize_rows", "row_scales", "rows");
  detail::check_int8_size(col_scales.size(), cols, "dequantize_rows", "col_scales", "cols");
  if (!bias.empty()) detail::check_int8_size(bias.size(), cols, "dequantize_rows", "bias", "cols (or none)");
  const std::span<const T> written(out);
  mixprec::detail::check_disjoint(acc, written, "dequantize_rows", "acc", "out");
  mixprec::detail::check_disjoint(row_scales, written, "dequantize_rows", "row_scales", "out");
  mixprec::detail::check_disjoint(col_scales, written, "dequantize_rows", "col_scales", "out");
  mixprec::detail::check_disjoint(bias, written, "dequantize_rows", "bias", "out");
  if (elements == 0) return;
  const T* bias_data = bias.empty() ? nullptr : bias.data();
  detail::dequantize_rows(acc.data(), rows, cols, row_scales.data(), col_scales.data(), bias_data, out.data());
}

/// Keras' float8 quantize_and_dequantize with a scale, in float32 (T float, bfloat16 or
/// float16; double computes in double, one element at a time), and max |x| in the same pass:
///     y[i] = T(F(clamp(x[i] / scale, -F_max, F_max)) * scale)
/// where F(...) rounds to F (float8_e4m3fn, max 448, or float8_e5m2, max 57344) to nearest even
/// and widens back exactly; one rounding to T at the end. A NaN stays NaN (canonical); an
/// infinity clips to +-F_max. Returns max |x[i]| as float (NaN if any element is NaN; 0 for an
/// empty x), what a float8 layer's amax history records. y may be x itself (in place), or must
/// not overlap it. Bit-identical on every target. std::invalid_argument if the sizes differ.
template <class F, class T>
float quantize_dequantize(std::span<const T> x, float scale, std::span<T> y) {
  static_assert(std::is_same_v<F, float8_e4m3fn> || std::is_same_v<F, float8_e5m2>,
                "mixprec::kernels::quantize_dequantize<F, T>: F is float8_e4m3fn or float8_e5m2");
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16> ||
                    std::is_same_v<T, double>,
                "mixprec::kernels::quantize_dequantize<F, T>: T is float, bfloat16, float16 or double");
  mixprec::detail::check_same_size(x.size(), y.size(), "quantize_dequantize");
  if (x.data() != y.data()) mixprec::detail::check_disjoint(x, std::span<const T>(y), "quantize_dequantize", "x", "y");
  if constexpr (detail::has_float8_rows_kernel<T>) {
    return detail::quantize_dequantize<F>(x.data(), x.size(), scale, y.data());
  } else {
    constexpr double limit = detail::float8_max_finite<F::format>();
    double amax = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      amax = std::isnan(v) || std::isnan(amax) ? std::numeric_limits<double>::quiet_NaN() : std::max(amax, std::abs(v));
      const double scaled = v / static_cast<double>(scale);
      y[i] = std::isnan(scaled) ? std::numeric_limits<double>::quiet_NaN()  // canonical, as the float kernels'
                                : cast<double>(cast<F>(std::clamp(scaled, -limit, limit))) * static_cast<double>(scale);
    }
    return static_cast<float>(amax);
  }
}

/// The quantization kernels on any contiguous ranges (std::vector, std::array, spans): T is the
/// element type of x (of out, for dequantize_rows), and the other arguments convert to spans
/// (an empty bias: {}). The dtypes without a kernel fail the static_asserts above.
template <detail::input_range X>
void quantize_rows(const X& x, std::size_t rows, std::size_t cols, std::span<std::int8_t> q, std::span<float> scales) {
  kernels::quantize_rows(detail::input_span(x), rows, cols, q, scales);
}
template <detail::output_range Out>
void dequantize_rows(std::span<const std::int32_t> acc, std::size_t rows, std::size_t cols,
                     std::span<const float> row_scales, std::span<const float> col_scales,
                     std::span<const detail::range_element_t<Out>> bias, Out&& out) {
  kernels::dequantize_rows(acc, rows, cols, row_scales, col_scales, bias, detail::output_span(std::forward<Out>(out)));
}
template <class F, detail::input_range X>
float quantize_dequantize(const X& x, float scale, std::span<detail::range_element_t<X>> y) {
  return kernels::quantize_dequantize<F>(detail::input_span(x), scale, y);
}

}  // namespace mixprec::kernels

// Header-only mode: the int8 kernels' per-target code and dispatch, compiled here (after the
// other kernels, whose implementation gemm.hpp brought in).
#ifndef MIXPREC_SEPARATE_KERNELS
#include <mixprec/kernels/detail/int8_implementation.hpp>
#endif

// Reductions over a span: finiteness, max |x|, float32 sums and dot products, the one-pass
// gradient unscaling of loss scaling, and running maxima and sums down the columns of a matrix.
//
//   std::vector<bfloat16> g = ...;
//   if (!kernels::unscale_and_check_finite(g, 1.0f / loss_scale)) skip_this_step();
//   float scale = 448.0f / kernels::amax(weights);
//
// The dtype is deduced from the arguments (spans, std::vectors, ...) or named: amax<float>(w).
//
// float, bfloat16 and float16 run Highway kernels (dispatched to the best target); every other
// floating dtype (double, float8_e4m3fn, float8_e5m2) runs a scalar loop with the same
// semantics. Every result is bit-identical on every target:
//  - all_finite and amax are exact.
//  - sum and dot accumulate in float32 in one fixed order that does not depend on the vector
//    width (kernels/detail/summation_order.hpp: 32 interleaved accumulators per chunk of 2048
//    elements, chunks summed pairwise), with every product rounded to float before it is added
//    (no fused multiply-add). For float8 the result is exactly sum<float> of the widened values;
//    double sums in double in the same order and rounds the result to float once.
//  - column_max is exact; column_sum adds each column in row order, one column per lane.
//  - A NaN result is the canonical quiet NaN.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/core/dtype.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/detail/reduce_entry_points.hpp>
#include <mixprec/kernels/detail/summation_order.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec::kernels {

namespace detail {
/// The dtype sums of T values accumulate in: double for double, float otherwise (column_max_backward
/// sums a window's gradient in it; the layers' products and gradients accumulate in it too).
template <class T>
using accumulator_t = std::conditional_t<std::is_same_v<T, double>, double, float>;
}  // namespace detail

/// Whether every element is finite (neither inf nor NaN). Stops reading at the first block that
/// holds a non-finite element, so a gradient that overflowed early is rejected quickly.
template <class T>
  requires FloatingDType<T>
bool all_finite(std::span<const T> x) {
  if constexpr (detail::has_reduce_kernel<T>) {
    return detail::all_finite(x.data(), x.size());
  } else {
    for (const T& value : x)
      if (!std::isfinite(static_cast<double>(value))) return false;
    return true;
  }
}

/// max |x[i]| as float (exact for every dtype but double, which rounds the maximum once).
/// If any element is NaN the result is NaN, as in a float8 scaling recipe that must notice a
/// broken tensor rather than skip it. An empty span gives +0.
template <class T>
  requires FloatingDType<T>
float amax(std::span<const T> x) {
  if constexpr (detail::has_reduce_kernel<T>) {
    return detail::amax(x.data(), x.size());
  } else {
    double largest = 0.0;
    for (const T& value : x) {
      const double magnitude = std::fabs(static_cast<double>(value));
      if (std::isnan(magnitude)) return std::numeric_limits<float>::quiet_NaN();
      if (magnitude > largest) largest = magnitude;
    }
    return static_cast<float>(largest);
  }
}

/// The sum of the elements, accumulated in float32 (double: in double) in the fixed order
/// described above. An empty span gives +0.
template <class T>
  requires FloatingDType<T>
float sum(std::span<const T> x) {
  if constexpr (detail::has_reduce_kernel<T>) {
    return detail::sum(x.data(), x.size());
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<float>(detail::ordered_sum<double>(x.size(), [&](std::size_t i) { return x[i]; }));
  } else {
    return detail::ordered_sum<float>(x.size(), [&](std::size_t i) { return static_cast<float>(x[i]); });
  }
}

/// sum(a[i] * b[i]), each product rounded to float32 (double: double) before it is added.
/// Throws std::invalid_argument if the sizes differ.
template <class T>
  requires FloatingDType<T>
float dot(std::span<const T> a, std::span<const T> b) {
  if (a.size() != b.size())
    throw std::invalid_argument("dot: the first operand has " + std::to_string(a.size()) +
                                " elements but the second has " + std::to_string(b.size()) +
                                "; they must match.");
  const std::size_t n = a.size();
  if constexpr (detail::has_reduce_kernel<T>) {
    return detail::dot(a.data(), b.data(), n);
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<float>(detail::ordered_sum<double>(n, [&](std::size_t i) { return a[i] * b[i]; }));
  } else {
    return detail::ordered_sum<float>(
        n, [&](std::size_t i) { return static_cast<float>(a[i]) * static_cast<float>(b[i]); });
  }
}

/// Loss scaling: multiplies every gradient by inv_scale in place and returns whether all results are finite, in one pass.
/// Each result is float(g) * inv_scale rounded once to T (double: computed in double); whether
/// it is finite is judged after that rounding, so a float16 product beyond 65504 counts as an
/// overflow. Every gradient is scaled even when an early one is not finite.
template <class T>
  requires FloatingDType<T>
bool unscale_and_check_finite(std::span<T> gradients, float inv_scale) {
  if constexpr (detail::has_reduce_kernel<T>) {
    return detail::unscale_and_check_finite(gradients.data(), gradients.size(), inv_scale);
  } else {
    bool finite = true;
    for (T& g : gradients) {
      if constexpr (std::is_same_v<T, double>) g *= static_cast<double>(inv_scale);
      else g = T(static_cast<float>(g) * inv_scale);
      finite = finite && std::isfinite(static_cast<double>(g));
    }
    return finite;
  }
}

/// A running maximum down the columns of a row-major matrix: for every row r of `rows`, in
/// order, maxima[c] = max(maxima[c], rows[r * cols + c]) with cols = maxima.size() (max pooling
/// folds each window into its output this way). NaN propagates: a NaN already in maxima stays,
/// and the first NaN met replaces a number, its bits kept; of equal values (-0 and +0) the
/// earlier stays. Exact, so bit-identical on every target. bfloat16 and float16 are compared
/// widened to float (exactly) and the maxima come back as convert<float, T> rounds them: their
/// own values, a NaN quiet (its sign kept). float, bfloat16 and float16 run a Highway kernel,
/// double a scalar loop. Throws std::invalid_argument unless rows.size() is a multiple of cols
/// (an empty maxima takes only empty rows) and the maxima lie apart from the rows.
template <class T>
  requires detail::has_reduce_kernel<T> || std::is_same_v<T, double>
void column_max(std::span<const T> rows, std::span<T> maxima) {
  const std::size_t cols = maxima.size();
  if (cols == 0 ? !rows.empty() : rows.size() % cols != 0)
    throw std::invalid_argument("column_max: the rows have " + std::to_string(rows.size()) +
                                " elements, which is not a multiple of the " + std::to_string(cols) + " maxima.");
  // Maxima written over rows not yet read gave other values on each target.
  mixprec::detail::check_disjoint(rows, std::span<const T>(maxima), "column_max", "rows", "maxima");
  if (rows.empty()) return;
  if constexpr (detail::has_reduce_kernel<T>) {
    detail::column_max(rows.data(), rows.size(), maxima.data(), cols);
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (detail::replaces_maximum(maxima[i % cols], rows[i])) maxima[i % cols] = rows[i];
  }
}

/// The adjoint of column_max over one window (max pooling's backward pass for one output
/// pixel): the window is `rows` rows of `row_length` elements, row r starting at element
/// r * row_stride of `window` and `window_gradient`; element i of a row belongs to column
/// i % cols, cols = maxima.size(). For every column, the first element of the window (rows in
/// order, then along the row) equal to maxima[c] (or NaN, where maxima[c] is NaN) gets
/// window_gradient += maxima_gradient[c]; every other element stays as it was. That element is
/// the one column_max returned, so each output's gradient reaches exactly one input. With
/// `maxima` empty, the maxima are found from the window first, as column_max finds them (the
/// same routing, without storing them); cols = maxima_gradient.size() then. Exact up to
/// the one add per element, so bit-identical on every target; windows of overlapping pools are
/// summed by calling it for each in turn. The gradient of a bfloat16 or float16 window is summed
/// in float (window_gradient is float; the values are compared widened to float). float,
/// bfloat16 and float16 run a Highway kernel, double a scalar loop. Throws std::invalid_argument
/// unless row_length is a positive multiple of cols, rows > 1 implies row_stride >= row_length,
/// `window` and `window_gradient` have the same size and hold the last row, maxima_gradient
/// matches maxima, and window_gradient overlaps none of the others.
template <class T>
  requires detail::has_reduce_kernel<T> || std::is_same_v<T, double>
void column_max_backward(std::span<const T> window, std::span<const T> maxima, std::span<const T> maxima_gradient,
                         std::span<detail::accumulator_t<T>> window_gradient, std::size_t rows,
                         std::size_t row_length, std::size_t row_stride) {
  const std::size_t cols = maxima.empty() ? maxima_gradient.size() : maxima.size();
  const auto fail = [](const std::string& why) { throw std::invalid_argument("column_max_backward: " + why); };
  if (cols == 0 || row_length == 0 || row_length % cols != 0)
    fail("rows of " + std::to_string(row_length) + " elements do not hold whole rows of the " + std::to_string(cols) +
         " maxima.");
  if (maxima_gradient.size() != cols)
    fail("maxima_gradient has " + std::to_string(maxima_gradient.size()) + " elements but there are " +
         std::to_string(cols) + " maxima.");
  if (window.size() != window_gradient.size())
    fail("window has " + std::to_string(window.size()) + " elements and window_gradient " +
         std::to_string(window_gradient.size()) + "; they must match.");
  mixprec::detail::check_strided_rows(window.size(), rows, row_length, row_stride, "column_max_backward", "window");
  mixprec::detail::check_disjoint(window, window_gradient, "column_max_backward", "window", "window_gradient");
  mixprec::detail::check_disjoint(maxima, window_gradient, "column_max_backward", "maxima", "window_gradient");
  mixprec::detail::check_disjoint(maxima_gradient, window_gradient, "column_max_backward", "maxima_gradient",
                                  "window_gradient");
  if (rows == 0) return;
  const T* given_maxima = maxima.empty() ? nullptr : maxima.data();
  if constexpr (detail::has_reduce_kernel<T>) {
    detail::column_max_backward(window.data(), given_maxima, maxima_gradient.data(), window_gradient.data(), cols,
                                rows, row_length, row_stride);
  } else {
    detail::column_max_backward_rule(window.data(), given_maxima, maxima_gradient.data(), window_gradient.data(),
                                     cols, 0, cols, rows, row_length, row_stride);
  }
}

namespace detail {

/// column_sum's arguments: x is rows x cols and sums has one entry per column, apart from x.
template <class In, class Out>
void check_column_sum(std::span<const In> x, std::span<Out> sums, std::size_t cols) {
  mixprec::detail::check_rows(x.size(), cols, "column_sum");
  if (sums.size() != cols)
    throw std::invalid_argument("column_sum: sums has " + std::to_string(sums.size()) + " elements but cols = " +
                                std::to_string(cols) + "; they must match.");
  mixprec::detail::check_disjoint(x, sums, "column_sum", "x", "sums");
}

}  // namespace detail

/// Column sums of the row-major rows x cols matrix x, the bias gradient of a Dense layer:
/// sums[c] = s_c, or sums[c] += s_c with `accumulate`, where s_c adds x[c], x[cols + c],
/// x[2 cols + c], ... in row order to a float32 accumulator that starts at +0 (so no rows give
/// +0), each element widened exactly to float. Every column is a plain sequential sum (the
/// kernel runs one column per lane), so every target returns the same bits; a NaN result is the
/// canonical quiet NaN. Throws std::invalid_argument if cols == 0, x.size() is not a multiple of
/// cols, sums.size() != cols, or sums overlaps x.
template <class T>
  requires detail::has_reduce_kernel<T>
void column_sum(std::span<const T> x, std::span<float> sums, std::size_t cols, bool accumulate = false) {
  detail::check_column_sum(x, sums, cols);
  detail::column_sum(x.data(), x.size(), sums.data(), cols, accumulate);
}

/// column_sum for a float64 layer: the same sums, in row order, in double.
inline void column_sum(std::span<const double> x, std::span<double> sums, std::size_t cols, bool accumulate = false) {
  detail::check_column_sum(x, sums, cols);
  for (std::size_t c = 0; c < cols; ++c) {
    double total = 0.0;
    for (std::size_t i = c; i < x.size(); i += cols) total += x[i];
    sums[c] = accumulate ? sums[c] + total : total;
  }
}

/// The reductions of any contiguous ranges (std::vector, std::array, spans), their dtype deduced.
template <detail::input_range R>
  requires FloatingDType<detail::range_element_t<R>>
bool all_finite(const R& x) {
  return kernels::all_finite(detail::input_span(x));
}
template <detail::input_range R>
  requires FloatingDType<detail::range_element_t<R>>
float amax(const R& x) {
  return kernels::amax(detail::input_span(x));
}
template <detail::input_range R>
  requires FloatingDType<detail::range_element_t<R>>
float sum(const R& x) {
  return kernels::sum(detail::input_span(x));
}
template <detail::input_range A, detail::input_range B>
  requires FloatingDType<detail::range_element_t<A>> &&
           std::is_same_v<detail::range_element_t<A>, detail::range_element_t<B>>
float dot(const A& a, const B& b) {
  return kernels::dot(detail::input_span(a), detail::input_span(b));
}
template <detail::output_range R>
  requires FloatingDType<detail::range_element_t<R>>
bool unscale_and_check_finite(R&& gradients, float inv_scale) {
  return kernels::unscale_and_check_finite(detail::output_span(std::forward<R>(gradients)), inv_scale);
}
template <detail::input_range R, detail::output_range M>
  requires(detail::has_reduce_kernel<detail::range_element_t<M>> ||
           std::is_same_v<detail::range_element_t<M>, double>) &&
          std::is_same_v<detail::range_element_t<R>, detail::range_element_t<M>>
void column_max(const R& rows, M&& maxima) {
  kernels::column_max(detail::input_span(rows), detail::output_span(std::forward<M>(maxima)));
}
template <detail::input_range W>
  requires detail::has_reduce_kernel<detail::range_element_t<W>> || std::is_same_v<detail::range_element_t<W>, double>
void column_max_backward(const W& window, std::span<const detail::range_element_t<W>> maxima,
                         std::span<const detail::range_element_t<W>> maxima_gradient,
                         std::span<detail::accumulator_t<detail::range_element_t<W>>> window_gradient,
                         std::size_t rows, std::size_t row_length, std::size_t row_stride) {
  kernels::column_max_backward(detail::input_span(window), maxima, maxima_gradient, window_gradient, rows, row_length,
                               row_stride);
}
template <detail::input_range R, detail::output_range S>
  requires(std::is_same_v<detail::range_element_t<S>, float> &&
           detail::has_reduce_kernel<detail::range_element_t<R>>) ||
          (std::is_same_v<detail::range_element_t<S>, double> && std::is_same_v<detail::range_element_t<R>, double>)
void column_sum(const R& x, S&& sums, std::size_t cols, bool accumulate = false) {
  kernels::column_sum(detail::input_span(x), detail::output_span(std::forward<S>(sums)), cols, accumulate);
}

}  // namespace mixprec::kernels

namespace mixprec {

// The names of the previous release, kept for one more: mixprec::amax (...) is now kernels::amax.
template <class T>
  requires FloatingDType<T>
[[deprecated("use mixprec::kernels::all_finite")]] bool all_finite(std::span<const T> x) {
  return kernels::all_finite(x);
}
template <class T>
  requires FloatingDType<T>
[[deprecated("use mixprec::kernels::amax")]] float amax(std::span<const T> x) {
  return kernels::amax(x);
}
template <class T>
  requires FloatingDType<T>
[[deprecated("use mixprec::kernels::sum")]] float sum(std::span<const T> x) {
  return kernels::sum(x);
}
template <class T>
  requires FloatingDType<T>
[[deprecated("use mixprec::kernels::dot")]] float dot(std::span<const T> a, std::span<const T> b) {
  return kernels::dot(a, b);
}
template <class T>
  requires FloatingDType<T>
[[deprecated("use mixprec::kernels::unscale_and_check_finite")]] bool unscale_and_check_finite(std::span<T> gradients,
                                                                                               float inv_scale) {
  return kernels::unscale_and_check_finite(gradients, inv_scale);
}
template <class T>
  requires std::is_same_v<T, float> || std::is_same_v<T, double>
[[deprecated("use mixprec::kernels::column_max")]] void column_max(std::span<const T> rows, std::span<T> maxima) {
  kernels::column_max(rows, maxima);
}
template <class T>
  requires std::is_same_v<T, float> || std::is_same_v<T, double>
[[deprecated("use mixprec::kernels::column_max_backward")]] void column_max_backward(
    std::span<const T> window, std::span<const T> maxima, std::span<const T> maxima_gradient,
    std::span<T> window_gradient, std::size_t rows, std::size_t row_length, std::size_t row_stride) {
  kernels::column_max_backward(window, maxima, maxima_gradient, window_gradient, rows, row_length, row_stride);
}
template <class T>
  requires std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>
[[deprecated("use mixprec::kernels::column_sum")]] void column_sum(std::span<const T> x, std::span<float> sums,
                                                                  std::size_t cols, bool accumulate = false) {
  kernels::column_sum(x, sums, cols, accumulate);
}
[[deprecated("use mixprec::kernels::column_sum")]] inline void column_sum(std::span<const double> x,
                                                                         std::span<double> sums, std::size_t cols,
                                                                         bool accumulate = false) {
  kernels::column_sum(x, sums, cols, accumulate);
}

}  // namespace mixprec

#include <mixprec/kernels/detail/default_implementation.hpp>

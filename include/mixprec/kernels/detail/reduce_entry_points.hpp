// Reduction entry points: plain pointers and sizes, no Highway types. Each call dispatches to
// the best compiled target for this CPU (or the one forced with kernels::target_scope).
// The typed public API is reduce.hpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/config.hpp>

namespace mixprec::kernels::detail {

/// The dtypes the reduction kernels take (reduce.hpp runs scalar loops for the others). The
/// entry points below are templates over them in both modes: header-only mode compiles a dtype's
/// kernel where it is called; in single-TU mode the kernels' translation unit instantiates them
/// for each of these dtypes (dispatch_reduce.hpp) and every other one sees these declarations.
template <class T>
inline constexpr bool has_reduce_kernel =
    std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

/// Whether no element is inf or NaN; stops reading at the first block that has one.
template <class T>
bool all_finite(const T* x, std::size_t n);
/// max |x[i]|, exactly; NaN if any element is NaN; +0 for n == 0.
template <class T>
float amax(const T* x, std::size_t n);
/// Float sums in the order of summation_order.hpp.
template <class T>
float sum(const T* x, std::size_t n);
/// Sums of float products (each rounded to float), in the order of summation_order.hpp.
template <class T>
float dot(const T* a, const T* b, std::size_t n);
/// g[i] = cast<T>(float(g[i]) * inv_scale); returns whether every result is finite.
template <class T>
bool unscale_and_check_finite(T* g, std::size_t n, float inv_scale);
/// sums[c] = (or +=) the float32 sum of x[r * cols + c] over the rows, each column added in row
/// order from +0; n is a multiple of cols, cols > 0, sums does not overlap x.
template <class T>
void column_sum(const T* x, std::size_t n, float* sums, std::size_t cols, bool accumulate);

/// maxima[c] = running maximum of maxima[c] and rows[r * cols + c] over the rows, in order,
/// compared in float; n is a multiple of cols, cols > 0.
template <class T>
void column_max(const T* rows, std::size_t n, T* maxima, std::size_t cols);
/// The adjoint of column_max over a window of `rows` rows of `row_length` elements (a multiple
/// of cols), row r starting at element r * row_stride of x and dx: for every column c, the first
/// element of the window (in row order) equal to maxima[c], or NaN where maxima[c] is NaN, gets
/// dx += dmaxima[c] (in float); every other element of dx stays as it was. maxima null: found
/// from the window first, as column_max finds them.
template <class T>
void column_max_backward(const T* x, const T* maxima, const T* dmaxima, float* dx, std::size_t cols, std::size_t rows,
                         std::size_t row_length, std::size_t row_stride);
/// Batch normalization over the columns of a row-major n / cols x cols matrix (n a multiple of
/// cols, cols > 0), with the arithmetic of batch_norm_rule.hpp: the column means and biased
/// variances (double); y = x * scale + shift per column (y may be x); the column sums of dy and
/// dy * x_hat (double); the input gradient dx (dx may be dy).
MIXPREC_KERNEL_ENTRY void batch_norm_moments_f32(const float* x, std::size_t n, std::size_t cols, double* mean,
                                               double* variance);
MIXPREC_KERNEL_ENTRY void scale_shift_columns_f32(const float* x, std::size_t n, std::size_t cols, const float* scale,
                                                const float* shift, float* y);
MIXPREC_KERNEL_ENTRY void batch_norm_backward_sums_f32(const float* x, const float* dy, std::size_t n, std::size_t cols,
                                                     const float* mean, const float* inverse_deviation, double* sum_dy,
                                                     double* sum_dy_x_hat);
MIXPREC_KERNEL_ENTRY void batch_norm_input_gradient_f32(const float* x, const float* dy, std::size_t n, std::size_t cols,
                                                      const float* mean, const float* inverse_deviation,
                                                      const float* factor, const float* mean_dy,
                                                      const float* mean_dy_x_hat, float* dx);

/// One step of column_max's running maximum: whether `value` takes the place of `largest`. A
/// NaN already held stays; a NaN met replaces a number; a tie keeps the earlier value. The
/// Highway kernel makes the same choice lane by lane, so every target picks the same bits.
template <class T>
bool replaces_maximum(T largest, T value) {
  return !std::isnan(largest) && (std::isnan(value) || value > largest);
}

/// Whether `value` is where column_max_backward routes the gradient of `maximum`: the value the
/// maximum was taken from (equal, or both NaN).
template <class T>
bool holds_maximum(T value, T maximum) {
  return value == maximum || (std::isnan(value) && std::isnan(maximum));
}

/// column_max_backward's rule for columns [first, end): each column's gradient goes to the
/// first element of the window that holds its maximum, compared and added in A (float, or double
/// for double); without maxima (null), the maximum is found first by replaces_maximum. The
/// kernel's scalar tail and the double path both run it.
template <class T, class A>
void column_max_backward_rule(const T* x, const T* maxima, const T* dmaxima, A* dx, std::size_t cols,
                              std::size_t first, std::size_t end, std::size_t rows, std::size_t row_length,
                              std::size_t row_stride) {
  for (std::size_t j = first; j < end; ++j) {
    A maximum = -std::numeric_limits<A>::infinity();
    if (maxima != nullptr) maximum = static_cast<A>(maxima[j]);
    else
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t at = r * row_stride + j; at < r * row_stride + row_length; at += cols)
          if (replaces_maximum(maximum, static_cast<A>(x[at]))) maximum = static_cast<A>(x[at]);
    bool routed = false;
    for (std::size_t r = 0; r < rows && !routed; ++r)
      for (std::size_t at = r * row_stride + j; at < r * row_stride + row_length && !routed; at += cols)
        if (holds_maximum(static_cast<A>(x[at]), maximum)) {
          dx[at] += static_cast<A>(dmaxima[j]);
          routed = true;
        }
  }
}

}  // namespace mixprec::kernels::detail

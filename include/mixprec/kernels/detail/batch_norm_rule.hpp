// Batch normalization's arithmetic, one element at a time, for columns [first, end) of a
// row-major rows x cols matrix: what the Highway kernels compute lane by lane (their scalar tails
// call these), and the float64 path of kernels/normalization.hpp. Statistics accumulate in double,
// each column in row order; per-element work is float (or double) without fused multiply-adds.
// A NaN result is the canonical quiet NaN (which NaN an operation returns depends on the
// instruction set), so every target gives the same bits.
#pragma once

#include <cstddef>
#include <limits>

namespace mixprec::kernels::detail {

template <class T>
T canonical(T value) {
  return value == value ? value : std::numeric_limits<T>::quiet_NaN();
}

/// mean[c] = the column's sum / rows; variance[c] = the sum of (x - mean)^2 / rows (biased),
/// both accumulated in double in row order.
template <class T>
void batch_norm_moments_rule(const T* x, std::size_t n, std::size_t cols, std::size_t first, std::size_t end,
                             double* mean, double* variance) {
  const auto rows = static_cast<double>(n / cols);
  for (std::size_t c = first; c < end; ++c) {
    double sum = 0.0;
    for (std::size_t i = c; i < n; i += cols) sum += static_cast<double>(x[i]);
    const double m = sum / rows;
    double squares = 0.0;
    for (std::size_t i = c; i < n; i += cols) {
      const double d = static_cast<double>(x[i]) - m;
      squares += d * d;
    }
    mean[c] = canonical(m);
    variance[c] = canonical(squares / rows);
  }
}

/// y = x * scale[c] + shift[c] (a multiply, then an add).
template <class T>
void scale_shift_rule(const T* x, std::size_t n, std::size_t cols, std::size_t first, std::size_t end,
                      const T* scale, const T* shift, T* y) {
  for (std::size_t row = 0; row < n; row += cols)
    for (std::size_t c = first; c < end; ++c) y[row + c] = canonical(x[row + c] * scale[c] + shift[c]);
}

/// With x_hat = (x - mean[c]) * inverse_deviation[c] (in T): sum_dy[c] = the column's sum of dy
/// and sum_dy_x_hat[c] = its sum of dy * x_hat, both in double, in row order.
template <class T>
void batch_norm_backward_sums_rule(const T* x, const T* dy, std::size_t n, std::size_t cols, std::size_t first,
                                   std::size_t end, const T* mean, const T* inverse_deviation, double* sum_dy,
                                   double* sum_dy_x_hat) {
  for (std::size_t c = first; c < end; ++c) {
    double s = 0.0, p = 0.0;
    for (std::size_t i = c; i < n; i += cols) {
      const T x_hat = (x[i] - mean[c]) * inverse_deviation[c];
      s += static_cast<double>(dy[i]);
      p += static_cast<double>(dy[i]) * static_cast<double>(x_hat);
    }
    sum_dy[c] = canonical(s);
    sum_dy_x_hat[c] = canonical(p);
  }
}

/// dx = factor[c] * ((dy - mean_dy[c]) - x_hat * mean_dy_x_hat[c]), x_hat as above: the input
/// gradient of a normalization by batch statistics.
template <class T>
void batch_norm_input_gradient_rule(const T* x, const T* dy, std::size_t n, std::size_t cols, std::size_t first,
                                    std::size_t end, const T* mean, const T* inverse_deviation, const T* factor,
                                    const T* mean_dy, const T* mean_dy_x_hat, T* dx) {
  for (std::size_t row = 0; row < n; row += cols)
    for (std::size_t c = first; c < end; ++c) {
      const T x_hat = (x[row + c] - mean[c]) * inverse_deviation[c];
      dx[row + c] = canonical(factor[c] * ((dy[row + c] - mean_dy[c]) - x_hat * mean_dy_x_hat[c]));
    }
}

}  // namespace mixprec::kernels::detail

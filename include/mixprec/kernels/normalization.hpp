// Batch normalization's hot loops over the channels (columns) of a row-major matrix: the
// per-channel statistics, the per-channel affine map, and the two backward passes.
//
//   kernels::batch_norm_moments(x, channels, mean, variance);        // double statistics
//   kernels::scale_shift_columns(x, scale, shift, y);               // y = x scale + shift
//
// float runs Highway kernels (dispatched to the best target), double a scalar loop with the same
// rule (kernels/detail/batch_norm_rule.hpp). Statistics and gradient sums accumulate in double,
// one column per lane in row order; element-wise results are a fixed sequence of float
// operations without fused multiply-adds. So every target returns the same bits; a NaN result is
// the canonical quiet NaN. 16-bit data is widened to float first (exactly, with convert).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/detail/batch_norm_rule.hpp>
#include <mixprec/kernels/detail/reduce_entry_points.hpp>
#include <mixprec/kernels/elementwise.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec::kernels {

template <class T>
concept NormalizationDType = std::is_same_v<T, float> || std::is_same_v<T, double>;

namespace detail {
/// Every per-channel span holds `cols` elements.
inline void check_channels(std::size_t cols, std::initializer_list<std::pair<const char*, std::size_t>> spans,
                           const char* what) {
  for (const auto& [name, size] : spans)
    if (size != cols)
      throw std::invalid_argument(std::string(what) + ": " + name + " has " + std::to_string(size) +
                                  " elements but there are " + std::to_string(cols) + " channels.");
}
}  // namespace detail

/// The mean and biased variance of every column of the row-major matrix x (cols columns),
/// accumulated in double in row order (variance: the sum of squared deviations from the mean,
/// over the rows). Throws std::invalid_argument if cols == 0, x.size() is not a multiple of
/// cols, x has no rows, mean / variance do not hold cols elements, or any two of the spans overlap.
template <NormalizationDType T>
void batch_norm_moments(std::span<const T> x, std::size_t cols, std::span<double> mean, std::span<double> variance) {
  mixprec::detail::check_rows(x.size(), cols, "batch_norm_moments");
  if (x.empty()) throw std::invalid_argument("batch_norm_moments: x has no rows; statistics need at least one.");
  detail::check_channels(cols, {{"mean", mean.size()}, {"variance", variance.size()}}, "batch_norm_moments");
  mixprec::detail::check_disjoint(mean, variance, "batch_norm_moments", "mean", "variance");
  mixprec::detail::check_disjoint(x, mean, "batch_norm_moments", "x", "mean");
  mixprec::detail::check_disjoint(x, variance, "batch_norm_moments", "x", "variance");
  if constexpr (std::is_same_v<T, float>) detail::batch_norm_moments_f32(x.data(), x.size(), cols, mean.data(), variance.data());
  else detail::batch_norm_moments_rule(x.data(), x.size(), cols, 0, cols, mean.data(), variance.data());
}

/// y[r, c] = x[r, c] * scale[c] + shift[c] (a multiply, then an add), cols = scale.size(). y may
/// be x itself (in place); sizes that differ or any other overlap throw std::invalid_argument.
template <NormalizationDType T>
void scale_shift_columns(std::span<const T> x, std::span<const T> scale, std::span<const T> shift, std::span<T> y) {
  const std::size_t cols = scale.size();
  mixprec::detail::check_rows(x.size(), cols, "scale_shift_columns");
  mixprec::detail::check_same_size(x.size(), y.size(), "scale_shift_columns");
  detail::check_channels(cols, {{"shift", shift.size()}}, "scale_shift_columns");
  detail::check_exact_alias_or_disjoint(x.data(), y.data(), x.size(), "scale_shift_columns");
  mixprec::detail::check_disjoint(std::span<const T>(y), scale, "scale_shift_columns", "y", "scale");
  mixprec::detail::check_disjoint(std::span<const T>(y), shift, "scale_shift_columns", "y", "shift");
  if constexpr (std::is_same_v<T, float>)
    detail::scale_shift_columns_f32(x.data(), x.size(), cols, scale.data(), shift.data(), y.data());
  else
    detail::scale_shift_rule(x.data(), x.size(), cols, 0, cols, scale.data(), shift.data(), y.data());
}

/// With x_hat = (x - mean[c]) * inverse_deviation[c] (in T), the per-column sums of dy and of
/// dy * x_hat, accumulated in double in row order: the gradients of beta and gamma.
/// cols = mean.size(); throws std::invalid_argument on mismatched sizes, or when an output
/// overlaps the other or an input.
template <NormalizationDType T>
void batch_norm_backward_sums(std::span<const T> x, std::span<const T> dy, std::span<const T> mean,
                              std::span<const T> inverse_deviation, std::span<double> sum_dy,
                              std::span<double> sum_dy_x_hat) {
  const std::size_t cols = mean.size();
  mixprec::detail::check_rows(x.size(), cols, "batch_norm_backward_sums");
  if (dy.size() != x.size())
    throw std::invalid_argument("batch_norm_backward_sums: x has " + std::to_string(x.size()) + " elements and dy " +
                                std::to_string(dy.size()) + "; they must match.");
  detail::check_channels(cols,
                         {{"inverse_deviation", inverse_deviation.size()},
                          {"sum_dy", sum_dy.size()},
                          {"sum_dy_x_hat", sum_dy_x_hat.size()}},
                         "batch_norm_backward_sums");
  mixprec::detail::check_disjoint(sum_dy, sum_dy_x_hat, "batch_norm_backward_sums", "sum_dy", "sum_dy_x_hat");
  for (const auto& [input, input_name] : {std::pair{x, "x"}, std::pair{dy, "dy"}, std::pair{mean, "mean"},
                                          std::pair{inverse_deviation, "inverse_deviation"}}) {
    mixprec::detail::check_disjoint(input, sum_dy, "batch_norm_backward_sums", input_name, "sum_dy");
    mixprec::detail::check_disjoint(input, sum_dy_x_hat, "batch_norm_backward_sums", input_name, "sum_dy_x_hat");
  }
  if constexpr (std::is_same_v<T, float>)
    detail::batch_norm_backward_sums_f32(x.data(), dy.data(), x.size(), cols, mean.data(), inverse_deviation.data(),
                                         sum_dy.data(), sum_dy_x_hat.data());
  else
    detail::batch_norm_backward_sums_rule(x.data(), dy.data(), x.size(), cols, 0, cols, mean.data(),
                                          inverse_deviation.data(), sum_dy.data(), sum_dy_x_hat.data());
}

/// The input gradient of a normalization by batch statistics, per element:
///   dx = factor[c] * ((dy - mean_dy[c]) - x_hat * mean_dy_x_hat[c]),  x_hat = (x - mean[c]) * inverse_deviation[c]
/// (factor = gamma * inverse_deviation; mean_dy and mean_dy_x_hat the column means of dy and
/// dy * x_hat). dx may be dy itself; it must not overlap x or the per-column spans.
/// cols = mean.size(); throws std::invalid_argument on mismatched sizes or overlaps.
template <NormalizationDType T>
void batch_norm_input_gradient(std::span<const T> x, std::span<const T> dy, std::span<const T> mean,
                               std::span<const T> inverse_deviation, std::span<const T> factor,
                               std::span<const T> mean_dy, std::span<const T> mean_dy_x_hat, std::span<T> dx) {
  const std::size_t cols = mean.size();
  mixprec::detail::check_rows(x.size(), cols, "batch_norm_input_gradient");
  detail::check_gradient_sizes(x.size(), dy.size(), dx.size(), "batch_norm_input_gradient", "x");
  detail::check_channels(cols,
                         {{"inverse_deviation", inverse_deviation.size()},
                          {"factor", factor.size()},
                          {"mean_dy", mean_dy.size()},
                          {"mean_dy_x_hat", mean_dy_x_hat.size()}},
                         "batch_norm_input_gradient");
  detail::check_gradient_outputs(x.data(), dy.data(), dx.data(), x.size(), "batch_norm_input_gradient", "x");
  for (std::span<const T> constants : {mean, inverse_deviation, factor, mean_dy, mean_dy_x_hat})
    mixprec::detail::check_disjoint(std::span<const T>(dx), constants, "batch_norm_input_gradient", "dx",
                                    "a per-channel span");
  if constexpr (std::is_same_v<T, float>)
    detail::batch_norm_input_gradient_f32(x.data(), dy.data(), x.size(), cols, mean.data(), inverse_deviation.data(),
                                          factor.data(), mean_dy.data(), mean_dy_x_hat.data(), dx.data());
  else
    detail::batch_norm_input_gradient_rule(x.data(), dy.data(), x.size(), cols, 0, cols, mean.data(),
                                           inverse_deviation.data(), factor.data(), mean_dy.data(),
                                           mean_dy_x_hat.data(), dx.data());
}

/// The normalization kernels on any contiguous ranges (std::vector, std::array, spans): T is
/// x's element type, and the other arguments convert to spans of T (and of double).
template <detail::input_range X>
  requires NormalizationDType<detail::range_element_t<X>>
void batch_norm_moments(const X& x, std::size_t cols, std::span<double> mean, std::span<double> variance) {
  kernels::batch_norm_moments(detail::input_span(x), cols, mean, variance);
}
template <detail::input_range X>
  requires NormalizationDType<detail::range_element_t<X>>
void scale_shift_columns(const X& x, std::span<const detail::range_element_t<X>> scale,
                         std::span<const detail::range_element_t<X>> shift, std::span<detail::range_element_t<X>> y) {
  kernels::scale_shift_columns(detail::input_span(x), scale, shift, y);
}
template <detail::input_range X>
  requires NormalizationDType<detail::range_element_t<X>>
void batch_norm_backward_sums(const X& x, std::span<const detail::range_element_t<X>> dy,
                              std::span<const detail::range_element_t<X>> mean,
                              std::span<const detail::range_element_t<X>> inverse_deviation, std::span<double> sum_dy,
                              std::span<double> sum_dy_x_hat) {
  kernels::batch_norm_backward_sums(detail::input_span(x), dy, mean, inverse_deviation, sum_dy, sum_dy_x_hat);
}
template <detail::input_range X>
  requires NormalizationDType<detail::range_element_t<X>>
void batch_norm_input_gradient(const X& x, std::span<const detail::range_element_t<X>> dy,
                               std::span<const detail::range_element_t<X>> mean,
                               std::span<const detail::range_element_t<X>> inverse_deviation,
                               std::span<const detail::range_element_t<X>> factor,
                               std::span<const detail::range_element_t<X>> mean_dy,
                               std::span<const detail::range_element_t<X>> mean_dy_x_hat,
                               std::span<detail::range_element_t<X>> dx) {
  kernels::batch_norm_input_gradient(detail::input_span(x), dy, mean, inverse_deviation, factor, mean_dy,
                                     mean_dy_x_hat, dx);
}

}  // namespace mixprec::kernels

#include <mixprec/kernels/detail/default_implementation.hpp>

// Elementwise kernels in a layer's compute dtype: activations and their backward steps, bias
// adds, row softmax forward and backward, and the fused dense epilogue (bias + activation on a
// float32 accumulator, rounded once).
//
//   kernels::activate(kernels::activation::gelu, x, y);
//   kernels::bias_activation(acc, bias, kernels::activation::relu, y, units);
//   kernels::softmax_rows(logits, probabilities, classes);
//   kernels::activation_backward(kernels::activation::gelu, x, dy, dx);   // dx = dy gelu'(x)
//   kernels::softmax_rows_backward(probabilities, dy, dx, classes);
//
// The dtype is deduced from the arguments (spans, std::vectors, ...) or named: activate<bfloat16>.
//
// float, bfloat16 and float16 run Highway kernels (dispatched to the best target): each element
// is widened exactly to float, computed in float32 and rounded once to T, to nearest even, as
// convert rounds. exp, tanh, sigmoid, erfc (inside gelu) and the derivatives are mixprec's own,
// written with plain float operations so that the results are bit-identical on every target
// (detail/elementwise-inl.hpp). Measured against double over every 13th float: exp 0.96 ulp,
// tanh 1.52 ulp, sigmoid 2.34 ulp, gelu 5.9 ulp (everywhere, the negative tail down to the
// subnormals included); gelu_approximate 14 ulp for x >= -3, and below that the rounding of its
// argument 2u, magnified by exp, allows about 2.4 ulp per unit of |2u| (where it is below 1e-5
// in magnitude). double runs scalar double math with the std:: functions (what layers under a
// float64 policy use).
//
// Activations (kernels/activation.hpp; softmax, a row operation, is softmax_rows and the
// elementwise kernels reject it with std::invalid_argument):
//   linear            y = x (bits copied, NaN payloads included)
//   relu              max(x, 0); relu(-0) = +0 (never negative), relu(NaN) = NaN
//   gelu              exact, x Phi(x) = 0.5 x erfc(-x / sqrt(2)) with Phi the standard normal CDF
//                     (Keras' default, approximate=False); gelu(-inf) = -0, gelu(+inf) = +inf
//   gelu_approximate  the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//                     (Keras' approximate=True), evaluated as the equal
//                     x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), which does not cancel for
//                     x < 0; gelu_approximate(-inf) = -0 (the limit)
//   sigmoid           1 / (1 + exp(-x)), without overflow: sigmoid(-inf) = 0, tiny results stay accurate
//   tanh              tanh(+-inf) = +-1, tanh(-0) = -0
//   exponential       exp(+inf) = inf, exp(-inf) = 0, overflow (x > 88.72) gives inf
// NaN in gives NaN out; for the kernel dtypes every NaN result is the canonical quiet NaN
// (except linear, which copies).
//
// Derivatives (activation_backward, float32, dy = 1), measured the same way in ulps of the sum
// of the magnitudes of their terms (the only meaningful measure where the terms cancel, as
// gelu' does at its root x = -0.7518): exponential 0.96, sigmoid 4.1, tanh 4.1, gelu 6.1
// (relative to the derivative itself 5.4 ulp below x = -3, 3.4 on [0, 3)), gelu_approximate 12.8 for
// x >= -3 and about 2.7 ulp per unit of |2u| below, where the tiny derivative (below 1e-36)
// keeps only an absolute accuracy of 2^-138 once e^-|2u| is subnormal (x < -10.2).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <mixprec/core/dtype.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/activation.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/detail/elementwise_entry_points.hpp>
#include <mixprec/kernels/ranges.hpp>

namespace mixprec::kernels {

namespace detail {

inline double sigmoid_f64(double x) {
  const double e = std::exp(-std::fabs(x));
  return (x < 0.0 ? e : 1.0) / (1.0 + e);
}

/// sigmoid(x) sigmoid(-x) = e / (1 + e)^2 with e = e^-|x|: no cancellation, no overflow.
inline double sigmoid_slope_f64(double x) {
  const double e = std::exp(-std::fabs(x));
  return e / ((1.0 + e) * (1.0 + e));
}

/// 2u = 2 sqrt(2/pi) (x + 0.044715 x^3) of gelu_approximate, and its derivative.
inline double gelu_approximate_two_u_f64(double x) {
  return 2.0 * std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
}
inline double gelu_approximate_two_u_slope_f64(double x) {
  return 2.0 * std::sqrt(2.0 / std::numbers::pi) * (1.0 + 3.0 * 0.044715 * x * x);
}

inline double activate_f64(activation a, double x) {
  switch (a) {
    case activation::linear: return x;
    case activation::relu: return x <= 0.0 ? 0.0 : x;
    case activation::gelu:
      if (x == -std::numeric_limits<double>::infinity()) return -0.0;
      return 0.5 * x * std::erfc(-x / std::numbers::sqrt2);
    case activation::gelu_approximate:
      if (x == -std::numeric_limits<double>::infinity()) return -0.0;
      return x * sigmoid_f64(gelu_approximate_two_u_f64(x));
    case activation::sigmoid: return sigmoid_f64(x);
    case activation::tanh: return std::tanh(x);
    case activation::exponential: return std::exp(x);
    case activation::softmax: break;  // rejected by check_elementwise
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// dy a'(x), relu's and linear's as selections (see activation_backward). The gelu derivatives
/// take x clamped to +-40: beyond it they are exactly 0 or 1 in double, and x phi(x) or
/// x sigmoid'(2u) (...) would give inf * 0 at infinite (or huge) x.
inline double activation_backward_f64(activation a, double x, double dy) {
  switch (a) {
    case activation::linear: return dy;
    case activation::relu: return x > 0.0 ? dy : 0.0;
    case activation::gelu: {
      const double t = std::clamp(x, -40.0, 40.0);
      const double density = std::exp(-0.5 * t * t) / std::sqrt(2.0 * std::numbers::pi);
      return dy * (0.5 * std::erfc(-t / std::numbers::sqrt2) + t * density);
    }
    case activation::gelu_approximate: {
      const double t = std::clamp(x, -40.0, 40.0);
      const double two_u = gelu_approximate_two_u_f64(t);
      return dy * (sigmoid_f64(two_u) + t * sigmoid_slope_f64(two_u) * gelu_approximate_two_u_slope_f64(t));
    }
    case activation::sigmoid: return dy * sigmoid_slope_f64(x);
    case activation::tanh: return dy * 4.0 * sigmoid_slope_f64(2.0 * x);  // 1 - tanh^2 without cancellation
    case activation::exponential: return dy * std::exp(x);
    case activation::softmax: break;  // rejected by check_elementwise
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// The elementwise kernels compute every activation but softmax (softmax_rows does).
inline void check_elementwise(activation a, const char* what) {
  if (a == activation::softmax)
    throw std::invalid_argument(std::string(what) +
                                ": softmax is not elementwise; it runs over rows, with kernels::softmax_rows.");
  if (!is_elementwise(a)) throw_not_an_activation(a, what);
}

/// y must be x itself or lie apart from it: a partial overlap would read overwritten inputs.
template <class T>
void check_exact_alias_or_disjoint(const T* x, const T* y, std::size_t n, const char* what,
                                   const char* output = "the output", const char* input = "the input") {
  if (x != y && mixprec::detail::overlap(std::span(x, n), std::span(y, n)))
    throw std::invalid_argument(std::string(what) + ": " + output + " overlaps " + input + " without being the same span.");
}

/// The backward steps may overwrite the incoming gradient dy, never the forward value.
template <class T>
void check_gradient_outputs(const T* forward, const T* dy, const T* dx, std::size_t n, const char* what,
                            const char* forward_name) {
  check_exact_alias_or_disjoint(dy, dx, n, what, "dx", "dy");
  if (mixprec::detail::overlap(std::span(forward, n), std::span(dx, n)))
    throw std::invalid_argument(std::string(what) + ": dx overlaps " + forward_name +
                                "; only dy may be overwritten (in place, as the same span).");
}

/// A backward step's three spans have one size.
inline void check_gradient_sizes(std::size_t forward, std::size_t dy, std::size_t dx, const char* what,
                                 const char* forward_name) {
  if (forward != dy || dy != dx)
    throw std::invalid_argument(std::string(what) + ": " + forward_name + " has " + std::to_string(forward) +
                                " elements, dy " + std::to_string(dy) + " and dx " + std::to_string(dx) +
                                "; they must match.");
}

}  // namespace detail

/// y[i] = a(x[i]) (see the activations above). y may alias x exactly (in place); any other
/// overlap, sizes that differ, or softmax throw std::invalid_argument.
template <class T>
  requires ComputeDType<T>
void activate(activation a, std::span<const T> x, std::span<T> y) {
  detail::check_elementwise(a, "activate");
  mixprec::detail::check_same_size(x.size(), y.size(), "activate");
  detail::check_exact_alias_or_disjoint(x.data(), y.data(), x.size(), "activate");
  if (a == activation::linear) {
    if (x.data() != y.data()) std::copy(x.begin(), x.end(), y.begin());
  } else if constexpr (detail::has_elementwise_kernel<T>) {
    detail::activate(a, x.data(), y.data(), x.size());
  } else {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = detail::activate_f64(a, x[i]);
  }
}

/// The backward step of activate: dx[i] = dy[i] a'(x[i]), where x is the activation's input
/// (the pre-activation) and dy the gradient with respect to its output. Computed as activate
/// is (float32 for the 16-bit dtypes, a'(x) rounded to float before the product, the product
/// rounded once to T; double in double), with the derivatives written like their activations:
///   linear             dx = dy (bits copied)
///   relu               dx = dy where x > 0, else +0: relu'(0) = 0 (TensorFlow's choice), and a
///                      NaN x gives 0, as does any dy (NaN too) where x <= 0
///   gelu               Phi(x) + x phi(x), phi(x) = e^(-x^2/2) / sqrt(2 pi)
///   gelu_approximate   s + x s (1 - s) (a + 3b x^2) with s = sigmoid(x (a + b x^2)),
///                      a = 2 sqrt(2/pi), b = 0.044715 a (the derivative of its sigmoid form)
///   sigmoid            s (1 - s), as e / (1 + e)^2 with e = e^-|x| (no cancellation)
///   tanh               1 - tanh(x)^2, as 4 e / (1 + e)^2 with e = e^-2|x| (no cancellation)
///   exponential        e^x (overflowing to inf for x > 88.72, so dy = 0 there gives NaN)
/// A derivative below float's range counts as 0 (dy times it is not rescued). NaN x or dy give
/// NaN (canonical for the kernel dtypes), except for relu as above. dx may alias dy exactly (in
/// place); any other overlap of dx with dy or x, sizes that differ, or softmax throw
/// std::invalid_argument.
template <class T>
  requires ComputeDType<T>
void activation_backward(activation a, std::span<const T> x, std::span<const T> dy, std::span<T> dx) {
  detail::check_elementwise(a, "activation_backward");
  detail::check_gradient_sizes(x.size(), dy.size(), dx.size(), "activation_backward", "x");
  detail::check_gradient_outputs(x.data(), dy.data(), dx.data(), dx.size(), "activation_backward", "x");
  if (a == activation::linear) {
    if (dy.data() != dx.data()) std::copy(dy.begin(), dy.end(), dx.begin());
  } else if constexpr (detail::has_elementwise_kernel<T>) {
    detail::activation_backward(a, x.data(), dy.data(), dx.data(), dx.size());
  } else {
    for (std::size_t i = 0; i < dx.size(); ++i) dx[i] = detail::activation_backward_f64(a, x[i], dy[i]);
  }
}

/// to[r * to_stride + i] += from[r * from_stride + i] for every row r < rows and i < row_length,
/// rows in order: a strided block added into another (col2im adds each output pixel's window of
/// gradients this way). One add per element, so every target gives the same bits (a NaN result
/// is the canonical quiet NaN). float runs a Highway kernel, double a scalar loop. Throws
/// std::invalid_argument unless both blocks fit their spans (rows at least a row apart) and
/// `to` lies apart from `from`.
template <class T>
  requires std::is_same_v<T, float> || std::is_same_v<T, double>
void add_rows(std::span<const T> from, std::size_t from_stride, std::span<T> to, std::size_t to_stride, std::size_t rows,
              std::size_t row_length) {
  mixprec::detail::check_strided_rows(from.size(), rows, row_length, from_stride, "add_rows", "from");
  mixprec::detail::check_strided_rows(to.size(), rows, row_length, to_stride, "add_rows", "to");
  mixprec::detail::check_disjoint(from, std::span<const T>(to), "add_rows", "from", "to");
  if (rows == 0 || row_length == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    detail::add_rows_f32(from.data(), from_stride, to.data(), to_stride, rows, row_length);
  } else {
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < row_length; ++i) to[r * to_stride + i] += from[r * from_stride + i];
  }
}

/// rows[r * cols + c] += bias[c] in place, cols = bias.size(), rounded once to T. Throws
/// std::invalid_argument unless rows.size() is a multiple of bias.size() (an empty bias only
/// fits empty rows), or if bias lies in rows' memory.
template <class T>
  requires ComputeDType<T>
void bias_add(std::span<T> rows, std::span<const T> bias) {
  if (bias.empty() ? !rows.empty() : rows.size() % bias.size() != 0)
    throw std::invalid_argument("bias_add: the rows have " + std::to_string(rows.size()) +
                                " elements, which is not a multiple of the bias size " + std::to_string(bias.size()) + ".");
  mixprec::detail::check_disjoint(std::span<const T>(rows), bias, "bias_add", "rows", "bias");  // rows written first
  if (rows.empty()) return;
  if constexpr (detail::has_elementwise_kernel<T>) {
    detail::bias_add(rows.data(), rows.size(), bias.data(), bias.size());
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] += bias[i % bias.size()];
  }
}

/// Numerically stable row softmax: subtract the row max, exp, sum in float32, divide. x and y are rows x cols.
/// The sum uses the fixed order of sum() (detail/summation_order.hpp); each output is one
/// division rounded once to T. A row holding NaN or +inf, or only -inf, comes out all NaN.
/// y may alias x exactly. Throws std::invalid_argument if cols == 0, if the sizes differ or are
/// not a multiple of cols.
template <class T>
  requires ComputeDType<T>
void softmax_rows(std::span<const T> x, std::span<T> y, std::size_t cols) {
  mixprec::detail::check_rows(x.size(), cols, "softmax_rows");
  mixprec::detail::check_same_size(x.size(), y.size(), "softmax_rows");
  detail::check_exact_alias_or_disjoint(x.data(), y.data(), x.size(), "softmax_rows");
  if (x.empty()) return;
  if constexpr (detail::has_elementwise_kernel<T>) {
    detail::softmax_rows(x.data(), y.data(), x.size(), cols);
  } else {
    for (std::size_t start = 0; start < x.size(); start += cols) {
      const auto row = x.subspan(start, cols);
      const double largest = *std::max_element(row.begin(), row.end());
      double total = 0.0;
      for (std::size_t c = 0; c < cols; ++c) total += y[start + c] = std::exp(row[c] - largest);
      for (std::size_t c = 0; c < cols; ++c) y[start + c] /= total;
    }
  }
}

/// The backward step of softmax_rows: per row, dx = y (dy - sum_c dy_c y_c), where y is the
/// softmax's output and dy the gradient with respect to it. The row sum is dot()'s (float32,
/// its fixed order); each output is y (dy - sum) in float32, rounded once to T. A NaN in a row
/// makes its sum, and so the whole row, NaN (canonical for the kernel dtypes); infinities
/// follow IEEE arithmetic. dx may alias dy exactly; throws std::invalid_argument if cols == 0,
/// if the sizes differ or are not a multiple of cols, or if dx overlaps y, or dy without being
/// the same span.
template <class T>
  requires ComputeDType<T>
void softmax_rows_backward(std::span<const T> y, std::span<const T> dy, std::span<T> dx, std::size_t cols) {
  mixprec::detail::check_rows(y.size(), cols, "softmax_rows_backward");
  detail::check_gradient_sizes(y.size(), dy.size(), dx.size(), "softmax_rows_backward", "y");
  detail::check_gradient_outputs(y.data(), dy.data(), dx.data(), dx.size(), "softmax_rows_backward", "y");
  if (y.empty()) return;
  if constexpr (detail::has_elementwise_kernel<T>) {
    detail::softmax_rows_backward(y.data(), dy.data(), dx.data(), y.size(), cols);
  } else {
    for (std::size_t start = 0; start < y.size(); start += cols) {
      double weighted_sum = 0.0;
      for (std::size_t c = start; c < start + cols; ++c) weighted_sum += dy[c] * y[c];
      for (std::size_t c = start; c < start + cols; ++c) dx[c] = y[c] * (dy[c] - weighted_sum);
    }
  }
}

/// Dense epilogue, fused: y = act(acc + bias) rounded once to T. acc is float32 rows x cols; bias has cols entries or is empty.
/// For T = float, y may alias acc exactly. Throws std::invalid_argument if cols == 0, if acc and
/// y differ in size or are not a multiple of cols, if bias is neither empty nor cols long, if
/// y overlaps acc otherwise or overlaps bias, or for softmax.
template <class T>
  requires ComputeDType<T>
void bias_activation(std::span<const float> acc, std::span<const T> bias, activation a, std::span<T> y,
                     std::size_t cols) {
  detail::check_elementwise(a, "bias_activation");
  mixprec::detail::check_rows(acc.size(), cols, "bias_activation");
  mixprec::detail::check_same_size(acc.size(), y.size(), "bias_activation");
  if constexpr (std::is_same_v<T, float>)  // the epilogue may run in place on the accumulator
    detail::check_exact_alias_or_disjoint(acc.data(), y.data(), acc.size(), "bias_activation");
  else  // bytes, whatever the dtypes: a 16-bit y over acc's memory would overwrite values not yet read
    mixprec::detail::check_disjoint(acc, std::span<const T>(y), "bias_activation", "acc", "y");
  mixprec::detail::check_disjoint(bias, std::span<const T>(y), "bias_activation", "bias", "y");
  if (!bias.empty() && bias.size() != cols)
    throw std::invalid_argument("bias_activation: the bias has " + std::to_string(bias.size()) +
                                " elements but cols = " + std::to_string(cols) + "; it must be empty or match.");
  if (acc.empty()) return;
  const T* b = bias.empty() ? nullptr : bias.data();
  if constexpr (detail::has_elementwise_kernel<T>) {
    detail::bias_activation(acc.data(), b, a, y.data(), acc.size(), cols);
  } else {
    for (std::size_t i = 0; i < acc.size(); ++i)
      y[i] = detail::activate_f64(a, static_cast<double>(acc[i]) + (b == nullptr ? 0.0 : b[i % cols]));
  }
}

/// The elementwise kernels of any contiguous ranges (std::vector, std::array, spans), their
/// dtype deduced.
template <detail::input_range X, detail::output_range Y>
  requires ComputeDType<detail::range_element_t<Y>> &&
           std::is_same_v<detail::range_element_t<X>, detail::range_element_t<Y>>
void activate(activation a, const X& x, Y&& y) {
  kernels::activate(a, detail::input_span(x), detail::output_span(std::forward<Y>(y)));
}
template <detail::input_range X, detail::input_range DY, detail::output_range DX>
  requires ComputeDType<detail::range_element_t<DX>> &&
           std::is_same_v<detail::range_element_t<X>, detail::range_element_t<DX>> &&
           std::is_same_v<detail::range_element_t<DY>, detail::range_element_t<DX>>
void activation_backward(activation a, const X& x, const DY& dy, DX&& dx) {
  kernels::activation_backward(a, detail::input_span(x), detail::input_span(dy),
                               detail::output_span(std::forward<DX>(dx)));
}
template <detail::output_range R, detail::input_range B>
  requires ComputeDType<detail::range_element_t<R>> &&
           std::is_same_v<detail::range_element_t<R>, detail::range_element_t<B>>
void bias_add(R&& rows, const B& bias) {
  kernels::bias_add(detail::output_span(std::forward<R>(rows)), detail::input_span(bias));
}
template <detail::input_range X, detail::output_range Y>
  requires ComputeDType<detail::range_element_t<Y>> &&
           std::is_same_v<detail::range_element_t<X>, detail::range_element_t<Y>>
void softmax_rows(const X& x, Y&& y, std::size_t cols) {
  kernels::softmax_rows(detail::input_span(x), detail::output_span(std::forward<Y>(y)), cols);
}
template <detail::input_range Y, detail::input_range DY, detail::output_range DX>
  requires ComputeDType<detail::range_element_t<DX>> &&
           std::is_same_v<detail::range_element_t<Y>, detail::range_element_t<DX>> &&
           std::is_same_v<detail::range_element_t<DY>, detail::range_element_t<DX>>
void softmax_rows_backward(const Y& y, const DY& dy, DX&& dx, std::size_t cols) {
  kernels::softmax_rows_backward(detail::input_span(y), detail::input_span(dy),
                                 detail::output_span(std::forward<DX>(dx)), cols);
}
template <detail::input_range From, detail::output_range To>
  requires(std::is_same_v<detail::range_element_t<To>, float> || std::is_same_v<detail::range_element_t<To>, double>) &&
          std::is_same_v<detail::range_element_t<From>, detail::range_element_t<To>>
void add_rows(const From& from, std::size_t from_stride, To&& to, std::size_t to_stride, std::size_t rows,
              std::size_t row_length) {
  kernels::add_rows(detail::input_span(from), from_stride, detail::output_span(std::forward<To>(to)), to_stride, rows,
                    row_length);
}
template <detail::input_range Acc, detail::input_range B, detail::output_range Y>
  requires std::is_same_v<detail::range_element_t<Acc>, float> && ComputeDType<detail::range_element_t<Y>> &&
           std::is_same_v<detail::range_element_t<B>, detail::range_element_t<Y>>
void bias_activation(const Acc& acc, const B& bias, activation a, Y&& y, std::size_t cols) {
  kernels::bias_activation(detail::input_span(acc), detail::input_span(bias), a,
                           detail::output_span(std::forward<Y>(y)), cols);
}

}  // namespace mixprec::kernels

#include <mixprec/kernels/detail/default_implementation.hpp>

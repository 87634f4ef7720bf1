// Elementwise kernels in a layer's compute dtype: activations, bias adds, row softmax and the
// fused dense epilogue (bias + activation on a float32 accumulator, rounded once).
//
//   kernels::activate<bfloat16>(kernels::activation::gelu, x, y);
//   kernels::bias_activation<bfloat16>(acc, bias, kernels::activation::relu, y, units);
//   kernels::softmax_rows<float>(logits, probabilities, classes);
//
// float, bfloat16 and float16 run Highway kernels (dispatched to the best target): each element
// is widened exactly to float, computed in float32 and rounded once to T, to nearest even, as
// convert rounds. exp, tanh and sigmoid are mixprec's own, written with plain float operations so
// that the results are bit-identical on every target (detail/elementwise-inl.hpp). Measured
// against double over every 13th float: exp 0.96 ulp, tanh 1.52 ulp, sigmoid 2.34 ulp; gelu
// 14 ulp for x >= -3, and below that the rounding of its argument 2u, magnified by exp, allows
// about 2.4 ulp per unit of |2u| (where gelu(x) is below 1e-5 in magnitude). double runs scalar
// double math with the std:: functions (what layers under a float64 policy use).
//
// Activations:
//   linear   y = x (bits copied, NaN payloads included)
//   relu     max(x, 0); relu(-0) = +0 (never negative), relu(NaN) = NaN
//   gelu     tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated as the
//            equal x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)), which does not cancel for x < 0;
//            gelu(-inf) = -0 (the limit)
//   sigmoid  1 / (1 + exp(-x)), without overflow: sigmoid(-inf) = 0, tiny results stay accurate
//   tanh     tanh(+-inf) = +-1, tanh(-0) = -0
//   exp      exp(+inf) = inf, exp(-inf) = 0, overflow (x > 88.72) gives inf
// NaN in gives NaN out; for the kernel dtypes every NaN result is the canonical quiet NaN
// (except linear, which copies).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/detail/elementwise_entry_points.hpp>

namespace mixprec::kernels {

/// The dtypes the elementwise kernels compute in.
template <class T>
concept elementwise_dtype =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>;

namespace detail {

inline double sigmoid_f64(double x) {
  const double e = std::exp(-std::fabs(x));
  return (x < 0.0 ? e : 1.0) / (1.0 + e);
}

inline double activate_f64(activation a, double x) {
  switch (a) {
    case activation::linear: return x;
    case activation::relu: return x <= 0.0 ? 0.0 : x;
    case activation::gelu: {
      if (x == -std::numeric_limits<double>::infinity()) return -0.0;
      const double two_u = 2.0 * std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
      return x * sigmoid_f64(two_u);
    }
    case activation::sigmoid: return sigmoid_f64(x);
    case activation::tanh: return std::tanh(x);
    case activation::exp: return std::exp(x);
  }
  return x;
}

/// y must be x itself or lie apart from it: a partial overlap would read overwritten inputs.
template <class T>
void check_exact_alias_or_disjoint(const T* x, const T* y, std::size_t n, const char* what) {
  if (n == 0 || x == y) return;
  const std::less<const T*> before;
  if (before(x, y + n) && before(y, x + n))
    throw std::invalid_argument(std::string(what) + ": the output overlaps the input without being the same span.");
}

}  // namespace detail

/// y[i] = a(x[i]) (see the activations above). y may alias x exactly (in place); any other
/// overlap, or sizes that differ, throw std::invalid_argument.
template <class T>
  requires elementwise_dtype<T>
void activate(activation a, std::span<const T> x, std::span<T> y) {
  mixprec::detail::check_same_size(x.size(), y.size(), "activate");
  detail::check_exact_alias_or_disjoint(x.data(), y.data(), x.size(), "activate");
  if (a == activation::linear) {
    if (x.data() != y.data()) std::copy(x.begin(), x.end(), y.begin());
  } else if constexpr (std::is_same_v<T, float>) {
    detail::activate_f32(a, x.data(), y.data(), x.size());
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    detail::activate_bf16(a, x.data(), y.data(), x.size());
  } else if constexpr (std::is_same_v<T, float16>) {
    detail::activate_f16(a, x.data(), y.data(), x.size());
  } else {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = detail::activate_f64(a, x[i]);
  }
}

/// rows[r * cols + c] += bias[c] in place, cols = bias.size(), rounded once to T. Throws
/// std::invalid_argument unless rows.size() is a multiple of bias.size() (an empty bias only
/// fits empty rows).
template <class T>
  requires elementwise_dtype<T>
void bias_add(std::span<T> rows, std::span<const T> bias) {
  if (bias.empty() ? !rows.empty() : rows.size() % bias.size() != 0)
    throw std::invalid_argument("bias_add: the rows have " + std::to_string(rows.size()) +
                                " elements, which is not a multiple of the bias size " + std::to_string(bias.size()) + ".");
  if (rows.empty()) return;
  if constexpr (std::is_same_v<T, float>) {
    detail::bias_add_f32(rows.data(), rows.size(), bias.data(), bias.size());
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    detail::bias_add_bf16(rows.data(), rows.size(), bias.data(), bias.size());
  } else if constexpr (std::is_same_v<T, float16>) {
    detail::bias_add_f16(rows.data(), rows.size(), bias.data(), bias.size());
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
  requires elementwise_dtype<T>
void softmax_rows(std::span<const T> x, std::span<T> y, std::size_t cols) {
  mixprec::detail::check_rows(x.size(), cols, "softmax_rows");
  mixprec::detail::check_same_size(x.size(), y.size(), "softmax_rows");
  detail::check_exact_alias_or_disjoint(x.data(), y.data(), x.size(), "softmax_rows");
  if (x.empty()) return;
  if constexpr (std::is_same_v<T, float>) {
    detail::softmax_rows_f32(x.data(), y.data(), x.size(), cols);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    detail::softmax_rows_bf16(x.data(), y.data(), x.size(), cols);
  } else if constexpr (std::is_same_v<T, float16>) {
    detail::softmax_rows_f16(x.data(), y.data(), x.size(), cols);
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

/// Dense epilogue, fused: y = act(acc + bias) rounded once to T. acc is float32 rows x cols; bias has cols entries or is empty.
/// For T = float, y may alias acc exactly. Throws std::invalid_argument if cols == 0, if acc and
/// y differ in size or are not a multiple of cols, if bias is neither empty nor cols long, or if
/// y overlaps acc otherwise.
template <class T>
  requires elementwise_dtype<T>
void bias_activation(std::span<const float> acc, std::span<const T> bias, activation a, std::span<T> y,
                     std::size_t cols) {
  mixprec::detail::check_rows(acc.size(), cols, "bias_activation");
  mixprec::detail::check_same_size(acc.size(), y.size(), "bias_activation");
  if constexpr (std::is_same_v<T, float>)  // the epilogue may run in place on the accumulator
    detail::check_exact_alias_or_disjoint(acc.data(), y.data(), acc.size(), "bias_activation");
  if (!bias.empty() && bias.size() != cols)
    throw std::invalid_argument("bias_activation: the bias has " + std::to_string(bias.size()) +
                                " elements but cols = " + std::to_string(cols) + "; it must be empty or match.");
  if (acc.empty()) return;
  const T* b = bias.empty() ? nullptr : bias.data();
  if constexpr (std::is_same_v<T, float>) {
    detail::bias_activation_f32(acc.data(), b, a, y.data(), acc.size(), cols);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    detail::bias_activation_bf16(acc.data(), b, a, y.data(), acc.size(), cols);
  } else if constexpr (std::is_same_v<T, float16>) {
    detail::bias_activation_f16(acc.data(), b, a, y.data(), acc.size(), cols);
  } else {
    for (std::size_t i = 0; i < acc.size(); ++i)
      y[i] = detail::activate_f64(a, static_cast<double>(acc[i]) + (b == nullptr ? 0.0 : b[i % cols]));
  }
}

}  // namespace mixprec::kernels

#include <mixprec/kernels/detail/default_implementation.hpp>

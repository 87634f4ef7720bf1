// The int8 Dense product (Keras 3's int8 Dense): inputs quantized per row at call time, int8 x
// int8 products summed exactly in int32, dequantized and biased in float32 and rounded once to
// the compute dtype, then the activation. int8 layers compute in bfloat16, float32 or float64
// (Keras rejects int8 with float16 compute, and so do the policies).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/quantize.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/math.hpp>

namespace mixprec::detail {

/// The dtype a V kernel is quantized in: exactly (bfloat16 widens to float without rounding).
template <class V>
using int8_source_t = std::conditional_t<std::is_same_v<V, double>, double, float>;

/// A kernel's scales, as float (the dtype quantize_rows gives them in).
template <class V>
std::span<const float> scales_as_float(std::span<const V> scales) {
  return converted<float>(scales);
}

/// y[rows x units] = act(dequantize(quantize_rows(x) kernel) + bias); kernel is [in x units] int8,
/// kernel_scale one per unit (in V). With `pre_activation`, also the value before the activation.
template <class C, class V>
void int8_dense_forward(std::span<const C> x, std::size_t rows, std::size_t in, std::span<const std::int8_t> kernel,
                        std::span<const V> kernel_scale, std::span<const C> bias, std::size_t units,
                        kernels::activation kind, std::span<C> y, std::span<C> pre_activation) {
  const scratch_scope scope;
  const std::span<std::int8_t> x_int8 = scratch_buffer<std::int8_t>(rows * in);
  const std::span<float> x_scales = scratch_buffer<float>(rows);
  kernels::quantize_rows<C>(x, rows, in, x_int8, x_scales);
  const std::span<std::int32_t> acc = scratch_buffer<std::int32_t>(rows * units);
  kernels::gemm(kernels::transpose::no, kernels::transpose::no, rows, units, in, x_int8.data(), in, kernel.data(),
                units, acc.data(), units);
  kernels::dequantize_rows<C>(acc, rows, units, x_scales, scales_as_float<V>(kernel_scale), bias, y);
  if (!pre_activation.empty()) std::copy(y.begin(), y.end(), pre_activation.begin());
  activate<C>(kind, y, y, units);
}

/// kernel / kernel_scale in C ([in x units]), the kernel the input gradient flows through, in a
/// per-thread buffer.
template <class C, class V>
std::span<const C> dequantized_kernel(std::span<const std::int8_t> kernel, std::span<const V> kernel_scale,
                                      std::size_t units) {
  using A = accumulator_t<C>;
  const std::span<C> out = scratch_buffer<C>(kernel.size());
  for (std::size_t i = 0; i < kernel.size(); ++i)
    out[i] = cast<C>(static_cast<A>(kernel[i]) / static_cast<A>(kernel_scale[i % units]));
  return out;
}

/// A kernel quantized per output column: values [in x units] and one scale per unit (in V).
template <class V>
struct int8_columns {
  std::vector<std::int8_t> values;
  std::vector<V> scales;
};

/// Keras' abs-max quantization of a [in x units] kernel along its input axis.
template <class V>
int8_columns<V> quantize_columns(std::span<const V> kernel, std::size_t in, std::size_t units) {
  using S = int8_source_t<V>;
  std::vector<S> columns(kernel.size());  // [units x in]: each column a row, for quantize_rows
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t u = 0; u < units; ++u) columns[u * in + i] = cast<S>(kernel[i * units + u]);
  std::vector<std::int8_t> quantized(kernel.size());
  std::vector<float> scales(units);
  kernels::quantize_rows<S>(std::span<const S>(columns), units, in, std::span(quantized), std::span(scales));
  int8_columns<V> result{std::vector<std::int8_t>(kernel.size()), std::vector<V>(units)};
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t u = 0; u < units; ++u) result.values[i * units + u] = quantized[u * in + i];
  for (std::size_t u = 0; u < units; ++u) result.scales[u] = cast<V>(scales[u]);
  return result;
}

}  // namespace mixprec::detail

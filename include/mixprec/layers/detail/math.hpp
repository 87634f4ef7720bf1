// Arithmetic several layer kinds share: activations and their gradients, the Dense product
// (forward: GEMM + fused bias/activation epilogue; backward: the two transposed GEMMs and the bias
// column sum).
//
// float16 / bfloat16 / float32 compute: the kernels (GEMMs accumulate in float32; one rounding to
// the compute dtype per stored value). float64: Eigen's double GEMM and double element-wise math.
// Weight gradients leave the GEMM in float32 and are rounded once to the variable dtype.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixprec/core/detail/x86_intrinsics.hpp>  // before Eigen

#include <Eigen/Core>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/elementwise.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/kernels/thread_pool.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/detail/packed_product_weight.hpp>
#include <mixprec/layers/detail/scratch.hpp>

namespace mixprec::detail {

/// `values` in S: the span itself when the dtypes agree, else converted (rounded once to nearest
/// even; exact when S is wider) into scratch memory of the caller's scratch_scope. (T: C or const C.)
template <class S, class T>
std::span<const S> converted(std::span<T> values) {
  using C = std::remove_const_t<T>;
  if constexpr (std::is_same_v<C, S>) {
    return values;
  } else {
    const std::span<S> out = scratch_buffer<S>(values.size());
    kernels::convert<C, S>(values, out);
    return out;
  }
}
/// The dtype a product computing in C reads a weight stored in V in: V itself when the GEMM
/// multiplies it as C directly (V is C; or V is float32 and C 16-bit: the GEMM rounds each element
/// to C as it packs it, which gives the bits of a rounded copy), else C.
template <class C, class V>
using product_weight_t =
    std::conditional_t<std::is_same_v<C, V> ||
                           (std::is_same_v<V, float> && (std::is_same_v<C, bfloat16> || std::is_same_v<C, float16>)),
                       V, C>;
/// A weight as a product computing in C reads it: as stored (product_weight_t), else rounded to C
/// into scratch memory of the caller's scope. So a layer keeps no compute-dtype copy of its
/// weights: Keras' autocast rounds a weight on every read too.
template <class C, class V>
std::span<const product_weight_t<C, V>> product_weight(std::span<const V> weight) {
  if constexpr (std::is_same_v<product_weight_t<C, V>, V>) return weight;
  else return converted<C>(weight);
}

/// Calls multiply(kernel) with a product weight (k x n, in V; its variable's version) as a
/// product computing in C reads it: packed, and kept in `packed` for the next call (an inference
/// call: `packed` is not null; C not double, which Eigen multiplies), else product_weight's span.
template <class C, class V, class Multiply>
void with_product_weight(std::span<const V> weight, std::uint64_t version, std::size_t k, std::size_t n,
                         packed_product_weight<C>* packed, Multiply&& multiply) {
  if constexpr (!std::is_same_v<C, double>) {
    if (packed) return multiply(packed->get(version, k, n, [&] { return product_weight<C>(weight); }));
  }
  multiply(product_weight<C>(weight));
}

/// Calls task(i) once for every i in [0, tasks) on the kernels' thread pool (the threads of
/// kernels::set_num_threads), the calling thread included. With two or more tasks, a GEMM a task
/// runs goes on that task's thread alone (the pool is busy); a single task runs inline and its
/// GEMM may use the whole pool. Which thread runs a task varies: a task's result must not depend on it (its
/// scratch memory is that thread's, given back when the task ends).
template <class Task>
void run_on_kernel_threads(std::size_t tasks, Task&& task) {
  kernels::detail::gemm_thread_pool()->run(tasks, [&](std::size_t i) {
    const scratch_scope scope;
    task(i);
  });
}

/// The dtype a product of C values accumulates in: float32, or double for float64 layers
/// (accumulator_t<C>).
using kernels::detail::accumulator_t;

/// y = act(x), element-wise (softmax: over rows of `cols`).
template <class C>
void activate(kernels::activation kind, std::span<const C> x, std::span<C> y, std::size_t cols) {
  if (kind == kernels::activation::softmax) {
    kernels::softmax_rows(x, y, cols);
  } else {
    kernels::activate(kind, x, y);
  }
}

/// dx = dy act'(x) for an activation whose input was x and output y (softmax uses y; relu,
/// whose output is positive exactly where its input is, may be given y as x).
template <class C>
void activation_gradient(kernels::activation kind, std::span<const C> x, std::span<const C> y, std::span<const C> dy,
                         std::span<C> dx, std::size_t cols) {
  if (kind == kernels::activation::softmax) {
    kernels::softmax_rows_backward(y, dy, dx, cols);
  } else {
    kernels::activation_backward(kind, x, dy, dx);
  }
}

/// y = act(acc + bias), rounded once to C; acc is float32 (bias may be empty).
template <class C>
void dense_epilogue(std::span<const float> acc, std::span<const C> bias, kernels::activation kind, std::span<C> y,
                    std::size_t cols) {
  if (kind != kernels::activation::softmax) {
    kernels::bias_activation(acc, bias, kind, y, cols);
    return;
  }
  // Softmax over the biased float32 accumulator, then one rounding to C.
  const std::span<float> bias32 = scratch_buffer<float>(bias.size());
  const std::span<float> logits = scratch_buffer<float>(acc.size());
  kernels::convert<C, float>(bias, bias32);
  kernels::bias_activation<float>(acc, bias32, kernels::activation::linear, logits, cols);
  if constexpr (std::is_same_v<C, float>) {
    kernels::softmax_rows<float>(logits, y, cols);
  } else {
    kernels::softmax_rows<float>(logits, logits, cols);
    kernels::convert<float, C>(logits, y);
  }
}

using row_major = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
inline Eigen::Map<const row_major> matrix(std::span<const double> values, std::size_t rows, std::size_t cols) {
  return {values.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols)};
}
inline Eigen::Map<row_major> matrix(std::span<double> values, std::size_t rows, std::size_t cols) {
  return {values.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols)};
}

/// acc[rows x units] = x[rows x in] * kernel[in x units] in float32, the kernel a span (in C, or
/// in product_weight_t's float32, read as C) or packed (packed_product_weight).
template <class C, class K>
void multiply_by_kernel(std::span<const C> x, std::size_t rows, std::size_t in, std::span<K> kernel, std::size_t units,
                        std::span<float> acc) {
  kernels::gemm(kernels::transpose::no, kernels::transpose::no, rows, units, in, 1.0f, x.data(), in, kernel.data(),
                units, 0.0f, acc.data(), units);
}
template <class C>
void multiply_by_kernel(std::span<const C> x, std::size_t rows, std::size_t in, const kernels::packed_b<C>& kernel,
                        std::size_t units, std::span<float> acc) {
  kernels::gemm(kernels::transpose::no, rows, 1.0f, x.data(), in, kernel, 0.0f, acc.data(), units);
}

/// y[rows x units] = act(x[rows x in] * kernel[in x units] + bias[units]); bias may be empty.
/// With `pre_activation` (training, an activation other than linear and softmax), also
/// pre_activation = x * kernel + bias rounded to C, which the activation's gradient reads.
/// The kernel is a span in C, or in product_weight_t's float32 (read as C), or (C not double)
/// a kernels::packed_b<C>.
template <ComputeDType C, class Kernel>
void dense_forward(std::span<const C> x, std::size_t rows, std::size_t in, const Kernel& kernel,
                   std::span<const C> bias, std::size_t units, kernels::activation kind, std::span<C> y,
                   std::span<C> pre_activation = {}) {
  if constexpr (std::is_same_v<C, double>) {
    matrix(y, rows, units).noalias() = matrix(x, rows, in) * matrix(kernel, in, units);
    if (!bias.empty()) kernels::bias_add<double>(y, bias);
    if (!pre_activation.empty()) std::copy(y.begin(), y.end(), pre_activation.begin());
    activate<double>(kind, y, y, units);
  } else {
    // float32 accumulates straight into y (the epilogue then runs in place, after the
    // pre-activation, if wanted, has been taken); 16-bit dtypes need a float32 accumulator.
    const scratch_scope scope;
    const std::span<float> acc = [&] {
      if constexpr (std::is_same_v<C, float>) return y;
      else return scratch_buffer<float>(rows * units);
    }();
    multiply_by_kernel(x, rows, in, kernel, units, acc);
    if (!pre_activation.empty()) kernels::bias_activation<C>(acc, bias, kernels::activation::linear, pre_activation, units);
    dense_epilogue<C>(acc, bias, kind, y, units);
  }
}

/// Stores an accumulator-dtype gradient in the dtype it is handed on in (one rounding; a copy
/// when the dtypes agree).
template <class V, class A>
void store_gradient(std::span<const A> gradient, std::span<V> out) {
  if constexpr (std::is_same_v<A, V>) {
    if (gradient.data() != out.data()) std::copy(gradient.begin(), gradient.end(), out.begin());
  } else {
    kernels::convert<A, V>(gradient, out);
  }
}

/// products[rows x in] = dz kernel^T, in the accumulator dtype: the input gradient of a product
/// before its rounding to C. The kernel as in dense_forward.
template <ComputeDType C, class K = const C>
void input_gradient_products(std::span<const C> dz, std::size_t rows, std::size_t in, std::span<K> kernel,
                             std::size_t units, std::span<accumulator_t<C>> products) {
  if constexpr (std::is_same_v<C, double>) {
    matrix(products, rows, in).noalias() = matrix(dz, rows, units) * matrix(kernel, in, units).transpose();
  } else {
    kernels::gemm(kernels::transpose::no, kernels::transpose::yes, rows, in, units, 1.0f, dz.data(), units,
                  kernel.data(), units, 0.0f, products.data(), in);
  }
}
/// The same in scratch memory of the caller's scope (Conv2D sums the products over windows first).
template <ComputeDType C, class K = const C>
std::span<const accumulator_t<C>> input_gradient_products(std::span<const C> dz, std::size_t rows, std::size_t in,
                                                          std::span<K> kernel, std::size_t units) {
  const std::span<accumulator_t<C>> products = scratch_buffer<accumulator_t<C>>(rows * in);
  input_gradient_products<C, K>(dz, rows, in, kernel, units, products);
  return products;
}

/// The backward pass of y = dz-producing product z = x * kernel + bias, given dz:
///   kernel_gradient[in x units] = x^T dz,  bias_gradient = column sums of dz (both in V;
///   either may be empty: a frozen weight), dx[rows x in] = dz kernel^T (in C; empty: not wanted;
///   the kernel as in dense_forward).
template <ComputeDType C, class V, class K = const C>
void dense_backward(std::span<const C> x, std::size_t rows, std::size_t in, std::span<K> kernel,
                    std::size_t units, std::span<const C> dz, std::span<V> kernel_gradient, std::span<V> bias_gradient,
                    std::span<C> dx) {
  using A = accumulator_t<C>;
  // Each part's scratch (a V gradient's accumulator, the products of dx) is given back when the
  // part ends.
  const auto in_accumulator = [](std::span<V> out, std::size_t n) {
    if constexpr (std::is_same_v<A, V>) return out;
    else return scratch_buffer<A>(n);
  };
  if (!bias_gradient.empty()) {
    const scratch_scope scope;
    const std::span<A> sums = in_accumulator(bias_gradient, units);
    kernels::column_sum(dz, sums, units);
    store_gradient<V, A>(sums, bias_gradient);
  }
  if (!kernel_gradient.empty()) {
    const scratch_scope scope;
    const std::span<A> products = in_accumulator(kernel_gradient, in * units);
    if constexpr (std::is_same_v<C, double>) {
      matrix(products, in, units).noalias() = matrix(x, rows, in).transpose() * matrix(dz, rows, units);
    } else {
      kernels::gemm(kernels::transpose::yes, kernels::transpose::no, in, units, rows, 1.0f, x.data(), in, dz.data(),
                    units, 0.0f, products.data(), units);
    }
    store_gradient<V, A>(products, kernel_gradient);
  }
  if (dx.empty()) return;
  const scratch_scope scope;
  if constexpr (std::is_same_v<A, C>) input_gradient_products<C, K>(dz, rows, in, kernel, units, dx);  // straight into dx
  else store_gradient<C, A>(input_gradient_products<C, K>(dz, rows, in, kernel, units), dx);
}

}  // namespace mixprec::detail

// The arithmetic of the layers, on spans with run-time sizes. Compile-time layers and the
// run-time model both call these, so the two give bit-identical results for the same weights.
//
// float16 / bfloat16 / float32 compute: the kernels (GEMM accumulating in float32, then a fused
// bias + activation epilogue that rounds once to the compute dtype). float64: Eigen's double GEMM
// and double element-wise math.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <mixprec/core/detail/x86_intrinsics.hpp>  // before Eigen

#include <Eigen/Core>

#include <mixprec/core/cast.hpp>
#include <mixprec/core/dtype.hpp>
#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/elementwise.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/reduce.hpp>
#include <mixprec/layers/activations.hpp>
#include <mixprec/layers/tensor.hpp>

namespace mixprec {

namespace detail {

/// The elementwise kernel of an activation. softmax is not elementwise: its callers run
/// softmax_rows, and asking for it here is a logic error (as is a kind outside the enum).
inline kernels::activation to_kernel_activation(activation_kind kind) {
  switch (kind) {
    case activation_kind::linear: return kernels::activation::linear;
    case activation_kind::relu: return kernels::activation::relu;
    case activation_kind::gelu: return kernels::activation::gelu;
    case activation_kind::gelu_approximate: return kernels::activation::gelu_approximate;
    case activation_kind::sigmoid: return kernels::activation::sigmoid;
    case activation_kind::tanh: return kernels::activation::tanh;
    case activation_kind::exponential: return kernels::activation::exp;
    case activation_kind::softmax: break;
  }
  throw std::logic_error("to_kernel_activation: activation " + std::to_string(static_cast<int>(kind)) +
                         " has no elementwise kernel (softmax runs over rows).");
}

/// A per-thread buffer of n elements for one purpose (a tag type), grown as needed and kept for
/// the next call: layers' temporaries (GEMM accumulators, im2col columns) are then allocated
/// once per thread instead of once per call. Its contents are whatever the last user left. The
/// memory lives as long as the thread and is as large as the largest call it served (a 3x3
/// Conv2D over a 256 x 26 x 26 x 32 float batch keeps 170 MB of im2col columns), the price of
/// not allocating per call, as oneDNN's and PyTorch's scratchpads do.
template <class T, class Purpose>
std::span<T> scratch_buffer(std::size_t n) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return std::span(buffer).first(n);
}
struct dense_accumulator;
struct conv2d_columns;
struct max_pool_input;
struct max_pool_output;
struct softmax_bias;
struct softmax_logits;

/// y = act(x), element-wise (softmax: over rows of `cols`).
template <class C>
void activate(activation_kind kind, std::span<const C> x, std::span<C> y, std::size_t cols) {
  if (kind == activation_kind::softmax) {
    kernels::softmax_rows<C>(x, y, cols);
  } else {
    kernels::activate<C>(to_kernel_activation(kind), x, y);
  }
}

/// y = act(acc + bias), rounded once to C; acc is float32 (bias may be empty).
template <class C>
void dense_epilogue(std::span<const float> acc, std::span<const C> bias, activation_kind kind, std::span<C> y,
                    std::size_t cols) {
  if (kind != activation_kind::softmax) {
    kernels::bias_activation<C>(acc, bias, to_kernel_activation(kind), y, cols);
    return;
  }
  // Softmax over the biased float32 accumulator, then one rounding to C.
  const std::span<float> bias32 = scratch_buffer<float, softmax_bias>(bias.size());
  const std::span<float> logits = scratch_buffer<float, softmax_logits>(acc.size());
  convert<C, float>(bias, bias32);
  kernels::bias_activation<float>(acc, bias32, kernels::activation::linear, logits, cols);
  if constexpr (std::is_same_v<C, float>) {
    kernels::softmax_rows<float>(logits, y, cols);
  } else {
    kernels::softmax_rows<float>(logits, logits, cols);
    convert<float, C>(logits, y);
  }
}

/// y[rows x units] = act(x[rows x in] * kernel[in x units] + bias[units]); bias may be empty.
template <ComputeDType C>
void dense_forward(std::span<const C> x, std::size_t rows, std::size_t in, std::span<const C> kernel,
                   std::span<const C> bias, std::size_t units, activation_kind kind, std::span<C> y) {
  if constexpr (std::is_same_v<C, double>) {
    using matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const auto r = static_cast<Eigen::Index>(rows), k = static_cast<Eigen::Index>(in),
               n = static_cast<Eigen::Index>(units);
    Eigen::Map<matrix> out(y.data(), r, n);
    out.noalias() = Eigen::Map<const matrix>(x.data(), r, k) * Eigen::Map<const matrix>(kernel.data(), k, n);
    if (!bias.empty()) kernels::bias_add<double>(y, bias);
    activate<double>(kind, y, y, units);
  } else {
    // float32 accumulates straight into y (the epilogue then runs in place); 16-bit dtypes need
    // a float32 accumulator, which is reused from call to call.
    const std::span<float> acc = [&] {
      if constexpr (std::is_same_v<C, float>) return y;
      else return scratch_buffer<float, dense_accumulator>(rows * units);
    }();
    kernels::gemm(kernels::transpose::no, kernels::transpose::no, rows, units, in, 1.0f, x.data(), in, kernel.data(),
                  units, 0.0f, acc.data(), units);
    dense_epilogue<C>(acc, bias, kind, y, units);
  }
}

/// Output length of a convolution / pooling window along one axis (Keras' formula).
constexpr std::size_t window_output(std::size_t input, std::size_t window, std::size_t stride, bool same) {
  if (same) return (input + stride - 1) / stride;
  return input < window ? 0 : (input - window) / stride + 1;
}
/// Zeros added before the input along one axis for "same" padding (the rest goes after).
constexpr std::size_t padding_before(std::size_t input, std::size_t window, std::size_t stride, bool same) {
  if (!same) return 0;
  const std::size_t output = window_output(input, window, stride, true);
  const std::size_t needed = (output - 1) * stride + window;
  return needed > input ? (needed - input) / 2 : 0;
}

struct conv_geometry {
  std::size_t batch, height, width, channels;  // input, NHWC
  std::size_t kernel_height, kernel_width, stride_height, stride_width;
  bool same;
  std::size_t out_height() const { return window_output(height, kernel_height, stride_height, same); }
  std::size_t out_width() const { return window_output(width, kernel_width, stride_width, same); }
  std::size_t patch() const { return kernel_height * kernel_width * channels; }
};

/// Calls visit(output_pixel, first_slot, slots, first_input_pixel) for every row of every
/// output pixel's window, with the part of that row inside the input: `slots` window positions
/// from first_slot = ky * kernel_width + kx, which read the consecutive input pixels from
/// first_input_pixel on (a window row is contiguous in NHWC, whatever the strides). Output
/// pixels come in NHW order, pixels are indices (element offsets are pixel * channels), and rows
/// or positions in "same" padding are skipped.
template <class Visit>
void for_each_window_run(const conv_geometry& g, Visit&& visit) {
  const std::size_t oh = g.out_height(), ow = g.out_width();
  const std::size_t top = padding_before(g.height, g.kernel_height, g.stride_height, g.same);
  const std::size_t left = padding_before(g.width, g.kernel_width, g.stride_width, g.same);
  for (std::size_t n = 0; n < g.batch; ++n)
    for (std::size_t oy = 0; oy < oh; ++oy)
      for (std::size_t ox = 0; ox < ow; ++ox) {
        const std::size_t out = (n * oh + oy) * ow + ox;
        // Window columns kx in [first_kx, end_kx) land inside the input: left <= ox * sw + kx < left + width.
        // Every window holds at least one input column (x0 < left + width, left < kernel_width).
        const std::size_t x0 = ox * g.stride_width;
        const std::size_t first_kx = left > x0 ? left - x0 : 0;
        const std::size_t end_kx = std::min(g.kernel_width, left + g.width - x0);
        for (std::size_t ky = 0; ky < g.kernel_height; ++ky) {
          const std::size_t iy = oy * g.stride_height + ky;
          if (iy < top || iy - top >= g.height) continue;
          visit(out, ky * g.kernel_width + first_kx, end_kx - first_kx,
                (n * g.height + (iy - top)) * g.width + (x0 + first_kx - left));
        }
      }
}

/// im2col: one row per output pixel, holding its receptive field (kh, kw, c order, zero padded).
template <class C>
void im2col(std::span<const C> x, const conv_geometry& g, std::span<C> columns) {
  const std::size_t patch = g.patch();
  // Only "same" padding leaves positions that no input pixel fills.
  if (g.same) std::fill(columns.begin(), columns.end(), cast<C>(0));
  for_each_window_run(g, [&](std::size_t out, std::size_t slot, std::size_t slots, std::size_t in) {
    const C* pixels = x.data() + in * g.channels;
    std::copy(pixels, pixels + slots * g.channels, columns.data() + out * patch + slot * g.channels);
  });
}

/// Conv2D, NHWC, kernel [kh, kw, in, filters]: im2col, then the Dense arithmetic.
template <ComputeDType C>
void conv2d_forward(std::span<const C> x, const conv_geometry& g, std::span<const C> kernel, std::span<const C> bias,
                    std::size_t filters, activation_kind kind, std::span<C> y) {
  const std::size_t rows = g.batch * g.out_height() * g.out_width();
  const std::span<C> columns = scratch_buffer<C, conv2d_columns>(rows * g.patch());
  im2col<C>(x, g, columns);
  dense_forward<C>(columns, rows, g.patch(), kernel, bias, filters, kind, y);
}

/// MaxPooling2D, NHWC: each window row is folded into its output pixel by column_max. A window
/// holding NaN gives its first NaN (in ky, kx order), bits kept. "same" windows ignore the padding.
template <class C>
void max_pool2d(std::span<const C> x, const conv_geometry& g, std::span<C> y) {
  if constexpr (std::is_same_v<C, float> || std::is_same_v<C, double>) {
    std::fill(y.begin(), y.end(), -std::numeric_limits<C>::infinity());
    for_each_window_run(g, [&](std::size_t out, std::size_t, std::size_t slots, std::size_t in) {
      column_max<C>(x.subspan(in * g.channels, slots * g.channels), y.subspan(out * g.channels, g.channels));
    });
  } else {
    // 16-bit dtypes widen to float exactly, so pooling there and rounding back returns the
    // maximum's own value (a NaN comes back quiet, its sign kept); both conversions are vectorized.
    const std::span<float> wide = scratch_buffer<float, max_pool_input>(x.size());
    const std::span<float> pooled = scratch_buffer<float, max_pool_output>(y.size());
    convert<C, float>(x, wide);
    max_pool2d<float>(wide, g, pooled);
    convert<float, C>(pooled, y);
  }
}

/// BatchNormalization over the last axis, computed in S (float32 for 16-bit and float32
/// compute, float64 for float64): y = (x - mean) / sqrt(variance + epsilon) * gamma + beta.
template <class C, class S>
void batch_norm_forward(std::span<const C> x, std::size_t channels, std::span<const S> mean,
                        std::span<const S> variance, std::span<const S> gamma, std::span<const S> beta, S epsilon,
                        std::span<C> y) {
  std::vector<S> scale(channels), shift(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    scale[c] = gamma[c] / std::sqrt(variance[c] + epsilon);
    shift[c] = beta[c] - mean[c] * scale[c];
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = i % channels;
    y[i] = cast<C>(static_cast<S>(cast<S>(x[i]) * scale[c] + shift[c]));
  }
}

/// Per-channel mean and (biased) variance over every other axis, accumulated in double and
/// stored in S.
template <class C, class S>
void batch_moments(std::span<const C> x, std::size_t channels, std::span<S> mean, std::span<S> variance) {
  const std::size_t count = x.size() / channels;
  if (count == 0) throw std::invalid_argument("BatchNormalization: training needs a non-empty batch.");
  std::vector<double> sum(channels, 0.0), deviations(channels, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) sum[i % channels] += static_cast<double>(cast<double>(x[i]));
  for (std::size_t c = 0; c < channels; ++c) sum[c] /= static_cast<double>(count);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(cast<double>(x[i])) - sum[i % channels];
    deviations[i % channels] += d * d;
  }
  for (std::size_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<S>(sum[c]);
    variance[c] = static_cast<S>(deviations[c] / static_cast<double>(count));
  }
}

/// A BatchNormalization call over the last axis, with its four weights (all read in V). In
/// training the batch statistics are used and the moving ones updated.
template <class C, class S, class Weight>
void batch_norm_call(std::span<const C> x, std::size_t channels, const Weight& gamma, const Weight& beta,
                     Weight& moving_mean, Weight& moving_variance, bool training, double momentum, double epsilon,
                     std::span<C> y) {
  using V = typename Weight::true_dtype;
  const auto statistics = [](const Weight& w) {
    std::vector<S> values(w.size());
    convert<V, S>(w.value().values(), std::span(values));
    return values;
  };
  std::vector<S> mean(channels), variance(channels);
  if (training) {
    batch_moments<C, S>(x, channels, mean, variance);
    const auto m = static_cast<S>(momentum);
    for (auto [moving, batch] : {std::pair{&moving_mean, &mean}, std::pair{&moving_variance, &variance}}) {
      auto updated = statistics(*moving);
      for (std::size_t c = 0; c < channels; ++c) updated[c] = updated[c] * m + (*batch)[c] * (S(1) - m);
      moving->assign(Tensor<S, dynamic>(std::move(updated)));
    }
  } else {
    mean = statistics(moving_mean);
    variance = statistics(moving_variance);
  }
  batch_norm_forward<C, S>(x, channels, mean, variance, statistics(gamma), statistics(beta), static_cast<S>(epsilon), y);
}

/// Training-mode dropout in place: each element zeroed with probability `rate`, the others
/// scaled by 1 / (1 - rate) (rounded once in C).
template <class C>
void dropout_in_place(std::span<C> values, double rate, std::mt19937_64& rng) {
  std::bernoulli_distribution keep(1.0 - rate);
  const double scale = 1.0 / (1.0 - rate);
  for (auto& v : values) v = keep(rng) ? cast<C>(static_cast<double>(cast<double>(v)) * scale) : cast<C>(0);
}

}  // namespace detail
}  // namespace mixprec

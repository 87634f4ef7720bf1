// Every layer's numerics against a float64 reference computed from the same (already rounded)
// inputs and weights, with tolerances that fit the compute dtype: one rounding to the compute
// dtype, plus float32 accumulation over the reduction length, plus a few float32 ulps for the
// activation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <mixprec/layers.hpp>

using namespace mixprec;
using kernels::activation;

namespace {

template <class T>
double d(T value) {
  return static_cast<double>(cast<double>(value));
}

template <class C>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<C, float16>) return 0x1p-11;
  else if constexpr (std::is_same_v<C, bfloat16>) return 0x1p-8;
  else if constexpr (std::is_same_v<C, float>) return 0x1p-24;
  else return 0x1p-53;
}

double activation_reference(activation kind, double x) {
  switch (kind) {
    case activation::relu: return x > 0 ? x : 0.0;
    case activation::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case activation::tanh: return std::tanh(x);
    case activation::exponential: return std::exp(x);
    case activation::gelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case activation::gelu_approximate:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x)));
    case activation::linear: return x;
    case activation::softmax: break;  // over rows: the caller's own reference
  }
  return std::numeric_limits<double>::quiet_NaN();
}

/// |got - expected| <= one rounding to C + `accumulated` (float32 sums) + a few float32 ulps.
template <class C>
void check_close(double got, double expected, double accumulated, const char* what, std::size_t index) {
  const double tolerance = 2 * unit_roundoff<C>() * std::abs(expected) + accumulated + 8 * 0x1p-24 * std::abs(expected) + 1e-30;
  if (!(std::abs(got - expected) <= tolerance))
    FAIL_CHECK(what << "[" << index << "]: got " << got << ", expected " << expected << " (tolerance " << tolerance << ")");
}

template <class T, std::size_t... E>
Tensor<T, E...> random_tensor(std::size_t batch, std::uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Tensor<T, E...> t(batch);
  for (auto& v : t.values()) v = cast<T>(normal(rng));
  return t;
}

}  // namespace

TEST_CASE_TEMPLATE("Dense with every activation", C, float, bfloat16, float16, double) {
  using P = Policy<C, float>;
  constexpr std::size_t batch = 7, in = 37, units = 13;
  const auto x = random_tensor<C, dynamic, in>(batch, 1);
  for (activation kind : {activation::linear, activation::relu, activation::gelu,
                               activation::gelu_approximate, activation::sigmoid, activation::tanh,
                               activation::exponential, activation::softmax}) {
    CAPTURE(kernels::activation_name(kind));
    std::vector<double> y(batch * units), ref(batch * units), bound(batch * units);
    const auto run = [&]<class A>(A) {
      Dense<units, A, P> layer("dense", weight_settings{.bias_initializer = initializers::random_normal{0.0, 0.5, 3}});
      const auto out = layer(x);
      for (std::size_t i = 0; i < out.size(); ++i) y[i] = d(out[i]);
      const auto& w = layer.kernel.compute_value();
      const auto& b = layer.bias.compute_value();
      for (std::size_t r = 0; r < batch; ++r)
        for (std::size_t u = 0; u < units; ++u) {
          double sum = d(b[u]), magnitude = std::abs(d(b[u]));
          for (std::size_t k = 0; k < in; ++k) {
            sum += d(x[r * in + k]) * d(w[k * units + u]);
            magnitude += std::abs(d(x[r * in + k]) * d(w[k * units + u]));
          }
          ref[r * units + u] = sum;
          bound[r * units + u] = (std::is_same_v<C, double> ? 0x1p-52 : 0x1p-24) * static_cast<double>(in + 2) * magnitude;
        }
    };
    switch (kind) {
      case activation::linear: run(activations::linear{}); break;
      case activation::relu: run(activations::relu{}); break;
      case activation::gelu: run(activations::gelu{}); break;
      case activation::gelu_approximate: run(activations::gelu_approximate{}); break;
      case activation::sigmoid: run(activations::sigmoid{}); break;
      case activation::tanh: run(activations::tanh{}); break;
      case activation::exponential: run(activations::exponential{}); break;
      case activation::softmax: run(activations::softmax{}); break;
    }
    for (std::size_t r = 0; r < batch; ++r) {
      double row_max = -std::numeric_limits<double>::infinity(), total = 0;
      for (std::size_t u = 0; u < units; ++u) row_max = std::max(row_max, ref[r * units + u]);
      for (std::size_t u = 0; u < units; ++u) total += std::exp(ref[r * units + u] - row_max);
      for (std::size_t u = 0; u < units; ++u) {
        const std::size_t i = r * units + u;
        const double z = ref[i];
        // The activation's sensitivity to the accumulation error of z.
        const double slope = kind == activation::exponential ? std::exp(z) : (kind == activation::softmax ? 1.0 : 1.2);
        const double expected = kind == activation::softmax ? std::exp(z - row_max) / total : activation_reference(kind, z);
        check_close<C>(y[i], expected, slope * bound[i] + (kind == activation::softmax ? 16 * 0x1p-24 : 0.0), "dense", i);
      }
    }
  }
}

TEST_CASE_TEMPLATE("Conv2D, valid and same padding, strides", C, float, bfloat16, float16, double) {
  using P = Policy<C, float>;
  constexpr std::size_t H = 9, W = 8, Cin = 3, F = 4, KH = 3, KW = 2;
  const auto x = random_tensor<C, dynamic, H, W, Cin>(2, 5);
  const auto check = [&]<class Layer>(Layer layer, std::size_t sh, std::size_t sw, bool same) {
    const auto y = layer(x);
    using Y = std::remove_cvref_t<decltype(y)>;
    constexpr std::size_t OH = Y::shape_type::extents[1], OW = Y::shape_type::extents[2];
    CHECK(OH == detail::window_output(H, KH, sh, same));
    CHECK(OW == detail::window_output(W, KW, sw, same));
    const std::size_t top = detail::padding_before(H, KH, sh, same), left = detail::padding_before(W, KW, sw, same);
    const auto& w = layer.kernel.compute_value();
    const auto& b = layer.bias.compute_value();
    for (std::size_t n = 0; n < 2; ++n)
      for (std::size_t oy = 0; oy < OH; ++oy)
        for (std::size_t ox = 0; ox < OW; ++ox)
          for (std::size_t f = 0; f < F; ++f) {
            double sum = d(b[f]), magnitude = std::abs(sum);
            for (std::size_t ky = 0; ky < KH; ++ky)
              for (std::size_t kx = 0; kx < KW; ++kx)
                for (std::size_t c = 0; c < Cin; ++c) {
                  const long iy = static_cast<long>(oy * sh + ky) - static_cast<long>(top);
                  const long ix = static_cast<long>(ox * sw + kx) - static_cast<long>(left);
                  if (iy < 0 || ix < 0 || iy >= static_cast<long>(H) || ix >= static_cast<long>(W)) continue;
                  const double term = d(x[((n * H + iy) * W + ix) * Cin + c]) * d(w[((ky * KW + kx) * Cin + c) * F + f]);
                  sum += term;
                  magnitude += std::abs(term);
                }
            const std::size_t i = ((n * OH + oy) * OW + ox) * F + f;
            check_close<C>(d(y[i]), sum, 20 * 0x1p-24 * magnitude, "conv2d", i);
          }
  };
  check(Conv2D<F, KH, KW, P>(), 1, 1, false);
  check(Conv2D<F, KH, KW, P, padding::same>(), 1, 1, true);
  check(Conv2D<F, KH, KW, P, padding::same, strides<2, 3>>(), 2, 3, true);
  check(Conv2D<F, KH, KW, P, strides<2>>(), 2, 2, false);
}

TEST_CASE_TEMPLATE("MaxPooling2D is exact, and NaN propagates", C, float, bfloat16, float16, double) {
  using P = Policy<C>;
  auto x = random_tensor<C, dynamic, 5, 5, 2>(1, 9);
  x[0] = cast<C>(std::numeric_limits<double>::quiet_NaN());
  MaxPooling2D<2, 2, P> valid;
  const auto y = valid(x);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(y)>, Tensor<C, dynamic, 2, 2, 2>>);
  CHECK(std::isnan(d(y[0])));
  for (std::size_t oy = 0; oy < 2; ++oy)
    for (std::size_t ox = 0; ox < 2; ++ox)
      for (std::size_t c = 0; c < 2; ++c) {
        if (oy == 0 && ox == 0 && c == 0) continue;
        double best = -INFINITY;
        for (std::size_t ky = 0; ky < 2; ++ky)
          for (std::size_t kx = 0; kx < 2; ++kx) best = std::max(best, d(x[((oy * 2 + ky) * 5 + ox * 2 + kx) * 2 + c]));
        CHECK(d(y[(oy * 2 + ox) * 2 + c]) == best);
      }
  MaxPooling2D<2, 2, P, padding::same> same;
  const auto z = same(x);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(z)>, Tensor<C, dynamic, 3, 3, 2>>);
  CHECK(d(z[(2 * 3 + 2) * 2 + 1]) == d(x[(4 * 5 + 4) * 2 + 1]));  // the corner window holds one pixel
}

TEST_CASE_TEMPLATE("BatchNormalization: inference with moving statistics, training with batch statistics", C, float,
                   bfloat16, float16, double) {
  using P = Policy<C, float>;
  const auto x = random_tensor<C, dynamic, 4, 3>(6, 11, 2.0);
  BatchNormalization<P> layer("bn", 0.9, 1e-3);
  const auto inference = layer(x);  // moving mean 0, variance 1: y = x / sqrt(1 + eps)
  for (std::size_t i = 0; i < x.size(); ++i) check_close<C>(d(inference[i]), d(x[i]) / std::sqrt(1.001), 0.0, "bn", i);
  const auto trained = layer.training_call(x);
  std::vector<double> mean(3, 0), variance(3, 0);
  const double count = static_cast<double>(x.size() / 3);
  for (std::size_t i = 0; i < x.size(); ++i) mean[i % 3] += d(x[i]) / count;
  for (std::size_t i = 0; i < x.size(); ++i) variance[i % 3] += (d(x[i]) - mean[i % 3]) * (d(x[i]) - mean[i % 3]) / count;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double expected = (d(x[i]) - mean[i % 3]) / std::sqrt(variance[i % 3] + 1e-3);
    check_close<C>(d(trained[i]), expected, 64 * 0x1p-24 * (1 + std::abs(expected)), "bn training", i);
  }
  for (std::size_t c = 0; c < 3; ++c) {
    CHECK(layer.moving_mean.value()[c] == doctest::Approx(0.1 * mean[c]).epsilon(1e-5));
    CHECK(layer.moving_variance.value()[c] == doctest::Approx(0.9 + 0.1 * variance[c]).epsilon(1e-5));
  }
  static_assert(std::is_same_v<typename decltype(layer)::statistics_dtype, std::conditional_t<std::is_same_v<C, double>, double, float>>);
  static_assert(std::is_same_v<typename decltype(layer.gamma)::dtype, float>);  // read in float32, never autocast
}

TEST_CASE("Dropout: identity at inference; in training, zeros at the rate and rescales the rest") {
  Dropout<policies::float32> layer(0.25, "dropout", 42);
  Tensor<float, dynamic, 1000> x(4);
  for (auto& v : x.values()) v = 2.0f;
  CHECK(layer(x) == x);
  const auto y = layer.training_call(x);
  std::size_t zeros = 0;
  for (float v : y.values()) {
    CHECK((v == 0.0f || v == doctest::Approx(2.0f / 0.75f)));
    zeros += v == 0.0f;
  }
  CHECK(zeros > 850);
  CHECK(zeros < 1150);
}

TEST_CASE("Dropout without a seed draws from its name: two layers differ, a run repeats") {
  Tensor<float, dynamic, 256> x(1);
  for (auto& v : x.values()) v = 1.0f;
  Dropout<policies::float32> first(0.5, "dropout"), second(0.5, "dropout_1"), first_again(0.5, "dropout");
  const auto y = first.training_call(x);
  CHECK(y == first_again.training_call(x));
  CHECK_FALSE(y == second.training_call(x));  // the same masks in lockstep would drop the same units
  // An explicit seed is the seed, whatever the name.
  Dropout<policies::float32> seeded(0.5, "a", 9), same_seed(0.5, "b", 9);
  CHECK(seeded.training_call(x) == same_seed.training_call(x));
}

TEST_CASE("Flatten and Activation") {
  const auto x = random_tensor<float, dynamic, 2, 3, 4>(5, 13);
  Flatten<policies::bfloat16> flatten;
  const auto flat = flatten(x);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(flat)>, Tensor<bfloat16, dynamic, 24>>);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(flat[i].to_bits() == bfloat16(x[i]).to_bits());
  Softmax<policies::float32> softmax;
  const auto probabilities = softmax(x);
  for (std::size_t row = 0; row < x.size() / 4; ++row) {
    double total = 0;
    for (std::size_t k = 0; k < 4; ++k) total += probabilities[row * 4 + k];
    CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
  }
  // A softmax of large logits stays finite (max-subtracted).
  Tensor<float, dynamic, 3> large({1000.0f, 1001.0f, 1002.0f});
  const auto p = softmax(large);
  CHECK(p[2] == doctest::Approx(std::exp(0.0) / (std::exp(-2.0) + std::exp(-1.0) + 1.0)).epsilon(1e-6));
}

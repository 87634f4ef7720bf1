// Activations and row softmax, forward and backward: mixprec's kernels vs a scalar loop of std::
// functions vs Eigen's vectorized array functions (same build flags; forward only), on float and
// bfloat16. Items/s counts elements (Gelem/s); bytes/s counts bytes read + written.
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>

#include <mixprec/kernels/elementwise.hpp>

namespace {

using mixprec::bfloat16;
using mixprec::kernels::activation;

using bench::random_values;

void set_counters(benchmark::State& state, std::size_t elements, std::size_t bytes_per_element) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elements));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * elements * bytes_per_element));
}

constexpr float gelu_c = 0.7978845608028654f;          // sqrt(2 / pi)
constexpr float inv_sqrt2 = 0.7071067811865476f;       // 1 / sqrt(2)
constexpr float inv_sqrt_2pi = 0.3989422804014327f;    // 1 / sqrt(2 pi)

float scalar_activation(activation a, float x) {
  switch (a) {
    case activation::linear: return x;
    case activation::relu: return std::max(x, 0.0f);
    case activation::gelu: return 0.5f * x * std::erfc(-x * inv_sqrt2);
    case activation::gelu_approximate: return 0.5f * x * (1.0f + std::tanh(gelu_c * (x + 0.044715f * x * x * x)));
    case activation::sigmoid: return 1.0f / (1.0f + std::exp(-x));
    case activation::tanh: return std::tanh(x);
    case activation::exponential: return std::exp(x);
    case activation::softmax: break;  // a row operation, not elementwise
  }
  return x;
}

/// a'(x), the textbook formulas in float.
float scalar_derivative(activation a, float x) {
  switch (a) {
    case activation::linear: return 1.0f;
    case activation::relu: return x > 0.0f ? 1.0f : 0.0f;
    case activation::gelu: return 0.5f * std::erfc(-x * inv_sqrt2) + x * std::exp(-0.5f * x * x) * inv_sqrt_2pi;
    case activation::gelu_approximate: {
      const float t = std::tanh(gelu_c * (x + 0.044715f * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * gelu_c * (1.0f + 3.0f * 0.044715f * x * x);
    }
    case activation::sigmoid: {
      const float s = 1.0f / (1.0f + std::exp(-x));
      return s * (1.0f - s);
    }
    case activation::tanh: {
      const float t = std::tanh(x);
      return 1.0f - t * t;
    }
    case activation::exponential: return std::exp(x);
    case activation::softmax: break;  // a row operation, not elementwise
  }
  return 1.0f;
}

template <class T>
void BM_mixprec_activate(benchmark::State& state, activation a) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto x = random_values<T>(n);
  std::vector<T> y(n);
  for (auto _ : state) {
    mixprec::kernels::activate<T>(a, x, y);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 2 * sizeof(T));
}

/// std:: functions in float, one element at a time (bfloat16: widened and rounded per element).
template <class T>
void BM_scalar_activate(benchmark::State& state, activation a) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto x = random_values<T>(n);
  std::vector<T> y(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) y[i] = T(scalar_activation(a, static_cast<float>(x[i])));
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 2 * sizeof(T));
}

void BM_eigen_activate(benchmark::State& state, activation a) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto values = random_values<float>(n);
  const Eigen::Map<const Eigen::ArrayXf> x(values.data(), static_cast<Eigen::Index>(n));
  Eigen::ArrayXf y(static_cast<Eigen::Index>(n));
  for (auto _ : state) {
    switch (a) {
      case activation::relu: y = x.max(0.0f); break;
      case activation::gelu: y = 0.5f * x * (-inv_sqrt2 * x).erfc(); break;
      case activation::gelu_approximate: y = 0.5f * x * (1.0f + (gelu_c * (x + 0.044715f * x.cube())).tanh()); break;
      case activation::sigmoid: y = x.logistic(); break;
      case activation::tanh: y = x.tanh(); break;
      case activation::exponential: y = x.exp(); break;
      case activation::linear: y = x; break;
      case activation::softmax: break;  // a row operation, not elementwise
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 2 * sizeof(float));
}

template <class T>
void BM_mixprec_activation_backward(benchmark::State& state, activation a) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto x = random_values<T>(n);
  const std::vector<T> dy(x.rbegin(), x.rend());
  std::vector<T> dx(n);
  for (auto _ : state) {
    mixprec::kernels::activation_backward<T>(a, x, dy, dx);
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 3 * sizeof(T));
}

/// dy * a'(x) with the textbook std:: formulas, one element at a time.
template <class T>
void BM_scalar_activation_backward(benchmark::State& state, activation a) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto x = random_values<T>(n);
  const std::vector<T> dy(x.rbegin(), x.rend());
  std::vector<T> dx(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i)
      dx[i] = T(static_cast<float>(dy[i]) * scalar_derivative(a, static_cast<float>(x[i])));
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 3 * sizeof(T));
}

constexpr std::size_t softmax_cols = 1000;  // a classifier's logits

template <class T>
void BM_mixprec_softmax(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0)) * softmax_cols;
  const auto x = random_values<T>(n);
  std::vector<T> y(n);
  for (auto _ : state) {
    mixprec::kernels::softmax_rows<T>(x, y, softmax_cols);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 2 * sizeof(T));
}

void BM_scalar_softmax(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0)) * softmax_cols;
  const auto x = random_values<float>(n);
  std::vector<float> y(n);
  for (auto _ : state) {
    for (std::size_t start = 0; start < n; start += softmax_cols) {
      const float largest = *std::max_element(x.begin() + static_cast<std::ptrdiff_t>(start),
                                              x.begin() + static_cast<std::ptrdiff_t>(start + softmax_cols));
      float total = 0.0f;
      for (std::size_t c = 0; c < softmax_cols; ++c) total += y[start + c] = std::exp(x[start + c] - largest);
      for (std::size_t c = 0; c < softmax_cols; ++c) y[start + c] /= total;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 2 * sizeof(float));
}

void BM_eigen_softmax(benchmark::State& state) {
  const auto rows = static_cast<Eigen::Index>(state.range(0));
  const auto cols = static_cast<Eigen::Index>(softmax_cols);
  const auto values = random_values<float>(static_cast<std::size_t>(rows * cols));
  // Row-major rows x cols, as mixprec's layout.
  using RowMajor = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> x(values.data(), rows, cols);
  RowMajor y(rows, cols);
  for (auto _ : state) {
    y = (x.colwise() - x.rowwise().maxCoeff()).exp();
    y.colwise() /= y.rowwise().sum();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, static_cast<std::size_t>(rows * cols), 2 * sizeof(float));
}

template <class T>
void BM_mixprec_softmax_backward(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0)) * softmax_cols;
  std::vector<T> y(n);
  mixprec::kernels::softmax_rows<T>(random_values<T>(n), y, softmax_cols);
  const std::vector<T> dy(y.rbegin(), y.rend());
  std::vector<T> dx(n);
  for (auto _ : state) {
    mixprec::kernels::softmax_rows_backward<T>(y, dy, dx, softmax_cols);
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 3 * sizeof(T));
}

void BM_scalar_softmax_backward(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0)) * softmax_cols;
  std::vector<float> y(n);
  mixprec::kernels::softmax_rows<float>(random_values<float>(n), y, softmax_cols);
  const std::vector<float> dy(y.rbegin(), y.rend());
  std::vector<float> dx(n);
  for (auto _ : state) {
    for (std::size_t start = 0; start < n; start += softmax_cols) {
      float weighted = 0.0f;
      for (std::size_t c = start; c < start + softmax_cols; ++c) weighted += dy[c] * y[c];
      for (std::size_t c = start; c < start + softmax_cols; ++c) dx[c] = y[c] * (dy[c] - weighted);
    }
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 3 * sizeof(float));
}

// BENCHMARK_CAPTURE needs plain function names.
void BM_mixprec_activate_float(benchmark::State& state, activation a) { BM_mixprec_activate<float>(state, a); }
void BM_mixprec_activate_bfloat16(benchmark::State& state, activation a) { BM_mixprec_activate<bfloat16>(state, a); }
void BM_scalar_activate_float(benchmark::State& state, activation a) { BM_scalar_activate<float>(state, a); }
void BM_scalar_activate_bfloat16(benchmark::State& state, activation a) { BM_scalar_activate<bfloat16>(state, a); }
void BM_mixprec_backward_float(benchmark::State& state, activation a) { BM_mixprec_activation_backward<float>(state, a); }
void BM_mixprec_backward_bfloat16(benchmark::State& state, activation a) {
  BM_mixprec_activation_backward<bfloat16>(state, a);
}
void BM_scalar_backward_float(benchmark::State& state, activation a) { BM_scalar_activation_backward<float>(state, a); }

void sizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 16)->Arg(1 << 24); }
void softmax_rows(benchmark::internal::Benchmark* b) { b->Arg(16)->Arg(4096); }

}  // namespace

#define MIXPREC_ACTIVATION_BENCHMARKS(act)                                                \
  BENCHMARK_CAPTURE(BM_mixprec_activate_float, act, activation::act)->Apply(sizes);    \
  BENCHMARK_CAPTURE(BM_scalar_activate_float, act, activation::act)->Apply(sizes);     \
  BENCHMARK_CAPTURE(BM_eigen_activate, act, activation::act)->Apply(sizes);            \
  BENCHMARK_CAPTURE(BM_mixprec_activate_bfloat16, act, activation::act)->Apply(sizes); \
  BENCHMARK_CAPTURE(BM_scalar_activate_bfloat16, act, activation::act)->Apply(sizes);

#define MIXPREC_BACKWARD_BENCHMARKS(act)                                                 \
  BENCHMARK_CAPTURE(BM_mixprec_backward_float, act, activation::act)->Apply(sizes);    \
  BENCHMARK_CAPTURE(BM_scalar_backward_float, act, activation::act)->Apply(sizes);     \
  BENCHMARK_CAPTURE(BM_mixprec_backward_bfloat16, act, activation::act)->Apply(sizes);

MIXPREC_ACTIVATION_BENCHMARKS(relu)
MIXPREC_ACTIVATION_BENCHMARKS(gelu)
MIXPREC_ACTIVATION_BENCHMARKS(gelu_approximate)
MIXPREC_ACTIVATION_BENCHMARKS(sigmoid)
MIXPREC_ACTIVATION_BENCHMARKS(tanh)
MIXPREC_ACTIVATION_BENCHMARKS(exponential)

BENCHMARK(BM_mixprec_softmax<float>)->Apply(softmax_rows);
BENCHMARK(BM_scalar_softmax)->Apply(softmax_rows);
BENCHMARK(BM_eigen_softmax)->Apply(softmax_rows);
BENCHMARK(BM_mixprec_softmax<bfloat16>)->Apply(softmax_rows);

MIXPREC_BACKWARD_BENCHMARKS(relu)
MIXPREC_BACKWARD_BENCHMARKS(gelu)
MIXPREC_BACKWARD_BENCHMARKS(gelu_approximate)
MIXPREC_BACKWARD_BENCHMARKS(sigmoid)
MIXPREC_BACKWARD_BENCHMARKS(tanh)

BENCHMARK(BM_mixprec_softmax_backward<float>)->Apply(softmax_rows);
BENCHMARK(BM_scalar_softmax_backward)->Apply(softmax_rows);
BENCHMARK(BM_mixprec_softmax_backward<bfloat16>)->Apply(softmax_rows);

BENCHMARK_MAIN();

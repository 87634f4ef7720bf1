// Optimizer updates: mixprec's Adam and SGD-with-momentum kernels vs a scalar loop of the same
// rules vs Eigen array expressions (float; same build flags), at 1K, 64K and 4M parameters.
// Items/s counts parameters; bytes/s counts the bytes read + written (Adam: w, g, m, v read and
// w, m, v written; SGD: w, g, velocity read and w, velocity written).
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include <Eigen/Core>

#include <mixprec/kernels/optimizer.hpp>

namespace {

using mixprec::bfloat16;
namespace k = mixprec::kernels;

using bench::random_values;

void set_counters(benchmark::State& state, std::size_t parameters, std::size_t bytes_per_parameter) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * parameters));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * parameters * bytes_per_parameter));
}

/// A variable, its gradient and two slots (Adam's m and v, or SGD's velocity in m).
template <class V>
struct parameters {
  explicit parameters(std::size_t n)
      : w(random_values<V>(n)), g(random_values<V>(n)), m(n, V(0.0f)), v(n, V(0.0f)) {}
  std::vector<V> w, g, m, v;
};

// The first step's constants (t = 1) for the loops that do not derive them.
constexpr float learning_rate = 1e-3f, beta_1 = 0.9f, beta_2 = 0.999f, epsilon = 1e-7f;
const float alpha = learning_rate * std::sqrt(1.0f - beta_2) / (1.0f - beta_1);

template <class V>
void BM_mixprec_adam(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  parameters<V> p(n);
  for (auto _ : state) {
    k::adam_update<V>(p.w, p.g, p.m, p.v, {}, {.learning_rate = learning_rate});
    benchmark::DoNotOptimize(p.w.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 7 * sizeof(V));
}

/// The same rule one element at a time in float (bfloat16: widened and rounded per value).
template <class V>
void BM_scalar_adam(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  parameters<V> p(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) {
      const float g = static_cast<float>(p.g[i]);
      const float m = static_cast<float>(p.m[i]) + (g - static_cast<float>(p.m[i])) * (1.0f - beta_1);
      const float v = static_cast<float>(p.v[i]) + (g * g - static_cast<float>(p.v[i])) * (1.0f - beta_2);
      p.m[i] = V(m);
      p.v[i] = V(v);
      p.w[i] = V(static_cast<float>(p.w[i]) - (m * alpha) / (std::sqrt(v) + epsilon));
    }
    benchmark::DoNotOptimize(p.w.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 7 * sizeof(V));
}

using array = Eigen::Map<Eigen::ArrayXf>;
array eigen_view(std::vector<float>& x) { return array(x.data(), static_cast<Eigen::Index>(x.size())); }

void BM_eigen_adam(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  parameters<float> p(n);
  auto w = eigen_view(p.w), g = eigen_view(p.g), m = eigen_view(p.m), v = eigen_view(p.v);
  for (auto _ : state) {
    m += (g - m) * (1.0f - beta_1);
    v += (g.square() - v) * (1.0f - beta_2);
    w -= (m * alpha) / (v.sqrt() + epsilon);
    benchmark::DoNotOptimize(p.w.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 7 * sizeof(float));
}

constexpr float sgd_learning_rate = 0.01f, momentum = 0.9f;

template <class V>
void BM_mixprec_sgd_momentum(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  parameters<V> p(n);
  for (auto _ : state) {
    k::sgd_update<V>(p.w, p.g, p.m, {.learning_rate = sgd_learning_rate, .momentum = momentum});
    benchmark::DoNotOptimize(p.w.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 5 * sizeof(V));
}

template <class V>
void BM_scalar_sgd_momentum(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  parameters<V> p(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) {
      const float velocity = static_cast<float>(p.m[i]) * momentum - static_cast<float>(p.g[i]) * sgd_learning_rate;
      p.m[i] = V(velocity);
      p.w[i] = V(static_cast<float>(p.w[i]) + velocity);
    }
    benchmark::DoNotOptimize(p.w.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 5 * sizeof(V));
}

void BM_eigen_sgd_momentum(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  parameters<float> p(n);
  auto w = eigen_view(p.w), g = eigen_view(p.g), velocity = eigen_view(p.m);
  for (auto _ : state) {
    velocity = velocity * momentum - g * sgd_learning_rate;
    w += velocity;
    benchmark::DoNotOptimize(p.w.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, n, 5 * sizeof(float));
}

void sizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 22); }

}  // namespace

BENCHMARK(BM_mixprec_adam<float>)->Apply(sizes);
BENCHMARK(BM_scalar_adam<float>)->Apply(sizes);
BENCHMARK(BM_eigen_adam)->Apply(sizes);
BENCHMARK(BM_mixprec_adam<bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_adam<bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_sgd_momentum<float>)->Apply(sizes);
BENCHMARK(BM_scalar_sgd_momentum<float>)->Apply(sizes);
BENCHMARK(BM_eigen_sgd_momentum)->Apply(sizes);
BENCHMARK(BM_mixprec_sgd_momentum<bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_sgd_momentum<bfloat16>)->Apply(sizes);

BENCHMARK_MAIN();

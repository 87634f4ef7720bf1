// Reductions: mixprec's kernels vs a scalar loop vs Eigen (same build flags), at 1K, 64K and 16M
// elements. Bytes/s counts the bytes read. all_finite scans finite data, its worst case (no
// early exit).
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include <mixprec/core/cast.hpp>
#include <mixprec/kernels/reduce.hpp>

namespace {

using mixprec::bfloat16;

using bench::random_values;

/// Eigen's scalar for T (bit-compatible with mixprec's), and a read-only array view.
template <class T>
using eigen_scalar_t = std::conditional_t<std::is_same_v<T, bfloat16>, Eigen::bfloat16, T>;
template <class T>
auto eigen_view(const std::vector<T>& x) {
  using E = eigen_scalar_t<T>;
  return Eigen::Map<const Eigen::Array<E, Eigen::Dynamic, 1>>(reinterpret_cast<const E*>(x.data()),
                                                              static_cast<Eigen::Index>(x.size()));
}

void set_bytes(benchmark::State& state, std::size_t bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes_per_iteration));
}

template <class T>
void BM_mixprec_all_finite(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(mixprec::kernels::all_finite<T>(x));
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_scalar_all_finite(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    bool finite = true;
    for (const T& v : x) {
      if (!std::isfinite(static_cast<float>(v))) {
        finite = false;
        break;
      }
    }
    benchmark::DoNotOptimize(finite);
  }
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_eigen_all_finite(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  const auto view = eigen_view(x);
  for (auto _ : state) benchmark::DoNotOptimize(view.allFinite());
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_mixprec_amax(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(mixprec::kernels::amax<T>(x));
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_scalar_amax(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    float largest = 0.0f;
    for (const T& v : x) largest = std::max(largest, std::fabs(static_cast<float>(v)));
    benchmark::DoNotOptimize(largest);
  }
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_eigen_amax(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  const auto view = eigen_view(x);
  for (auto _ : state) benchmark::DoNotOptimize(view.cwiseAbs().maxCoeff());
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_mixprec_sum(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(mixprec::kernels::sum<T>(x));
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_eigen_sum(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  const auto view = eigen_view(x);
  for (auto _ : state) benchmark::DoNotOptimize(view.sum());
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_mixprec_unscale_and_check_finite(benchmark::State& state) {
  auto g = random_values<T>(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(mixprec::kernels::unscale_and_check_finite<T>(g, 1.0f));
  set_bytes(state, g.size() * sizeof(T));  // read (and written back)
}

/// column_max over rows of 32 columns (a max pool's channels): the NaN-propagating running
/// maximum, against the same rule as a scalar loop and Eigen's colwise().maxCoeff() (which does
/// not propagate NaN: a lower bound on the work).
constexpr std::size_t pooled_channels = 32;

template <class T>
void BM_mixprec_column_max(benchmark::State& state) {
  const auto rows = random_values<T>(static_cast<std::size_t>(state.range(0)));
  std::vector<T> maxima(pooled_channels, mixprec::cast<T>(-INFINITY));
  for (auto _ : state) {
    mixprec::kernels::column_max<T>(rows, maxima);
    benchmark::DoNotOptimize(maxima.data());
  }
  set_bytes(state, rows.size() * sizeof(T));
}

/// The same rule, one element at a time (16-bit values widened to float, the maxima kept in float).
template <class T>
void BM_scalar_column_max(benchmark::State& state) {
  const auto rows = random_values<T>(static_cast<std::size_t>(state.range(0)));
  std::vector<float> maxima(pooled_channels, -INFINITY);
  for (auto _ : state) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      float& largest = maxima[i % pooled_channels];
      const float value = static_cast<float>(rows[i]);
      if (!std::isnan(largest) && (std::isnan(value) || value > largest)) largest = value;
    }
    benchmark::DoNotOptimize(maxima.data());
  }
  set_bytes(state, rows.size() * sizeof(T));
}

void BM_eigen_column_max(benchmark::State& state) {
  const auto rows = random_values<float>(static_cast<std::size_t>(state.range(0)));
  using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const matrix> view(rows.data(), static_cast<Eigen::Index>(rows.size() / pooled_channels),
                                      static_cast<Eigen::Index>(pooled_channels));
  Eigen::Matrix<float, 1, Eigen::Dynamic> maxima(static_cast<Eigen::Index>(pooled_channels));
  for (auto _ : state) {
    maxima = view.colwise().maxCoeff();
    benchmark::DoNotOptimize(maxima.data());
  }
  set_bytes(state, rows.size() * sizeof(float));
}

/// column_sum over rows of 512 columns (a Dense layer's bias gradient: the sum over the batch),
/// against a scalar loop in the same row order and Eigen's colwise().sum() (float only).
constexpr std::size_t bias_units = 512;

template <class T>
void BM_mixprec_column_sum(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  std::vector<float> sums(bias_units);
  for (auto _ : state) {
    mixprec::kernels::column_sum<T>(x, sums, bias_units);
    benchmark::DoNotOptimize(sums.data());
  }
  set_bytes(state, x.size() * sizeof(T));
}

template <class T>
void BM_scalar_column_sum(benchmark::State& state) {
  const auto x = random_values<T>(static_cast<std::size_t>(state.range(0)));
  std::vector<float> sums(bias_units);
  for (auto _ : state) {
    std::fill(sums.begin(), sums.end(), 0.0f);
    for (std::size_t row = 0; row < x.size(); row += bias_units)
      for (std::size_t c = 0; c < bias_units; ++c) sums[c] += static_cast<float>(x[row + c]);
    benchmark::DoNotOptimize(sums.data());
  }
  set_bytes(state, x.size() * sizeof(T));
}

void BM_eigen_column_sum(benchmark::State& state) {
  const auto x = random_values<float>(static_cast<std::size_t>(state.range(0)));
  using matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const matrix> view(x.data(), static_cast<Eigen::Index>(x.size() / bias_units),
                                      static_cast<Eigen::Index>(bias_units));
  Eigen::Matrix<float, 1, Eigen::Dynamic> sums(static_cast<Eigen::Index>(bias_units));
  for (auto _ : state) {
    sums = view.colwise().sum();
    benchmark::DoNotOptimize(sums.data());
  }
  set_bytes(state, x.size() * sizeof(float));
}

void sizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 24); }

}  // namespace

BENCHMARK(BM_mixprec_all_finite<float>)->Apply(sizes);
BENCHMARK(BM_scalar_all_finite<float>)->Apply(sizes);
BENCHMARK(BM_eigen_all_finite<float>)->Apply(sizes);
BENCHMARK(BM_mixprec_all_finite<bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_all_finite<bfloat16>)->Apply(sizes);
BENCHMARK(BM_eigen_all_finite<bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_amax<float>)->Apply(sizes);
BENCHMARK(BM_scalar_amax<float>)->Apply(sizes);
BENCHMARK(BM_eigen_amax<float>)->Apply(sizes);
BENCHMARK(BM_mixprec_amax<bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_amax<bfloat16>)->Apply(sizes);
BENCHMARK(BM_eigen_amax<bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_sum<float>)->Apply(sizes);
BENCHMARK(BM_eigen_sum<float>)->Apply(sizes);
BENCHMARK(BM_mixprec_sum<bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_unscale_and_check_finite<float>)->Apply(sizes);
BENCHMARK(BM_mixprec_unscale_and_check_finite<bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_column_max<float>)->Apply(sizes);
BENCHMARK(BM_scalar_column_max<float>)->Apply(sizes);
BENCHMARK(BM_eigen_column_max)->Apply(sizes);
BENCHMARK(BM_mixprec_column_max<bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_column_max<bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_column_sum<float>)->Apply(sizes);
BENCHMARK(BM_scalar_column_sum<float>)->Apply(sizes);
BENCHMARK(BM_eigen_column_sum)->Apply(sizes);
BENCHMARK(BM_mixprec_column_sum<bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_column_sum<bfloat16>)->Apply(sizes);

BENCHMARK_MAIN();

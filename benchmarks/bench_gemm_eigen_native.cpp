// The strongest Eigen baseline for bench_gemm: Eigen's float GEMM built with -march=native (AVX2
// and FMA here, AVX-512 where the machine has it). A program of its own: Eigen compiled with
// different -march in two translation units of one program breaks the ODR. It does not include
// Highway.
#include "bench_common.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>

#include <Eigen/Core>

namespace {

void BM_eigen_gemm_native(benchmark::State& state) {
  const auto m = static_cast<Eigen::Index>(state.range(0));
  const auto n = static_cast<Eigen::Index>(state.range(1));
  const auto k = static_cast<Eigen::Index>(state.range(2));
  Eigen::setNbThreads(static_cast<int>(state.range(3)));
  Eigen::MatrixXf a(m, k), b(k, n), c(m, n);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto* x : {&a, &b})
    for (Eigen::Index i = 0; i < x->size(); ++i) x->data()[i] = uniform(rng);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

using bench::gemm_sizes;

}  // namespace

BENCHMARK(BM_eigen_gemm_native)->Name("eigen_gemm/f32_march_native")->Apply(gemm_sizes);

BENCHMARK_MAIN();

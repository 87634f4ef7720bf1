// GEMM: mixprec::kernels::gemm (float, bfloat16 -> float, float16 -> float) vs Eigen's float GEMM
// built with the same flags as this program (no -march; Eigen then has SSE2 only, while our
// kernels dispatch at run time), vs Eigen's GEMM on Eigen::bfloat16 scalars (small sizes: it is
// slow). Eigen built with -march=native is bench_gemm_eigen_native, a separate program (mixing
// -march across translation units of one program breaks Eigen's ODR).
// FLOPS counts 2 m n k per call, per second of wall time; threads: 1 and 2 (Eigen's through
// OpenMP).
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <mixprec/kernels/gemm.hpp>

namespace {

using mixprec::bfloat16;
using mixprec::float16;

template <class T>
std::vector<T> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<T> values(count);
  for (auto& v : values) v = T(uniform(rng));
  return values;
}

struct gemm_size {
  std::size_t m, n, k;
  explicit gemm_size(const benchmark::State& state)
      : m(static_cast<std::size_t>(state.range(0))),
        n(static_cast<std::size_t>(state.range(1))),
        k(static_cast<std::size_t>(state.range(2))) {}
};

void set_flops(benchmark::State& state, const gemm_size& size) {
  state.counters["FLOPS"] = benchmark::Counter(2.0 * static_cast<double>(size.m * size.n * size.k),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

/// C (m x n) = A (m x k) * B (k x n), row-major.
template <class TA, class TC>
void BM_mixprec_gemm(benchmark::State& state) {
  const gemm_size size(state);
  mixprec::kernels::set_num_threads(static_cast<std::size_t>(state.range(3)));
  const auto a = random_values<TA>(size.m * size.k, 1);
  const auto b = random_values<TA>(size.k * size.n, 2);
  std::vector<TC> c(size.m * size.n);
  for (auto _ : state) {
    mixprec::kernels::gemm(mixprec::kernels::transpose::no, mixprec::kernels::transpose::no, size.m, size.n, size.k,
                           1.0f, a.data(), size.k, b.data(), size.n, 0.0f, c.data(), size.n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, size);
}

template <class Scalar>
void BM_eigen_gemm(benchmark::State& state) {
  using matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  const gemm_size size(state);
  Eigen::setNbThreads(static_cast<int>(state.range(3)));
  const auto rows = [](std::size_t x) { return static_cast<Eigen::Index>(x); };
  matrix a(rows(size.m), rows(size.k)), b(rows(size.k), rows(size.n)), c(rows(size.m), rows(size.n));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto* x : {&a, &b})
    for (Eigen::Index i = 0; i < x->size(); ++i) x->data()[i] = Scalar(uniform(rng));
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, size);
}

using bench::gemm_sizes;

void small_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "threads"});
  for (std::int64_t s : {128, 256}) b->Args({s, s, s, 1});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_mixprec_gemm<float, float>)->Name("mixprec_gemm/f32")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm<bfloat16, float>)->Name("mixprec_gemm/bf16_to_f32")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm<float16, float>)->Name("mixprec_gemm/f16_to_f32")->Apply(gemm_sizes);
BENCHMARK(BM_eigen_gemm<float>)->Name("eigen_gemm/f32_same_flags")->Apply(gemm_sizes);
BENCHMARK(BM_eigen_gemm<Eigen::bfloat16>)->Name("eigen_gemm/bf16_scalar")->Apply(small_sizes);

BENCHMARK_MAIN();

// Conversions: mixprec::kernels::convert vs Eigen's .cast<>() vs a scalar loop vs memcpy of the
// same bytes. Bytes/s counts bytes read + bytes written (memcpy of N bytes moves 2N). The _AVX2 and
// _without_native_bf16 variants run what an AVX2-only CPU, or an AVX-512 CPU without BF16, runs.
#include <benchmark/benchmark.h>

#include "bench_common.hpp"

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>

#include <mixprec/kernels/convert.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/targets.hpp>

namespace {

using mixprec::bfloat16;
using mixprec::float16;
using mixprec::float8_e4m3fn;

using bench::random_values;

void set_bytes(benchmark::State& state, std::size_t bytes_per_iteration) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes_per_iteration));
}

template <class From, class To>
void BM_mixprec_convert(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto from = random_values<From>(n);
  std::vector<To> to(n);
  for (auto _ : state) {
    mixprec::kernels::convert<From, To>(from, to);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * (sizeof(From) + sizeof(To)));
}

/// BM_mixprec_convert with the kernels forced to AVX2 (skipped where the CPU lacks it).
template <class From, class To>
void BM_mixprec_convert_AVX2(benchmark::State& state) {
  try {
    mixprec::kernels::target_scope scope("AVX2");
    BM_mixprec_convert<From, To>(state);
  } catch (const std::invalid_argument& e) {
    state.SkipWithError(e.what());
  }
}

/// BM_mixprec_convert on the best target without the native AVX-512 BF16 kernel.
template <class From, class To>
void BM_mixprec_convert_without_native_bf16(benchmark::State& state) {
  mixprec::kernels::detail::set_native_bf16_enabled(false);
  BM_mixprec_convert<From, To>(state);
  mixprec::kernels::detail::set_native_bf16_enabled(true);
}

// Eigen's scalar types for the same formats (bit-compatible with mixprec's).
template <class T>
using eigen_scalar_t = std::conditional_t<std::is_same_v<T, bfloat16>, Eigen::bfloat16,
                                          std::conditional_t<std::is_same_v<T, float16>, Eigen::half, T>>;

template <class From, class To>
void BM_eigen_cast(benchmark::State& state) {
  using EFrom = eigen_scalar_t<From>;
  using ETo = eigen_scalar_t<To>;
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto from = random_values<From>(n);
  std::vector<To> to(n);
  const Eigen::Map<const Eigen::Array<EFrom, Eigen::Dynamic, 1>> in(reinterpret_cast<const EFrom*>(from.data()),
                                                                    static_cast<Eigen::Index>(n));
  Eigen::Map<Eigen::Array<ETo, Eigen::Dynamic, 1>> out(reinterpret_cast<ETo*>(to.data()), static_cast<Eigen::Index>(n));
  for (auto _ : state) {
    out = in.template cast<ETo>();
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * (sizeof(From) + sizeof(To)));
}

template <class From, class To>
void BM_scalar_loop(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto from = random_values<From>(n);
  std::vector<To> to(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) to[i] = mixprec::cast<To>(from[i]);
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * (sizeof(From) + sizeof(To)));
}

/// A plain copy of the conversion's input bytes: the memory system's ceiling.
template <class From>
void BM_memcpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto from = random_values<From>(n);
  std::vector<From> to(n);
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), n * sizeof(From));
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * n * sizeof(From));
}

void sizes(benchmark::internal::Benchmark* b) { b->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 24); }

}  // namespace

BENCHMARK(BM_mixprec_convert<float, bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert_AVX2<float, bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert_without_native_bf16<float, bfloat16>)->Apply(sizes);
BENCHMARK(BM_eigen_cast<float, bfloat16>)->Apply(sizes);
BENCHMARK(BM_scalar_loop<float, bfloat16>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert<bfloat16, float>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert_AVX2<bfloat16, float>)->Apply(sizes);
BENCHMARK(BM_eigen_cast<bfloat16, float>)->Apply(sizes);
BENCHMARK(BM_scalar_loop<bfloat16, float>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert<float, float16>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert_AVX2<float, float16>)->Apply(sizes);
BENCHMARK(BM_eigen_cast<float, float16>)->Apply(sizes);
BENCHMARK(BM_scalar_loop<float, float16>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert<float16, float>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert_AVX2<float16, float>)->Apply(sizes);
BENCHMARK(BM_eigen_cast<float16, float>)->Apply(sizes);
BENCHMARK(BM_scalar_loop<float16, float>)->Apply(sizes);
BENCHMARK(BM_mixprec_convert<float, float8_e4m3fn>)->Apply(sizes);
BENCHMARK(BM_scalar_loop<float, float8_e4m3fn>)->Apply(sizes);
BENCHMARK(BM_memcpy<float>)->Apply(sizes);

BENCHMARK_MAIN();

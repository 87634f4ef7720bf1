// Helpers shared by the benchmark programs, each of which includes this header first (no Highway:
// bench_gemm_eigen_native includes it too, built with -march=native).
#pragma once

// First, before any benchmark includes Eigen: keeps GCC 12's AVX-512 false positive out of
// -Werror when the benchmarks are built with an AVX-512 -march (the header is Highway-free).
#include <mixprec/core/detail/x86_intrinsics.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace bench {

/// n draws from normal(0, 3) rounded to T; the same values in every program (seed 1).
template <class T>
std::vector<T> random_values(std::size_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<T> values(n);
  for (auto& v : values) v = T(dist(rng));
  return values;
}

/// GEMM arguments m, n, k, threads: squares and a Dense layer (batch 256, 1024 -> 1024), on 1
/// and 2 threads.
inline void gemm_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "threads"});
  for (std::int64_t threads : {1, 2}) {
    for (std::int64_t s : {256, 512, 1024}) b->Args({s, s, s, threads});
    b->Args({256, 1024, 1024, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace bench

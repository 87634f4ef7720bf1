// int8: the int8 GEMM (int8 x int8 -> int32, exact) against mixprec's float32 and bfloat16 GEMMs
// of the same shapes, and the int8 Dense forward step (quantize the input rows, int8 GEMM,
// dequantize with bias) against the float32 one (GEMM, bias add), at the MLP's inference shapes
// (batch 256: 784 -> 1024, 1024 -> 1024, 1024 -> 10) and 512^3, on 1 and 2 threads.
// Shapes are written m x k x n (batch x inputs x units): C (m x n) = A (m x k) B (k x n), B
// stored k x n (Keras' kernel layout) unless the name says B^T (stored n x k, per-unit rows).
// OPS counts 2 m n k per call (multiply-adds, whatever their type), per second of wall time.
// benchmarks/torch_quantized_linear.py times PyTorch's dynamically quantized nn.Linear at the
// same shapes.
//
// The int8 GEMM runs its best kernel for this CPU (AMX where the CPU has it) unless the name says
// otherwise: "avx512_vnni" forbids AMX (512-bit vpdpbusd), "highway" forbids the native kernels
// (pmaddwd on the best Highway target), "avx_vnni" forces the
// AVX2 target (whose native kernel is AVX-VNNI's 256-bit vpdpbusd, where the CPU has it), and
// "highway_avx2" both (what a CPU with AVX2 and no VNNI runs); "f32_avx2" is the float32 GEMM on
// the AVX2 target, to compare with it.
#include "bench_common.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mixprec/kernels/elementwise.hpp>
#include <mixprec/kernels/gemm.hpp>
#include <mixprec/kernels/quantize.hpp>
#include <mixprec/kernels/targets.hpp>

namespace {

using mixprec::bfloat16;
namespace kernels = mixprec::kernels;
using kernels::transpose;

struct dense_size {
  std::size_t m, k, n;
  explicit dense_size(const benchmark::State& state)
      : m(static_cast<std::size_t>(state.range(0))),
        k(static_cast<std::size_t>(state.range(1))),
        n(static_cast<std::size_t>(state.range(2))) {}
};

void set_ops(benchmark::State& state, const dense_size& size) {
  state.counters["OPS"] = benchmark::Counter(2.0 * static_cast<double>(size.m * size.n * size.k),
                                             benchmark::Counter::kIsIterationInvariantRate);
}

void use_threads(const benchmark::State& state) { kernels::set_num_threads(static_cast<std::size_t>(state.range(3))); }

std::vector<std::int8_t> random_int8(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> uniform(-127, 127);
  std::vector<std::int8_t> values(count);
  for (auto& v : values) v = static_cast<std::int8_t>(uniform(rng));
  return values;
}

template <class T>
std::vector<T> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<T> values(count);
  for (auto& v : values) v = T(uniform(rng));
  return values;
}

enum class int8_path { best, avx512_vnni, highway, avx_vnni, highway_avx2 };

/// Selects an int8 kernel for the benchmark's lifetime (and skips it where the CPU lacks it).
class int8_path_scope {
 public:
  int8_path_scope(benchmark::State& state, int8_path path) {
    const bool highway = path == int8_path::highway || path == int8_path::highway_avx2;
    if (highway) kernels::detail::set_native_int8_enabled(false);
    if (path == int8_path::avx512_vnni) kernels::detail::set_amx_int8_enabled(false);
    if (path == int8_path::avx_vnni && !kernels::detail::avx_vnni_supported()) {
      state.SkipWithError("this CPU has no AVX-VNNI");
      return;
    }
    if (path == int8_path::avx512_vnni && !kernels::detail::avx512_vnni_supported()) {
      state.SkipWithError("this CPU has no AVX-512 VNNI");
      return;
    }
    if (path == int8_path::avx_vnni || path == int8_path::highway_avx2) target_.emplace("AVX2");
    state.SetLabel(kernels::detail::int8_gemm_kernel_name(kernels::detail::gemm_int8_kernel()) +
                   std::string(" on ") + kernels::active_target());
  }
  ~int8_path_scope() {
    kernels::detail::set_native_int8_enabled(true);
    kernels::detail::set_amx_int8_enabled(true);
  }

 private:
  std::optional<kernels::target_scope> target_;
};

template <int8_path Path, transpose TransB>
void BM_gemm_int8(benchmark::State& state) {
  const dense_size size(state);
  use_threads(state);
  const int8_path_scope path(state, Path);
  const auto a = random_int8(size.m * size.k, 1);
  const auto b = random_int8(size.k * size.n, 2);
  std::vector<std::int32_t> c(size.m * size.n);
  const std::size_t ldb = TransB == transpose::yes ? size.k : size.n;
  for (auto _ : state) {
    kernels::gemm(transpose::no, TransB, size.m, size.n, size.k, a.data(), size.k, b.data(), ldb, c.data(), size.n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_ops(state, size);
}

/// float32 or bfloat16 (accumulated in float32, C float32); on the AVX2 target when `avx2`.
template <class T, bool Avx2 = false>
void BM_gemm_float(benchmark::State& state) {
  const dense_size size(state);
  use_threads(state);
  std::optional<kernels::target_scope> target;
  if constexpr (Avx2) target.emplace("AVX2");
  const auto a = random_values<T>(size.m * size.k, 1);
  const auto b = random_values<T>(size.k * size.n, 2);
  std::vector<float> c(size.m * size.n);
  for (auto _ : state) {
    kernels::gemm(transpose::no, transpose::no, size.m, size.n, size.k, 1.0f, a.data(), size.k, b.data(), size.n, 0.0f,
                  c.data(), size.n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_ops(state, size);
}

/// y = x W + bias, float32 in and out. int8: x quantized per row (Keras' abs_max_quantize), W
/// quantized per unit beforehand (stored units x inputs, B^T), int8 GEMM, dequantized with bias.
/// float32: the GEMM, then the bias added.
template <int8_path Path>
void BM_dense_int8(benchmark::State& state) {
  const dense_size size(state);
  use_threads(state);
  const int8_path_scope path(state, Path);
  const auto x = random_values<float>(size.m * size.k, 1);
  const auto w = random_values<float>(size.n * size.k, 2);  // units x inputs
  const auto bias = random_values<float>(size.n, 3);
  std::vector<std::int8_t> w_q(w.size()), x_q(x.size());
  std::vector<float> w_scales(size.n), x_scales(size.m), y(size.m * size.n);
  std::vector<std::int32_t> acc(size.m * size.n);
  kernels::quantize_rows<float>(w, size.n, size.k, w_q, w_scales);
  for (auto _ : state) {
    kernels::quantize_rows<float>(x, size.m, size.k, x_q, x_scales);
    kernels::gemm(transpose::no, transpose::yes, size.m, size.n, size.k, x_q.data(), size.k, w_q.data(), size.k,
                  acc.data(), size.n);
    kernels::dequantize_rows<float>(acc, size.m, size.n, x_scales, w_scales, bias, y);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_ops(state, size);
}

void BM_dense_f32(benchmark::State& state) {
  const dense_size size(state);
  use_threads(state);
  const auto x = random_values<float>(size.m * size.k, 1);
  const auto w = random_values<float>(size.k * size.n, 2);  // inputs x units
  const auto bias = random_values<float>(size.n, 3);
  std::vector<float> y(size.m * size.n);
  for (auto _ : state) {
    kernels::gemm(transpose::no, transpose::no, size.m, size.n, size.k, 1.0f, x.data(), size.k, w.data(), size.n, 0.0f,
                  y.data(), size.n);
    kernels::bias_add<float>(y, bias);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_ops(state, size);
}

/// quantize_rows and dequantize_rows alone, at the input and output sizes of 256 x 1024 x 1024.
void BM_quantize_rows(benchmark::State& state) {
  const std::size_t rows = 256, cols = 1024;
  kernels::set_num_threads(static_cast<std::size_t>(state.range(0)));
  const auto x = random_values<float>(rows * cols, 1);
  std::vector<std::int8_t> q(rows * cols);
  std::vector<float> scales(rows);
  for (auto _ : state) {
    kernels::quantize_rows<float>(x, rows, cols, q, scales);
    benchmark::DoNotOptimize(q.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows * cols));
}

void BM_dequantize_rows(benchmark::State& state) {
  const std::size_t rows = 256, cols = 1024;
  kernels::set_num_threads(static_cast<std::size_t>(state.range(0)));
  const auto acc_values = random_int8(rows * cols, 1);
  const std::vector<std::int32_t> acc(acc_values.begin(), acc_values.end());
  const auto row_scales = random_values<float>(rows, 2), col_scales = random_values<float>(cols, 3),
             bias = random_values<float>(cols, 4);
  std::vector<float> y(rows * cols);
  for (auto _ : state) {
    kernels::dequantize_rows<float>(acc, rows, cols, row_scales, col_scales, bias, y);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * rows * cols));
}

/// m, k, n, threads: the MLP's three layers at batch 256, and 512^3 (for the GEMMs and the
/// Dense steps alike).
void int8_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "k", "n", "threads"});
  for (std::int64_t threads : {1, 2}) {
    b->Args({256, 784, 1024, threads});
    b->Args({256, 1024, 1024, threads});
    b->Args({256, 1024, 10, threads});
    b->Args({512, 512, 512, threads});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_gemm_int8<int8_path::best, transpose::no>)->Name("gemm/int8")->Apply(int8_sizes);
BENCHMARK(BM_gemm_int8<int8_path::best, transpose::yes>)->Name("gemm/int8_bt")->Apply(int8_sizes);
BENCHMARK(BM_gemm_int8<int8_path::avx512_vnni, transpose::no>)->Name("gemm/int8_avx512_vnni")->Apply(int8_sizes);
BENCHMARK(BM_gemm_int8<int8_path::highway, transpose::no>)->Name("gemm/int8_highway")->Apply(int8_sizes);
BENCHMARK(BM_gemm_int8<int8_path::avx_vnni, transpose::no>)->Name("gemm/int8_avx_vnni")->Apply(int8_sizes);
BENCHMARK(BM_gemm_int8<int8_path::highway_avx2, transpose::no>)
    ->Name("gemm/int8_highway_avx2")
    ->Apply(int8_sizes);
BENCHMARK(BM_gemm_float<bfloat16>)->Name("gemm/bf16")->Apply(int8_sizes);
BENCHMARK(BM_gemm_float<float>)->Name("gemm/f32")->Apply(int8_sizes);
BENCHMARK(BM_gemm_float<float, true>)->Name("gemm/f32_avx2")->Apply(int8_sizes);
BENCHMARK(BM_dense_int8<int8_path::best>)->Name("dense/int8")->Apply(int8_sizes);
BENCHMARK(BM_dense_int8<int8_path::avx512_vnni>)->Name("dense/int8_avx512_vnni")->Apply(int8_sizes);
BENCHMARK(BM_dense_f32)->Name("dense/f32")->Apply(int8_sizes);
BENCHMARK(BM_quantize_rows)->Name("quantize_rows/f32/256x1024")->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(BM_dequantize_rows)->Name("dequantize_rows/f32/256x1024")->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

BENCHMARK_MAIN();

// GEMM: mixprec::kernels::gemm (float, bfloat16 -> float, float16 -> float) vs Eigen's float GEMM
// built with the same flags as this program (no -march; Eigen then has SSE2 only, while our
// kernels dispatch at run time), vs Eigen's GEMM on Eigen::bfloat16 scalars (small sizes: it is
// slow). Eigen built with -march=native is bench_gemm_eigen_native, a separate program (mixing
// -march across translation units of one program breaks Eigen's ODR).
// FLOPS counts 2 m n k per call, per second of wall time; threads: 1 and 2 (Eigen's through
// OpenMP). mixprec_gemm_mlp: the bf16 GEMMs of an MLP training step (mlp_shapes), against
// torch_gemm.py. The arithmetic peak these are a fraction of is bench_peak's. bfloat16 runs the
// best native kernel the CPU has (AMX-BF16, else vdpbf16ps); bf16_to_f32_vdpbf16ps forces the
// latter on CPUs with AMX. *_prepacked: B packed once by kernels::pack_b before the loop (a layer's
// weights in inference), against the same GEMM packing B on every call.
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

/// C (m x n) = op(A) (m x k) * op(B) (k x n), row-major, on `threads` threads; A stored k x m when
/// transposed, B n x k.
/// B packed by every call, or once before the loop (kernels::pack_b: a layer's weights in inference).
enum class b_packing { per_call, prepacked };

template <class TA, class TC>
void run_mixprec_gemm(benchmark::State& state, const gemm_size& size, bool trans_a, bool trans_b,
                      std::int64_t threads, b_packing packing = b_packing::per_call) {
  using mixprec::kernels::transpose;
  mixprec::kernels::set_num_threads(static_cast<std::size_t>(threads));
  const auto a = random_values<TA>(size.m * size.k, 1);
  const auto b = random_values<TA>(size.k * size.n, 2);
  std::vector<TC> c(size.m * size.n);
  const transpose op_a = trans_a ? transpose::yes : transpose::no, op_b = trans_b ? transpose::yes : transpose::no;
  const std::size_t lda = trans_a ? size.m : size.k, ldb = trans_b ? size.k : size.n;
  const auto packed = packing == b_packing::prepacked ? mixprec::kernels::pack_b<TA>(op_b, size.k, size.n, b, ldb)
                                                      : mixprec::kernels::packed_b<TA>();
  for (auto _ : state) {
    if (packing == b_packing::prepacked) {
      mixprec::kernels::gemm(op_a, size.m, 1.0f, a.data(), lda, packed, 0.0f, c.data(), size.n);
    } else {
      mixprec::kernels::gemm(op_a, op_b, size.m, size.n, size.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
                             size.n);
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, size);
}

template <class TA, class TC, b_packing Packing = b_packing::per_call>
void BM_mixprec_gemm(benchmark::State& state) {
  run_mixprec_gemm<TA, TC>(state, gemm_size(state), false, false, state.range(3), Packing);
}

/// bfloat16 on the vdpbf16ps kernel where the CPU would run AMX-BF16 (skipped elsewhere: there
/// mixprec_gemm/bf16_to_f32 is that kernel, or the Highway one).
void BM_mixprec_gemm_bf16_vdpbf16ps(benchmark::State& state) {
  if (!mixprec::kernels::detail::amx_bf16_supported()) {
    state.SkipWithError("this CPU has no AMX-BF16: mixprec_gemm/bf16_to_f32 runs vdpbf16ps (or Highway) already");
    return;
  }
  mixprec::kernels::detail::set_amx_bf16_enabled(false);
  run_mixprec_gemm<bfloat16, float>(state, gemm_size(state), false, false, state.range(3));
  mixprec::kernels::detail::set_amx_bf16_enabled(true);
}

/// Arguments m, n, k, trans_a, trans_b, threads (mlp_shapes).
template <class TA, class TC, b_packing Packing = b_packing::per_call>
void BM_mixprec_gemm_transposed(benchmark::State& state) {
  run_mixprec_gemm<TA, TC>(state, gemm_size(state), state.range(3) != 0, state.range(4) != 0, state.range(5), Packing);
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

/// The GEMMs of a training step of the 784-1024-1024-10 MLP at batch 256 (Dense: y = x W with W
/// stored inputs x units; dW = x^T dy; dx = dy W^T), on 1 and 2 threads; torch_gemm.py runs the
/// same.
void mlp_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "ta", "tb", "threads"});
  constexpr std::int64_t batch = 256;
  constexpr std::int64_t layers[][2] = {{784, 1024}, {1024, 1024}, {1024, 10}};  // inputs, units
  for (std::int64_t threads : {1, 2}) {
    for (const auto& [in, units] : layers) {
      b->Args({batch, units, in, 0, 0, threads});  // forward
      b->Args({in, units, batch, 1, 0, threads});  // weight gradient
      b->Args({batch, in, units, 0, 1, threads});  // input gradient
    }
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void small_sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "n", "k", "threads"});
  for (std::int64_t s : {128, 256}) b->Args({s, s, s, 1});
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_mixprec_gemm<float, float>)->Name("mixprec_gemm/f32")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm<bfloat16, float>)->Name("mixprec_gemm/bf16_to_f32")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm_bf16_vdpbf16ps)->Name("mixprec_gemm/bf16_to_f32_vdpbf16ps")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm<float16, float>)->Name("mixprec_gemm/f16_to_f32")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm_transposed<bfloat16, float>)->Name("mixprec_gemm_mlp/bf16_to_f32")->Apply(mlp_shapes);
BENCHMARK(BM_mixprec_gemm<float, float, b_packing::prepacked>)->Name("mixprec_gemm_prepacked/f32")->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm<bfloat16, float, b_packing::prepacked>)
    ->Name("mixprec_gemm_prepacked/bf16_to_f32")
    ->Apply(gemm_sizes);
BENCHMARK(BM_mixprec_gemm_transposed<bfloat16, float, b_packing::prepacked>)
    ->Name("mixprec_gemm_mlp_prepacked/bf16_to_f32")
    ->Apply(mlp_shapes);
BENCHMARK(BM_eigen_gemm<float>)->Name("eigen_gemm/f32_same_flags")->Apply(gemm_sizes);
BENCHMARK(BM_eigen_gemm<Eigen::bfloat16>)->Name("eigen_gemm/bf16_scalar")->Apply(small_sizes);

BENCHMARK_MAIN();

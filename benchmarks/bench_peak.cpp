// The arithmetic peak of one core, the ceiling the GEMM benchmarks are measured against:
// `vdpbf16ps` (AVX-512 BF16: 16 lanes x 2 bfloat16 products added to a float, 64 flops per
// instruction), the float32 fused multiply-add on zmm (AVX-512F, 32 flops) and ymm (AVX2 +
// FMA, 16 flops), and for the int8 GEMM `vpdpbusd` on zmm (AVX-512 VNNI: 16 lanes x 4 byte
// products, 128 operations) and AMX's `tdpbssd` (16 x 16 sums of 64 byte products, 32768
// operations; "FLOPS" counts operations for these) and `tdpbf16ps` (16 x 16 sums of 32 bfloat16
// products, 16384 flops). Each vector loop keeps 24 independent
// accumulators busy, more than latency x throughput on any current core, the AMX loop four
// tiles (all the tile registers left beside one A and one B tile), so the instruction's
// throughput is what is measured. Each case
// is compiled for its instruction set with a target attribute and skipped (with a message) on a
// CPU without it. FLOPS is per second of the thread's CPU time (time the OS gave it to another
// process does not count); still, run it while the machine is otherwise quiet.
// First: GCC 12's false positive in its own AVX-512 intrinsics, silenced for that header alone.
#include <mixprec/core/detail/x86_intrinsics.hpp>
#include <mixprec/kernels/detail/gemm_native_int8.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace {

constexpr int accumulators = 24;
constexpr std::int64_t steps_per_iteration = 1024;

void set_flops(benchmark::State& state, double flops_per_instruction) {
  state.counters["FLOPS"] = benchmark::Counter(flops_per_instruction * accumulators * steps_per_iteration,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// One loop per instruction set, written out: a lambda or a template called from a function with
// a target attribute does not inherit it, and the intrinsics need it.

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void dpbf16ps_zmm(benchmark::State& state) {
  const __m512bh ones = (__m512bh)_mm512_set1_epi16(static_cast<short>(0x3f80));  // bfloat16 1.0
  __m512 acc[accumulators];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (auto _ : state) {
    for (std::int64_t s = 0; s < steps_per_iteration; ++s) {
#pragma GCC unroll 24
      for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], ones, ones);
    }
  }
  float total = 0;
  for (auto& a : acc) total += _mm512_reduce_add_ps(a);
  benchmark::DoNotOptimize(total);
  set_flops(state, 64);
}

__attribute__((target("avx512f"))) void fma_zmm(benchmark::State& state) {
  const __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(0.999f);
  __m512 acc[accumulators];
  for (auto& a : acc) a = x;
  for (auto _ : state) {
    for (std::int64_t s = 0; s < steps_per_iteration; ++s) {
#pragma GCC unroll 24
      for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_fmadd_ps(acc[i], y, x);
    }
  }
  float total = 0;
  for (auto& a : acc) total += _mm512_reduce_add_ps(a);
  benchmark::DoNotOptimize(total);
  set_flops(state, 32);
}

__attribute__((target("avx2,fma"))) void fma_ymm(benchmark::State& state) {
  const __m256 x = _mm256_set1_ps(1.0f), y = _mm256_set1_ps(0.999f);
  __m256 acc[accumulators];
  for (auto& a : acc) a = x;
  for (auto _ : state) {
    for (std::int64_t s = 0; s < steps_per_iteration; ++s) {
#pragma GCC unroll 24
      for (int i = 0; i < accumulators; ++i) acc[i] = _mm256_fmadd_ps(acc[i], y, x);
    }
  }
  __m256 sum = _mm256_setzero_ps();
  for (auto& a : acc) sum = _mm256_add_ps(sum, a);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  benchmark::DoNotOptimize(lanes);
  set_flops(state, 16);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void dpbusd_zmm(benchmark::State& state) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc[accumulators];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (auto _ : state) {
    for (std::int64_t s = 0; s < steps_per_iteration; ++s) {
#pragma GCC unroll 24
      for (int i = 0; i < accumulators; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], ones, ones);
    }
  }
  __m512i total = _mm512_setzero_si512();
  for (auto& a : acc) total = _mm512_add_epi32(total, a);
  benchmark::DoNotOptimize(_mm512_reduce_add_epi32(total));
  set_flops(state, 128);
}

#ifdef MIXPREC_KERNELS_HAVE_AMX
// AMX: four tiles of sums (0-3) fed by one tile of each operand (4, 6), the int8 and bfloat16
// kernels' configuration (kernels/detail/amx.hpp).
#define MIXPREC_BENCH_AMX_LOOP(instruction, ops)                                         \
  alignas(64) std::uint32_t ones[16 * 16];                                              \
  std::fill(std::begin(ones), std::end(ones), 0x3f803f80u); /* bfloat16 1.0 pairs */    \
  alignas(64) float sums[16 * 16];                                                      \
  mixprec::kernels::detail::amx::begin();                                               \
  _tile_loadd(4, ones, 64);                                                             \
  _tile_loadd(6, ones, 64);                                                             \
  for (auto _ : state) {                                                                \
    for (std::int64_t s = 0; s < steps_per_iteration * accumulators / 4; ++s) {         \
      instruction(0, 4, 6);                                                             \
      instruction(1, 4, 6);                                                             \
      instruction(2, 4, 6);                                                             \
      instruction(3, 4, 6);                                                             \
    }                                                                                   \
  }                                                                                     \
  _tile_stored(0, sums, 64);                                                            \
  mixprec::kernels::detail::amx::end();                                                 \
  benchmark::DoNotOptimize(sums);                                                       \
  set_flops(state, ops)

__attribute__((target("amx-tile,amx-int8"))) void tdpbssd(benchmark::State& state) {
  MIXPREC_BENCH_AMX_LOOP(_tile_dpbssd, 16 * 16 * 64 * 2);
}

__attribute__((target("amx-tile,amx-bf16"))) void tdpbf16ps(benchmark::State& state) {
  MIXPREC_BENCH_AMX_LOOP(_tile_dpbf16ps, 16 * 16 * 32 * 2);
}
#endif

bool cpu_has(const char* feature) {
  __builtin_cpu_init();
  if (__builtin_strcmp(feature, "avx512bf16") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
  if (__builtin_strcmp(feature, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
#ifdef MIXPREC_KERNELS_HAVE_NATIVE_INT8
  if (__builtin_strcmp(feature, "avx512vnni") == 0)
    return mixprec::kernels::detail::native_int8::cpu_supports_avx512_vnni();
#endif
#ifdef MIXPREC_KERNELS_HAVE_AMX
  namespace amx = mixprec::kernels::detail::amx;
  if (__builtin_strcmp(feature, "amx-int8") == 0) return amx::cpu_supports(amx::int8_feature);
  if (__builtin_strcmp(feature, "amx-bf16") == 0) return amx::cpu_supports(amx::bf16_feature);
#endif
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/// Runs `body` if the CPU has `feature`, else skips the case saying why.
void when_supported(benchmark::State& state, void (*body)(benchmark::State&), const char* feature) {
  if (!cpu_has(feature)) {
    state.SkipWithError((std::string("this CPU has no ") + feature).c_str());
    for (auto _ : state) {
    }
    return;
  }
  body(state);
}

}  // namespace

BENCHMARK_CAPTURE(when_supported, vdpbf16ps_zmm, &dpbf16ps_zmm, "avx512bf16")->Name("peak/vdpbf16ps_zmm");
BENCHMARK_CAPTURE(when_supported, vfmadd_ps_zmm, &fma_zmm, "avx512f")->Name("peak/vfmadd_ps_zmm");
BENCHMARK_CAPTURE(when_supported, vfmadd_ps_ymm, &fma_ymm, "avx2")->Name("peak/vfmadd_ps_ymm");
BENCHMARK_CAPTURE(when_supported, vpdpbusd_zmm, &dpbusd_zmm, "avx512vnni")->Name("peak/vpdpbusd_zmm");
#ifdef MIXPREC_KERNELS_HAVE_AMX
BENCHMARK_CAPTURE(when_supported, tdpbssd, &tdpbssd, "amx-int8")->Name("peak/tdpbssd");
BENCHMARK_CAPTURE(when_supported, tdpbf16ps, &tdpbf16ps, "amx-bf16")->Name("peak/tdpbf16ps");
#endif

#endif  // x86 with GCC or Clang

BENCHMARK_MAIN();

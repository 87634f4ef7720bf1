// The native bfloat16 GEMM pieces for CPUs with AVX-512 BF16 (Zen 4/5, Cooper Lake, Sapphire
// Rapids): Highway 1.0.3 has no target that emits vdpbf16ps, so this micro-kernel is written with
// intrinsics in functions compiled for AVX-512 BF16 alone. gemm-inl.hpp calls it only from its
// AVX3 (or better) code and only after checking the CPU (cpu_supports()), so forcing a lower
// target never runs it.
//
// vdpbf16ps multiplies pairs of bfloat16 exactly and adds both products to a float accumulator
// (each addition rounded to nearest even; denormal inputs and outputs are flushed to zero). So A
// and B are packed as pairs of consecutive depth elements in one 32-bit lane: lane l of pair q
// holds element 2q in its low half and 2q + 1 in its high half; an odd depth ends with a zero.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <mixprec/core/detail/x86_intrinsics.hpp>
#include <mixprec/core/float16.hpp>
#include <mixprec/kernels/detail/gemm_blocking.hpp>

namespace mixprec::kernels::detail::native_bf16 {

inline constexpr std::size_t tile_rows = 12;     // 12 x 2 accumulators of 16 floats: 24 of 32 zmm
inline constexpr std::size_t tile_columns = 32;

inline std::size_t pairs_of(std::size_t depth) { return (depth + 1) / 2; }

/// Packs `lanes` lanes of `depth` bfloat16 into panels of `width` lanes, zero-padded, as pairs:
/// dst[(panel * pairs_of(depth) + q) * width + l] holds elements (panel * width + l, 2q) and
/// (panel * width + l, 2q + 1). Element (lane, p) is at src[lane * lane_stride + p * depth_stride];
/// one of the strides is 1 (the other is the leading dimension). Plain C++: it runs (and is
/// tested) on every CPU; only the micro-kernel needs AVX-512 BF16.
inline void pack_pairs(const bfloat16* src, std::size_t lane_stride, std::size_t depth_stride, std::size_t lanes,
                       std::size_t depth, std::size_t width, std::uint32_t* dst) {
  const std::size_t pairs = pairs_of(depth);
  const std::size_t full_pairs = depth / 2;
  const auto bits = [](bfloat16 x) { return static_cast<std::uint32_t>(x.to_bits()); };
  for (std::size_t first = 0; first < lanes; first += width, dst += pairs * width) {
    const std::size_t count = std::min(width, lanes - first);
    const bfloat16* panel = src + first * lane_stride;
    if (depth_stride == 1) {  // each lane's depth elements are contiguous: a pair is one 32-bit load
      // The panel's lanes are read side by side (a stream each), the packed rows written in order.
      for (std::size_t q = 0; q < full_pairs; ++q) {
        for (std::size_t l = 0; l < count; ++l) {
          std::uint32_t pair;
          std::memcpy(&pair, panel + l * lane_stride + 2 * q, sizeof pair);  // little-endian: 2q is the low half
          dst[q * width + l] = pair;
        }
      }
      if (pairs != full_pairs) {
        for (std::size_t l = 0; l < count; ++l) dst[full_pairs * width + l] = bits(panel[l * lane_stride + depth - 1]);
      }
    } else {  // the lanes of one depth element are contiguous: interleave two rows
      for (std::size_t q = 0; q < full_pairs; ++q) {
        const bfloat16* low = panel + 2 * q * depth_stride;
        const bfloat16* high = low + depth_stride;
        for (std::size_t l = 0; l < count; ++l)
          dst[q * width + l] = bits(low[l * lane_stride]) | bits(high[l * lane_stride]) << 16;
      }
      if (pairs != full_pairs) {
        const bfloat16* low = panel + (depth - 1) * depth_stride;
        for (std::size_t l = 0; l < count; ++l) dst[full_pairs * width + l] = bits(low[l * lane_stride]);
      }
    }
    for (std::size_t q = 0; q < pairs; ++q)
      for (std::size_t l = count; l < width; ++l) dst[q * width + l] = 0;
  }
}

}  // namespace mixprec::kernels::detail::native_bf16

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define MIXPREC_KERNELS_HAVE_NATIVE_BF16 1
#include <immintrin.h>

#define MIXPREC_KERNELS_NATIVE_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace mixprec::kernels::detail::native_bf16 {

/// The CPU has AVX-512 F/BW/VL and BF16. (Highway's AVX3 target, which the caller also requires,
/// checks that the OS saves the AVX-512 registers.)
inline bool cpu_supports() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void update_vector(float* out, __m512 sums, const gemm_tile_update& update) {
  const __m512 alpha = _mm512_set1_ps(update.alpha);
  if (update.accumulate) {
    _mm512_storeu_ps(out, _mm512_fmadd_ps(alpha, sums, _mm512_loadu_ps(out)));
  } else if (update.beta == 0.0f) {
    _mm512_storeu_ps(out, _mm512_mul_ps(alpha, sums));
  } else {
    const __m512 beta = _mm512_set1_ps(update.beta);
    _mm512_storeu_ps(out, _mm512_fmadd_ps(beta, _mm512_loadu_ps(out), _mm512_mul_ps(alpha, sums)));
  }
}

/// One 12 x 32 tile: sums over `pairs` packed pairs of an A panel (12 lanes per pair) and a B
/// panel (32 lanes per pair), then `update` of dst (row stride ldd).
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void multiply_tile(std::size_t pairs, const std::uint32_t* a,
                                                             const std::uint32_t* b, float* dst, std::size_t ldd,
                                                             gemm_tile_update update) {
  __m512 sums[tile_rows][2];
#pragma GCC unroll 12
  for (std::size_t r = 0; r < tile_rows; ++r) sums[r][0] = sums[r][1] = _mm512_setzero_ps();
  for (std::size_t q = 0; q < pairs; ++q, a += tile_rows, b += tile_columns) {
    const __m512bh b_low = (__m512bh)_mm512_loadu_si512(b);        // columns 0..15
    const __m512bh b_high = (__m512bh)_mm512_loadu_si512(b + 16);  // columns 16..31
#pragma GCC unroll 12
    for (std::size_t r = 0; r < tile_rows; ++r) {
      const __m512bh a_pair = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r]));
      sums[r][0] = _mm512_dpbf16_ps(sums[r][0], a_pair, b_low);
      sums[r][1] = _mm512_dpbf16_ps(sums[r][1], a_pair, b_high);
    }
  }
#pragma GCC unroll 12
  for (std::size_t r = 0; r < tile_rows; ++r) {
    update_vector(dst + r * ldd, sums[r][0], update);
    update_vector(dst + r * ldd + 16, sums[r][1], update);
  }
}

}  // namespace mixprec::kernels::detail::native_bf16

#endif  // x86 with GCC or Clang

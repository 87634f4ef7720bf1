// The native float -> bfloat16 conversion for CPUs with AVX-512 BF16 (Zen 4/5, Cooper Lake,
// Sapphire Rapids): Highway 1.0.3 has no target that emits vcvtne2ps2bf16, so it is written with
// intrinsics in a function compiled for AVX-512 BF16 alone. convert-inl.hpp calls it only from
// its AVX3 (or better) code and only when the native bfloat16 GEMM could run too (same CPU check,
// same switch: native_bf16_enabled), so forcing a lower target never runs it.
//
// vcvtne2ps2bf16 rounds to nearest even whatever MXCSR says and turns a NaN into a quiet NaN with
// its sign and the payload's top bits, as cast<bfloat16> does; but it flushes float32 subnormal
// inputs to zero. Those lanes are redone with the integer rounding of the scalar cast.
#pragma once

#include <mixprec/kernels/detail/gemm_native_bf16.hpp>

#ifdef MIXPREC_KERNELS_HAVE_NATIVE_BF16
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <mixprec/core/float16.hpp>

// Its callers run AVX3 code, whose CPU check includes AVX-512 DQ (vfpclassps) too.
#define MIXPREC_KERNELS_NATIVE_BF16_CONVERT_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

namespace mixprec::kernels::detail::native_bf16 {

/// The bfloat16 encodings of 16 finite floats, rounded to nearest even on the integer bits: the top
/// half of bits + 0x7FFF + (the top half's lowest bit).
MIXPREC_KERNELS_NATIVE_BF16_CONVERT_TARGET inline __m256i round_top_halves(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i biased = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), odd);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(biased, 16));
}

/// 32 floats (low: elements 0..15, high: 16..31) -> 32 bfloat16 encodings, as cast<bfloat16>.
MIXPREC_KERNELS_NATIVE_BF16_CONVERT_TARGET inline __m512i round_32(__m512 low, __m512 high) {
  const __m512i converted = (__m512i)_mm512_cvtne2ps_pbh(high, low);  // high goes to the upper half
  constexpr int subnormal = 0x20;                                       // vfpclassps category
  const __mmask16 low_subnormal = _mm512_fpclass_ps_mask(low, subnormal);
  const __mmask16 high_subnormal = _mm512_fpclass_ps_mask(high, subnormal);
  if (__builtin_expect(_kortestz_mask16_u8(low_subnormal, high_subnormal), 1)) return converted;
  const __m512i exact = _mm512_inserti64x4(_mm512_castsi256_si512(round_top_halves(low)), round_top_halves(high), 1);
  return _mm512_mask_mov_epi16(converted, _mm512_kunpackw(high_subnormal, low_subnormal), exact);
}

/// The first `count` (< 32) elements: masked loads (the missing lanes read as zeros), masked store.
MIXPREC_KERNELS_NATIVE_BF16_CONVERT_TARGET inline void convert_few(const float* from, bfloat16* to, std::size_t count) {
  const std::uint32_t lanes = (std::uint32_t{1} << count) - 1;
  const __m512 low = _mm512_maskz_loadu_ps(_cvtu32_mask16(lanes & 0xFFFF), from);
  const __m512 high = _mm512_maskz_loadu_ps(_cvtu32_mask16(lanes >> 16), from + 16);
  _mm512_mask_storeu_epi16(to, _cvtu32_mask32(lanes), round_32(low, high));
}

/// 32 elements from `from` to a 64-byte aligned `to`.
MIXPREC_KERNELS_NATIVE_BF16_CONVERT_TARGET inline void convert_32(const float* from, bfloat16* to) {
  _mm512_store_si512(to, round_32(_mm512_loadu_ps(from), _mm512_loadu_ps(from + 16)));
}

/// to[i] = cast<bfloat16>(from[i]) for i < n, bit for bit.
MIXPREC_KERNELS_NATIVE_BF16_CONVERT_TARGET inline void convert_from_f32(const float* from, bfloat16* to, std::size_t n) {
  // A few elements first so that the stores are whole cache lines (64 bytes: 32 elements).
  const std::size_t misalignment = (reinterpret_cast<std::uintptr_t>(to) % 64) / sizeof(bfloat16);
  std::size_t i = std::min(n, (32 - misalignment) % 32);
  if (i != 0) convert_few(from, to, i);
  // A source larger than L1 is prefetched this far ahead (2 KiB): the hardware prefetchers alone
  // leave an L2-resident source short of the loads' speed (Zen 5, 64K elements: +15%, 16M: the
  // same). One that fits L1 (32 KiB on any AVX-512 CPU) is there already: prefetches cost it 9%.
  constexpr std::size_t prefetch_distance = 512;
  const std::size_t prefetched_end = n * sizeof(float) > (32 << 10) ? n - prefetch_distance : 0;
  for (; i + 32 <= prefetched_end; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(from + i + prefetch_distance), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(from + i + prefetch_distance + 16), _MM_HINT_T0);
    convert_32(from + i, to + i);
  }
  for (; i + 32 <= n; i += 32) convert_32(from + i, to + i);
  if (i != n) convert_few(from + i, to + i, n - i);
}

}  // namespace mixprec::kernels::detail::native_bf16

#endif  // MIXPREC_KERNELS_HAVE_NATIVE_BF16

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
#include <cstddef>
#include <cstdint>

#include <mixprec/core/float16.hpp>

namespace mixprec::kernels::detail::native_bf16 {

/// Lanes holding a float32 subnormal: exponent field 0, mantissa not 0.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __mmask16 subnormal_lanes(__m512i bits) {
  const __mmask16 exponent_zero = _mm512_testn_epi32_mask(bits, _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_test_epi32_mask(exponent_zero, bits, _mm512_set1_epi32(0x007FFFFF));
}

/// The bfloat16 encodings of 16 finite floats, rounded to nearest even on the integer bits: the top
/// half of bits + 0x7FFF + (the top half's lowest bit).
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __m256i round_top_halves(__m512i bits) {
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i biased = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), odd);
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(biased, 16));
}

/// 32 floats (low: elements 0..15, high: 16..31) -> 32 bfloat16 encodings, as cast<bfloat16>.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline __m512i round_32(__m512 low, __m512 high) {
  const __m512i converted = (__m512i)_mm512_cvtne2ps_pbh(high, low);  // high goes to the upper half
  const __m512i low_bits = _mm512_castps_si512(low);
  const __m512i high_bits = _mm512_castps_si512(high);
  const __mmask32 subnormal = _cvtu32_mask32(_cvtmask16_u32(subnormal_lanes(low_bits)) |
                                             (_cvtmask16_u32(subnormal_lanes(high_bits)) << 16));
  if (__builtin_expect(_cvtmask32_u32(subnormal) == 0, 1)) return converted;
  const __m512i exact = _mm512_inserti64x4(_mm512_castsi256_si512(round_top_halves(low_bits)),
                                           round_top_halves(high_bits), 1);
  return _mm512_mask_mov_epi16(converted, subnormal, exact);
}

/// to[i] = cast<bfloat16>(from[i]) for i < n, bit for bit.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void convert_from_f32(const float* from, bfloat16* to, std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i packed = round_32(_mm512_loadu_ps(from + i), _mm512_loadu_ps(from + i + 16));
    _mm512_storeu_si512(to + i, packed);
  }
  if (i == n) return;
  // The last 1..31 elements: masked loads (the missing lanes read as zeros) and a masked store.
  const std::uint32_t rest = (std::uint32_t{1} << (n - i)) - 1;
  const __m512 low = _mm512_maskz_loadu_ps(_cvtu32_mask16(rest & 0xFFFF), from + i);
  const __m512 high = _mm512_maskz_loadu_ps(_cvtu32_mask16(rest >> 16), from + i + 16);
  _mm512_mask_storeu_epi16(to + i, _cvtu32_mask32(rest), round_32(low, high));
}

}  // namespace mixprec::kernels::detail::native_bf16

#endif  // MIXPREC_KERNELS_HAVE_NATIVE_BF16

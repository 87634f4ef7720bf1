// The native float -> bfloat16 conversion for CPUs with AVX-512 BF16 (Zen 4/5, Cooper Lake,
// Sapphire Rapids): Highway 1.0.3 has no target that emits vcvtne2ps2bf16, so it is written with
// intrinsics in a function compiled for AVX-512 BF16 alone. convert-inl.hpp calls it only from
// its AVX3 (or better) code and only when the native bfloat16 GEMM could run too (same CPU check,
// same switch: native_bf16_enabled), so forcing a lower target never runs it.
//
// The rounding (vcvtne2ps2bf16 with its subnormal lanes redone) is round_32 of
// gemm_native_bf16.hpp, which the GEMM's packing of float operands shares.
#pragma once

#include <mixprec/kernels/detail/gemm_native_bf16.hpp>

#ifdef MIXPREC_KERNELS_HAVE_NATIVE_BF16
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <mixprec/core/float16.hpp>

namespace mixprec::kernels::detail::native_bf16 {

/// The first `count` (< 32) elements: masked loads (the missing lanes read as zeros), masked store.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void convert_few(const float* from, bfloat16* to, std::size_t count) {
  _mm512_mask_storeu_epi16(to, _cvtu32_mask32((std::uint32_t{1} << count) - 1), load_halves(from, count));
}

/// 32 elements from `from` to a 64-byte aligned `to`.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void convert_32(const float* from, bfloat16* to) {
  _mm512_store_si512(to, round_32(_mm512_loadu_ps(from), _mm512_loadu_ps(from + 16)));
}

/// to[i] = cast<bfloat16>(from[i]) for i < n, bit for bit.
MIXPREC_KERNELS_NATIVE_BF16_TARGET inline void convert_from_f32(const float* from, bfloat16* to, std::size_t n) {
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

// The scalar rules of the int8 and float8 kernels, the same for every target: the per-row scale
// of quantize_rows, float8's clipping bound and the blocking of the int8 GEMM.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

#include <mixprec/core/detail/minifloat_codec.hpp>

namespace mixprec::kernels::detail {

/// Keras' abs_max_quantize scale, 127 / (amax + epsilon) with epsilon = 1e-7: in float for a
/// float amax; a NaN amax gives the canonical quiet NaN (whichever NaN came in).
inline float int8_scale(float amax) {
  if (std::isnan(amax)) return std::numeric_limits<float>::quiet_NaN();
  return 127.0f / (amax + 1e-7f);
}

/// The same for a double amax: computed in double (epsilon the double 1e-7, as Keras adds it to
/// a float64 tensor) and rounded to float once.
inline float int8_scale(double amax) {
  if (std::isnan(amax)) return std::numeric_limits<float>::quiet_NaN();
  return static_cast<float>(127.0 / (amax + 1e-7));
}

/// The largest finite value of a float8 format (448 for e4m3fn, 57344 for e5m2): where
/// quantize_dequantize clips, as Keras' quantize_and_dequantize does.
template <mixprec::detail::minifloat_format F>
constexpr float float8_max_finite() {
  return mixprec::detail::decode_to_float(F, F.max_finite());
}

// Cache blocking of the int8 GEMM (the loop nest of the float GEMM, gemm_blocking.hpp, on
// 32-bit units of 4 (vpdpbusd) or 2 (pmaddwd) int8 depth elements):
//  - kc = 512 depth elements: a packed op(B) micro-panel is 512 x 32 bytes = 16 KiB for the
//    12 x 32 AVX-512 VNNI tile (32 KiB of int16 pairs for the Highway kernel's 8 x 32 tile on
//    AVX3), which stays in L1 while the op(A) panels stream past;
//  - mc = 192 rows (whole panels of 12, 8, 6 or 4 rows): the packed op(A) block, 96 KiB of
//    bytes (192 KiB as int16 pairs), stays in L2;
//  - nc = 1024 columns: the packed op(B) block, 512 KiB (1 MiB as pairs), stays in L2/L3.
// AMX takes kc = 1024: its tiles are done so fast that reloading and storing the int32 C tile
// once per depth block cost a quarter of the kernel's time at kc = 512 (Sapphire Rapids,
// 256 x 1024 x 1024); its micro-panels, 32 KiB each, then come from L2 (2 MiB per core there).
// Sums are exact, so neither the blocking nor the thread split can change a result.
inline constexpr std::size_t gemm_int8_depth_block = 512;
inline constexpr std::size_t gemm_int8_amx_depth_block = 1024;
inline constexpr std::size_t gemm_int8_row_block = 192;
inline constexpr std::size_t gemm_int8_column_block = 1024;

/// quantize_rows and dequantize_rows split their rows across the GEMM thread pool from this
/// many elements on (fewer are done before a woken thread would start).
inline constexpr std::size_t int8_rows_parallel_elements = std::size_t{1} << 17;

}  // namespace mixprec::kernels::detail
